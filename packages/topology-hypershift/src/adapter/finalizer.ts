import {
  isTransientError,
  Names,
  Types,
  type Clock,
  type ClusterStore,
  type EventRecorder,
  type KubeObject,
  type Reconciler,
  type Result,
  type Watch,
} from '@karpenter-operator/core';
import { decodeHostedControlPlane, HCP_KARPENTER_FINALIZER, HostedControlPlaneType } from '../hcp.js';

export const HCP_FINALIZER_CONTROLLER = 'hostedcontrolplane.finalizer';

export interface HcpFinalizerDeps {
  management: ClusterStore;
  guest: ClusterStore;
  namespace: string;
  hcpName?: string;
  clock: Clock;
  events: EventRecorder;
  /** How long the guest API may fail with transport errors during deletion before the finalizer is released. Default 5 minutes. */
  unreachableAfterMs?: number;
  /** Requeue while waiting. Default 10 s. */
  retryMs?: number;
  /**
   * A live request to the guest API (not a cache read): throws `TransientError` when the guest cannot be
   * reached. Cached lists keep answering with the last state when the guest is gone, so without a probe only
   * list failures count.
   */
  probeGuest?: () => Promise<void>;
}

/**
 * `hostedcontrolplane.finalizer`: keeps `hypershift.openshift.io/karpenter-finalizer` on an AutoNode HCP.
 * On deletion, or when AutoNode is turned off, it releases the finalizer only when the guest holds no
 * Karpenter capacity: no NodePools and no NodeClaims left (core's teardown in the operator deletes them and
 * drops its own finalizer). On deletion, when the guest API has failed with transport errors for longer than
 * `unreachableAfterMs`, it releases its finalizer and the operator's teardown finalizer (a teardown against
 * a guest that is gone cannot finish) with a Warning event saying cloud resources may be orphaned.
 */
export class HcpFinalizerReconciler implements Reconciler {
  readonly name = HCP_FINALIZER_CONTROLLER;
  readonly watches: Watch[];
  /** First transport failure of the guest per HCP uid during its deletion. */
  private readonly failingSince = new Map<string, number>();

  constructor(private readonly deps: HcpFinalizerDeps) {
    this.watches = [
      { type: HostedControlPlaneType, cluster: 'control', namespace: deps.namespace },
      { type: Types.NodePool },
      { type: Types.NodeClaim },
    ];
  }

  keysFor(obj: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }): string[] {
    if (obj.apiVersion === HostedControlPlaneType.apiVersion && obj.kind === HostedControlPlaneType.kind) {
      return this.deps.hcpName && obj.metadata.name !== this.deps.hcpName ? [] : [obj.metadata.name];
    }
    return this.deps.hcpName ? [this.deps.hcpName] : [];
  }

  async resyncKeys(): Promise<string[]> {
    const all = await this.deps.management.list(HostedControlPlaneType, { namespace: this.deps.namespace });
    return all.filter((h) => !this.deps.hcpName || h.metadata.name === this.deps.hcpName).map((h) => h.metadata.name);
  }

  async reconcile(key: string): Promise<Result> {
    const { management, guest, namespace, clock, events } = this.deps;
    const obj = await management.get<KubeObject>({ ...HostedControlPlaneType, namespace, name: key });
    if (!obj) return {};
    let hcp;
    try {
      hcp = decodeHostedControlPlane(obj);
    } catch {
      return {}; // reported by the operator; the watch wakes us when it is fixed
    }
    const has = hcp.finalizers.includes(HCP_KARPENTER_FINALIZER);
    // The finalizer list is replaced whole: only over the version it was read from (409 otherwise, retried),
    // so a finalizer another controller added or removed meanwhile is never undone.
    const rv = obj.metadata.resourceVersion;
    const precondition = rv ? { resourceVersion: rv } : {};
    if (!hcp.deleting && hcp.autoNode) {
      this.failingSince.delete(hcp.ref.uid);
      if (!has) await management.patch(hcp.ref, { metadata: { finalizers: [...hcp.finalizers, HCP_KARPENTER_FINALIZER], ...precondition } });
      return {};
    }
    if (!has) return {};
    const retry = this.deps.retryMs ?? 10_000;
    const release = (drop: string[]) => management.patch(hcp.ref, { metadata: { finalizers: hcp.finalizers.filter((f) => !drop.includes(f)), ...precondition } });
    let left: number;
    try {
      if (hcp.deleting) await this.deps.probeGuest?.();
      const [pools, claims] = await Promise.all([guest.list(Types.NodePool), guest.list(Types.NodeClaim)]);
      left = pools.length + claims.length;
    } catch (e) {
      if (!isTransientError(e) || !hcp.deleting) throw e;
      const now = clock.now();
      const since = this.failingSince.get(hcp.ref.uid) ?? now;
      this.failingSince.set(hcp.ref.uid, since);
      const bound = this.deps.unreachableAfterMs ?? 5 * 60_000;
      if (now - since < bound) return { requeueAfterMs: Math.min(retry, bound - (now - since)) };
      const dropped = [HCP_KARPENTER_FINALIZER, Names.karpenterFinalizer].filter((f) => hcp.finalizers.includes(f));
      events.record(
        hcp.ref,
        'Warning',
        'GuestUnreachable',
        `guest API unreachable for ${Math.round((now - since) / 1000)} s during deletion: released ${dropped.join(' and ')}; cloud resources (instances of NodeClaims) may be orphaned`,
      );
      await release(dropped);
      this.failingSince.delete(hcp.ref.uid);
      return {};
    }
    this.failingSince.delete(hcp.ref.uid);
    if (left > 0) return { requeueAfterMs: retry };
    events.record(hcp.ref, 'Normal', 'FinalizerReleased', `no NodePools or NodeClaims left in the guest: released ${HCP_KARPENTER_FINALIZER}`);
    await release([HCP_KARPENTER_FINALIZER]);
    return {};
  }
}
