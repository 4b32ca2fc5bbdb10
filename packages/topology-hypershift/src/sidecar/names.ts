/** The EC2NodeClass CRD the operator installs in the guest; the sidecar waits for it. */
export const EC2NODECLASS_CRD = 'ec2nodeclasses.karpenter.k8s.aws';
/** Field manager of the sidecar's writes in the guest. */
export const ADAPTER_FIELD_MANAGER = 'karpenter-operator-hypershift-adapter';
