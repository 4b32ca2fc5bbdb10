import type { KubeObject } from '../../model/kube.js';
import { refOf, Types } from '../../model/kube.js';
import { Names } from '../../model/names.js';
import type { Clock } from '../../ports/clock.js';
import type { EventRecorder } from '../../ports/event-recorder.js';
import type { Logger } from '../../ports/logger.js';
import type { Topology } from '../../ports/topology.js';
import type { Reconciler, Result, Watch } from '../../runtime/reconciler.js';

export const TEARDOWN_KEY = 'teardown';

export interface TeardownDeps {
  topology: Topology;
  clock: Clock;
  events: EventRecorder;
  logger: Logger;
  /** After this long, NodeClaims still present get Karpenter's termination-timestamp annotation (forced drain). */
  forceAfterMs?: number;
  pollMs?: number;
}

/**
 * `karpenter.teardown`: owns the topology's `teardownFinalizer` on the request object. While Karpenter is
 * requested it makes sure the finalizer is there; once deletion is requested it deletes NodePools, waits for
 * NodeClaims to finish (Karpenter drains and terminates their instances), forces their drain after a
 * bound, then removes the operand and releases the finalizer. A request that keeps NodePools
 * (`keepNodePools`) skips straight to the operand: it deletes nothing in the workload cluster.
 *
 * It never abandons a NodeClaim (never strips its finalizers): while the cluster answers, its instance is
 * only gone once Karpenter says so. Giving up on a guest that no longer answers is decided outside (HyperShift
 * removes its finalizer itself; the sidecar adapter does when the guest API stays unreachable). Every
 * finalizer write carries the owner's resourceVersion (`finalizersPatch`).
 */
export class TeardownReconciler implements Reconciler {
  readonly name = 'karpenter.teardown';
  readonly watches: Watch[];

  constructor(private readonly deps: TeardownDeps) {
    this.watches = [...deps.topology.watches, { type: Types.NodePool }, { type: Types.NodeClaim }];
  }

  keysFor(): string[] {
    return [TEARDOWN_KEY];
  }

  async resyncKeys(): Promise<string[]> {
    return [TEARDOWN_KEY];
  }

  async reconcile(): Promise<Result> {
    const { topology, clock, events } = this.deps;
    const request = await topology.readRequest();
    if (!request) return {};
    const owner = request.owner;
    const ownerRef = {
      apiVersion: owner.apiVersion,
      kind: owner.kind,
      name: owner.name,
      ...(owner.namespace ? { namespace: owner.namespace } : {}),
    };
    const fin = topology.teardownFinalizer;
    if (!request.deleting) {
      if (!request.finalizers.includes(fin)) await topology.controlStore.updateFinalizers(ownerRef, { add: [fin] });
      return {};
    }
    if (!request.finalizers.includes(fin)) return {};

    const keep = request.keepNodePools === true;
    if (!keep) {
      const store = topology.workloadStore;
      const pools = await store.list(Types.NodePool);
      for (const p of pools) {
        if (await store.delete(refOf(p))) events.record(owner, 'Normal', 'DeletingNodePool', `Deleting NodePool ${p.metadata.name}`);
      }
      const claims = await store.list(Types.NodeClaim);
      const elapsed = clock.now() - (request.deletionRequestedAtMs ?? clock.now());
      if (claims.length) {
        await this.pushClaims(claims, request.forceTermination ? 'now' : elapsed);
        return { requeueAfterMs: this.deps.pollMs ?? 5000 };
      }
      if (pools.length) return { requeueAfterMs: this.deps.pollMs ?? 5000 };
      // NodePools and NodeClaims are gone; the owner's own deletion removes the operand and releases the finalizer.
      if (request.keepOwnerFinalizer) return {};
    }

    const dep = { ...Types.Deployment, namespace: topology.operandNamespace, name: Names.operandDeployment };
    // Foreground: the Deployment stays until its pods are gone, and only then is the finalizer released and
    // the operand's RBAC garbage-collected. In the other order Karpenter loses its Lease permissions while it
    // still runs ("leader election lost").
    if (await topology.controlStore.delete(dep, { propagation: 'Foreground' }))
      events.record(
        owner,
        'Normal',
        'DeletingOperand',
        keep ? 'Removing Karpenter; NodePools and NodeClaims stay' : 'NodeClaims are gone; removing Karpenter',
      );
    if (await topology.controlStore.get(dep)) return { requeueAfterMs: this.deps.pollMs ?? 5000 };

    await topology.controlStore.updateFinalizers(ownerRef, { remove: [fin] });
    events.record(
      owner,
      'Normal',
      'TeardownComplete',
      keep ? 'The operand is removed; NodePools and NodeClaims are left in place' : 'NodePools, NodeClaims and the operand are removed',
    );
    return {};
  }

  /**
   * Deletes every NodeClaim and, once `elapsedMs` passed the drain bound (or at once with `'now'`: the
   * cluster is being deleted), sets Karpenter's termination-timestamp annotation so that Karpenter stops
   * waiting for the drain and terminates the instance. The NodeClaims' finalizers stay Karpenter's.
   */
  private async pushClaims(claims: KubeObject[], elapsedMs: number | 'now'): Promise<void> {
    const { topology, clock, events } = this.deps;
    const store = topology.workloadStore;
    const owner = topology.statusObject;
    const force = elapsedMs === 'now' || elapsedMs >= (this.deps.forceAfterMs ?? 5 * 60_000);
    for (const c of claims) {
      const ref = refOf(c);
      if (await store.delete(ref)) events.record(owner, 'Normal', 'DeletingNodeClaim', `Deleting NodeClaim ${c.metadata.name}`);
      if (force && !c.metadata.annotations?.[Names.terminationAnnotation]) {
        await store.patch(ref, { metadata: { annotations: { [Names.terminationAnnotation]: new Date(clock.now()).toISOString() } } });
        const now = elapsedMs === 'now';
        events.record(
          owner,
          now ? 'Normal' : 'Warning',
          'ForcingNodeClaimTermination',
          now
            ? `The cluster is being deleted: terminating NodeClaim ${c.metadata.name} without waiting for its drain`
            : `NodeClaim ${c.metadata.name} did not terminate in time; forcing its drain`,
        );
      }
    }
  }
}
