import { describe, expect, it } from 'vitest';
import { Types, type KubeObject } from '../model/kube.js';
import { FakeClock, FakeCloudProvider, MemoryClusterStore } from '../testing/index.js';
import { StandaloneTopology } from '../topology/standalone.js';
import type { Reconciler } from '../runtime/reconciler.js';
import { CrdsPendingRequeueMs, KarpenterGate, whileKarpenterRuns } from './gate.js';

const crd = (name: string, established: boolean): KubeObject => ({
  ...Types.CustomResourceDefinition,
  metadata: { name },
  spec: { group: name.split('.').slice(1).join('.'), names: { kind: 'X', plural: name.split('.')[0] } },
  ...(established ? { status: { conditions: [{ type: 'Established', status: 'True' }] } } : {}),
});

describe('whileKarpenterRuns', () => {
  const setup = () => {
    const clock = new FakeClock();
    const store = new MemoryClusterStore();
    const cloud = new FakeCloudProvider({ crds: [crd('nodepools.karpenter.sh', false)] });
    const topology = new StandaloneTopology({ store, namespace: 'ns', clock });
    let runs = 0;
    const inner: Reconciler = {
      name: 'x.y',
      watches: [],
      keysFor: () => ['k'],
      resyncKeys: async () => ['k'],
      reconcile: async () => ((runs += 1), {}),
    };
    let gets = 0;
    const get = store.get.bind(store);
    store.get = async (ref) => ((gets += ref.kind === 'CustomResourceDefinition' ? 1 : 0), get(ref));
    return { clock, store, cloud, gate: whileKarpenterRuns(inner, { topology, cloud, clock }), runs: () => runs, gets: () => gets };
  };

  it('runs the inner reconciler only with a request and Established CRDs, and reuses that answer for a second', async () => {
    const t = setup();
    await t.gate.reconcile('k');
    expect(t.runs()).toBe(0);
    t.store.seed({ ...Types.Karpenter, metadata: { name: 'default' }, spec: {} });
    t.store.seed(crd('nodepools.karpenter.sh', false));
    expect(await t.gate.reconcile('k')).toEqual({ requeueAfterMs: 2000 });
    t.store.seed(crd('nodepools.karpenter.sh', true));
    await t.gate.reconcile('k');
    expect(t.runs()).toBe(1);
    const gets = t.gets();
    for (let i = 0; i < 100; i++) await t.gate.reconcile('k');
    expect(t.runs()).toBe(101);
    expect(t.gets()).toBe(gets);
    t.clock.advance(1_001);
    await t.gate.reconcile('k');
    expect(t.gets()).toBe(gets + 1);
    expect(t.cloud.callsOf('crds')).toHaveLength(1);
  });

  it('is the same gate the operand uses: closed quietly without a request, requeued while CRDs are pending, open with the request', async () => {
    const store = new MemoryClusterStore();
    const clock = new FakeClock();
    const cloud = new FakeCloudProvider({ crds: [crd('nodepools.karpenter.sh', false)] });
    const gate = new KarpenterGate({ topology: new StandaloneTopology({ store, namespace: 'ns', clock }), cloud });
    expect(await gate.check()).toEqual({ open: false });
    store.seed({ ...Types.Karpenter, metadata: { name: 'default' }, spec: {} });
    expect(await gate.check()).toEqual({ open: false, requeueAfterMs: CrdsPendingRequeueMs });
    store.seed(crd('nodepools.karpenter.sh', true));
    expect(await gate.check()).toMatchObject({ open: true, request: { deleting: false, owner: { kind: 'Karpenter' } } });
    store.seed({
      ...Types.Karpenter,
      metadata: { name: 'default', deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['x'] },
      spec: {},
    });
    expect(await gate.check()).toEqual({ open: false });
  });
});
