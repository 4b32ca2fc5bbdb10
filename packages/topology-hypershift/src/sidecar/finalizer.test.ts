import { ConflictError, Names, TransientError } from '@karpenter-operator/core';
import { FakeClock, MemoryClusterStore, RecordingEvents } from '@karpenter-operator/core/testing';
import { describe, expect, it } from 'vitest';
import { aSidecarHostedControlPlane } from '../testing/builders.js';
import { HCP_KARPENTER_FINALIZER } from '../hcp.js';
import { GuestUnreachableError } from './guest.js';
import { HcpFinalizerReconciler } from './finalizer.js';

const NS = 'clusters-demo';

const hcp = aSidecarHostedControlPlane;

/** A probe of a guest that cannot be connected to. */
const unreachable = async (): Promise<never> => {
  throw new GuestUnreachableError('probing the guest API: connect ECONNREFUSED 127.0.0.1:6443');
};
const answers = async (): Promise<void> => {};

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
    probeGuest: () => Promise<void>,
    more: { clock?: FakeClock; events?: RecordingEvents; unreachableAfterMs?: number } = {},
  ) =>
    new HcpFinalizerReconciler({
      management,
      probeGuest,
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
    expect(await reconciler(management, answers).reconcile('demo')).toEqual({});
    expect(await reconciler(management, unreachable, { unreachableAfterMs: 0 }).reconcile('demo')).toEqual({});
    expect(management.writes).toEqual([]);
  });

  it('never releases while the guest answers, however long the deletion takes: NodeClaims are not abandoned', async () => {
    const management = new MemoryClusterStore([hcp({ finalizers: [HCP_KARPENTER_FINALIZER, 'other'], deletionTimestamp: deletedAt })]);
    const clock = new FakeClock();
    const r = reconciler(management, answers, { clock, unreachableAfterMs: 0 });
    for (let i = 0; i < 3; i++) {
      expect(await r.reconcile('demo')).toEqual({ requeueAfterMs: 1_000 });
      clock.advance(3_600_000);
    }
    // Even with nothing left: the operator's teardown (operand removal) releases it, not the adapter.
    expect(await r.reconcile('demo')).toEqual({ requeueAfterMs: 1_000 });
    expect(management.writes).toEqual([]);
  });

  it('releases with a Warning only after the guest API has been unreachable for longer than the bound, over the resourceVersion it read', async () => {
    const management = new MemoryClusterStore([hcp({ finalizers: [HCP_KARPENTER_FINALIZER], deletionTimestamp: deletedAt })]);
    const clock = new FakeClock();
    const events = new RecordingEvents();
    const r = reconciler(management, unreachable, { clock, events, unreachableAfterMs: 60_000 });
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

  it("releases only HyperShift's finalizer, keeping the others", async () => {
    const management = new MemoryClusterStore([
      hcp({ finalizers: [Names.karpenterFinalizer, HCP_KARPENTER_FINALIZER, 'other'], deletionTimestamp: deletedAt }),
    ]);
    const clock = new FakeClock();
    const events = new RecordingEvents();
    const r = reconciler(management, unreachable, { clock, events, unreachableAfterMs: 5_000 });
    expect((await r.reconcile('demo')).requeueAfterMs).toBe(1_000);
    expect(management.writes).toEqual([]);
    clock.advance(5_000);
    await r.reconcile('demo');
    expect(finalizerWrites(management)).toEqual([[Names.karpenterFinalizer, 'other']]);
    expect(events.events.map((e) => [e.type, e.reason])).toEqual([['Warning', 'GuestUnreachable']]);
  });

  it.each([
    { name: 'an unsynced cache (TransientError)', error: new TransientError('cache for karpenter.sh/v1 NodeClaim not synced') },
    { name: 'a guest that answers badly (Error)', error: new Error('probing the guest API: 503 Service Unavailable') },
  ])('$name is retried, never counted towards a release', async ({ error }) => {
    const management = new MemoryClusterStore([hcp({ finalizers: [HCP_KARPENTER_FINALIZER], deletionTimestamp: deletedAt })]);
    const clock = new FakeClock();
    const r = reconciler(management, async () => Promise.reject(error), { clock, unreachableAfterMs: 0 });
    for (let i = 0; i < 2; i++) {
      await expect(r.reconcile('demo')).rejects.toBe(error);
      clock.advance(3_600_000);
    }
    expect(management.writes).toEqual([]);
  });

  it('a guest that answers again resets the clock', async () => {
    const management = new MemoryClusterStore([hcp({ finalizers: [HCP_KARPENTER_FINALIZER], deletionTimestamp: deletedAt })]);
    const clock = new FakeClock();
    let down = true;
    const probeGuest = async (): Promise<void> => (down ? unreachable() : undefined);
    const r = reconciler(management, probeGuest, { clock, unreachableAfterMs: 10_000 });
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
      probeGuest: unreachable,
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
