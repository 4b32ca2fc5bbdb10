import { beforeEach, describe, expect, it } from 'vitest';
import { Types, type KubeObject } from '../model/kube.js';
import { Names } from '../model/names.js';
import type { OperatorSettings } from '../model/cluster.js';
import { FakeClock, FakeCloudProvider, MemoryClusterStore, RecordingEvents } from '../testing/index.js';
import { silentLogger } from '../ports/logger.js';
import { StandaloneTopology } from '../topology/standalone.js';
import { CrdsReconciler } from './crds/crds.js';
import { OperandReconciler } from './operand/operand.js';
import { StatusReconciler } from './status/status.js';
import { StatusBoard } from './status-board.js';
import { TeardownReconciler } from './teardown/teardown.js';

const NS = 'openshift-karpenter';
const settings: OperatorSettings = { namespace: NS, releaseVersion: '4.22.0', operandImage: 'quay.io/karpenter:1', crdDir: '/x' };

const aCrd = (plural: string, group: string, kind: string): KubeObject => ({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `${plural}.${group}` },
  spec: { group, names: { kind, plural }, scope: 'Cluster', versions: [{ name: 'v1', served: true, storage: true }] },
});
const crds = [
  aCrd('nodepools', 'karpenter.sh', 'NodePool'),
  aCrd('nodeclaims', 'karpenter.sh', 'NodeClaim'),
  aCrd('ec2nodeclasses', 'karpenter.k8s.aws', 'EC2NodeClass'),
];

const infrastructure: KubeObject = {
  ...Types.Infrastructure,
  metadata: { name: 'cluster' },
  status: {
    infrastructureName: 'demo-x7k2p',
    apiServerInternalURI: 'https://api-int.demo.example.com:6443',
    platformStatus: { type: 'AWS', aws: { region: 'us-east-1' } },
  },
};
const karpenter = (extra: Partial<KubeObject['metadata']> = {}, spec: Record<string, unknown> = {}): KubeObject => ({
  ...Types.Karpenter,
  metadata: { name: 'default', ...extra },
  spec,
});
const secret: KubeObject = { ...Types.Secret, metadata: { name: Names.credentialsSecret, namespace: NS }, data: { credentials: 'YQ==' } };

/** What the API server does between reconciles: CRDs become Established, Deployments roll out. */
function settle(store: MemoryClusterStore): void {
  for (const o of store.all()) {
    if (o.kind === 'CustomResourceDefinition' && !(o.status as { conditions?: unknown[] } | undefined)?.conditions) {
      store.seed({ ...o, status: { conditions: [{ type: 'Established', status: 'True' }] } });
    }
    if (o.kind === 'Deployment') {
      const replicas = (o.spec as { replicas?: number }).replicas ?? 1;
      store.seed({
        ...o,
        status: { observedGeneration: o.metadata.generation, replicas, updatedReplicas: replicas, availableReplicas: replicas },
      });
    }
  }
}

describe('standalone flow (in memory)', () => {
  let store: MemoryClusterStore;
  let clock: FakeClock;
  let events: RecordingEvents;
  let board: StatusBoard;
  let reconcilers: { crds: CrdsReconciler; operand: OperandReconciler; status: StatusReconciler; teardown: TeardownReconciler };
  const co = () => store.get({ ...Types.ClusterOperator, name: 'karpenter' });
  const cond = async (type: string) =>
    (
      (await co())?.status as {
        conditions: Array<{ type: string; status: string; reason: string; message: string; lastTransitionTime: string }>;
      }
    ).conditions.find((c) => c.type === type)!;
  const all = async () => {
    for (const r of [reconcilers.teardown, reconcilers.crds, reconcilers.operand, reconcilers.status]) await r.reconcile();
  };

  beforeEach(() => {
    clock = new FakeClock();
    store = new MemoryClusterStore([infrastructure], () => new Date(clock.now()).toISOString());
    events = new RecordingEvents();
    board = new StatusBoard();
    const cloud = new FakeCloudProvider({ crds });
    const topology = new StandaloneTopology({ store, namespace: NS, clock });
    reconcilers = {
      crds: new CrdsReconciler({ topology, cloud }),
      operand: new OperandReconciler({ topology, cloud, settings, events, logger: silentLogger }),
      status: new StatusReconciler({ topology, cloud, settings, board }),
      teardown: new TeardownReconciler({ topology, clock, events, logger: silentLogger, pollMs: 10 }),
    };
  });

  it('without a Karpenter CR: idle, Available with KarpenterNotFound, version reported, nothing deployed', async () => {
    await all();
    expect((await cond('Available')).reason).toBe('KarpenterNotFound');
    expect(((await co())?.status as { versions: unknown }).versions).toEqual([{ name: 'operator', version: '4.22.0' }]);
    expect(store.all().filter((o) => o.kind === 'Deployment' || o.kind === 'CustomResourceDefinition')).toEqual([]);
    store.clearWrites();
    await all();
    expect(store.writes).toEqual([]);
  });

  it('gates the operand on CRDs and credentials, then converges and goes quiet', async () => {
    store.seed(karpenter());
    await all();
    expect((await cond('Progressing')).reason).toBe('WaitingForCRDs');
    settle(store);
    await all();
    expect((await cond('Progressing')).reason).toBe('WaitingForCredentials');
    expect((await cond('Progressing')).message).toContain(`${NS}/${Names.credentialsSecret}`);
    expect(await store.get({ ...Types.Deployment, namespace: NS, name: 'karpenter' })).toBeUndefined();

    store.seed(secret);
    await all();
    const dep = await store.get({ ...Types.Deployment, namespace: NS, name: 'karpenter' });
    expect(dep?.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'Karpenter', name: 'default', controller: true });
    expect((await cond('Progressing')).reason).toBe('OperandRollingOut');
    expect(((await co())?.status as { versions?: unknown }).versions).toBeUndefined();

    settle(store);
    await all();
    expect((await cond('Available')).reason).toBe('AsExpected');
    expect((await cond('Progressing')).status).toBe('False');
    expect(((await co())?.status as { versions: unknown }).versions).toEqual([{ name: 'operator', version: '4.22.0' }]);
    const cr = await store.get({ ...Types.Karpenter, name: 'default' });
    expect(
      (cr?.status as { conditions: Array<{ type: string; observedGeneration: number }> }).conditions.map((c) => c.type).sort(),
    ).toEqual(['Available', 'Degraded', 'Progressing']);
    expect(cr?.metadata.finalizers).toContain(Names.karpenterFinalizer);

    store.clearWrites();
    await all();
    expect(store.writes).toEqual([]);
  });

  it('a settings change: status.observedGeneration moves, Progressing on the CR until the operand rolled out, then quiet', async () => {
    store.seed(karpenter({ generation: 1 }));
    store.seed(secret);
    await all();
    settle(store);
    await all();
    const crStatus = async () =>
      (await store.get({ ...Types.Karpenter, name: 'default' }))?.status as {
        observedGeneration: number;
        conditions: Array<{ type: string; status: string; reason: string; observedGeneration: number }>;
      };
    expect((await crStatus()).observedGeneration).toBe(1);
    const cr = (await store.get({ ...Types.Karpenter, name: 'default' }))!;
    store.seed({
      ...cr,
      metadata: { ...cr.metadata, generation: 2 },
      spec: { ...(cr.spec as object), settings: { batchMaxDuration: '30s' } },
    });
    await all();
    const rolling = await crStatus();
    expect(rolling.observedGeneration).toBe(2);
    expect(rolling.conditions.find((c) => c.type === 'Progressing')).toMatchObject({
      status: 'True',
      reason: 'OperandRollingOut',
      observedGeneration: 2,
    });
    const dep = await store.get({ ...Types.Deployment, namespace: NS, name: 'karpenter' });
    expect(JSON.stringify(dep?.spec)).toContain('"name":"BATCH_MAX_DURATION","value":"30s"');
    settle(store);
    await all();
    expect((await crStatus()).conditions.find((c) => c.type === 'Progressing')).toMatchObject({ status: 'False', observedGeneration: 2 });
    store.clearWrites();
    await all();
    expect(store.writes).toEqual([]);
  });

  it('keeps lastTransitionTime when a status does not change', async () => {
    store.seed(karpenter());
    store.seed(secret);
    await all();
    settle(store);
    await all();
    const before = (await cond('Available')).lastTransitionTime;
    clock.advance(60_000);
    await all();
    expect((await cond('Available')).lastTransitionTime).toBe(before);
  });

  it('reverts drift of the operand Deployment and keeps a label a user added', async () => {
    store.seed(karpenter());
    store.seed(secret);
    await all();
    settle(store);
    await all();
    const ref = { ...Types.Deployment, namespace: NS, name: 'karpenter' };
    const dep = (await store.get(ref))!;
    const spec = dep.spec as { replicas: number };
    store.seed({ ...dep, metadata: { ...dep.metadata, labels: { ...dep.metadata.labels, team: 'mine' } }, spec: { ...spec, replicas: 0 } });
    store.clearWrites();
    await all();
    const fixed = (await store.get(ref))!;
    expect((fixed.spec as { replicas: number }).replicas).toBeGreaterThan(0);
    expect(fixed.metadata.labels?.team).toBe('mine');
    expect(store.writes.filter((w) => w.verb === 'apply').map((w) => w.ref.kind)).toEqual(['Deployment']);

    store.remove(ref);
    await all();
    expect(await store.get(ref)).toBeDefined();
  });

  it('rotating the credentials Secret rolls the operand', async () => {
    store.seed(karpenter());
    store.seed(secret);
    await all();
    settle(store);
    await all();
    const ref = { ...Types.Deployment, namespace: NS, name: 'karpenter' };
    const tpl = (d: KubeObject | undefined) => JSON.stringify((d?.spec as { template: unknown }).template);
    const before = tpl(await store.get(ref));
    store.seed({ ...secret, data: { credentials: 'Yg==' } });
    await all();
    expect(tpl(await store.get(ref))).not.toBe(before);
  });

  it('an upgrade reports the new version only once the new template rolled out, never from the old one', async () => {
    store.seed(karpenter());
    store.seed(secret);
    await all();
    settle(store);
    await all();
    settle(store);
    await all();
    const versions = async () => ((await co())?.status as { versions?: unknown }).versions;
    expect(await versions()).toEqual([{ name: 'operator', version: '4.22.0' }]);

    // The next release: a new operator process with a new version and operand image. Its status reconcile may
    // run before its operand reconcile: the old Deployment, fully rolled out, is not this release's.
    const next: OperatorSettings = { ...settings, releaseVersion: '4.23.0', operandImage: 'quay.io/karpenter:2' };
    const cloud = new FakeCloudProvider({ crds });
    const topology = new StandaloneTopology({ store, namespace: NS, clock });
    const status = new StatusReconciler({ topology, cloud, settings: next, board });
    const operand = new OperandReconciler({ topology, cloud, settings: next, events, logger: silentLogger });
    await status.reconcile();
    expect(await versions()).toEqual([{ name: 'operator', version: '4.22.0' }]);
    expect(await cond('Progressing')).toMatchObject({ status: 'True', reason: 'OperandRollingOut' });

    // Applied, not rolled out: the old version stays.
    await operand.reconcile();
    await status.reconcile();
    expect(await versions()).toEqual([{ name: 'operator', version: '4.22.0' }]);

    // Observed and rolled out: the new version, once; a second pass writes nothing.
    settle(store);
    await status.reconcile();
    expect(await versions()).toEqual([{ name: 'operator', version: '4.23.0' }]);
    expect((await cond('Progressing')).status).toBe('False');
    store.clearWrites();
    await operand.reconcile();
    await status.reconcile();
    expect(store.writes).toEqual([]);
  });

  it('an annotation edit on the operand (generation bumped, not yet observed) flips nothing and writes nothing', async () => {
    store.seed(karpenter());
    store.seed(secret);
    await all();
    settle(store);
    await all();
    settle(store);
    await all();
    expect((await cond('Progressing')).status).toBe('False');
    const ref = { ...Types.Deployment, namespace: NS, name: 'karpenter' };
    const dep = (await store.get(ref))!;
    // The API server bumps a Deployment's generation on an annotation change; the controller has not observed it yet.
    store.seed({
      ...dep,
      metadata: { ...dep.metadata, annotations: { 'example.com/note': 'x' }, generation: (dep.metadata.generation ?? 1) + 1 },
    });
    store.clearWrites();
    await all();
    expect(store.writes).toEqual([]);
    settle(store);
    await all();
    expect(store.writes).toEqual([]);
  });

  it('an invalid logLevel on the CR degrades naming the field and deploys nothing', async () => {
    store.seed(karpenter({}, { logLevel: 'loud' }));
    store.seed(secret);
    await expect(reconcilers.operand.reconcile()).rejects.toThrow(/spec\.logLevel/);
    await reconcilers.status.reconcile();
    expect((await cond('Degraded')).status).toBe('True');
    expect((await cond('Degraded')).message).toContain('spec.logLevel');
  });

  it('Infrastructure without an infra ID degrades naming the field', async () => {
    store.seed({ ...infrastructure, status: { ...(infrastructure.status as object), infrastructureName: '' } });
    store.seed(karpenter());
    await all();
    settle(store);
    await all();
    expect((await cond('Degraded')).status).toBe('True');
    expect((await cond('Degraded')).message).toContain('status.infrastructureName');
  });

  it('teardown deletes NodePools, waits for NodeClaims, then removes the operand and the finalizer', async () => {
    store.seed(karpenter());
    store.seed(secret);
    await all();
    settle(store);
    await all();
    store.seed({ ...Types.NodePool, metadata: { name: 'general' }, spec: {} });
    store.seed({ ...Types.NodeClaim, metadata: { name: 'general-abc', finalizers: ['karpenter.sh/termination'] }, spec: {} });
    const cr = (await store.get({ ...Types.Karpenter, name: 'default' }))!;
    store.seed({ ...cr, metadata: { ...cr.metadata, deletionTimestamp: new Date(clock.now()).toISOString() } });

    await reconcilers.teardown.reconcile();
    expect(await store.get({ ...Types.NodePool, name: 'general' })).toBeUndefined();
    const claim = await store.get({ ...Types.NodeClaim, name: 'general-abc' });
    expect(claim?.metadata.deletionTimestamp).toBeDefined();
    expect(await store.get({ ...Types.Deployment, namespace: NS, name: 'karpenter' })).toBeDefined();
    await reconcilers.status.reconcile();
    expect((await cond('Progressing')).reason).toBe('TeardownInProgress');

    clock.advance(6 * 60_000);
    const r = await reconcilers.teardown.reconcile();
    expect(r.requeueAfterMs).toBeGreaterThan(0);
    expect(
      (await store.get({ ...Types.NodeClaim, name: 'general-abc' }))?.metadata.annotations?.[Names.terminationAnnotation],
    ).toBeDefined();
    expect(events.events.map((e) => e.reason)).toContain('ForcingNodeClaimTermination');

    // Karpenter finishes the NodeClaim.
    store.remove({ ...Types.NodeClaim, name: 'general-abc' });
    await reconcilers.teardown.reconcile();
    expect(await store.get({ ...Types.Deployment, namespace: NS, name: 'karpenter' })).toBeUndefined();
    await reconcilers.teardown.reconcile();
    expect(await store.get({ ...Types.Karpenter, name: 'default' })).toBeUndefined();
    expect(events.events.map((e) => e.reason)).toEqual(
      expect.arrayContaining(['DeletingNodePool', 'DeletingNodeClaim', 'DeletingOperand', 'TeardownComplete']),
    );
  });
});
