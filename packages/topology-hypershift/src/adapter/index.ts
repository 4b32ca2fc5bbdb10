export { AutoNodeStatusReconciler, AUTONODE_STATUS_CONTROLLER, type AutoNodeStatusDeps } from './autonode-status.js';
export { HcpFinalizerReconciler, HCP_FINALIZER_CONTROLLER, type HcpFinalizerDeps } from './finalizer.js';
export {
  HcpDefaultNodeClassReconciler,
  HCP_DEFAULT_NODECLASS_CONTROLLER,
  EC2NODECLASS_CRD,
  ADAPTER_FIELD_MANAGER,
  type HcpDefaultNodeClassDeps,
} from './default-nodeclass.js';
export {
  NodeClassPolicyReconciler,
  NODECLASS_POLICY_CONTROLLER,
  NODECLASS_POLICY_NAME,
  renderNodeClassPolicy,
  ValidatingAdmissionPolicyType,
  ValidatingAdmissionPolicyBindingType,
  type NodeClassPolicyDeps,
} from './nodeclass-policy.js';
