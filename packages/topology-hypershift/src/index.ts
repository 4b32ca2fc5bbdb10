export {
  decodeHostedControlPlane,
  HostedControlPlaneType,
  HcpAnnotations,
  HCP_KARPENTER_FINALIZER,
  HCP_INVALID_REASON,
  ROLE_ARN_PATTERN,
  type AutoNodeConfig,
  type HostedControlPlane,
} from './hcp.js';
export {
  HyperShiftTopology,
  ManagementClusterStoreId,
  GuestClusterStoreId,
  AUTONODE_CONDITION,
  COMPONENT_CONDITION,
  AutoNodeReasons,
  autoNodeCondition,
  autoNodeLifecycle,
  soleHostedControlPlaneName,
  CapiClusterType,
  hostedClusterDeletion,
  type HostedClusterDeletion,
  type HyperShiftEnv,
  type HyperShiftTopologyOptions,
} from './hypershift-topology.js';
export {
  nodeClassInputsFromSecrets,
  mergeNodeClassTags,
  ignitionSecretWatch,
  nodePoolAnnotationFor,
  IgnitionLabels,
  IgnitionAnnotations,
  IGNITION_NODEPOOL_SUFFIX,
  IGNITION_INVALID_REASON,
  IGNITION_MISSING_REASON,
  type NodeClassInput,
  type NodeClassInputOptions,
  type TagMerge,
} from './ignition.js';
export {
  hcpDeploymentAnnotations,
  hcpOperandLayout,
  hcpRunAsUser,
  hcpScheduling,
  HcpOperandNames,
  HcpPodConventions,
  tokenMinterSidecar,
} from './operand-layout.js';
export {
  OperandPodMonitorReconciler,
  OPERAND_PODMONITOR_CONTROLLER,
  PodMonitorType,
  renderOperandPodMonitor,
  CLUSTER_ID_LABEL,
  type OperandPodMonitorDeps,
} from './podmonitor.js';
export {
  ControlPlaneComponentType,
  ComponentConditions,
  ComponentReasons,
  OPERAND_COMPONENT,
  OPERATOR_COMPONENT,
  operandComponentStatus,
  autoNodeComponentsPending,
  type ComponentResource,
  type ComponentStatus,
} from './control-plane-component.js';
export { autoNodeStatus, cpuCores, type AutoNodeStatus } from './status.js';
export { hypershiftTopologyModule, HyperShiftTopologyId, type HyperShiftTopologyModuleOptions } from './module.js';
