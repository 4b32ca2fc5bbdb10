// The HyperShift sidecar adapter (images/hypershift-adapter.Containerfile): the HCP-specific controllers of
// packages/topology-hypershift/src/adapter. It talks to the operator only through Kubernetes objects.
import { describeError, systemClock, type Reconciler } from '@karpenter-operator/core';
import {
  AutoNodeStatusReconciler,
  HcpDefaultNodeClassReconciler,
  HcpFinalizerReconciler,
  NODECLASS_POLICY_CONTROLLER,
  NodeClassPolicyReconciler,
} from '@karpenter-operator/topology-hypershift';
import { DEFAULT_ADDRESSES, parseAdapterConfig } from './config.js';
import { providerFor } from './providers.js';
import { startHttpServer } from './http/server.js';
import { createKubeCluster, isConnectionFailure, KubeEventRecorder, loadKubeConfig, toCoreError, WatchedKubeConfig } from './kube/index.js';
import { createLogger } from './observability/logger.js';
import { PromMetrics } from './observability/metrics.js';
import { AllMetricDefinitions, ControllerRuntime, routeByCluster } from './runtime/index.js';
import { ExitCodes, Manager, runMain } from './runtime/manager.js';

const USAGE = `Usage: karpenter-operator-hypershift-adapter [run] --namespace NS --guest-kubeconfig FILE [--kubeconfig FILE] [--hcp-name NAME]
       [--metrics-bind-address [host]:port (${DEFAULT_ADDRESSES.adapter.metrics})] [--health-probe-bind-address [host]:port (${DEFAULT_ADDRESSES.adapter.health})]
       [--guest-unreachable-timeout DURATION (5m): how long the guest API may be unreachable during HCP deletion before the HCP finalizer goes]
The HyperShift sidecar adapter: HCP status.autoNode, the HCP finalizer when the guest is gone, and (with --hcp-name)
EC2NodeClass default from ignition Secrets (guarded in the guest by a ValidatingAdmissionPolicy). The operand's
credentials Secret (karpenter-credentials) is HyperShift's own.`;

async function main(argv: string[]): Promise<number> {
  const parsed = parseAdapterConfig(argv);
  if (!parsed.ok && parsed.help) {
    process.stdout.write(USAGE + '\n');
    return ExitCodes.ok;
  }
  if (!parsed.ok) {
    process.stderr.write(`hypershift-adapter: cannot start: ${parsed.errors.join('; ')}\n`);
    return ExitCodes.usage;
  }
  const { namespace, guestKubeconfig: guestPath, hcpName, unreachableAfterMs, metrics: metricsAddr, health: healthAddr } = parsed.config;

  const logger = createLogger('info').child({ container: 'hypershift-adapter' });
  const metrics = new PromMetrics(AllMetricDefinitions);
  const clock = systemClock;
  const own = loadKubeConfig({ ...(parsed.config.kubeconfig ? { kubeconfig: parsed.config.kubeconfig } : {}), env: process.env });
  // In the pod: a 401 re-reads the rotated ServiceAccount token at once.
  const mgmt = createKubeCluster(own.config, {
    metrics,
    logger,
    clock,
    ...(own.refreshCredentials ? { onUnauthorized: own.refreshCredentials } : {}),
  });
  // The guest kubeconfig is a mounted Secret that HyperShift rotates: re-read it, never restart for it.
  const guestKubeconfig = new WatchedKubeConfig(guestPath, { logger });
  await guestKubeconfig.start();
  const guest = createKubeCluster(() => guestKubeconfig.current(), { metrics, logger, clock });
  // A live request: cached lists keep answering with the last state after the guest is gone.
  const probeGuest = async (): Promise<void> => {
    await guest.transport.request({ verb: 'get', kind: 'Version', method: 'GET', path: '/version' }).catch((e: unknown) => {
      // Only "cannot connect" counts towards releasing the finalizer: a slow, overloaded or misconfigured
      // guest still holds instances, so its errors are plain failures (retried, never a release).
      if (isConnectionFailure(e)) throw toCoreError(e, 'probing the guest API');
      throw new Error(`probing the guest API: ${describeError(toCoreError(e, 'probing the guest API'))}`, { cause: e });
    });
  };
  const events = new KubeEventRecorder({ transport: mgmt.transport, reportingInstance: 'hypershift-adapter', logger, metrics, clock });
  const base = { management: mgmt.store, guest: guest.store, namespace, ...(hcpName ? { hcpName } : {}) };
  const reconcilers: Reconciler[] = [
    new AutoNodeStatusReconciler(base),
    new HcpFinalizerReconciler({ ...base, clock, events, unreachableAfterMs, probeGuest }),
  ];
  // Who the adapter is in the guest, as the API server sees it: the one identity allowed to change the managed
  // NodeClass. Learnt lazily, forgotten when the kubeconfig changes (it may name another identity).
  let identity: Promise<string[] | undefined> | undefined;
  const guestIdentity = (): Promise<string[] | undefined> =>
    (identity ??= guest.transport
      .request<{ status?: { userInfo?: { username?: string } } }>({
        verb: 'create',
        kind: 'SelfSubjectReview',
        method: 'POST',
        path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
      })
      .then((r) => {
        const user = r.status?.userInfo?.username;
        if (!user) identity = undefined; // ask again next time
        return user ? [user] : undefined;
      })
      .catch((e: unknown) => {
        identity = undefined;
        logger.warn('cannot tell who this adapter is in the guest yet', { error: describeError(toCoreError(e, 'SelfSubjectReview')) });
        return undefined;
      }));
  if (hcpName) {
    // HyperShift's autoNode is AWS only. The sidecar uses the provider's pure NodeClass members, no CRDs or EC2.
    const cloud = providerFor('AWS', { crdDir: '' });
    reconcilers.push(
      new HcpDefaultNodeClassReconciler({ ...base, hcpName, events, cloud }),
      new NodeClassPolicyReconciler({ management: mgmt.store, guest: guest.store, namespace, hcpName, exempt: guestIdentity }),
    );
  }
  const runtime = new ControllerRuntime({
    reconcilers,
    caches: routeByCluster({ control: mgmt.informers, workload: guest.informers }),
    metrics,
    logger,
    clock,
  });
  guestKubeconfig.onChange(() => {
    identity = undefined;
    if (hcpName) runtime.enqueue(NODECLASS_POLICY_CONTROLLER, hcpName);
  });

  const manager = new Manager({ logger }).handleSignals();
  manager.addServer(
    await startHttpServer(healthAddr.host, healthAddr.port, {
      healthy: () => true,
      ready: () => (runtime.hasSynced() ? { ok: true, detail: 'ok' } : { ok: false, detail: 'caches not synced' }),
    }),
  );
  manager.addServer(
    await startHttpServer(metricsAddr.host, metricsAddr.port, {
      healthy: () => true,
      ready: () => ({ ok: true, detail: 'ok' }),
      metrics: () => metrics.text(),
    }),
  );
  manager
    .onStop('runtime', () => runtime.stop({ timeoutMs: 20_000 }))
    .onStop('events', () => events.close())
    .onStop('guest kubeconfig', () => guestKubeconfig.stop());
  logger.info('starting the hypershift adapter', {
    namespace,
    hcpName: hcpName ?? '(every HCP of the namespace)',
    controllers: reconcilers.map((r) => r.name),
    healthProbeBindAddress: `${healthAddr.host}:${healthAddr.port}`,
    metricsBindAddress: `${metricsAddr.host}:${metricsAddr.port}`,
  });

  runtime.startInformers();
  try {
    await runtime.waitForSync(manager.signal);
  } catch (e) {
    if (manager.signal.aborted) return manager.done;
    throw e;
  }
  await runtime.startWorkers();
  logger.info('caches synced; controllers running');
  return manager.done;
}

runMain('hypershift-adapter', () => main(process.argv.slice(2)));
