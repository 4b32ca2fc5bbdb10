import type { MetricDefinition } from '@karpenter-operator/core/ports';

export type { MetricDefinition };

/**
 * Metrics the runtime and the Kubernetes adapters emit through the `Metrics` port, with their type,
 * labels and help text, so the Prometheus adapter registers them up front (one source of truth).
 */

export const RuntimeMetrics = {
  queueDepth: {
    name: 'karpenter_operator_workqueue_depth',
    type: 'gauge',
    help: 'Keys waiting in the work queue (not counting delayed and running keys).',
    labels: ['name'],
  },
  queueAdds: {
    name: 'karpenter_operator_workqueue_adds_total',
    type: 'counter',
    help: 'Keys added to the work queue (de-duplicated adds are not counted).',
    labels: ['name'],
  },
  queueRetries: {
    name: 'karpenter_operator_workqueue_retries_total',
    type: 'counter',
    help: 'Keys re-queued with backoff after a failed reconcile.',
    labels: ['name'],
  },
  queueLatency: {
    name: 'karpenter_operator_workqueue_queue_duration_seconds',
    type: 'histogram',
    help: 'Time a key waited in the queue before its reconcile started.',
    labels: ['name'],
  },
  workDuration: {
    name: 'karpenter_operator_workqueue_work_duration_seconds',
    type: 'histogram',
    help: 'Time a reconcile took.',
    labels: ['name'],
  },
  reconcileTotal: {
    name: 'karpenter_operator_reconcile_total',
    type: 'counter',
    help: 'Reconciles by controller and result (success, requeue, error, terminal).',
    labels: ['controller', 'result'],
  },
  reconcileErrors: {
    name: 'karpenter_operator_reconcile_errors_total',
    type: 'counter',
    help: 'Failed reconciles by controller (retried and terminal).',
    labels: ['controller'],
  },
  apiRequests: {
    name: 'karpenter_operator_api_requests_total',
    type: 'counter',
    help: 'Requests sent to the Kubernetes API server, by verb and kind.',
    labels: ['verb', 'kind'],
  },
  apiErrors: {
    name: 'karpenter_operator_api_request_errors_total',
    type: 'counter',
    help: 'Failed Kubernetes API requests, by verb, kind and HTTP code (0 = network error).',
    labels: ['verb', 'kind', 'code'],
  },
  apiWritesSkipped: {
    name: 'karpenter_operator_api_writes_skipped_total',
    type: 'counter',
    help: 'Writes not sent because the cache already showed the desired state.',
    labels: ['verb', 'kind'],
  },
  informerRestarts: {
    name: 'karpenter_operator_informer_restarts_total',
    type: 'counter',
    help: 'Informer watch restarts by kind and reason (error, gone, stale).',
    labels: ['kind', 'reason'],
  },
  informerSynced: {
    name: 'karpenter_operator_informer_synced',
    type: 'gauge',
    help: '1 once the informer of a kind has listed at least once.',
    labels: ['kind'],
  },
  informerObjects: {
    name: 'karpenter_operator_informer_objects',
    type: 'gauge',
    help: 'Objects held in the informer cache of a kind.',
    labels: ['kind'],
  },
  leader: {
    name: 'karpenter_operator_leader',
    type: 'gauge',
    help: '1 while this replica holds the leader Lease.',
    labels: ['lease'],
  },
  leaderTransitions: {
    name: 'karpenter_operator_leader_transitions_total',
    type: 'counter',
    help: 'Times this replica acquired or lost the leader Lease.',
    labels: ['lease', 'event'],
  },
  metricsSelfSigned: {
    name: 'karpenter_operator_metrics_self_signed_certificate',
    type: 'gauge',
    help: '1 while /metrics is served with a self-signed certificate because the service-ca serving certificate is missing or unreadable.',
    labels: [],
  },
  eventsDropped: {
    name: 'karpenter_operator_events_failed_total',
    type: 'counter',
    help: 'Kubernetes Events that could not be written.',
    labels: [],
  },
} as const satisfies Record<string, MetricDefinition>;
