// The HyperShift sidecar adapter (images/hypershift-adapter.Containerfile). The operator runs the same
// controllers itself in management-cluster mode (hosted-controllers.ts), so by default this process runs
// none of them: it serves its probes and metrics and says so. `--run-controllers` runs them, for a pod
// whose operator predates that; never beside an operator that runs them, or both would write the same objects.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { systemClock, type Reconciler } from '@karpenter-operator/core';
import { DEFAULT_ADDRESSES, parseAdapterConfig } from './config.js';
import { guestCallsOver, hostedControllers, loadOpenshiftNodeClassCrd, type HostedControllers } from './hosted-controllers.js';
import { startHttpServer } from './http/server.js';
import {
  ControllerRuntime,
  createKubeCluster,
  ExitCodes,
  KubeEventRecorder,
  loadKubeConfig,
  Manager,
  routeByCluster,
  runMain,
  WatchedKubeConfig,
} from '@karpenter-operator/kube-runtime';
import { createLogger } from './observability/logger.js';
import { AllMetricDefinitions } from './observability/metric-definitions.js';
import { PromMetrics } from './observability/metrics.js';

const USAGE = `Usage: karpenter-operator-hypershift-adapter [run] --namespace NS --guest-kubeconfig FILE [--kubeconfig FILE] [--hcp-name NAME]
       [--metrics-bind-address [host]:port (${DEFAULT_ADDRESSES.adapter.metrics})] [--health-probe-bind-address [host]:port (${DEFAULT_ADDRESSES.adapter.health})]
       [--guest-unreachable-timeout DURATION (5m): how long the guest API may be unreachable during HCP deletion before the HCP finalizer goes]
       [--run-controllers]
The HyperShift sidecar adapter. The operator runs its controllers itself in management-cluster mode, so by default it
runs none and only serves its probes and metrics. With --run-controllers (for an operator that predates that; never
beside one that runs them) it runs them: HCP status.autoNode, the HCP finalizer when the guest is gone, and (with
--hcp-name) each OpenshiftEC2NodeClass translated into an EC2NodeClass with its ignition userData (guarded by a
ValidatingAdmissionPolicy).`;

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
  const events = new KubeEventRecorder({ transport: mgmt.transport, reportingInstance: 'hypershift-adapter', logger, metrics, clock });
  const hosted: HostedControllers | undefined = parsed.config.runControllers
    ? hostedControllers({
        management: mgmt.store,
        guest: guest.store,
        namespace,
        ...(hcpName ? { hcpName } : {}),
        events,
        clock,
        logger,
        guestCalls: guestCallsOver(guest.transport),
        unreachableAfterMs,
        // The OpenshiftEC2NodeClass CRD it serves in the guest, bundled beside adapter.js (build.mjs).
        ...(hcpName
          ? {
              openshiftNodeClassCrd: loadOpenshiftNodeClassCrd(
                process.env.KARPENTER_CRD_DIR ?? join(dirname(fileURLToPath(import.meta.url)), 'crds'),
              ),
            }
          : {}),
      })
    : undefined;
  const reconcilers: Reconciler[] = hosted?.reconcilers ?? [];
  const runtime = new ControllerRuntime({
    reconcilers,
    caches: routeByCluster({ control: mgmt.informers, workload: guest.informers }),
    metrics,
    logger,
    clock,
  });
  guestKubeconfig.onChange(() => hosted?.guestKubeconfigChanged((controller, key) => runtime.enqueue(controller, key)));

  const manager = new Manager({ logger }).handleSignals();
  manager.addServer(
    await startHttpServer(healthAddr.host, healthAddr.port, {
      healthy: () => true,
      ready: () => (runtime.hasSynced() ? { ok: true, detail: 'ok' } : { ok: false, detail: runtime.syncDetail() ?? 'caches not synced' }),
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
  if (!hosted)
    logger.info('running no controllers: the operator runs them in management-cluster mode (--run-controllers runs them here instead)');
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
