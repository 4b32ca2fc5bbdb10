export * from './model/kube.js';
export * from './model/names.js';
export * from './model/cluster.js';
export * from './errors.js';
export * from './ports/token.js';
export * from './ports/cluster-store.js';
export * from './ports/cloud-provider.js';
export * from './ports/unsupported-cloud-provider.js';
export * from './ports/topology.js';
export * from './ports/clock.js';
export * from './ports/logger.js';
export * from './ports/metrics.js';
export * from './ports/event-recorder.js';
export * from './runtime/reconciler.js';
export * from './runtime/finalizers.js';
export * from './policy/conditions.js';
export * from './policy/subset.js';
export * from './policy/ignition.js';
export * from './policy/status-fold.js';
export * from './policy/infrastructure.js';
export * from './use-cases/status-board.js';
export * from './topology/karpenter-cr.js';
export * from './topology/standalone.js';
export * from './use-cases/instrument.js';
export * from './use-cases/crds/crds.js';
export * from './use-cases/status/status.js';
export * from './use-cases/teardown/teardown.js';
export * from './policy/operand.js';
export * from './policy/operand-layout.js';
export * from './policy/operand-rbac.js';
export { operandOwnedWhole, operandPodLabels } from './policy/operand-deployment.js';
export * from './policy/openshift-pod.js';
export * from './policy/karpenter-settings.js';
export * from './policy/rbac.js';
export * from './policy/finalizers.js';
export * from './use-cases/operand/operand.js';
export * from './use-cases/interruption-queue/interruption-queue.js';
export * from './use-cases/gate.js';
export * from './use-cases/default-nodeclass/default-nodeclass.js';
export * from './use-cases/default-nodeclass/protected-fields.js';
export * from './use-cases/default-nodeclass/discovery-nodes.js';
export * from './use-cases/node-identity/node-identity.js';
export {
  CsrDecisionsMetric,
  CsrPendingMetric,
  CsrUnmatchedPendingMetric,
  NodeIdentityConditionType,
  NodeIdentityMetrics,
  NodeIdentityReasons,
} from './use-cases/node-identity/reporting.js';
export * from './use-cases/node-config/node-config.js';
export * from './use-cases/node-config/render.js';
export * from './policy/csr.js';
export * from './policy/csr-parse.js';
