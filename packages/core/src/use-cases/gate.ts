import { isInvalidInputError } from '../errors.js';
import type { Clock } from '../ports/clock.js';
import type { CloudProvider } from '../ports/cloud-provider.js';
import type { Topology } from '../ports/topology.js';
import type { Reconciler, Result } from '../runtime/reconciler.js';
import { closedResult, KarpenterGate } from './crds/crds.js';

/**
 * Runs `inner` only while the `KarpenterGate` is open (Karpenter requested, not being torn down, supported on
 * this platform, its CRDs Established): NodeClasses, MachineConfigPools and CSR approval serve a running
 * Karpenter only. The gate watches what it depends on, so `inner` runs as soon as the gate opens.
 */
export function whileKarpenterRuns(inner: Reconciler, deps: { topology: Topology; cloud: CloudProvider; clock?: Clock }): Reconciler {
  const gate = new KarpenterGate(deps);
  return {
    name: inner.name,
    watches: [...deps.topology.watches, ...inner.watches],
    keysFor: (obj) => inner.keysFor(obj),
    resyncKeys: () => inner.resyncKeys(),
    async reconcile(key: string): Promise<Result> {
      let state;
      try {
        state = await gate.check();
      } catch (e) {
        // A malformed request is reported by the status use-case; nothing here can act on it.
        if (isInvalidInputError(e)) return {};
        throw e;
      }
      if (!state.open) return closedResult(state);
      return inner.reconcile(key);
    },
  };
}
