import type { ConditionInput } from '../../policy/conditions.js';
import type { CsrDecisionReason } from '../../policy/csr.js';
import type { MetricDefinition } from '../../ports/metrics.js';

export const NodeIdentityConditionType = 'NodeIdentityHealthy';
export const NodeIdentityReasons = {
  AsExpected: 'AsExpected',
  TooManyPendingCSRs: 'TooManyPendingCSRs',
  /** Healthy: Karpenter CSRs are approved, and pending CSRs that match no Karpenter instance are ignored. */
  UnmatchedCSRsPending: 'UnmatchedCSRsPending',
  /** The cloud refused the operator's instance lookups, or its credentials are unusable: nothing can be approved. */
  InstanceLookupRefused: 'InstanceLookupRefused',
} as const;
export const CsrDecisionsMetric = 'karpenter_operator_csr_decisions_total';
export const CsrPendingMetric = 'karpenter_operator_csr_pending';
export const CsrUnmatchedPendingMetric = 'karpenter_operator_csr_unmatched_pending';

/** The metrics this use-case emits, for the Prometheus adapter to register up front. */
export const NodeIdentityMetrics = {
  decisions: {
    name: CsrDecisionsMetric,
    type: 'counter',
    help: "Decisions on kubelet CSRs (approve, ignore, wait) by reason, counted once per change of a CSR's decision.",
    labels: ['outcome', 'reason'],
  },
  pending: {
    name: CsrPendingMetric,
    type: 'gauge',
    help: 'Pending kubelet CSRs that could still be approved: one per node name of a Karpenter instance not registered yet, or of a Karpenter Node (the number the approval cap compares).',
    labels: [],
  },
  unmatched: {
    name: CsrUnmatchedPendingMetric,
    type: 'gauge',
    help: 'Pending kubelet CSRs whose node name matches no Karpenter instance or Node (left to cluster-machine-approver or an administrator; never counted toward the approval cap).',
    labels: [],
  },
} as const satisfies Record<string, MetricDefinition>;
/** Ignore reasons that mean "someone else's node", not "suspicious": recorded as Normal events. */
export const NotOursReasons = new Set<CsrDecisionReason>([
  'NoMatchingNodeClaim',
  'NodeNotManagedByKarpenter',
  'NodeAlreadyExists',
  'NodeClientRenewal',
]);
/** Bucketed so that the condition's message, and so the status, does not change with every CSR. */
const atLeast = (n: number): number => (n >= 1000 ? 1000 : n >= 100 ? 100 : n >= 10 ? 10 : n);

export function nodeIdentityCondition(
  overloaded: boolean,
  bound: number,
  census: { approvable: number; unmatched: number },
): ConditionInput {
  if (overloaded) {
    return {
      type: NodeIdentityConditionType,
      status: 'False',
      reason: NodeIdentityReasons.TooManyPendingCSRs,
      message: `more than ${bound} approvable kubelet CSRs are pending; approvals are paused until they are approved, denied or expire`,
    };
  }
  if (census.unmatched > 0) {
    const n = atLeast(census.unmatched);
    return {
      type: NodeIdentityConditionType,
      status: 'True',
      reason: NodeIdentityReasons.UnmatchedCSRsPending,
      message:
        `Kubelet CSRs of Karpenter nodes are being approved; ${n === census.unmatched ? n : `at least ${n}`} pending kubelet CSR(s) match no ` +
        `Karpenter instance and are left to cluster-machine-approver or an administrator (metric ${CsrUnmatchedPendingMetric})`,
    };
  }
  return {
    type: NodeIdentityConditionType,
    status: 'True',
    reason: NodeIdentityReasons.AsExpected,
    message: 'Kubelet CSRs of Karpenter nodes are being approved',
  };
}

/**
 * The condition while instance lookups fail for a reason that retrying does not cure (credentials refused
 * or unusable): without an answer from the cloud no kubelet CSR is approved, so an admin must act.
 */
export function instanceLookupRefusedCondition(error: string): ConditionInput {
  return {
    type: NodeIdentityConditionType,
    status: 'False',
    reason: NodeIdentityReasons.InstanceLookupRefused,
    message: `Kubelet CSRs of Karpenter nodes cannot be approved: the instance lookup failed: ${error}`,
  };
}
