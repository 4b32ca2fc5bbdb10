// The HyperShift sidecar adapter (images/hypershift-adapter.Containerfile): the HCP-specific controllers of
// packages/topology-hypershift/src/sidecar. It talks to the operator only through Kubernetes objects.
import type { Server } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
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
import { DEFAULT_ADDRESSES, parseAddress } from './config.js';
import { providerFor } from './providers.js';
import { startHttpServer } from './http/server.js';
import { createKubeCluster, isConnectionFailure, KubeEventRecorder, loadKubeConfig, toCoreError, WatchedKubeConfig } from './kube/index.js';
import { createLogger } from './observability/logger.js';
import { PromMetrics } from './observability/metrics.js';
import { AllMetricDefinitions, ControllerRuntime, routeByCluster } from './runtime/index.js';

const USAGE = `Usage: karpenter-operator-hypershift-adapter [run] --namespace NS --guest-kubeconfig FILE [--kubeconfig FILE] [--hcp-name NAME]
       [--metrics-bind-address [host]:port (${DEFAULT_ADDRESSES.adapter.metrics})] [--health-probe-bind-address [host]:port (${DEFAULT_ADDRESSES.adapter.health})]
       [--guest-unreachable-timeout DURATION (5m): how long the guest API may be unreachable during HCP deletion before the HCP finalizer goes]
The HyperShift sidecar adapter: HCP status.autoNode, the HCP finalizer when the guest is gone, and (with --hcp-name)
EC2NodeClass default from ignition Secrets (guarded in the guest by a ValidatingAdmissionPolicy). The operand's
credentials Secret (karpenter-credentials) is HyperShift's own.`;

/** `90s`, `5m`, `1h` → milliseconds. */
function duration(flag: string, value: string, errors: string[]): number {
  const m = /^(\d+)(ms|s|m|h)$/.exec(value);
  if (!m) {
    errors.push(`${flag} must be a duration such as 30s or 5m, got ${JSON.stringify(value)}`);
    return 0;
  }
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h'];
}

async function main(argv: string[]): Promise<number> {
  const args = argv[0] === 'run' ? argv.slice(1) : argv;
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  const { values } = parseArgs({
    args,
    options: {
      namespace: { type: 'string' },
      kubeconfig: { type: 'string' },
      'guest-kubeconfig': { type: 'string' },
      'hcp-name': { type: 'string' },
      'metrics-bind-address': { type: 'string', default: DEFAULT_ADDRESSES.adapter.metrics },
      'health-probe-bind-address': { type: 'string', default: DEFAULT_ADDRESSES.adapter.health },
      'guest-unreachable-timeout': { type: 'string', default: '5m' },
    },
  });
  const errors: string[] = [];
  const { namespace, 'guest-kubeconfig': guestPath, 'hcp-name': hcpName } = values;
  if (!namespace) errors.push('--namespace is required');
  if (!guestPath) errors.push('--guest-kubeconfig is required');
  const metricsAddr = parseAddress('--metrics-bind-address', values['metrics-bind-address'], errors);
  const healthAddr = parseAddress('--health-probe-bind-address', values['health-probe-bind-address'], errors);
  const unreachableAfterMs = duration('--guest-unreachable-timeout', values['guest-unreachable-timeout'], errors);
  if (!namespace || !guestPath || errors.length) {
    process.stderr.write(`hypershift-adapter: cannot start: ${errors.join('; ')}\n`);
    return 1;
  }

  const logger = createLogger('info').child({ container: 'hypershift-adapter' });
  const metrics = new PromMetrics(AllMetricDefinitions);
  const clock = systemClock;
  const own = loadKubeConfig({ ...(values.kubeconfig ? { kubeconfig: values.kubeconfig } : {}), env: process.env });
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
    const crd = loadObjects(crdDir).find((o) => o.kind === 'CustomResourceDefinition' && o.metadata.name === OPENSHIFT_NODECLASS_CRD);
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

  const servers: Server[] = [
    await startHttpServer(healthAddr.host, healthAddr.port, {
      healthy: () => true,
      ready: () => (runtime.hasSynced() ? { ok: true, detail: 'ok' } : { ok: false, detail: 'caches not synced' }),
    }),
    await startHttpServer(metricsAddr.host, metricsAddr.port, {
      healthy: () => true,
      ready: () => ({ ok: true, detail: 'ok' }),
      metrics: () => metrics.text(),
    }),
  ];
  logger.info('starting the hypershift adapter', {
    namespace,
    hcpName: hcpName ?? '(every HCP of the namespace)',
    controllers: reconcilers.map((r) => r.name),
    healthProbeBindAddress: `${healthAddr.host}:${healthAddr.port}`,
    metricsBindAddress: `${metricsAddr.host}:${metricsAddr.port}`,
  });

  const aborted = new AbortController();
  let finish: (code: number) => void = () => {};
  const finished = new Promise<number>((resolve) => (finish = resolve));
  let stopping: Promise<void> | undefined;
  const stop = (why: string) =>
    (stopping ??= (async () => {
      logger.info('stopping', { reason: why });
      aborted.abort();
      await runtime.stop({ timeoutMs: 20_000 }).catch((e: unknown) => logger.error('stopping the runtime', { error: describeError(e) }));
      await events.close().catch(() => {});
      guestKubeconfig.stop();
      await Promise.all(servers.map((s) => new Promise((r) => s.close(() => r(undefined)))));
      finish(0);
    })());
  for (const sig of ['SIGTERM', 'SIGINT'] as const) process.once(sig, () => void stop(sig));

  runtime.startInformers();
  try {
    await runtime.waitForSync(aborted.signal);
  } catch (e) {
    if (aborted.signal.aborted) return finished;
    throw e;
  }
  await runtime.startWorkers();
  logger.info('caches synced; controllers running');
  return finished;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`hypershift-adapter: ${describeError(e)}\n`);
    process.exit(1);
  },
);
