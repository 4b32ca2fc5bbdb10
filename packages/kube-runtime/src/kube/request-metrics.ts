// Request and error counters around any transport.
import type { Metrics } from '@karpenter-operator/core/ports';
import { RuntimeMetrics } from '../runtime/metric-names.js';
import type { KubeRequest, KubeTransport, KubeWatchRequest, WatchHandle, WriteGate } from './transport.js';

/**
 * Counts every request and watch in `karpenter_operator_api_requests_total{verb,kind}` and failures in
 * `karpenter_operator_api_request_errors_total{verb,kind,code}`.
 */
export function withRequestMetrics(inner: KubeTransport, metrics: Metrics): KubeTransport {
  const failed = (verb: string, kind: string, e: unknown) => {
    const code = (e as { code?: unknown; statusCode?: unknown } | null)?.code;
    const status = typeof code === 'number' ? code : (e as { statusCode?: unknown } | null)?.statusCode;
    metrics.inc(RuntimeMetrics.apiErrors.name, { verb, kind, code: typeof status === 'number' ? String(status) : '0' });
  };
  return {
    ...(inner.fence ? { fence: (gate: WriteGate) => inner.fence!(gate) } : {}),
    async request<T = unknown>(req: KubeRequest): Promise<T> {
      metrics.inc(RuntimeMetrics.apiRequests.name, { verb: req.verb, kind: req.kind });
      try {
        return await inner.request<T>(req);
      } catch (e) {
        failed(req.verb, req.kind, e);
        throw e;
      }
    },
    async watch(req: KubeWatchRequest): Promise<WatchHandle> {
      metrics.inc(RuntimeMetrics.apiRequests.name, { verb: 'watch', kind: req.kind });
      try {
        return await inner.watch(req);
      } catch (e) {
        failed('watch', req.kind, e);
        throw e;
      }
    },
  };
}
