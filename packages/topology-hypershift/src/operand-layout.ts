import { operandPodServiceAccount, Names, type OperandLayout, type OperatorSettings } from '@karpenter-operator/core';

/** Names the operand's layout on a hosted control plane uses. */
export const HcpOperandNames = {
  /**
   * The guest kubeconfig Secret in the HCP namespace when `OperatorSettings.guestKubeconfigSecret` is unset:
   * HyperShift keeps the guest's admin kubeconfig for control-plane components (reaching the guest API
   * through the `kube-apiserver` Service) under this name, key `kubeconfig`.
   */
  defaultGuestKubeconfigSecret: 'service-network-admin-kubeconfig',
  /** The guest namespace of the ServiceAccount Karpenter acts as (its web-identity token is minted for it). */
  guestIdentityNamespace: 'kube-system',
  /** HyperShift's priority class for control-plane workloads. */
  priorityClassName: 'hypershift-control-plane',
  /**
   * `FEATURE_GATES` as HyperShift's AutoNode Deployment sets it. Karpenter v1 has Drift always on and
   * ignores gates it does not know, keeping its defaults for the rest.
   */
  featureGates: 'Drift=true',
} as const;

/**
 * The operand on a hosted control plane: pods in the HCP namespace of the management cluster, the guest
 * reached through the guest kubeconfig Secret, identity `kube-system/karpenter` on the guest, one replica
 * without leader election, HyperShift's control-plane priority, and no node selector or tolerations of
 * its own (the HCP namespace's scheduling applies). Nothing of the management cluster's credentials is
 * mounted: the web-identity token is the guest ServiceAccount's. Pure.
 */
export function hcpOperandLayout(namespace: string, settings: Pick<OperatorSettings, 'guestKubeconfigSecret'>): OperandLayout {
  return {
    podServiceAccount: operandPodServiceAccount(namespace),
    apiIdentity: { namespace: HcpOperandNames.guestIdentityNamespace, name: Names.operandServiceAccount },
    singleCluster: false,
    leaderElection: false,
    guestKubeconfigSecret: settings.guestKubeconfigSecret ?? HcpOperandNames.defaultGuestKubeconfigSecret,
    featureGates: HcpOperandNames.featureGates,
    pod: { priorityClassName: HcpOperandNames.priorityClassName, annotations: {}, credentialVolumes: [] },
  };
}
