import { isInvalidInputError } from '../errors.js';
import type { Clock } from '../ports/clock.js';
import type { CloudProvider } from '../ports/cloud-provider.js';
import type { Topology } from '../ports/topology.js';
import type { Reconciler, Result } from '../runtime/reconciler.js';
import { activeRequest, pendingCrds } from './crds/crds.js';

/**
 * Runs `inner` only while Karpenter is requested, not being torn down, supported on this platform, and its
 * CRDs are Established: NodeClasses, MachineConfigPools and CSR approval serve a running Karpenter only.
 * The gate watches what it depends on, so `inner` runs as soon as the gate opens.
 */
export function whileKarpenterRuns(inner: Reconciler, deps: { topology: Topology; cloud: CloudProvider; clock?: Clock }): Reconciler {
  // Reading four large cached CRDs for every reconcile costs real CPU when thousands of CSRs arrive at once
  // (a fresh operator reconciles every existing CSR): an "all Established" answer is reused for a second.
  let establishedUntil = 0;
  const crdsReady = async (): Promise<boolean> => {
    const now = deps.clock?.now();
    if (now !== undefined && now < establishedUntil) return true;
    const ready = (await pendingCrds(deps.topology, deps.cloud)).length === 0;
    if (ready && now !== undefined) establishedUntil = now + 1_000;
    return ready;
  };
  return {
    name: inner.name,
    watches: [...deps.topology.watches, ...inner.watches],
    keysFor: (obj) => inner.keysFor(obj),
    resyncKeys: () => inner.resyncKeys(),
    async reconcile(key: string): Promise<Result> {
      let request;
      try {
        request = await activeRequest(deps.topology, deps.cloud);
      } catch (e) {
        // A malformed request is reported by the status use-case; nothing here can act on it.
        if (isInvalidInputError(e)) return {};
        throw e;
      }
      if (!request) return {};
      if (!(await crdsReady())) return { requeueAfterMs: 2000 };
      return inner.reconcile(key);
    },
  };
}
