import {
  DefaultNodeClassReconciler,
  NodeConfigReconciler,
  NodeIdentityReconciler,
  whileKarpenterRuns,
  type ClusterFacts,
  type CloudProvider,
  type Clock,
  type EventRecorder,
  type Logger,
  type Metrics,
  type Reconciler,
  type StatusBoard,
  type Topology,
} from '@karpenter-operator/core';

export interface NodeLifecycleInputs {
  topology: Topology;
  cloud: CloudProvider;
  board: StatusBoard;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  events: EventRecorder;
  facts: () => Promise<ClusterFacts>;
  /** The cluster's kubelet maxPods (OpenShift's default). */
  maxPods?: number;
  /** Which use-cases to run; default all three. */
  parts?: readonly NodeLifecyclePart[] | undefined;
}

export type NodeLifecyclePart = 'default-nodeclass' | 'node-config' | 'node-identity';
const ALL_PARTS: readonly NodeLifecyclePart[] = ['default-nodeclass', 'node-config', 'node-identity'];

/** The default NodeClass, MachineConfigPools and CSR approval: they run only while Karpenter does. */
export function nodeLifecycleReconcilers(i: NodeLifecycleInputs): Reconciler[] {
  const store = i.topology.workloadStore;
  const gate = (r: Reconciler) => whileKarpenterRuns(r, { topology: i.topology, cloud: i.cloud, clock: i.clock });
  const parts = new Set(i.parts ?? ALL_PARTS);
  const build: Record<NodeLifecyclePart, () => Reconciler> = {
    'default-nodeclass': () =>
      new DefaultNodeClassReconciler({
        store,
        cloud: i.cloud,
        facts: i.facts,
        clock: i.clock,
        events: i.events,
        logger: i.logger.child({ controller: 'ec2nodeclass.default' }),
        maxPods: i.maxPods ?? 250,
        board: i.board,
      }),
    'node-config': () =>
      new NodeConfigReconciler({
        store,
        nodeClassType: i.cloud.nodeClassType,
        nodeClassLabel: i.cloud.nodeClassLabel,
        clock: i.clock,
        events: i.events,
        logger: i.logger.child({ controller: 'machineconfigpool.node-config' }),
        upgradePolicy: 'MachineConfigOperator',
        board: i.board,
      }),
    'node-identity': () =>
      new NodeIdentityReconciler({
        store,
        cloud: i.cloud,
        facts: i.facts,
        clock: i.clock,
        events: i.events,
        metrics: i.metrics,
        logger: i.logger.child({ controller: 'certificatesigningrequest.node-identity' }),
        board: i.board,
      }),
  };
  return ALL_PARTS.filter((p) => parts.has(p)).map((p) => gate(build[p]()));
}
