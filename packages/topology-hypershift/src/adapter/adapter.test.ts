import { Names, TransientError, Types, type ClusterStore, type KubeObject } from '@karpenter-operator/core';
import { FakeClock, MemoryClusterStore, RecordingEvents } from '@karpenter-operator/core/testing';
import { describe, expect, it } from 'vitest';
import { HCP_KARPENTER_FINALIZER } from '../hcp.js';
import { AutoNodeStatusReconciler } from './autonode-status.js';
import { HcpFinalizerReconciler } from './finalizer.js';

const NS = 'clusters-demo';
const ROLE = 'arn:aws:iam::123456789012:role/karpenter';

function hcp(extra: { finalizers?: string[]; deletionTimestamp?: string; autoNode?: boolean; status?: Record<string, unknown> } = {}): KubeObject {
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
      ...(extra.autoNode === false ? {} : { autoNode: { provisionerConfig: { name: 'Karpenter', karpenter: { platform: 'AWS', aws: { roleARN: ROLE } } } } }),
    },
    ...(extra.status ? { status: extra.status } : {}),
  };
}

const node = (name: string, pool = true): KubeObject => ({ ...Types.Node, metadata: { name, ...(pool ? { labels: { 'karpenter.sh/nodepool': 'default' } } : {}) } });
const claim = (name: string, nodeName: string, cpu: string): KubeObject => ({ ...Types.NodeClaim, metadata: { name }, status: { nodeName, capacity: { cpu } } });

describe('AutoNodeStatusReconciler', () => {
  it('writes status.autoNode, keeps conditions, and writes nothing on a second reconcile', async () => {
    const conditions = [{ type: 'Available', status: 'True', reason: 'AsExpected', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' }];
    const management = new MemoryClusterStore([hcp({ status: { conditions, version: '4.20' } })]);
    const guest = new MemoryClusterStore([node('n1'), node('n2'), node('other', false), claim('c1', 'n1', '4'), claim('c2', 'n2', '3500m'), claim('c3', 'gone', '8')]);
    const r = new AutoNodeStatusReconciler({ management, guest, namespace: NS });
    expect(await r.resyncKeys()).toEqual(['demo']);
    await r.reconcile('demo');
    const got = await management.get({ apiVersion: 'hypershift.openshift.io/v1beta1', kind: 'HostedControlPlane', namespace: NS, name: 'demo' });
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

  it('adds the finalizer when AutoNode is enabled, once', async () => {
    const management = new MemoryClusterStore([hcp()]);
    const r = new HcpFinalizerReconciler({ management, guest: new MemoryClusterStore(), namespace: NS, clock: new FakeClock(), events: new RecordingEvents() });
    await r.reconcile('demo');
    expect(finalizerWrites(management)).toEqual([[HCP_KARPENTER_FINALIZER]]);
    management.clearWrites();
    await r.reconcile('demo');
    expect(management.writes).toEqual([]);
  });

  it('does not add it when AutoNode is off', async () => {
    const management = new MemoryClusterStore([hcp({ autoNode: false })]);
    const r = new HcpFinalizerReconciler({ management, guest: new MemoryClusterStore(), namespace: NS, clock: new FakeClock(), events: new RecordingEvents() });
    await r.reconcile('demo');
    expect(management.writes).toEqual([]);
  });

  it('waits while the guest still has NodePools or NodeClaims (core teardown is at work), releases once they are gone', async () => {
    const management = new MemoryClusterStore([hcp({ finalizers: [HCP_KARPENTER_FINALIZER, 'other'], deletionTimestamp: deletedAt })]);
    const guest = new MemoryClusterStore([claim('c1', 'n1', '2')]);
    const events = new RecordingEvents();
    const r = new HcpFinalizerReconciler({ management, guest, namespace: NS, clock: new FakeClock(), events });
    expect((await r.reconcile('demo')).requeueAfterMs).toBeGreaterThan(0);
    expect(management.writes).toEqual([]);
    guest.remove({ ...Types.NodeClaim, name: 'c1' });
    await r.reconcile('demo');
    expect(finalizerWrites(management)).toEqual([['other']]);
    expect(events.events.map((e) => [e.type, e.reason])).toEqual([['Normal', 'FinalizerReleased']]);
    management.clearWrites();
    await r.reconcile('demo');
    expect(management.writes).toEqual([]);
  });

  it('releases with a Warning only after the guest API has been unreachable for longer than the bound', async () => {
    const management = new MemoryClusterStore([hcp({ finalizers: [HCP_KARPENTER_FINALIZER], deletionTimestamp: deletedAt })]);
    const clock = new FakeClock();
    const events = new RecordingEvents();
    const r = new HcpFinalizerReconciler({ management, guest: unreachable(), namespace: NS, clock, events, unreachableAfterMs: 60_000 });
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

  it('with a cached guest that still lists claims, a failing live probe releases both finalizers after the bound, with a Warning', async () => {
    const management = new MemoryClusterStore([hcp({ finalizers: [Names.karpenterFinalizer, HCP_KARPENTER_FINALIZER, 'other'], deletionTimestamp: deletedAt })]);
    const guest = new MemoryClusterStore([claim('c1', 'n1', '4')]);
    const clock = new FakeClock();
    const events = new RecordingEvents();
    const probeGuest = async (): Promise<void> => {
      throw new TransientError('connect ECONNREFUSED 127.0.0.1:6443');
    };
    const r = new HcpFinalizerReconciler({ management, guest, namespace: NS, clock, events, unreachableAfterMs: 5_000, probeGuest });
    expect((await r.reconcile('demo')).requeueAfterMs).toBe(5_000);
    expect(management.writes).toEqual([]);
    clock.advance(5_000);
    await r.reconcile('demo');
    expect(finalizerWrites(management)).toEqual([['other']]);
    expect(events.events.map((e) => [e.type, e.reason])).toEqual([['Warning', 'GuestUnreachable']]);
    expect(events.events[0]!.message).toContain(Names.karpenterFinalizer);
  });

  it('AutoNode turned off: keeps the finalizer while the guest has NodeClaims, releases it once they are gone; a failing guest is an error, never a release', async () => {
    const management = new MemoryClusterStore([hcp({ finalizers: [HCP_KARPENTER_FINALIZER], autoNode: false })]);
    const guest = new MemoryClusterStore([claim('c1', 'n1', '4')]);
    const events = new RecordingEvents();
    const r = new HcpFinalizerReconciler({ management, guest, namespace: NS, clock: new FakeClock(), events, retryMs: 1_000 });
    expect(await r.reconcile('demo')).toEqual({ requeueAfterMs: 1_000 });
    expect(management.writes).toEqual([]);
    const down = new HcpFinalizerReconciler({ management, guest: unreachable(), namespace: NS, clock: new FakeClock(), events, unreachableAfterMs: 0 });
    await expect(down.reconcile('demo')).rejects.toThrow(/ECONNREFUSED/);
    expect(management.writes).toEqual([]);
    await guest.delete({ ...Types.NodeClaim, name: 'c1' });
    await r.reconcile('demo');
    expect(finalizerWrites(management)).toEqual([[]]);
    expect(events.events.map((e) => e.reason)).toEqual(['FinalizerReleased']);
  });
});
