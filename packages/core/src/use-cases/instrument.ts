import { describeError, isTerminalError } from '../errors.js';
import type { Clock } from '../ports/clock.js';
import type { Logger } from '../ports/logger.js';
import type { Metrics } from '../ports/metrics.js';
import type { Reconciler, Result } from '../runtime/reconciler.js';
import type { StatusBoard } from './status-board.js';

/**
 * Wraps a reconciler so that its successes and failures reach the status board (Degraded after repeated
 * failures) and metrics, without the use-case knowing. Errors are rethrown for the queue's backoff.
 */
export function instrument(inner: Reconciler, deps: { board: StatusBoard; metrics: Metrics; clock: Clock; logger: Logger }): Reconciler {
  return {
    name: inner.name,
    watches: inner.watches,
    keysFor: (obj) => inner.keysFor(obj),
    resyncKeys: () => inner.resyncKeys(),
    async reconcile(key: string): Promise<Result> {
      const start = deps.clock.now();
      const labels = { controller: inner.name };
      try {
        const r = await inner.reconcile(key);
        deps.board.recordSuccess(inner.name);
        deps.metrics.inc('karpenter_operator_reconcile_total', { ...labels, result: 'success' });
        return r;
      } catch (e) {
        const msg = describeError(e);
        deps.board.recordFailure(inner.name, msg);
        deps.metrics.inc('karpenter_operator_reconcile_total', { ...labels, result: isTerminalError(e) ? 'terminal' : 'error' });
        deps.logger.warn('reconcile failed', { controller: inner.name, key, error: msg });
        throw e;
      } finally {
        deps.metrics.observe('karpenter_operator_reconcile_duration_seconds', (deps.clock.now() - start) / 1000, labels);
      }
    },
  };
}
