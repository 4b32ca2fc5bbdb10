/** Names that OpenShift, the CVO and must-gather look for. One definition; install/ is checked against it. */
export const Names = {
  operatorNamespace: 'openshift-karpenter',
  operatorDeployment: 'karpenter-operator',
  operatorServiceAccount: 'karpenter-operator',
  leaderLease: 'karpenter-operator.openshift.io',
  fieldManager: 'karpenter-operator',
  /** Field manager used only when the operator creates a NodeClass's user-owned defaults. */
  defaultsFieldManager: 'karpenter-operator-defaults',
  clusterOperator: 'karpenter',
  karpenterCr: 'default',
  karpenterCrd: 'karpenters.autoscaling.openshift.io',
  karpenterFinalizer: 'karpenter.autoscaling.openshift.io/teardown',
  operandDeployment: 'karpenter',
  operandServiceAccount: 'karpenter',
  operandLeaderLease: 'karpenter-leader-election',
  credentialsSecret: 'karpenter-cloud-credentials',
  nodeIdentityCredentialsSecret: 'karpenter-node-identity-credentials',
  /** ConfigMap the cluster network operator fills with the cluster's trusted CA bundle (key `ca-bundle.crt`). */
  trustedCaBundle: 'karpenter-trusted-ca-bundle',
  credentialsRequestNamespace: 'openshift-cloud-credential-operator',
  defaultNodeClass: 'default',
  managedLabel: 'karpenter-operator.openshift.io/managed',
  machineApiNamespace: 'openshift-machine-api',
  mcoNamespace: 'openshift-machine-config-operator',
  bootImagesConfigMap: 'coreos-bootimages',
  infrastructure: 'cluster',
  nodeBootstrapperUser: 'system:serviceaccount:openshift-machine-config-operator:node-bootstrapper',
  registrationTaintKubeletConfig: 'set-karpenter-taint',
  /**
   * Marks the image selector a NodeClass holds while its MachineConfigPool does not serve the registration
   * taint yet (`CloudProvider.launchHold`); the value names the pool. No image carries it.
   */
  launchHoldKey: 'karpenter-operator.openshift.io/awaiting-machineconfigpool',
  nodePoolLabel: 'karpenter.sh/nodepool',
  terminationAnnotation: 'karpenter.sh/nodeclaim-termination-timestamp',
  featureGate: 'KarpenterOperator',
} as const;

export const poolNameFor = (nodeClass: string): string => `karpenter-${nodeClass}`;
