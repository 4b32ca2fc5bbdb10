import { isInvalidInputError, isUnsupportedPlatformError } from '../errors.js';
import type { CloudProvider } from '../ports/cloud-provider.js';
import type { Topology } from '../ports/topology.js';
import type { Reconciler, Result } from '../runtime/reconciler.js';
import { pendingCrds } from './crds/crds.js';

/**
 * Runs `inner` only while Karpenter is requested, not being torn down, supported on this platform, and its
 * CRDs are Established: NodeClasses, MachineConfigPools and CSR approval serve a running Karpenter only.
 * The gate watches what it depends on, so `inner` runs as soon as the gate opens.
 */
export function whileKarpenterRuns(inner: Reconciler, deps: { topology: Topology; cloud: CloudProvider }): Reconciler {
  return {
    name: inner.name,
    watches: [...deps.topology.watches, ...inner.watches],
    keysFor: (obj) => inner.keysFor(obj),
    resyncKeys: () => inner.resyncKeys(),
    async reconcile(key: string): Promise<Result> {
      let request;
      try {
        request = await deps.topology.readRequest();
        deps.cloud.assertSupported();
      } catch (e) {
        if (isInvalidInputError(e) || isUnsupportedPlatformError(e)) return {};
        throw e;
      }
      if (!request || request.deleting) return {};
      if ((await pendingCrds(deps.topology, deps.cloud)).length) return { requeueAfterMs: 2000 };
      return inner.reconcile(key);
    },
  };
}
