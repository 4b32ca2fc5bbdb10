import type { OperandLayout } from '../policy/operand-layout.js';

/**
 * A two-cluster operand layout for tests of core: pods in `namespace` of the control cluster acting as
 * `kube-system/karpenter` on the workload cluster through a kubeconfig Secret, one replica, no placement of
 * its own. Real topologies give their own (`Topology.operandLayout`).
 */
export function twoClusterOperandLayout(namespace: string): OperandLayout {
  return {
    podServiceAccount: { namespace, name: 'karpenter' },
    apiIdentity: { namespace: 'kube-system', name: 'karpenter' },
    singleCluster: false,
    leaderElection: false,
    guestKubeconfigSecret: 'workload-kubeconfig',
    pod: { priorityClassName: 'control-plane', annotations: {}, credentialVolumes: [] },
  };
}
