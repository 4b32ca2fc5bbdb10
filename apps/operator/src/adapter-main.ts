// The HyperShift sidecar adapter (images/hypershift-adapter.Containerfile): the HCP-specific controllers of
// packages/topology-hypershift/src/sidecar. It talks to the operator only through Kubernetes objects.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeError, systemClock, type Reconciler } from '@karpenter-operator/core';
import {
  AutoNodeStatusReconciler,
  GuestIdentity,
  guestProbe,
  HcpFinalizerReconciler,
  NODECLASS_POLICY_CONTROLLER,
  NodeClassPolicyReconciler,
  OPENSHIFT_NODECLASS_CRD,
  OpenshiftNodeClassReconciler,
  type SelfSubjectReviewStatus,
} from '@karpenter-operator/topology-hypershift/sidecar';
import { loadObjects } from './cli/load-objects.js';
import { DEFAULT_ADDRESSES, parseAdapterConfig } from './config.js';
import { providerFor } from './providers.js';
import { startHttpServer } from './http/server.js';
import {
  ControllerRuntime,
  createKubeCluster,
  ExitCodes,
  isConnectionFailure,
  KubeEventRecorder,
  loadKubeConfig,
  Manager,
  routeByCluster,
  runMain,
  toCoreError,
  WatchedKubeConfig,
} from '@karpenter-operator/kube-runtime';
import { createLogger } from './observability/logger.js';
import { AllMetricDefinitions } from './observability/metric-definitions.js';
import { PromMetrics } from './observability/metrics.js';

const USAGE = `Usage: karpenter-operator-hypershift-adapter [run] --namespace NS --guest-kubeconfig FILE [--kubeconfig FILE] [--hcp-name NAME]
       [--metrics-bind-address [host]:port (${DEFAULT_ADDRESSES.adapter.metrics})] [--health-probe-bind-address [host]:port (${DEFAULT_ADDRESSES.adapter.health})]
       [--guest-unreachable-timeout DURATION (5m): how long the guest API may be unreachable during HCP deletion before the HCP finalizer goes]
The HyperShift sidecar adapter: HCP status.autoNode, the HCP finalizer when the guest is gone, and (with --hcp-name)
each OpenshiftEC2NodeClass translated into an EC2NodeClass with its ignition userData (guarded by a ValidatingAdmissionPolicy). The operand's
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
    onActivity: metrics.loopActivity,
    ...(own.refreshCredentials ? { onUnauthorized: own.refreshCredentials } : {}),
  });
  // The guest kubeconfig is a mounted Secret that HyperShift rotates: re-read it, never restart for it.
  const guestKubeconfig = new WatchedKubeConfig(guestPath, { logger });
  await guestKubeconfig.start();
  const guest = createKubeCluster(() => guestKubeconfig.current(), { metrics, logger, clock, onActivity: metrics.loopActivity });
  const probeGuest = guestProbe({
    request: () => guest.transport.request({ verb: 'get', kind: 'Version', method: 'GET', path: '/version' }),
    isConnectionFailure,
    describe: (e) => describeError(toCoreError(e, 'GET /version')),
  });
  const events = new KubeEventRecorder({ transport: mgmt.transport, reportingInstance: 'hypershift-adapter', logger, metrics, clock });
  const base = { management: mgmt.store, guest: guest.store, namespace, ...(hcpName ? { hcpName } : {}) };
  const reconcilers: Reconciler[] = [
    new AutoNodeStatusReconciler(base),
    new HcpFinalizerReconciler({ ...base, clock, events, unreachableAfterMs, probeGuest }),
  ];
  const identity = new GuestIdentity({
    logger,
    selfSubjectReview: () =>
      guest.transport
        .request<SelfSubjectReviewStatus>({
          verb: 'create',
          kind: 'SelfSubjectReview',
          method: 'POST',
          path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
          body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
        })
        .catch((e: unknown) => {
          throw toCoreError(e, 'SelfSubjectReview');
        }),
  });
  if (hcpName) {
    // HyperShift's autoNode is AWS only. The sidecar uses the provider's pure NodeClass members, no CRDs or EC2.
    const cloud = providerFor('AWS', { crdDir: '' });
    // The OpenshiftEC2NodeClass CRD it serves in the guest, bundled beside adapter.js (build.mjs).
    const crdDir = process.env.KARPENTER_CRD_DIR ?? join(dirname(fileURLToPath(import.meta.url)), 'crds');
    // The build writes it as JSON too: read that file alone rather than parse every CRD in the directory.
    const bundled = join(crdDir, `${OPENSHIFT_NODECLASS_CRD.split('.').slice(1).join('.')}_${OPENSHIFT_NODECLASS_CRD.split('.')[0]}.json`);
    const crd = loadObjects(existsSync(bundled) ? bundled : crdDir).find(
      (o) => o.kind === 'CustomResourceDefinition' && o.metadata.name === OPENSHIFT_NODECLASS_CRD,
    );
    if (!crd) throw new Error(`CRD ${OPENSHIFT_NODECLASS_CRD} is missing from ${crdDir}`);
    const now = () => new Date(clock.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
    reconcilers.push(
      new OpenshiftNodeClassReconciler({ ...base, hcpName, events, cloud, crd, now }),
      new NodeClassPolicyReconciler({ management: mgmt.store, guest: guest.store, namespace, hcpName, exempt: () => identity.usernames() }),
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
    identity.forget();
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

  if (!(await runtime.syncInformers(manager.signal))) return manager.done;
  await runtime.startWorkers();
  logger.info('caches synced; controllers running');
  return manager.done;
}

runMain('hypershift-adapter', () => main(process.argv.slice(2)));
