export { AutoNodeStatusReconciler, AUTONODE_STATUS_CONTROLLER, type AutoNodeStatusDeps } from './autonode-status.js';
export { HcpFinalizerReconciler, HCP_FINALIZER_CONTROLLER, type HcpFinalizerDeps } from './finalizer.js';
