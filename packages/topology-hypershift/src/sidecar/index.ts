// The HyperShift sidecar (`@karpenter-operator/topology-hypershift/sidecar`): the HCP-specific controllers
// that run beside the operator in an HCP namespace (apps/operator/src/adapter-main.ts composes them). They
// talk to the operator only through Kubernetes objects.
export { HcpScope, ALL_HCPS, type HcpScopeDeps } from './hcp-scope.js';
export {
  GuestUnreachableError,
  isGuestUnreachableError,
  guestProbe,
  GuestIdentity,
  type GuestProbeDeps,
  type SelfSubjectReviewStatus,
} from './guest.js';
export { AutoNodeStatusReconciler, AUTONODE_STATUS_CONTROLLER, type AutoNodeStatusDeps } from './autonode-status.js';
export { HcpFinalizerReconciler, HCP_FINALIZER_CONTROLLER, type HcpFinalizerDeps } from './finalizer.js';
export { EC2NODECLASS_CRD, ADAPTER_FIELD_MANAGER } from './names.js';
export {
  NodeClassPolicyReconciler,
  NODECLASS_POLICY_CONTROLLER,
  NODECLASS_POLICY_NAME,
  renderNodeClassPolicy,
  EC2NODECLASS_REFUSED_MESSAGE,
  ValidatingAdmissionPolicyType,
  ValidatingAdmissionPolicyBindingType,
  type NodeClassPolicyDeps,
} from './nodeclass-policy.js';
export {
  OpenshiftNodeClassReconciler,
  OPENSHIFT_NODECLASS_CONTROLLER,
  OPENSHIFT_NODECLASS_CRD,
  OPENSHIFT_NODECLASS_FINALIZER,
  OpenshiftEC2NodeClassType,
  OpenshiftNodeClassReasons,
  renderDefaultOpenshiftNodeClass,
  defaultNodeClassOwnedWhole,
  defaultSubnetTerms,
  defaultSecurityGroupTerms,
  translateOpenshiftNodeClass,
  translatedSpecOwnedWhole,
  TRANSLATED_SPEC_FIELDS,
  USERDATA_UP_TO_DATE_CONDITION,
  VERSION_RESOLVED_CONDITION,
  holdIgnitionDuringUpgrade,
  mirroredStatus,
  type IgnitionHold,
  type OpenshiftNodeClassDeps,
  type TranslationInput,
  type Translation,
} from './openshift-nodeclass.js';
export { controlPlaneUpgrade, releaseName, type ControlPlaneUpgrade, type Release } from './control-plane-release.js';
