import {
  decodeInfrastructure,
  isInvalidInputError,
  ManagedCrdsWatch,
  Names,
  STATUS_KEY,
  systemClock,
  Types,
  type EventRecorder,
  type EventType,
  type KubeObject,
  type Logger,
  type ObjectRef,
  type Reconciler,
  type Clock,
  type StatusBoard,
} from '@karpenter-operator/core';
import { platformRequirements, type OperatorConfig } from '../config.js';
import { metricsServiceHostnames } from '../manifests/monitoring.js';
import { buildContainer, HostedControllersId, ReconcilersId, StatusBoardId } from '../container.js';
import { guestCallsOver, loadOpenshiftNodeClassCrd, type HostedControllers } from '../hosted-controllers.js';
import { hostedControlPlaneName, hostedControlPlaneRunAsUser, managementKindsServed } from './hosted-control-plane.js';
import { startSecureMetricsServer } from '../http/secure-metrics.js';
import { clusterEgressProblems, readIfPresent } from '../egress.js';
import { startHttpServer } from '../http/server.js';
import {
  createKubeCluster,
  createKubeTransport,
  KubeEventRecorder,
  LeaderElector,
  leaderIdentity,
  loadKubeConfig,
  openshiftElectionTiming,
  toCoreError,
  WatchedKubeConfig,
  type KubeCluster,
  type KubeTransport,
  routeByCluster,
  type CacheFactory,
  retryDelay,
  startupBackoff,
  ControllerRuntime,
  ExitCodes,
  Manager,
  sleep,
  systemTimers,
  type Timers,
} from '@karpenter-operator/kube-runtime';
import { createLogger } from '../observability/logger.js';
import { AllMetricDefinitions } from '../observability/metric-definitions.js';
import { PromMetrics } from '../observability/metrics.js';

/** The status-board entry of the proxy and CA check. */
const CLUSTER_EGRESS_ENTRY = 'cluster-egress';

/**
 * Reads the platform once at start-up (it never changes on a running cluster). A missing or incomplete
 * Infrastructure does not crash the operator: it runs with no provider and reports the field at fault. A
 * read that fails (an overloaded API server's 429, a 401 until a rotated token is read, a network error)
 * is retried for as long as it takes, honouring `Retry-After`, while the process stays up and not ready;
 * only `signal` (SIGTERM) ends the wait, with `undefined`. Also returns the control-plane topology, which
 * picks the leader-election timings.
 */
async function detectPlatform(
  transport: KubeTransport,
  logger: Logger,
  opts: { signal: AbortSignal; clock: Clock; timers?: Timers; onRetry(reason: string): void },
): Promise<{ platform: string; controlPlaneTopology?: string } | undefined> {
  for (let failures = 1; !opts.signal.aborted; failures++) {
    try {
      const infra = await transport.request<KubeObject>({
        verb: 'get',
        kind: 'Infrastructure',
        method: 'GET',
        path: `/apis/config.openshift.io/v1/infrastructures/${Names.infrastructure}`,
      });
      const facts = decodeInfrastructure(infra);
      return { platform: facts.platform, ...(facts.controlPlaneTopology ? { controlPlaneTopology: facts.controlPlaneTopology } : {}) };
    } catch (e) {
      if (isInvalidInputError(e)) {
        logger.error('cannot tell the platform; no provider is loaded until Infrastructure is fixed', { error: e.message });
        return { platform: `invalid: ${e.message}` };
      }
      const reason = toCoreError(e, `reading Infrastructure ${Names.infrastructure}`).message;
      const delay = retryDelay(failures, startupBackoff, e, opts.clock.now());
      const fields = { attempt: failures, retryInMs: delay, error: reason };
      if (failures < 5) logger.warn('start-up read failed; retrying', fields);
      else logger.error('start-up read keeps failing; retrying', fields);
      opts.onRetry(reason);
      await sleep(opts.timers ?? systemTimers, delay, opts.signal);
    }
  }
  return undefined;
}

/**
 * A start-up read of management-cluster mode (the HCP's name, its UID, the kinds served), retried like
 * `detectPlatform`'s: a refused (403), throttled or failed read keeps the process up and not ready, its
 * /readyz detail and log naming the request and the error, rather than a crash loop. A wrong answer
 * (`InvalidInputError`: no HCP, several) is still a start-up error. `undefined`: stopped while waiting.
 */
async function startupRead<T>(
  what: string,
  read: () => Promise<T>,
  logger: Logger,
  opts: { signal: AbortSignal; clock: Clock; onRetry(reason: string): void },
): Promise<{ value: T } | undefined> {
  for (let failures = 1; !opts.signal.aborted; failures++) {
    try {
      return { value: await read() };
    } catch (e) {
      if (isInvalidInputError(e)) throw e;
      const reason = toCoreError(e, what).message;
      const delay = retryDelay(failures, startupBackoff, e, opts.clock.now());
      const fields = { attempt: failures, retryInMs: delay, error: reason };
      if (failures < 5) logger.warn('start-up read failed; retrying', fields);
      else logger.error('start-up read keeps failing; retrying', fields);
      opts.onRetry(reason);
      await sleep(systemTimers, delay, opts.signal);
    }
  }
  return undefined;
}

/** Restarts the process when the platform seen in Infrastructure differs from the one the provider was chosen for. */
function platformWatch(platform: string, onChange: (next: string) => void): Reconciler {
  return {
    name: 'infrastructure.platform',
    watches: [{ type: Types.Infrastructure, fieldSelector: `metadata.name=${Names.infrastructure}` }],
    keysFor: (obj) => {
      try {
        const next = decodeInfrastructure(obj as KubeObject).platform;
        if (next !== platform) onChange(next);
      } catch {
        // Still invalid: nothing to restart for.
      }
      return [];
    },
    resyncKeys: async () => [],
    reconcile: async () => ({}),
  };
}

/**
 * Management-cluster mode records Events where the object lives: objects of the HCP namespace (the HCP, the
 * operand Deployment) on the management cluster, the rest (CSRs, NodeClaims, NodeClasses) in the guest.
 */
class ClusterRoutedEvents implements EventRecorder {
  constructor(
    private readonly control: KubeEventRecorder,
    private readonly workload: KubeEventRecorder,
    private readonly controlNamespace: string,
  ) {}

  record(regarding: ObjectRef & { uid?: string }, type: EventType, reason: string, message: string): void {
    (regarding.namespace === this.controlNamespace ? this.control : this.workload).record(regarding, type, reason, message);
  }

  async close(): Promise<void> {
    await Promise.all([this.control.close(), this.workload.close()]);
  }
}

/** Names this replica on every request (the audit log tells replicas of one ServiceAccount apart by it). */
const replicaUserAgent = (config: OperatorConfig): string => `karpenter-operator/${config.releaseVersion} (${config.podName})`;

/** The guest cluster of management-cluster mode; its kubeconfig file is re-read when the Secret rotates. */
async function guestCluster(
  config: OperatorConfig,
  deps: { metrics: PromMetrics; logger: Logger },
): Promise<{ cluster: KubeCluster; kubeconfig: WatchedKubeConfig }> {
  const kubeconfig = new WatchedKubeConfig(config.guestKubeconfig!, { logger: deps.logger });
  await kubeconfig.start();
  kubeconfig.onChange(() =>
    deps.logger.info('guest kubeconfig changed; new requests and watches use it', { path: config.guestKubeconfig }),
  );
  return {
    cluster: createKubeCluster(() => kubeconfig.current(), {
      metrics: deps.metrics,
      logger: deps.logger,
      clock: systemClock,
      userAgent: replicaUserAgent(config),
      onActivity: deps.metrics.loopActivity,
      informer: { crdWatch: ManagedCrdsWatch },
    }),
    kubeconfig,
  };
}

export async function runOperator(config: OperatorConfig, env: Record<string, string | undefined>): Promise<number> {
  const logger = createLogger(config.logLevel);
  const metrics = new PromMetrics(AllMetricDefinitions);
  const clock = systemClock;
  const { config: kc, source, refreshCredentials } = loadKubeConfig({ kubeconfig: config.kubeconfig, env });
  const onUnauthorized = refreshCredentials
    ? () => {
        const changed = refreshCredentials();
        if (changed) logger.info('the API server refused the ServiceAccount token; re-read a rotated one');
        return changed;
      }
    : undefined;
  const cluster = createKubeCluster(kc, {
    metrics,
    logger,
    clock,
    userAgent: replicaUserAgent(config),
    onActivity: metrics.loopActivity,
    informer: { crdWatch: ManagedCrdsWatch },
    ...(onUnauthorized ? { onUnauthorized } : {}),
  });
  const identity = leaderIdentity(config.podName);
  logger.info('starting karpenter-operator', { version: config.releaseVersion, namespace: config.namespace, kubeconfig: source, identity });

  // Assigned once the platform is known; the probes and stop() run before that.
  const live: { runtime?: ControllerRuntime; waitingFor?: string } = {};
  let elector: LeaderElector | undefined;
  // SIGTERM while start-up waits for the API server: a clean exit, not a wait for the next retry.
  const manager = new Manager({ logger }).handleSignals();

  manager.addServer(
    await startHttpServer(config.healthProbeBindAddress.host, config.healthProbeBindAddress.port, {
      healthy: () => true,
      ready: () => {
        if (!live.runtime) return { ok: false, detail: live.waitingFor ?? 'starting' };
        if (!live.runtime.hasSynced()) return { ok: false, detail: live.runtime.syncDetail() ?? 'caches not synced' };
        return { ok: true, detail: elector && !elector.isLeader() ? 'standby' : 'leading' };
      },
    }),
  );
  const metricsHandlers = { healthy: () => true, ready: () => ({ ok: true, detail: 'ok' }), metrics: () => metrics.text() };
  manager.addServer(
    config.metricsSecure
      ? await startSecureMetricsServer(
          {
            ...config.metricsBindAddress,
            certDir: config.metricsCertDir,
            hostnames: metricsServiceHostnames(config.namespace),
            // Not the cluster's transport: leader election fences that one's writes, and the reviews are creates.
            transport: createKubeTransport(kc, {
              metrics,
              userAgent: replicaUserAgent(config),
              ...(onUnauthorized ? { onUnauthorized } : {}),
            }),
            clock,
            logger,
            metrics,
          },
          metricsHandlers,
        )
      : await startHttpServer(config.metricsBindAddress.host, config.metricsBindAddress.port, metricsHandlers),
  );

  const detected = config.managementCluster
    ? { platform: config.platform! }
    : await detectPlatform(cluster.transport, logger, { signal: manager.signal, clock, onRetry: (reason) => (live.waitingFor = reason) });
  if (detected === undefined) return manager.done;
  const { platform, controlPlaneTopology } = detected;
  live.waitingFor = undefined;
  const missing = platformRequirements(config, platform);
  if (missing.length) {
    // A refusal to start, like a bad flag: one line, exit 2 (the platform is only known here).
    const why = `missing settings for platform ${platform}: ${missing.join('; ')}`;
    process.stderr.write(`karpenter-operator: cannot start: ${why}\n`);
    return manager.stop(ExitCodes.usage, why);
  }

  const guest = config.managementCluster ? await guestCluster(config, { metrics, logger }) : undefined;
  const controlEvents = new KubeEventRecorder({ transport: cluster.transport, reportingInstance: identity, logger, metrics, clock });
  const events = guest
    ? new ClusterRoutedEvents(
        controlEvents,
        new KubeEventRecorder({ transport: guest.cluster.transport, reportingInstance: identity, logger, metrics, clock }),
        config.namespace,
      )
    : controlEvents;
  const caches: CacheFactory = guest
    ? routeByCluster({ control: cluster.informers, workload: guest.cluster.informers })
    : cluster.informers;
  const retrying = { signal: manager.signal, clock, onRetry: (reason: string) => (live.waitingFor = reason) };
  let hcpName: string | undefined;
  let runAsUser: number | undefined;
  let hostedKinds: Awaited<ReturnType<typeof managementKindsServed>> | undefined;
  if (guest) {
    const ns = config.namespace;
    const name = await startupRead(
      `listing hostedcontrolplanes in ${ns}`,
      () => hostedControlPlaneName(cluster.transport, ns, config.hcpName),
      logger,
      retrying,
    );
    const uid =
      name &&
      (await startupRead(
        `reading the UID of ${ns}`,
        () => hostedControlPlaneRunAsUser(cluster.transport, ns, logger, config.podName),
        logger,
        retrying,
      ));
    const kinds =
      uid &&
      (await startupRead('discovering the optional kinds', () => managementKindsServed(cluster.transport, logger), logger, retrying));
    if (!kinds) return manager.done;
    live.waitingFor = undefined;
    hcpName = name.value;
    runAsUser = uid.value;
    hostedKinds = kinds.value;
  }
  if (guest)
    logger.info('management-cluster mode', {
      namespace: config.namespace,
      guestKubeconfig: config.guestKubeconfig,
      hcp: hcpName,
      runAsUser,
      ...hostedKinds,
    });
  const container = buildContainer({
    config: hcpName ? { ...config, hcpName } : config,
    ...(runAsUser !== undefined ? { hostedRunAsUser: runAsUser } : {}),
    ...(hostedKinds ? { hostedKinds } : {}),
    platform,
    store: cluster.store,
    ...(guest
      ? {
          guestStore: guest.cluster.store,
          hostedControllers: {
            guestCalls: guestCallsOver(guest.cluster.transport),
            // Bundled beside main.js with Karpenter's CRDs (build.mjs); absent from an image built without it.
            openshiftNodeClassCrd: openshiftNodeClassCrd(config.crdDir, logger),
          },
        }
      : {}),
    events,
    logger,
    metrics,
    clock,
  });
  const board = container.get<StatusBoard>(StatusBoardId);
  // A malformed proxy or CA bundle: Degraded naming it, and the operator keeps running (calls go direct).
  const egress = clusterEgressProblems(env, readIfPresent);
  if (egress.length) logger.error('the cluster-wide proxy or trusted CA bundle is unusable', { problems: egress });
  board.setCondition(
    CLUSTER_EGRESS_ENTRY,
    egress.length ? { type: 'ClusterEgressValid', status: 'False', reason: 'InvalidClusterEgress', message: egress.join('; ') } : undefined,
  );
  // Stop order: the workers first (no write after this), then what they used, then the Lease (released only
  // when still held: after a lost lease another replica may hold it already).
  manager
    .onStop('runtime', () => live.runtime?.stop({ timeoutMs: 20_000 }))
    .onStop('events', () => events.close())
    .onStop('guest kubeconfig', () => guest?.kubeconfig.stop())
    .onStop('leader election', (code) => (code !== ExitCodes.lostLease ? elector?.stop() : undefined));
  const reconcilers = [
    ...container.get<Reconciler[]>(ReconcilersId),
    // The platform of a hosted cluster is configuration (PLATFORM), not the management cluster's Infrastructure.
    ...(config.managementCluster
      ? []
      : [
          platformWatch(
            platform,
            (next) =>
              void manager.stop(ExitCodes.platformChanged, `platform changed from ${platform} to ${next}: restarting to load its provider`),
          ),
        ]),
  ];
  const runtime = new ControllerRuntime({
    reconcilers,
    caches,
    metrics,
    logger,
    clock,
    concurrency: { 'certificatesigningrequest.node-identity': 8 },
  });
  live.runtime = runtime;
  if (guest) {
    const hosted = container.get<HostedControllers>(HostedControllersId);
    guest.kubeconfig.onChange(() => hosted.guestKubeconfigChanged((controller, key) => runtime.enqueue(controller, key)));
  }
  board.onChange(() => runtime.enqueue('clusteroperator.status', STATUS_KEY));

  if (!(await runtime.syncInformers(manager.signal))) return manager.done;
  logger.info('caches synced');
  if (config.leaderElect) {
    const timing = config.leaderElectionTiming ?? openshiftElectionTiming(controlPlaneTopology);
    logger.info('leader election', {
      ...timing,
      controlPlaneTopology,
      source: config.leaderElectionTiming ? 'flags' : 'control-plane topology',
    });
    elector = new LeaderElector({
      transport: cluster.transport,
      namespace: config.namespace,
      identity,
      timing,
      clock,
      logger,
      metrics,
      onStartedLeading: () => {
        logger.info('became leader');
        void runtime.startWorkers();
      },
      onStoppedLeading: () => {
        // Another replica may lead already: stop writing at once.
        logger.error('lost the leader lease; exiting');
        void manager.stop(ExitCodes.lostLease, 'lost lease');
      },
    });
    // The guest's writes (CSR approvals, teardown, Events) are fenced by the same Lease: its path never
    // matches the Lease's, so they pass only while this replica leads on a fresh renewal.
    const lease = elector;
    guest?.cluster.transport.fence?.((req) => lease.writeRefusal(req));
    elector.start();
  } else {
    await runtime.startWorkers();
  }
  return manager.done;
}

/** The OpenshiftEC2NodeClass CRD the image bundles; without it the translation is off, said once, loudly. */
function openshiftNodeClassCrd(crdDir: string, logger: Logger): KubeObject | undefined {
  const crd = loadOpenshiftNodeClassCrd(crdDir);
  if (!crd)
    logger.error(
      'this image bundles no OpenshiftEC2NodeClass CRD: OpenshiftEC2NodeClass default and its translation into EC2NodeClasses are off',
      { crdDir },
    );
  return crd;
}
