import { csrState, ManagedCrdsWatch, Names, Types, type KubeObject, type Watch } from '@karpenter-operator/core';
import { RecordingMetrics } from '@karpenter-operator/core/testing';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { cacheProjection } from './cache-projection.js';
import { Informer, type InformerOptions } from './informer.js';
import { InformerFactory } from './informer-factory.js';
import { inScope } from './watch-scope.js';
import { ResourceResolver } from './resources.js';
import { FakeTransport, apiError } from './testing/fake-transport.js';

const path = '/apis/apps/v1/namespaces/ns/deployments';
const deploy = (name: string, rv: string, extra: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace: 'ns', resourceVersion: rv, ...extra },
});
const listOf = (rv: string, items: KubeObject[], cont?: string) => ({
  kind: 'DeploymentList',
  apiVersion: 'apps/v1',
  metadata: { resourceVersion: rv, ...(cont ? { continue: cont } : {}) },
  // Like the API server: items of a typed list carry no apiVersion/kind.
  items: items.map(({ apiVersion: _a, kind: _k, ...rest }) => rest),
});

function setup(overrides: Partial<InformerOptions> = {}, watch: Watch = { type: Types.Deployment, namespace: 'ns' }) {
  const transport = new FakeTransport();
  const metrics = new RecordingMetrics();
  const informer = new Informer({
    watch,
    transport,
    resources: new ResourceResolver(transport),
    metrics,
    clock: { now: () => Date.now() },
    random: () => 0,
    staleAfterMs: 60_000,
    watchTimeoutSeconds: () => 300,
    ...overrides,
  });
  const seen: string[] = [];
  informer.addHandler((o) => seen.push(`${o.metadata.name}@${o.metadata.resourceVersion}`));
  return { transport, informer, seen, metrics };
}

const lists = (t: FakeTransport) => t.requests.filter((r) => r.verb === 'list');

describe('inScope', () => {
  const o = (name: string, namespace?: string, labels?: Record<string, string>): KubeObject => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, ...(namespace ? { namespace } : {}), ...(labels ? { labels } : {}) },
  });
  it.each([
    { name: 'no scope', watch: {}, obj: o('a', 'x'), want: true },
    { name: 'namespace match', watch: { namespace: 'x' }, obj: o('a', 'x'), want: true },
    { name: 'namespace mismatch', watch: { namespace: 'x' }, obj: o('a', 'y'), want: false },
    { name: 'labels match', watch: { labels: { app: 'k' } }, obj: o('a', 'x', { app: 'k', other: '1' }), want: true },
    { name: 'labels missing', watch: { labels: { app: 'k' } }, obj: o('a', 'x'), want: false },
    { name: 'name field selector', watch: { fieldSelector: 'metadata.name=cluster' }, obj: o('cluster'), want: true },
    { name: 'name field selector ==', watch: { fieldSelector: 'metadata.name==cluster' }, obj: o('other'), want: false },
    { name: 'name field selector !=', watch: { fieldSelector: 'metadata.name!=cluster' }, obj: o('other'), want: true },
    { name: 'two terms', watch: { fieldSelector: 'metadata.name=a,metadata.namespace=x' }, obj: o('a', 'y'), want: false },
    { name: 'unknown field', watch: { fieldSelector: 'spec.nodeName=n1' }, obj: o('a', 'x'), want: undefined },
  ])('$name', ({ watch, obj, want }) => {
    expect(inScope({ type: Types.Secret, ...watch }, obj)).toBe(want);
  });
});

describe('Informer', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(Date.UTC(2026, 0, 1));
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('lists page by page, caches without managedFields, syncs, then watches from the list version with bookmarks', async () => {
    const { transport, informer, seen, metrics } = setup({ pageSize: 1 });
    transport.once({ verb: 'list' }, listOf('10', [deploy('a', '5', { managedFields: [{ manager: 'x' }] })], 'page2'));
    transport.once({ verb: 'list' }, listOf('11', [deploy('b', '6')]));
    informer.start();
    await informer.waitForSync();
    expect(lists(transport).map((r) => r.query)).toEqual([
      { limit: 1, continue: undefined },
      { limit: 1, continue: 'page2' },
    ]);
    expect(informer.get('a', 'ns')).toEqual(deploy('a', '5'));
    expect(informer.list().map((o) => o.metadata.name)).toEqual(['a', 'b']);
    expect(seen).toEqual(['a@5', 'b@6']);
    await vi.advanceTimersByTimeAsync(0);
    const w = transport.activeWatch()!;
    expect(w.path).toBe(path);
    expect(w.query).toEqual({ resourceVersion: '11', allowWatchBookmarks: true, timeoutSeconds: 300 });
    expect(metrics.gauges.get('karpenter_operator_informer_synced{kind=Deployment}')).toBe(1);
  });

  it('passes label and field selectors to list and watch', async () => {
    const { transport, informer } = setup(
      {},
      { type: Types.Deployment, namespace: 'ns', labels: { b: '2', a: '1' }, fieldSelector: 'metadata.name=x' },
    );
    transport.on({ verb: 'list' }, listOf('1', []));
    informer.start();
    await informer.waitForSync();
    await vi.advanceTimersByTimeAsync(0);
    expect(lists(transport)[0]!.query).toMatchObject({ labelSelector: 'a=1,b=2', fieldSelector: 'metadata.name=x' });
    expect(transport.activeWatch()!.query).toMatchObject({ labelSelector: 'a=1,b=2', fieldSelector: 'metadata.name=x' });
  });

  it('applies watch events to the cache and calls handlers for adds, updates and deletes alike', async () => {
    const { transport, informer, seen } = setup();
    transport.on({ verb: 'list' }, listOf('10', [deploy('a', '5')]));
    informer.start();
    await informer.waitForSync();
    await vi.advanceTimersByTimeAsync(0);
    const w = transport.activeWatch()!;
    w.send('ADDED', deploy('b', '11'));
    w.send('MODIFIED', deploy('a', '12', { labels: { x: 'y' } }));
    w.send('DELETED', deploy('b', '13'));
    w.send('BOOKMARK', { kind: 'Deployment', apiVersion: 'apps/v1', metadata: { resourceVersion: '20' } });
    expect(seen).toEqual(['a@5', 'b@11', 'a@12', 'b@13']);
    expect(informer.list().map((o) => o.metadata.name)).toEqual(['a']);
    expect(informer.get('a', 'ns')?.metadata.labels).toEqual({ x: 'y' });
    expect(informer.lastResourceVersion).toBe('20');
  });

  it('keeps one sorted list until the cache changes; a change of an object shows in it, in the same order', async () => {
    const { transport, informer } = setup();
    transport.on({ verb: 'list' }, listOf('10', [deploy('c', '5'), deploy('a', '6'), deploy('b', '7')]));
    informer.start();
    await informer.waitForSync();
    await vi.advanceTimersByTimeAsync(0);
    const names = () => informer.sortedList().map((o) => `${o.metadata.name}@${o.metadata.resourceVersion}`);
    expect(names()).toEqual(['a@6', 'b@7', 'c@5']);
    expect(informer.sortedList()).toBe(informer.sortedList());
    const w = transport.activeWatch()!;
    w.send('MODIFIED', deploy('b', '11'));
    expect(names()).toEqual(['a@6', 'b@11', 'c@5']);
    w.send('ADDED', deploy('aa', '12'));
    w.send('DELETED', deploy('c', '13'));
    expect(names()).toEqual(['a@6', 'aa@12', 'b@11']);
    informer.upsertLocal(deploy('0', '14'));
    informer.removeLocal('a', 'ns');
    expect(names()).toEqual(['0@14', 'aa@12', 'b@11']);
  });

  it('calls the handlers of a large relist in slices, letting timers run in between', async () => {
    const { transport, informer, seen } = setup({ pageSize: 5_000 });
    const n = 1_200;
    transport.on(
      { verb: 'list' },
      listOf(
        '10',
        Array.from({ length: n }, (_, i) => deploy(`d-${i}`, String(i + 1))),
      ),
    );
    let between = -1;
    setTimeout(() => (between = seen.length), 0);
    informer.start();
    for (let k = 0; k < 100 && !informer.hasSynced(); k++) await vi.advanceTimersByTimeAsync(1);
    expect(informer.hasSynced()).toBe(true);
    expect(seen).toHaveLength(n);
    // The timer ran after a slice, before the last one: not once every handler had run.
    expect(between).toBeGreaterThan(0);
    expect(between).toBeLessThan(n);
  });

  it('restarts after a non-410 error with backoff, from the last resource version, without relisting', async () => {
    const { transport, informer, metrics } = setup();
    transport.on({ verb: 'list' }, listOf('10', []));
    informer.start();
    await informer.waitForSync();
    await vi.advanceTimersByTimeAsync(0);
    transport.activeWatch()!.send('ADDED', deploy('a', '15'));
    transport.activeWatch()!.end(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }));
    await vi.advanceTimersByTimeAsync(999);
    expect(transport.watches).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(transport.watches).toHaveLength(2);
    expect(transport.activeWatch()!.query.resourceVersion).toBe('15');
    expect(lists(transport)).toHaveLength(1);
    expect(metrics.counters.get('karpenter_operator_informer_restarts_total{kind=Deployment,reason=error}')).toBe(1);
  });

  it('keeps retrying with growing delays while the API server refuses connections, and recovers', async () => {
    const { transport, informer } = setup();
    transport.on({ verb: 'list' }, listOf('10', []));
    const refused = Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } });
    transport.watchFailures.push(refused, refused, refused);
    informer.start();
    await informer.waitForSync();
    await vi.advanceTimersByTimeAsync(0);
    expect(informer.restarts).toBe(1);
    await vi.advanceTimersByTimeAsync(1_000); // 1st retry after 1 s
    expect(informer.restarts).toBe(2);
    await vi.advanceTimersByTimeAsync(1_999); // 2nd after 2 s
    expect(informer.restarts).toBe(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(informer.restarts).toBe(3);
    await vi.advanceTimersByTimeAsync(4_000); // 3rd after 4 s: the watch opens
    expect(transport.activeWatch()).toBeDefined();
    expect(transport.activeWatch()!.query.resourceVersion).toBe('10');
  });

  it('relists on 410 Gone, notifying for objects that changed or went away', async () => {
    const { transport, informer, seen } = setup();
    transport.once({ verb: 'list' }, listOf('10', [deploy('a', '5'), deploy('b', '6')]));
    transport.once({ verb: 'list' }, listOf('30', [deploy('a', '5'), deploy('c', '25')]));
    informer.start();
    await informer.waitForSync();
    await vi.advanceTimersByTimeAsync(0);
    transport.activeWatch()!.send('ERROR', { kind: 'Status', code: 410, message: 'too old resource version: 10 (20)' });
    await vi.advanceTimersByTimeAsync(0);
    expect(lists(transport)).toHaveLength(2);
    expect(informer.list().map((o) => o.metadata.name)).toEqual(['a', 'c']);
    expect(seen).toEqual(['a@5', 'b@6', 'b@6', 'c@25']); // b removed, c added; a unchanged
    expect(transport.activeWatch()!.query.resourceVersion).toBe('30');
  });

  it('relists when the watch request itself answers 410', async () => {
    const { transport, informer } = setup();
    transport.on({ verb: 'list' }, listOf('10', []));
    informer.start();
    await informer.waitForSync();
    await vi.advanceTimersByTimeAsync(0);
    transport.activeWatch()!.end(Object.assign(new Error('Gone'), { statusCode: 410 }));
    await vi.advanceTimersByTimeAsync(0);
    expect(lists(transport)).toHaveLength(2);
  });

  it('restarts a watch that went silent (no event or bookmark within staleAfterMs)', async () => {
    const { transport, informer, metrics } = setup({ staleAfterMs: 60_000 });
    transport.on({ verb: 'list' }, listOf('10', []));
    informer.start();
    await informer.waitForSync();
    await vi.advanceTimersByTimeAsync(0);
    const first = transport.activeWatch()!;
    await vi.advanceTimersByTimeAsync(30_000);
    first.send('BOOKMARK', { metadata: { resourceVersion: '12' } });
    await vi.advanceTimersByTimeAsync(59_000); // 89 s since start, 59 s since the bookmark
    expect(first.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(first.aborted).toBe(true);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(transport.watches).toHaveLength(2);
    expect(transport.activeWatch()!.query.resourceVersion).toBe('12');
    expect(metrics.counters.get('karpenter_operator_informer_restarts_total{kind=Deployment,reason=stale}')).toBe(1);
  });

  it('re-watches at once when the server ends a watch normally', async () => {
    const { transport, informer } = setup({ staleAfterMs: 600_000 });
    transport.on({ verb: 'list' }, listOf('10', []));
    informer.start();
    await informer.waitForSync();
    await vi.advanceTimersByTimeAsync(0);
    transport.activeWatch()!.send('BOOKMARK', { metadata: { resourceVersion: '11' } });
    await vi.advanceTimersByTimeAsync(300_000);
    transport.activeWatch()!.end(null);
    await vi.advanceTimersByTimeAsync(0);
    expect(transport.watches).toHaveLength(2);
    expect(informer.restarts).toBe(0);
  });

  it('retries a failing list (e.g. 403) and is not synced until one succeeds', async () => {
    const { transport, informer } = setup();
    transport.once({ verb: 'list' }, () => {
      throw apiError(403, 'deployments.apps is forbidden');
    });
    transport.once({ verb: 'list' }, listOf('10', []));
    informer.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(informer.hasSynced()).toBe(false);
    expect(informer.syncProblem()).toContain('deployments.apps is forbidden');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(informer.hasSynced()).toBe(true);
    expect(informer.syncProblem()).toBeUndefined();
  });

  it('a kind that is not served (404: its CRD is not installed yet) is synced and empty, and appears once served', async () => {
    const { transport, informer, seen } = setup();
    transport.once({ verb: 'list' }, () => {
      throw apiError(404, 'the server could not find the requested resource');
    });
    transport.once({ verb: 'list' }, listOf('10', [deploy('a', '5')]));
    informer.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(informer.hasSynced()).toBe(true);
    expect(informer.list()).toEqual([]);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(informer.list().map((o) => o.metadata.name)).toEqual(['a']);
    expect(seen).toEqual(['a@5']);
  });

  it.each([
    {
      name: 'its group is not served',
      discovery: () => {
        throw apiError(404, 'the server could not find the requested resource');
      },
    },
    {
      name: 'its group is served without it',
      discovery: { kind: 'APIResourceList', resources: [{ name: 'others', kind: 'Other', namespaced: false }] },
    },
  ])('a kind outside the known table whose CRD is not installed is synced and empty: $name', async ({ discovery }) => {
    const { transport, informer } = setup({}, { type: { apiVersion: 'karpenter.azure.com/v1beta1', kind: 'AKSNodeClass' } });
    transport.once({ verb: 'discovery' }, discovery);
    informer.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(informer.hasSynced()).toBe(true);
    expect(informer.list()).toEqual([]);
    expect(lists(transport)).toEqual([]);
  });

  it('stop ends the watch and no further requests are made', async () => {
    const { transport, informer } = setup();
    transport.on({ verb: 'list' }, listOf('10', []));
    informer.start();
    await informer.waitForSync();
    await vi.advanceTimersByTimeAsync(0);
    await informer.stop();
    expect(transport.watches[0]!.aborted).toBe(true);
    const n = transport.requests.length;
    await vi.advanceTimersByTimeAsync(600_000);
    expect(transport.requests.length).toBe(n);
    expect(transport.watches).toHaveLength(1);
  });

  it('upsertLocal keeps newer cached versions and respects the scope; it does not call handlers', async () => {
    const { transport, informer, seen } = setup({}, { type: Types.Deployment, namespace: 'ns', labels: { app: 'k' } });
    transport.on({ verb: 'list' }, listOf('10', [deploy('a', '20', { labels: { app: 'k' } })]));
    informer.start();
    await informer.waitForSync();
    informer.upsertLocal(deploy('a', '15', { labels: { app: 'k' } }));
    expect(informer.get('a', 'ns')?.metadata.resourceVersion).toBe('20');
    informer.upsertLocal(deploy('a', '25', { labels: { app: 'k' }, managedFields: [] }));
    expect(informer.get('a', 'ns')).toEqual(deploy('a', '25', { labels: { app: 'k' } }));
    informer.upsertLocal(deploy('a', '26')); // label removed: out of scope
    expect(informer.get('a', 'ns')).toBeUndefined();
    informer.upsertLocal({
      ...deploy('b', '27', { labels: { app: 'k' } }),
      metadata: { name: 'b', namespace: 'other', labels: { app: 'k' } },
    });
    expect(informer.list()).toHaveLength(0);
    expect(seen).toEqual(['a@20']);
  });

  it('a watch event older than a local write does not bring the state before the write back', async () => {
    const { transport, informer, seen } = setup();
    transport.on({ verb: 'list' }, listOf('10', [deploy('a', '20')]));
    informer.start();
    await informer.waitForSync();
    await vi.advanceTimersByTimeAsync(0);
    const w = transport.activeWatch()!;
    // The operator's patch answered rv 30; the watch is still delivering an edit made before it (rv 25).
    informer.upsertLocal(deploy('a', '30', { labels: { fixed: 'yes' } }));
    w.send('MODIFIED', deploy('a', '25', { labels: { foreign: 'yes' } }));
    expect(informer.get('a', 'ns')).toEqual(deploy('a', '30', { labels: { fixed: 'yes' } }));
    expect(seen).toEqual(['a@20', 'a@30']); // handlers still hear of the event, with the newer state
    w.send('MODIFIED', deploy('a', '31', { labels: { later: 'yes' } }));
    expect(informer.get('a', 'ns')?.metadata.labels).toEqual({ later: 'yes' });
    // Deleted and re-created by this process: the old object's DELETED event keeps the new one.
    informer.upsertLocal(deploy('a', '40'));
    w.send('DELETED', deploy('a', '35'));
    expect(informer.get('a', 'ns')?.metadata.resourceVersion).toBe('40');
    w.send('DELETED', deploy('a', '41'));
    expect(informer.get('a', 'ns')).toBeUndefined();
    expect(informer.lastResourceVersion).toBe('41');
  });

  it('applies a custom transform after dropping managedFields', async () => {
    const { transport, informer } = setup({ transform: (o) => ({ ...o, data: undefined }) });
    transport.on({ verb: 'list' }, listOf('10', [deploy('a', '5', { managedFields: [] })]));
    informer.start();
    await informer.waitForSync();
    expect(informer.get('a', 'ns')).toEqual({ ...deploy('a', '5'), data: undefined });
  });
});

describe('cacheProjection', () => {
  const node: KubeObject = {
    ...Types.Node,
    metadata: { name: 'n1', labels: { 'karpenter.sh/nodepool': 'p' }, managedFields: [{ manager: 'kubelet' }] } as KubeObject['metadata'],
    spec: { providerID: 'aws:///us-east-1a/i-0abc', taints: [{ key: 'k', effect: 'NoSchedule' }] },
    status: { conditions: [{ type: 'Ready', status: 'True' }], images: [{ names: ['quay.io/x@sha256:1'], sizeBytes: 1 }] },
  };
  const csr = (status: Record<string, unknown>): KubeObject => ({
    ...Types.CertificateSigningRequest,
    metadata: { name: 'csr-1' },
    spec: { request: 'UEVN', signerName: 'kubernetes.io/kube-apiserver-client-kubelet' },
    status,
  });

  it('keeps what the controllers read of a Node (metadata, spec) and drops its status', () => {
    const kept = cacheProjection(Types.Node)(node);
    expect(kept).toEqual({ ...Types.Node, metadata: { name: 'n1', labels: { 'karpenter.sh/nodepool': 'p' } }, spec: node.spec });
    expect(node.status).toBeDefined(); // the input is not changed
  });

  it('drops the issued certificate of a CSR, which then still counts as approved', () => {
    const approved = [{ type: 'Approved', status: 'True' }];
    const issued = csr({ conditions: approved, certificate: 'LS0tLS1CRUdJTg==' });
    const kept = cacheProjection(Types.CertificateSigningRequest)(issued);
    expect(kept).toEqual(csr({ conditions: approved }));
    expect(csrState(kept)).toBe('approved');
    expect(csrState(issued)).toBe('issued');
    // A pending CSR is cached whole.
    expect(cacheProjection(Types.CertificateSigningRequest)(csr({}))).toEqual(csr({}));
  });

  it('leaves other kinds whole but for managedFields', () => {
    const d = { ...deploy('a', '1', { managedFields: [] }), status: { readyReplicas: 1 } };
    expect(cacheProjection(Types.Deployment)(d)).toEqual({ ...deploy('a', '1'), status: { readyReplicas: 1 } });
  });

  it('is what an informer of the kind caches and tells its handlers', async () => {
    vi.useFakeTimers();
    try {
      const { transport, informer } = setup({}, { type: Types.Node });
      const heard: KubeObject[] = [];
      informer.addHandler((o) => heard.push(o));
      transport.on(
        { verb: 'list' },
        { metadata: { resourceVersion: '10' }, items: [{ ...node, metadata: { ...node.metadata, resourceVersion: '9' } }] },
      );
      informer.start();
      await informer.waitForSync();
      expect(informer.get('n1')?.status).toBeUndefined();
      expect(informer.get('n1')?.spec).toEqual(node.spec);
      expect(heard.map((o) => o.status)).toEqual([undefined]);
      await informer.stop();
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('InformerFactory', () => {
  it('shares informers between equal watches and finds them by kind', () => {
    const transport = new FakeTransport();
    const f = new InformerFactory({ transport, resources: new ResourceResolver(transport) });
    const a = f.informerFor({ type: Types.Node });
    const b = f.informerFor({ type: Types.Node, cluster: 'workload' });
    const c = f.informerFor({ type: Types.Node, labels: { x: 'y' } });
    f.informerFor({ type: Types.Secret });
    expect(a).toBe(b);
    expect(c).not.toBe(a);
    expect(f.informersOf(Types.Node)).toEqual([a, c]);
  });

  it('a kind whose CRD the operator installs is not listed until the CRD is Established (no 404 LIST)', async () => {
    vi.useFakeTimers();
    try {
      const transport = new FakeTransport();
      const crdsPath = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
      const poolsPath = '/apis/karpenter.sh/v1/nodepools';
      transport.on({ verb: 'list', path: crdsPath }, { metadata: { resourceVersion: '10' }, items: [] });
      transport.on(
        { verb: 'list', path: poolsPath },
        { metadata: { resourceVersion: '12' }, items: [{ metadata: { name: 'default', resourceVersion: '12' } }] },
      );
      const f = new InformerFactory({
        transport,
        resources: new ResourceResolver(transport),
        random: () => 0,
        staleAfterMs: 600_000,
        watchTimeoutSeconds: () => 300,
        crdWatch: ManagedCrdsWatch,
      });
      f.informerFor(ManagedCrdsWatch).start(); // the operator's CRD use-case watches them
      const pools = f.informerFor({ type: Types.NodePool });
      pools.start();
      await pools.waitForSync();
      await vi.advanceTimersByTimeAsync(5_000);
      // Synced and empty while the CRD does not exist, and never asked for.
      expect(pools.list()).toEqual([]);
      expect(transport.requests.filter((r) => r.path === poolsPath)).toEqual([]);
      const crd = (established: boolean) => ({
        ...Types.CustomResourceDefinition,
        metadata: { name: 'nodepools.karpenter.sh', resourceVersion: established ? '12' : '11', labels: { [Names.managedLabel]: 'true' } },
        status: { conditions: [{ type: 'Established', status: established ? 'True' : 'False' }] },
      });
      const crdWatch = transport.watches.find((w) => w.path === crdsPath)!;
      expect(crdWatch.query).toMatchObject({ labelSelector: `${Names.managedLabel}=true` });
      crdWatch.send('ADDED', crd(false));
      await vi.advanceTimersByTimeAsync(1_000);
      expect(transport.requests.filter((r) => r.path === poolsPath)).toEqual([]);
      crdWatch.send('MODIFIED', crd(true));
      await vi.advanceTimersByTimeAsync(0);
      expect(pools.list().map((o) => o.metadata.name)).toEqual(['default']);
      expect(transport.requests.filter((r) => r.path === poolsPath).map((r) => r.verb)).toEqual(['list']);
      await f.stop();
    } finally {
      vi.useRealTimers();
    }
  });

  it('a kind whose CRD the operator installs is listed at once where nothing watches those CRDs, and after a grace when their cache cannot sync', async () => {
    vi.useFakeTimers();
    try {
      const transport = new FakeTransport();
      transport.on({ verb: 'list', path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions' }, () => {
        throw apiError(403, 'customresourcedefinitions is forbidden');
      });
      transport.on(
        { verb: 'list', path: '/apis/karpenter.sh/v1/nodepools' },
        { metadata: { resourceVersion: '12' }, items: [{ metadata: { name: 'default', resourceVersion: '12' } }] },
      );
      const lone = new InformerFactory({
        transport,
        resources: new ResourceResolver(transport),
        random: () => 0,
        staleAfterMs: 600_000,
        watchTimeoutSeconds: () => 300,
      });
      const a = lone.informerFor({ type: Types.NodePool });
      a.start();
      await a.waitForSync();
      expect(a.list().map((o) => o.metadata.name)).toEqual(['default']);
      await lone.stop();

      const f = new InformerFactory({
        transport,
        resources: new ResourceResolver(transport),
        random: () => 0,
        staleAfterMs: 600_000,
        watchTimeoutSeconds: () => 300,
        crdWatch: ManagedCrdsWatch,
      });
      f.informerFor(ManagedCrdsWatch).start();
      const b = f.informerFor({ type: Types.NodePool });
      b.start();
      await vi.advanceTimersByTimeAsync(5_000);
      expect(b.hasSynced()).toBe(false);
      await vi.advanceTimersByTimeAsync(30_000);
      expect(b.list().map((o) => o.metadata.name)).toEqual(['default']);
      await f.stop();
    } finally {
      vi.useRealTimers();
    }
  });

  it('a kind whose CRD is already Established is never reported synced before its first list', async () => {
    const transport = new FakeTransport();
    transport.on(
      { verb: 'list', path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions' },
      {
        metadata: { resourceVersion: '10' },
        items: [
          {
            metadata: { name: 'nodeclaims.karpenter.sh', resourceVersion: '9' },
            status: { conditions: [{ type: 'Established', status: 'True' }] },
          },
        ],
      },
    );
    transport.on(
      { verb: 'list', path: '/apis/karpenter.sh/v1/nodeclaims' },
      { metadata: { resourceVersion: '12' }, items: [{ metadata: { name: 'default-abc', resourceVersion: '12' } }] },
    );
    const f = new InformerFactory({
      transport,
      resources: new ResourceResolver(transport),
      staleAfterMs: 600_000,
      crdWatch: ManagedCrdsWatch,
    });
    f.informerFor(ManagedCrdsWatch).start();
    const claims = f.informerFor({ type: Types.NodeClaim });
    claims.start();
    await claims.waitForSync();
    expect(claims.list().map((o) => o.metadata.name)).toEqual(['default-abc']);
    await f.stop();
  });

  it("after an outage, the first watch that gets through cuts the other informers' backoff short", async () => {
    vi.useFakeTimers();
    try {
      const transport = new FakeTransport();
      transport.on({ verb: 'list' }, listOf('10', []));
      const f = new InformerFactory({
        transport,
        resources: new ResourceResolver(transport),
        random: () => 0,
        staleAfterMs: 600_000,
        watchTimeoutSeconds: () => 300,
      });
      const refused = Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } });
      const a = f.informerFor({ type: Types.Deployment, namespace: 'ns' });
      transport.watchFailures.push(refused, refused, refused, refused);
      a.start();
      await a.waitForSync();
      await vi.advanceTimersByTimeAsync(7_000); // failed at 0, 1, 3 and 7 s: now waiting 8 s, until 15 s
      expect(a.restarts).toBe(4);
      const b = f.informerFor({ type: Types.Deployment, namespace: 'other' });
      transport.watchFailures.push(refused);
      b.start();
      await b.waitForSync();
      await vi.advanceTimersByTimeAsync(0);
      expect(b.restarts).toBe(1);
      expect(transport.watches).toHaveLength(0);
      await vi.advanceTimersByTimeAsync(1_000); // b gets through at 8 s ...
      expect(transport.watches.map((w) => w.path)).toEqual([
        '/apis/apps/v1/namespaces/other/deployments',
        '/apis/apps/v1/namespaces/ns/deployments',
      ]);
      expect(a.restarts).toBe(4); // ... and a follows at once instead of at 15 s
      await f.stop();
    } finally {
      vi.useRealTimers();
    }
  });
});
