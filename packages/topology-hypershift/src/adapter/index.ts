export { AutoNodeStatusReconciler, AUTONODE_STATUS_CONTROLLER, type AutoNodeStatusDeps } from './autonode-status.js';
export { HcpFinalizerReconciler, HCP_FINALIZER_CONTROLLER, type HcpFinalizerDeps } from './finalizer.js';
export { HcpDefaultNodeClassReconciler, HCP_DEFAULT_NODECLASS_CONTROLLER, EC2NODECLASS_CRD, ADAPTER_FIELD_MANAGER, type HcpDefaultNodeClassDeps } from './default-nodeclass.js';
export {
  HcpCredentialsReconciler,
  HCP_CREDENTIALS_CONTROLLER,
  CREDENTIALS_MANAGED_LABEL,
  WEB_IDENTITY_TOKEN_FILE,
  renderCredentialsSecret,
  webIdentityProfile,
  type HcpCredentialsDeps,
} from './credentials.js';
export {
  NodeClassPolicyReconciler,
  NODECLASS_POLICY_CONTROLLER,
  NODECLASS_POLICY_NAME,
  renderNodeClassPolicy,
  ValidatingAdmissionPolicyType,
  ValidatingAdmissionPolicyBindingType,
  type NodeClassPolicyDeps,
} from './nodeclass-policy.js';
