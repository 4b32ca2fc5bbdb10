import { describeError } from '../errors.js';
import type { Reconciler, Result } from '../runtime/reconciler.js';
import type { StatusBoard } from './status-board.js';

/**
 * Wraps a reconciler so that its successes and failures reach the status board (Degraded after repeated
 * failures) without the use-case knowing. Errors are rethrown: the work queue owns what follows a
 * reconcile (backoff, the reconcile metrics and the failure log line), so nothing here counts or logs.
 */
export function instrument(inner: Reconciler, deps: { board: StatusBoard }): Reconciler {
  return {
    name: inner.name,
    watches: inner.watches,
    keysFor: (obj) => inner.keysFor(obj),
    resyncKeys: () => inner.resyncKeys(),
    async reconcile(key: string): Promise<Result> {
      try {
        const r = await inner.reconcile(key);
        deps.board.recordSuccess(inner.name);
        return r;
      } catch (e) {
        deps.board.recordFailure(inner.name, describeError(e));
        throw e;
      }
    },
  };
}
