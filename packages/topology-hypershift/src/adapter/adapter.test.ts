import { ConflictError, Names, TransientError, Types, type ClusterStore, type KubeObject } from '@karpenter-operator/core';
import { FakeClock, MemoryClusterStore, RecordingEvents } from '@karpenter-operator/core/testing';
import { describe, expect, it } from 'vitest';
import { HCP_KARPENTER_FINALIZER } from '../hcp.js';
import { AutoNodeStatusReconciler } from './autonode-status.js';
import { HcpFinalizerReconciler } from './finalizer.js';

const NS = 'clusters-demo';
const ROLE = 'arn:aws:iam::123456789012:role/karpenter';

function hcp(
  extra: { finalizers?: string[]; deletionTimestamp?: string; autoNode?: boolean; status?: Record<string, unknown> } = {},
): KubeObject {
  return {
    apiVersion: 'hypershift.openshift.io/v1beta1',
    kind: 'HostedControlPlane',
    metadata: {
      name: 'demo',
      namespace: NS,
      uid: 'u1',
      ...(extra.finalizers ? { finalizers: extra.finalizers } : {}),
      ...(extra.deletionTimestamp ? { deletionTimestamp: extra.deletionTimestamp } : {}),
    },
    spec: {
      infraID: 'demo-x',
      ...(extra.autoNode === false
        ? {}
        : { autoNode: { provisionerConfig: { name: 'Karpenter', karpenter: { platform: 'AWS', aws: { roleARN: ROLE } } } } }),
    },
    ...(extra.status ? { status: extra.status } : {}),
  };
}

const node = (name: string, pool = true): KubeObject => ({
  ...Types.Node,
  metadata: { name, ...(pool ? { labels: { 'karpenter.sh/nodepool': 'default' } } : {}) },
});
const claim = (name: string, nodeName: string, cpu: string): KubeObject => ({
  ...Types.NodeClaim,
  metadata: { name },
  status: { nodeName, capacity: { cpu } },
});

describe('AutoNodeStatusReconciler', () => {
  it('writes status.autoNode, keeps conditions, and writes nothing on a second reconcile', async () => {
    const conditions = [
      { type: 'Available', status: 'True', reason: 'AsExpected', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' },
    ];
    const management = new MemoryClusterStore([hcp({ status: { conditions, version: '4.20' } })]);
    const guest = new MemoryClusterStore([
      node('n1'),
      node('n2'),
      node('other', false),
      claim('c1', 'n1', '4'),
      claim('c2', 'n2', '3500m'),
      claim('c3', 'gone', '8'),
    ]);
    const r = new AutoNodeStatusReconciler({ management, guest, namespace: NS });
    expect(await r.resyncKeys()).toEqual(['demo']);
    await r.reconcile('demo');
    const got = await management.get({
      apiVersion: 'hypershift.openshift.io/v1beta1',
      kind: 'HostedControlPlane',
      namespace: NS,
      name: 'demo',
    });
    expect(got?.status).toEqual({ conditions, version: '4.20', autoNode: { nodeCount: 2, nodeClaimCount: 3, vcpus: 8 } });
    management.clearWrites();
    await r.reconcile('demo');
    await r.reconcile('*');
    expect(management.writes).toEqual([]);
    guest.remove({ ...Types.NodeClaim, name: 'c2' });
    expect(r.keysFor({ ...Types.NodeClaim, metadata: { name: 'c2' } })).toEqual(['*']);
    await r.reconcile('*');
    expect(management.writes.map((w) => w.body)).toEqual([{ autoNode: { nodeCount: 2, nodeClaimCount: 2, vcpus: 4 } }]);
  });

  it('leaves an HCP without AutoNode alone', async () => {
    const management = new MemoryClusterStore([hcp({ autoNode: false })]);
    const r = new AutoNodeStatusReconciler({ management, guest: new MemoryClusterStore([node('n1')]), namespace: NS });
    await r.reconcile('demo');
    expect(management.writes).toEqual([]);
  });
});

/** A guest store whose reads fail like a stopped API server. */
function unreachable(): ClusterStore {
  const base = new MemoryClusterStore();
  const fail = async (): Promise<never> => {
    throw new TransientError('connect ECONNREFUSED 127.0.0.1:6443');
  };
  return Object.assign(Object.create(base) as ClusterStore, { list: fail, get: fail });
}

/** The finalizer lists written, each checked to carry the resourceVersion it was read from (a precondition). */
function finalizerWrites(store: MemoryClusterStore): unknown[] {
  return store.writes.map((w) => {
    const meta = (w.body as { metadata: { finalizers: unknown; resourceVersion?: unknown } }).metadata;
    expect(typeof meta.resourceVersion, 'a finalizer write without its resourceVersion precondition').toBe('string');
    return meta.finalizers;
  });
}

describe('HcpFinalizerReconciler', () => {
  const deletedAt = '2026-01-01T00:00:00Z';
  const reconciler = (
    management: MemoryClusterStore,
    guest: ClusterStore,
    more: { clock?: FakeClock; events?: RecordingEvents; unreachableAfterMs?: number; probeGuest?: () => Promise<void> } = {},
  ) =>
    new HcpFinalizerReconciler({
      management,
      guest,
      namespace: NS,
      clock: more.clock ?? new FakeClock(),
      events: more.events ?? new RecordingEvents(),
      retryMs: 1_000,
      ...more,
    });

  it.each([
    { name: 'AutoNode on, no finalizer: the operator adds it, not the adapter', obj: hcp() },
    { name: 'AutoNode on, finalizer there', obj: hcp({ finalizers: [HCP_KARPENTER_FINALIZER] }) },
    {
      name: 'AutoNode off, finalizer there (the operator tears down)',
      obj: hcp({ finalizers: [HCP_KARPENTER_FINALIZER], autoNode: false }),
    },
  ])('never writes while the HCP is not being deleted: $name', async ({ obj }) => {
    const management = new MemoryClusterStore([obj]);
    expect(await reconciler(management, new MemoryClusterStore()).reconcile('demo')).toEqual({});
    expect(await reconciler(management, unreachable(), { unreachableAfterMs: 0 }).reconcile('demo')).toEqual({});
    expect(management.writes).toEqual([]);
  });

  it('never releases while the guest answers, however long the deletion takes and whatever the guest still holds: NodeClaims are not abandoned', async () => {
    const management = new MemoryClusterStore([hcp({ finalizers: [HCP_KARPENTER_FINALIZER, 'other'], deletionTimestamp: deletedAt })]);
    const guest = new MemoryClusterStore([claim('c1', 'n1', '2')]);
    const clock = new FakeClock();
    const r = reconciler(management, guest, { clock, unreachableAfterMs: 0 });
    for (let i = 0; i < 3; i++) {
      expect(await r.reconcile('demo')).toEqual({ requeueAfterMs: 1_000 });
      clock.advance(3_600_000);
    }
    guest.remove({ ...Types.NodeClaim, name: 'c1' });
    // Even with nothing left: the operator's teardown (operand removal) releases it, not the adapter.
    expect(await r.reconcile('demo')).toEqual({ requeueAfterMs: 1_000 });
    expect(management.writes).toEqual([]);
  });

  it('releases with a Warning only after the guest API has been unreachable for longer than the bound, over the resourceVersion it read', async () => {
    const management = new MemoryClusterStore([hcp({ finalizers: [HCP_KARPENTER_FINALIZER], deletionTimestamp: deletedAt })]);
    const clock = new FakeClock();
    const events = new RecordingEvents();
    const r = reconciler(management, unreachable(), { clock, events, unreachableAfterMs: 60_000 });
    expect((await r.reconcile('demo')).requeueAfterMs).toBeGreaterThan(0);
    clock.advance(59_000);
    expect((await r.reconcile('demo')).requeueAfterMs).toBe(1_000);
    expect(management.writes).toEqual([]);
    clock.advance(1_000);
    await r.reconcile('demo');
    expect(finalizerWrites(management)).toEqual([[]]);
    expect(events.events).toHaveLength(1);
    expect(events.events[0]).toMatchObject({ type: 'Warning', reason: 'GuestUnreachable' });
    expect(events.events[0]!.message).toMatch(/may be orphaned/);
    // The HCP is gone once its last finalizer is.
    expect(await r.reconcile('demo')).toEqual({});
  });

  it("with a cached guest that still lists claims, a failing live probe releases only HyperShift's finalizer after the bound", async () => {
    const management = new MemoryClusterStore([
      hcp({ finalizers: [Names.karpenterFinalizer, HCP_KARPENTER_FINALIZER, 'other'], deletionTimestamp: deletedAt }),
    ]);
    const guest = new MemoryClusterStore([claim('c1', 'n1', '4')]);
    const clock = new FakeClock();
    const events = new RecordingEvents();
    const probeGuest = async (): Promise<void> => {
      throw new TransientError('connect ECONNREFUSED 127.0.0.1:6443');
    };
    const r = reconciler(management, guest, { clock, events, unreachableAfterMs: 5_000, probeGuest });
    expect((await r.reconcile('demo')).requeueAfterMs).toBe(1_000);
    expect(management.writes).toEqual([]);
    clock.advance(5_000);
    await r.reconcile('demo');
    expect(finalizerWrites(management)).toEqual([[Names.karpenterFinalizer, 'other']]);
    expect(events.events.map((e) => [e.type, e.reason])).toEqual([['Warning', 'GuestUnreachable']]);
  });

  it('a guest that answers again resets the clock', async () => {
    const management = new MemoryClusterStore([hcp({ finalizers: [HCP_KARPENTER_FINALIZER], deletionTimestamp: deletedAt })]);
    const clock = new FakeClock();
    let down = true;
    const probeGuest = async (): Promise<void> => {
      if (down) throw new TransientError('connect ECONNREFUSED 127.0.0.1:6443');
    };
    const r = reconciler(management, new MemoryClusterStore(), { clock, unreachableAfterMs: 10_000, probeGuest });
    await r.reconcile('demo');
    clock.advance(9_000);
    down = false;
    await r.reconcile('demo');
    down = true;
    clock.advance(9_000);
    expect((await r.reconcile('demo')).requeueAfterMs).toBe(1_000);
    expect(management.writes).toEqual([]);
  });

  it('a release over a changed HCP is a conflict, not a lost finalizer', async () => {
    const management = new MemoryClusterStore([hcp({ finalizers: [HCP_KARPENTER_FINALIZER], deletionTimestamp: deletedAt })]);
    const read = (await management.get({
      apiVersion: 'hypershift.openshift.io/v1beta1',
      kind: 'HostedControlPlane',
      namespace: NS,
      name: 'demo',
    }))!;
    // Another controller adds its finalizer between our read and our write.
    const stale = Object.assign(Object.create(management) as MemoryClusterStore, { get: async () => read });
    management.seed({ ...read, metadata: { ...read.metadata, finalizers: [HCP_KARPENTER_FINALIZER, 'late'] } });
    const r = new HcpFinalizerReconciler({
      management: stale,
      guest: unreachable(),
      namespace: NS,
      clock: new FakeClock(),
      events: new RecordingEvents(),
      unreachableAfterMs: 0,
    });
    await expect(r.reconcile('demo')).rejects.toBeInstanceOf(ConflictError);
    const now = await management.get({
      apiVersion: 'hypershift.openshift.io/v1beta1',
      kind: 'HostedControlPlane',
      namespace: NS,
      name: 'demo',
    });
    expect(now?.metadata.finalizers).toEqual([HCP_KARPENTER_FINALIZER, 'late']);
  });
});
