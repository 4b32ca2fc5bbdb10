import { describe, expect, it } from 'vitest';
import { ConflictError } from '../../errors.js';
import type { KarpenterRequest } from '../../model/cluster.js';
import { Types, type KubeObject, type ObjectRef } from '../../model/kube.js';
import { Names } from '../../model/names.js';
import { silentLogger } from '../../ports/logger.js';
import type { Topology } from '../../ports/topology.js';
import { FakeClock, MemoryClusterStore, RecordingEvents, twoClusterOperandLayout } from '../../testing/index.js';
import { TeardownReconciler } from './teardown.js';

const NS = 'clusters-demo';
/** A finalizer that is not core's default: the teardown must use the topology's, whatever it is. */
const FIN = 'hypershift.openshift.io/karpenter-finalizer';
const OWNER: ObjectRef = { apiVersion: 'example.com/v1', kind: 'Owner', namespace: NS, name: 'demo' };
const DELETED_AT = '2026-01-01T00:00:00.000Z';

/** Two clusters as HyperShift's topology has them; the request is read from an owner object on the control side. */
function world(owner: Partial<KubeObject['metadata']>, guestObjects: KubeObject[] = [], extra: Partial<KarpenterRequest> = {}) {
  const clock = new FakeClock(Date.parse(DELETED_AT));
  const control = new MemoryClusterStore([
    { ...OWNER, metadata: { ...OWNER, ...owner } } as KubeObject,
    { ...Types.Deployment, metadata: { name: Names.operandDeployment, namespace: NS } },
  ]);
  const guest = new MemoryClusterStore(guestObjects);
  /** When set, the owner as the topology last read it (a cache that has not seen a newer write yet). */
  let frozen: KubeObject | undefined;
  const topology: Topology = {
    name: 'hypershift',
    controlStore: control,
    workloadStore: guest,
    operandNamespace: NS,
    teardownFinalizer: FIN,
    operandLayout: () => twoClusterOperandLayout(NS),
    statusObject: OWNER,
    watches: [],
    clusterFacts: async () => {
      throw new Error('not needed');
    },
    reportStatus: async () => {},
    readRequest: async (): Promise<KarpenterRequest | undefined> => {
      const o = frozen ?? (await control.get(OWNER));
      if (!o) return undefined;
      const r: KarpenterRequest = {
        owner: { ...OWNER, uid: o.metadata.uid! },
        generation: 1,
        logLevel: 'info',
        deleting: Boolean(o.metadata.deletionTimestamp),
        finalizers: o.metadata.finalizers ?? [],
        resourceVersion: o.metadata.resourceVersion!,
        ...extra,
      };
      if (o.metadata.deletionTimestamp) r.deletionRequestedAtMs = Date.parse(o.metadata.deletionTimestamp);
      return r;
    },
  };
  const events = new RecordingEvents();
  const teardown = new TeardownReconciler({ topology, clock, events, logger: silentLogger, forceAfterMs: 60_000, pollMs: 1_000 });
  const freeze = async () => {
    frozen = await control.get(OWNER);
  };
  return { clock, control, guest, events, teardown, freeze, owner: () => control.get(OWNER) };
}

const claim = (name: string): KubeObject => ({ ...Types.NodeClaim, metadata: { name, finalizers: ['karpenter.sh/termination'] } });

/** The finalizer lists written to the owner, each checked to carry the resourceVersion it was read at. */
function ownerFinalizerWrites(store: MemoryClusterStore): unknown[] {
  return store.writes
    .filter((w) => w.verb === 'patch' && w.ref.kind === OWNER.kind)
    .map((w) => {
      const meta = (w.body as { metadata: { finalizers: unknown; resourceVersion?: unknown } }).metadata;
      expect(typeof meta.resourceVersion, 'a finalizer write without its resourceVersion').toBe('string');
      return meta.finalizers;
    });
}

describe('TeardownReconciler', () => {
  it("adds the topology's finalizer (not core's standalone one) over the owner's resourceVersion, once", async () => {
    const w = world({ finalizers: ['other'] });
    await w.teardown.reconcile();
    expect(ownerFinalizerWrites(w.control)).toEqual([['other', FIN]]);
    expect((await w.owner())?.metadata.finalizers).not.toContain(Names.karpenterFinalizer);
    w.control.clearWrites();
    await w.teardown.reconcile();
    expect(w.control.writes).toEqual([]);
  });

  it('never strips the finalizers of NodeClaims while the cluster answers: after the bound it forces their drain and keeps waiting', async () => {
    const w = world({ finalizers: [FIN], deletionTimestamp: DELETED_AT }, [claim('c1')]);
    expect(await w.teardown.reconcile()).toEqual({ requeueAfterMs: 1_000 });
    w.clock.advance(60_000);
    await w.teardown.reconcile();
    // Hours later, Karpenter still not done: the claim keeps its finalizer, the owner keeps ours.
    for (let i = 0; i < 5; i++) {
      w.clock.advance(3_600_000);
      expect(await w.teardown.reconcile()).toEqual({ requeueAfterMs: 1_000 });
    }
    const c1 = await w.guest.get({ ...Types.NodeClaim, name: 'c1' });
    expect(c1?.metadata.finalizers).toEqual(['karpenter.sh/termination']);
    expect(c1?.metadata.annotations?.[Names.terminationAnnotation]).toBeDefined();
    expect(w.guest.writes.filter((x) => x.verb === 'patch').map((x) => x.body)).toEqual([
      { metadata: { annotations: { [Names.terminationAnnotation]: '2026-01-01T00:01:00.000Z' } } },
    ]);
    expect(w.events.events.map((e) => e.reason)).not.toContain('NodeClaimAbandoned');
    expect(await w.owner()).toBeDefined();
    expect(ownerFinalizerWrites(w.control)).toEqual([]);
  });

  it('a cluster being deleted (forceTermination): every NodeClaim is deleted and forced at once, its finalizers left to Karpenter', async () => {
    const w = world({ finalizers: [FIN], deletionTimestamp: DELETED_AT }, [claim('c1'), claim('c2')], { forceTermination: true });
    expect(await w.teardown.reconcile()).toEqual({ requeueAfterMs: 1_000 });
    expect(w.guest.writes.filter((x) => x.verb === 'delete').map((x) => x.ref.name)).toEqual(['c1', 'c2']);
    expect(w.guest.writes.filter((x) => x.verb === 'patch').map((x) => [x.ref.name, x.body])).toEqual(
      ['c1', 'c2'].map((n) => [n, { metadata: { annotations: { [Names.terminationAnnotation]: DELETED_AT } } }]),
    );
    for (const n of ['c1', 'c2']) {
      expect((await w.guest.get({ ...Types.NodeClaim, name: n }))?.metadata.finalizers).toEqual(['karpenter.sh/termination']);
    }
    expect(w.events.events.filter((e) => e.reason === 'ForcingNodeClaimTermination').map((e) => e.type)).toEqual(['Normal', 'Normal']);
    // Already deleting and forced: the next pass only waits.
    w.guest.clearWrites();
    expect(await w.teardown.reconcile()).toEqual({ requeueAfterMs: 1_000 });
    expect(w.guest.writes).toEqual([]);
    expect(ownerFinalizerWrites(w.control)).toEqual([]);
  });

  it('without forceTermination nothing is forced before the bound', async () => {
    const w = world({ finalizers: [FIN], deletionTimestamp: DELETED_AT }, [claim('c1')]);
    w.clock.advance(59_999);
    await w.teardown.reconcile();
    expect(w.guest.writes.filter((x) => x.verb === 'patch')).toEqual([]);
  });

  it('keepOwnerFinalizer: NodePools and NodeClaims are removed, the operand and the finalizer stay, and a second pass writes nothing', async () => {
    const pool: KubeObject = { ...Types.NodePool, metadata: { name: 'general' } };
    const w = world({ finalizers: [FIN] }, [pool, claim('c1')], { deleting: true, forceTermination: true, keepOwnerFinalizer: true });
    await w.teardown.reconcile();
    expect(await w.guest.get({ ...Types.NodePool, name: 'general' })).toBeUndefined();
    w.guest.remove({ ...Types.NodeClaim, name: 'c1' });
    expect(await w.teardown.reconcile()).toEqual({});
    expect(await w.control.get({ ...Types.Deployment, name: Names.operandDeployment, namespace: NS })).toBeDefined();
    expect(ownerFinalizerWrites(w.control)).toEqual([]);
    w.control.clearWrites();
    w.guest.clearWrites();
    expect(await w.teardown.reconcile()).toEqual({});
    expect([...w.control.writes, ...w.guest.writes]).toEqual([]);
  });

  it('keepNodePools: deletes nothing in the workload cluster, removes the operand, then releases the finalizer', async () => {
    const pool: KubeObject = { ...Types.NodePool, metadata: { name: 'general' } };
    const w = world({ finalizers: ['other', FIN] }, [pool, claim('c1')], { deleting: true, keepNodePools: true });
    expect(await w.teardown.reconcile()).toEqual({});
    expect(w.guest.writes).toEqual([]);
    expect(await w.guest.get({ ...Types.NodePool, name: 'general' })).toBeDefined();
    expect(await w.guest.get({ ...Types.NodeClaim, name: 'c1' })).toBeDefined();
    expect(await w.control.get({ ...Types.Deployment, name: Names.operandDeployment, namespace: NS })).toBeUndefined();
    expect(ownerFinalizerWrites(w.control)).toEqual([['other']]);
    expect(w.events.events.map((e) => e.reason)).toEqual(['DeletingOperand', 'TeardownComplete']);
  });

  it('once NodeClaims and the operand are gone, releases only its finalizer, over the resourceVersion it read', async () => {
    const w = world({ finalizers: ['other', FIN], deletionTimestamp: DELETED_AT }, [claim('c1')]);
    await w.teardown.reconcile();
    expect(ownerFinalizerWrites(w.control)).toEqual([]);
    w.guest.remove({ ...Types.NodeClaim, name: 'c1' });
    await w.teardown.reconcile();
    expect(await w.control.get({ ...Types.Deployment, name: Names.operandDeployment, namespace: NS })).toBeUndefined();
    expect(ownerFinalizerWrites(w.control)).toEqual([['other']]);
    expect(w.events.events.map((e) => e.reason)).toContain('TeardownComplete');
  });

  it('a finalizer added by another controller after the request was read is kept: only its own is removed', async () => {
    const w = world({ finalizers: [FIN], deletionTimestamp: DELETED_AT });
    await w.freeze();
    const read = (await w.owner())!;
    // Another controller adds its finalizer after the teardown read the request.
    w.control.seed({ ...read, metadata: { ...read.metadata, finalizers: [FIN, 'late'] } });
    w.control.clearWrites();
    await w.teardown.reconcile();
    expect((await w.owner())?.metadata.finalizers).toEqual(['late']);
    expect(ownerFinalizerWrites(w.control)).toEqual([['late']]);
  });

  it('a finalizer write over an owner changed since the store read it is a conflict, never a blind overwrite', async () => {
    const w = world({ finalizers: [FIN], deletionTimestamp: DELETED_AT });
    const read = (await w.owner())!;
    // The store's own view is stale: what it read is older than what the API server holds.
    const get = w.control.get.bind(w.control);
    w.control.seed({ ...read, metadata: { ...read.metadata, finalizers: [FIN, 'late'] } });
    w.control.get = (async (ref: Parameters<typeof get>[0]) =>
      ref.kind === read.kind ? structuredClone(read) : get(ref)) as typeof w.control.get;
    await expect(w.teardown.reconcile()).rejects.toBeInstanceOf(ConflictError);
    w.control.get = get;
    expect((await w.owner())?.metadata.finalizers).toEqual([FIN, 'late']);
  });
});
