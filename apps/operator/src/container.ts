import 'reflect-metadata';
import { Container } from 'inversify';
import {
  ClockId,
  CloudProviderId,
  CrdsReconciler,
  EventRecorderId,
  instrument,
  LoggerId,
  MetricsId,
  InterruptionQueueReconciler,
  OperandReconciler,
  StandaloneTopology,
  StatusBoard,
  StatusReconciler,
  TeardownReconciler,
  token,
  TopologyId,
  type CloudProvider,
  type Clock,
  type ClusterStore,
  type KubeObject,
  type EventRecorder,
  type Logger,
  type Metrics,
  type OperatorSettings,
  type Reconciler,
  type Topology,
} from '@karpenter-operator/core';
import {
  GuestClusterStoreId,
  HyperShiftTopology,
  hypershiftTopologyModule,
  ManagementClusterStoreId,
  OperandPodMonitorReconciler,
} from '@karpenter-operator/topology-hypershift';
import type { OperatorConfig } from './config.js';
import { hostedControllers, type GuestCalls, type HostedControllers } from './hosted-controllers.js';
import { nodeLifecycleReconcilers } from './node-lifecycle.js';
import { providerModule, providerOptions } from './providers.js';

export const SettingsId = token<OperatorSettings>('OperatorSettings');
export const StatusBoardId = token<StatusBoard>('StatusBoard');
export const ReconcilersId = token<Reconciler[]>('Reconcilers');
export const ControlStoreId = token<ClusterStore>('ControlClusterStore');
/** Management-cluster mode: the hosted controllers folded into the operator (their reconcilers are in `ReconcilersId`). */
export const HostedControllersId = token<HostedControllers>('HostedControllers');

export interface ContainerInputs {
  config: OperatorConfig;
  /** Platform from Infrastructure (standalone) or PLATFORM (management-cluster mode). */
  platform: string;
  /** The cluster the operator runs in (standalone: the only one; management-cluster mode: the management cluster). */
  store: ClusterStore;
  /** Management-cluster mode: the guest cluster, from `--guest-kubeconfig`. */
  guestStore?: ClusterStore;
  events: EventRecorder;
  logger: Logger;
  metrics: Metrics;
  clock: Clock;
  /** Management-cluster mode: the UID HyperShift runs the HCP's pods as (`hostedControlPlaneRunAsUser`), if any. */
  hostedRunAsUser?: number;
  /** Management-cluster mode: the optional kinds the management cluster serves (`managementKindsServed`), checked at start-up. */
  hostedKinds?: { podMonitor: boolean; capiCluster: boolean; controlPlaneComponent: boolean };
  /**
   * Management-cluster mode: what the hosted controllers (hosted-controllers.ts) need beyond the stores: the
   * live guest calls and the OpenshiftEC2NodeClass CRD, read by the caller (I/O).
   */
  hostedControllers?: { guestCalls: GuestCalls; openshiftNodeClassCrd?: KubeObject | undefined };
  /** A topology other than standalone (HyperShift); built by the caller from its package. */
  topology?: (inputs: ContainerInputs, settings: OperatorSettings) => Topology;
}

/** The composition root: every binding of the operator in one place. Synchronous; no I/O. */
export function buildContainer(inputs: ContainerInputs): Container {
  const { config } = inputs;
  const c = new Container({ defaultScope: 'Singleton' });
  const settings: OperatorSettings = {
    namespace: config.namespace,
    releaseVersion: config.releaseVersion,
    operandImage: config.operandImageAws ?? '',
    crdDir: config.crdDir,
    ...(config.operatorImage ? { operatorImage: config.operatorImage } : {}),
    ...(config.tokenMinterImage ? { tokenMinterImage: config.tokenMinterImage } : {}),
    // In management-cluster mode CLUSTER_NAME is the HCP's infra ID, which the topology reads from the HCP
    // (and checks against CLUSTER_NAME): no override there.
    ...(config.clusterName && !config.managementCluster ? { clusterNameOverride: config.clusterName } : {}),
    ...(config.clusterEndpoint ? { clusterEndpointOverride: config.clusterEndpoint } : {}),
    ...(config.guestKubeconfigSecret ? { guestKubeconfigSecret: config.guestKubeconfigSecret } : {}),
    ...(config.proxyEnv ? { proxyEnv: Object.entries(config.proxyEnv).map(([name, value]) => ({ name, value })) } : {}),
  };
  c.bind(SettingsId).toConstantValue(settings);
  c.bind(ClockId).toConstantValue(inputs.clock);
  c.bind(LoggerId).toConstantValue(inputs.logger);
  c.bind(MetricsId).toConstantValue(inputs.metrics);
  c.bind(EventRecorderId).toConstantValue(inputs.events);
  c.bind(ControlStoreId).toConstantValue(inputs.store);
  c.bind(StatusBoardId).toConstantValue(new StatusBoard());
  const hosted = config.managementCluster;
  if (hosted) {
    if (!inputs.guestStore) throw new Error('management-cluster mode needs the guest cluster store (--guest-kubeconfig)');
    if (!config.hcpName)
      throw new Error('management-cluster mode needs the HostedControlPlane name (HCP_NAME, or found in the namespace at start-up)');
    if (!inputs.hostedControllers) throw new Error('management-cluster mode needs the guest calls and the OpenshiftEC2NodeClass CRD');
    c.bind(ManagementClusterStoreId).toConstantValue(inputs.store);
    c.bind(GuestClusterStoreId).toConstantValue(inputs.guestStore);
    // HyperShift's Deployment runs no adapter container: the operator runs the hosted controllers itself.
    c.bind(HostedControllersId).toConstantValue(
      hostedControllers({
        management: inputs.store,
        guest: inputs.guestStore,
        namespace: config.namespace,
        hcpName: config.hcpName,
        events: inputs.events,
        clock: inputs.clock,
        logger: inputs.logger,
        guestCalls: inputs.hostedControllers.guestCalls,
        openshiftNodeClassCrd: inputs.hostedControllers.openshiftNodeClassCrd,
        ...(config.guestUnreachableAfterMs !== undefined ? { unreachableAfterMs: config.guestUnreachableAfterMs } : {}),
      }),
    );
    c.load(
      hypershiftTopologyModule({
        namespace: config.namespace,
        hcpName: config.hcpName,
        // The operand's level (the HCP has no field for it); Karpenter knows no `warn`.
        logLevel: config.logLevel === 'warn' ? 'info' : config.logLevel,
        ...(inputs.hostedRunAsUser !== undefined ? { runAsUser: inputs.hostedRunAsUser } : {}),
        capiClusterServed: inputs.hostedKinds?.capiCluster ?? false,
        controlPlaneComponentServed: inputs.hostedKinds?.controlPlaneComponent ?? false,
        env: {
          clusterName: config.clusterName ?? '',
          clusterEndpoint: config.clusterEndpoint ?? '',
          platform: inputs.platform,
          ...(config.region ? { region: config.region } : {}),
        },
      }),
    );
  } else {
    c.bind(TopologyId).toResolvedValue(
      (store: ClusterStore, clock: Clock) =>
        inputs.topology
          ? inputs.topology(inputs, settings)
          : new StandaloneTopology({
              store,
              clock,
              namespace: config.namespace,
              ...(config.clusterName ? { clusterNameOverride: config.clusterName } : {}),
              ...(config.clusterEndpoint ? { clusterEndpointOverride: config.clusterEndpoint } : {}),
            }),
      [ControlStoreId, ClockId],
    );
  }
  c.load(providerModule(inputs.platform, providerOptions(config)));

  c.bind(ReconcilersId).toResolvedValue(
    (
      topology: Topology,
      cloud: CloudProvider,
      board: StatusBoard,
      clock: Clock,
      logger: Logger,
      metrics: Metrics,
      events: EventRecorder,
      s: OperatorSettings,
    ) => {
      const facts = () => topology.clusterFacts();
      const core: Reconciler[] = [
        new CrdsReconciler({ topology, cloud }),
        new OperandReconciler({ topology, cloud, settings: s, events, logger }),
        new TeardownReconciler({ topology, clock, events, logger }),
        // A hosted cluster has no Machine Config Operator, and its default NodeClass comes from the
        // ignition Secrets through the hosted controllers below: only node identity runs there.
        ...nodeLifecycleReconcilers({
          topology,
          cloud,
          board,
          clock,
          logger,
          metrics,
          events,
          facts,
          parts: hosted ? ['node-identity'] : undefined,
        }),
        // The interruption queue is a setting of the Karpenter CR, which only a standalone cluster has.
        ...(hosted ? [] : [new InterruptionQueueReconciler({ topology, cloud, board, logger })]),
        // HyperShift scrapes its control-plane components through PodMonitors in the HCP namespace.
        ...(topology instanceof HyperShiftTopology
          ? [new OperandPodMonitorReconciler({ topology, events, served: inputs.hostedKinds?.podMonitor ?? false })]
          : []),
        // HCP status.autoNode, the finalizer release, OpenshiftEC2NodeClasses: their failures (a 403 names
        // the verb and resource) fold into AutoNodeEnabled like every use-case's.
        ...(hosted ? c.get<HostedControllers>(HostedControllersId).reconcilers : []),
      ];
      const status = new StatusReconciler({ topology, cloud, settings: s, board });
      return [...core.map((r) => instrument(r, { board })), status];
    },
    [TopologyId, CloudProviderId, StatusBoardId, ClockId, LoggerId, MetricsId, EventRecorderId, SettingsId],
  );
  return c;
}
