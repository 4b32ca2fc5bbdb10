import {
  isTransientError,
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
 * `hostedcontrolplane.finalizer`: the adapter's one say over `hypershift.openshift.io/karpenter-finalizer`,
 * HyperShift's own finalizer, which the operator's teardown adds and removes (core `TeardownReconciler`
 * through `HyperShiftTopology.teardownFinalizer`). When the HCP is being deleted and the guest API has failed
 * with transport errors for longer than `unreachableAfterMs`, a teardown against a guest that is gone cannot
 * finish: it releases the finalizer with a Warning event saying cloud resources may be orphaned (what
 * HyperShift's hosted-cluster controller does when the guest's kube-apiserver is down). While the guest
 * answers it never releases anything: NodeClaims are not abandoned.
 */
export class HcpFinalizerReconciler implements Reconciler {
  readonly name = HCP_FINALIZER_CONTROLLER;
  readonly watches: Watch[];
  /** First transport failure of the guest per HCP uid during its deletion. */
  private readonly failingSince = new Map<string, number>();

  constructor(private readonly deps: HcpFinalizerDeps) {
    // NodePools and NodeClaims are watched for their caches (the reads that fail when the guest is gone).
    this.watches = [
      { type: HostedControlPlaneType, cluster: 'control', namespace: deps.namespace },
      { type: Types.NodePool },
      { type: Types.NodeClaim },
    ];
  }

  keysFor(obj: { apiVersion: string; kind: string; metadata: { name: string } }): string[] {
    if (obj.apiVersion !== HostedControlPlaneType.apiVersion || obj.kind !== HostedControlPlaneType.kind) return [];
    return this.deps.hcpName && obj.metadata.name !== this.deps.hcpName ? [] : [obj.metadata.name];
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
    if (!hcp.deleting || !hcp.finalizers.includes(HCP_KARPENTER_FINALIZER)) {
      this.failingSince.delete(hcp.ref.uid);
      return {};
    }
    const retry = this.deps.retryMs ?? 10_000;
    try {
      await this.deps.probeGuest?.();
      await Promise.all([guest.list(Types.NodePool), guest.list(Types.NodeClaim)]);
      // The guest answers: the operator's teardown finishes the job. Look again in a while: the guest may go away.
      this.failingSince.delete(hcp.ref.uid);
      return { requeueAfterMs: retry };
    } catch (e) {
      if (!isTransientError(e)) throw e;
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
  }
}
