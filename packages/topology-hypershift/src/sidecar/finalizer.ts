import { type Clock, type EventRecorder, type Reconciler, type Result, type Watch } from '@karpenter-operator/core';
import { HCP_KARPENTER_FINALIZER, HostedControlPlaneType } from '../hcp.js';
import { isGuestUnreachableError } from './guest.js';
import { HcpScope, type HcpScopeDeps } from './hcp-scope.js';

export const HCP_FINALIZER_CONTROLLER = 'hostedcontrolplane.finalizer';

export interface HcpFinalizerDeps extends HcpScopeDeps {
  clock: Clock;
  events: EventRecorder;
  /** How long the guest API may be unreachable during deletion before the finalizer is released. Default 5 minutes. */
  unreachableAfterMs?: number;
  /** Requeue while waiting. Default 10 s. */
  retryMs?: number;
  /**
   * A live request to the guest API (not a cache read: cached lists keep answering with the last state when
   * the guest is gone), `guestProbe`: throws `GuestUnreachableError` when the guest cannot be connected to.
   */
  probeGuest: () => Promise<void>;
}

/**
 * `hostedcontrolplane.finalizer`: the adapter's one say over `hypershift.openshift.io/karpenter-finalizer`,
 * HyperShift's own finalizer, which the operator's teardown adds and removes (core `TeardownReconciler`
 * through `HyperShiftTopology.teardownFinalizer`). When the HCP is being deleted and the guest API has been
 * unreachable (`GuestUnreachableError`) for longer than `unreachableAfterMs`, a teardown against a guest
 * that is gone cannot finish: it releases the finalizer with a Warning event saying cloud resources may be
 * orphaned (what HyperShift's hosted-cluster controller does when the guest's kube-apiserver is down).
 * While the guest answers, or fails in any other way, it never releases anything: NodeClaims are not
 * abandoned.
 */
export class HcpFinalizerReconciler implements Reconciler {
  readonly name = HCP_FINALIZER_CONTROLLER;
  readonly watches: Watch[];
  private readonly scope: HcpScope;
  /** First failure to connect to the guest per HCP uid during its deletion. */
  private readonly failingSince = new Map<string, number>();

  constructor(private readonly deps: HcpFinalizerDeps) {
    this.scope = new HcpScope(deps);
    this.watches = [{ type: HostedControlPlaneType, cluster: 'control', namespace: deps.namespace }];
  }

  keysFor(obj: { apiVersion: string; kind: string; metadata: { name: string } }): string[] {
    return this.scope.keysFor(obj, 'none');
  }

  resyncKeys(): Promise<string[]> {
    return this.scope.names();
  }

  reconcile(key: string): Promise<Result> {
    const { management, clock, events } = this.deps;
    return this.scope.each(key, async (hcp) => {
      if (!hcp.deleting || !hcp.finalizers.includes(HCP_KARPENTER_FINALIZER)) {
        this.failingSince.delete(hcp.ref.uid);
        return {};
      }
      const retry = this.deps.retryMs ?? 10_000;
      try {
        await this.deps.probeGuest();
        // The guest answers: the operator's teardown finishes the job. Look again in a while: the guest may go away.
        this.failingSince.delete(hcp.ref.uid);
        return { requeueAfterMs: retry };
      } catch (e) {
        if (!isGuestUnreachableError(e)) throw e;
      }
      const now = clock.now();
      const since = this.failingSince.get(hcp.ref.uid) ?? now;
      this.failingSince.set(hcp.ref.uid, since);
      const bound = this.deps.unreachableAfterMs ?? 5 * 60_000;
      if (now - since < bound) return { requeueAfterMs: Math.min(retry, bound - (now - since)) };
      events.record(
        hcp.ref,
        'Warning',
        'GuestUnreachable',
        `guest API unreachable for ${Math.round((now - since) / 1000)} s during deletion: released ${HCP_KARPENTER_FINALIZER}; cloud resources (instances of NodeClaims) may be orphaned`,
      );
      await management.updateFinalizers(hcp.ref, { remove: [HCP_KARPENTER_FINALIZER] });
      this.failingSince.delete(hcp.ref.uid);
      return {};
    });
  }
}
