import { Types, type KubeObject, type Reconciler, type Result, type Watch } from '@karpenter-operator/core';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { routeByCluster, watchKey, type CacheFactory, type InformerHandler, type SharedInformer } from './cache.js';
import { ControllerRuntime } from './controller-runtime.js';

class FakeInformer implements SharedInformer {
  private readonly handlers = new Set<InformerHandler>();
  private synced = false;
  private syncWaiters: Array<() => void> = [];
  readonly objects = new Map<string, KubeObject>();
  started = 0;
  stopped = false;
  constructor(readonly watch: Watch) {}
  addHandler(h: InformerHandler) {
    this.handlers.add(h);
    return () => this.handlers.delete(h);
  }
  start() {
    this.started++;
  }
  async stop() {
    this.stopped = true;
  }
  hasSynced() {
    return this.synced;
  }
  problem: string | undefined;
  syncProblem() {
    return this.synced ? undefined : this.problem;
  }
  waitForSync(signal?: AbortSignal) {
    if (this.synced) return Promise.resolve();
    return new Promise<void>((r, reject) => {
      this.syncWaiters.push(r);
      signal?.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
    });
  }
  get(name: string, namespace?: string) {
    return this.objects.get(`${namespace ?? ''}/${name}`);
  }
  list() {
    return [...this.objects.values()];
  }
  markSynced() {
    this.synced = true;
    for (const w of this.syncWaiters.splice(0)) w();
  }
  /** What the real informer does for an add, an update and a delete alike. */
  emit(obj: KubeObject) {
    for (const h of this.handlers) h(obj);
  }
}

class FakeFactory implements CacheFactory {
  readonly informers = new Map<string, FakeInformer>();
  informerFor(watch: Watch): FakeInformer {
    const k = watchKey(watch);
    let i = this.informers.get(k);
    if (!i) this.informers.set(k, (i = new FakeInformer(watch)));
    return i;
  }
  syncAll() {
    for (const i of this.informers.values()) i.markSynced();
  }
}

const obj = (kind: string, name: string, namespace?: string): KubeObject => ({
  apiVersion: 'v1',
  kind,
  metadata: namespace ? { name, namespace } : { name },
});

function reconciler(name: string, watches: Watch[], opts: Partial<Reconciler> = {}) {
  const runs: string[] = [];
  const r: Reconciler & { runs: string[] } = {
    name,
    watches,
    runs,
    keysFor: (o) => [`${o.metadata.namespace ?? ''}/${o.metadata.name}`],
    resyncKeys: async () => ['resync'],
    reconcile: async (key: string): Promise<Result> => {
      runs.push(key);
      return {};
    },
    ...opts,
  };
  return r;
}

describe('watchKey', () => {
  it.each<{ name: string; a: Watch; b: Watch; same: boolean }>([
    {
      name: 'label order does not matter',
      a: { type: Types.Secret, labels: { a: '1', b: '2' } },
      b: { type: Types.Secret, labels: { b: '2', a: '1' } },
      same: true,
    },
    { name: 'cluster does not matter', a: { type: Types.Node, cluster: 'control' as const }, b: { type: Types.Node }, same: true },
    { name: 'namespace matters', a: { type: Types.Secret, namespace: 'a' }, b: { type: Types.Secret }, same: false },
    {
      name: 'field selector matters',
      a: { type: Types.Infrastructure, fieldSelector: 'metadata.name=cluster' },
      b: { type: Types.Infrastructure },
      same: false,
    },
    { name: 'labels matter', a: { type: Types.Secret, labels: { a: '1' } }, b: { type: Types.Secret, labels: { a: '2' } }, same: false },
    { name: 'kind matters', a: { type: Types.Secret }, b: { type: Types.ConfigMap }, same: false },
  ])('$name', ({ a, b, same }) => {
    expect(watchKey(a) === watchKey(b)).toBe(same);
  });
});

describe('ControllerRuntime', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('starts one informer per distinct watch, shared across reconcilers', () => {
    const caches = new FakeFactory();
    const a = reconciler('a.one', [{ type: Types.Deployment, namespace: 'ns' }, { type: Types.Node }]);
    const b = reconciler('b.two', [{ type: Types.Node }, { type: Types.Node, labels: { role: 'x' } }]);
    const rt = new ControllerRuntime({ reconcilers: [a, b], caches });
    rt.startInformers();
    rt.startInformers();
    expect(caches.informers.size).toBe(3);
    for (const i of caches.informers.values()) expect(i.started).toBe(1);
  });

  it('maps every event of a watched kind to keys on the queue of each interested reconciler', async () => {
    const caches = new FakeFactory();
    const a = reconciler('a.one', [{ type: Types.Node }]);
    const b = reconciler('b.two', [{ type: Types.Node }], { keysFor: () => ['singleton'] });
    const c = reconciler('c.three', [{ type: Types.Secret }]);
    const rt = new ControllerRuntime({ reconcilers: [a, b, c], caches, resyncIntervalMs: 0 });
    rt.startInformers();
    caches.syncAll();
    await rt.start();
    await vi.advanceTimersByTimeAsync(0);
    a.runs.length = b.runs.length = c.runs.length = 0;
    const nodes = caches.informerFor({ type: Types.Node });
    nodes.emit(obj('Node', 'n1'));
    nodes.emit(obj('Node', 'n2'));
    nodes.emit(obj('Node', 'n3'));
    await vi.advanceTimersByTimeAsync(0);
    expect(a.runs).toEqual(['/n1', '/n2', '/n3']);
    // The first event started a run at once; the two that arrived during it coalesced into one more run.
    expect(b.runs).toEqual(['singleton', 'singleton']);
    expect(c.runs).toEqual([]);
  });

  it('keeps events that arrive before the workers start and runs nothing until then', async () => {
    const caches = new FakeFactory();
    const a = reconciler('a.one', [{ type: Types.Node }], { resyncKeys: async () => [] });
    const rt = new ControllerRuntime({ reconcilers: [a], caches });
    rt.startInformers();
    caches.informerFor({ type: Types.Node }).emit(obj('Node', 'n1'));
    caches.informerFor({ type: Types.Node }).emit(obj('Node', 'n1'));
    expect(rt.hasSynced()).toBe(false);
    expect(rt.syncDetail()).toBe('caches not synced: Node');
    caches.informerFor({ type: Types.Node }).problem = 'nodes is forbidden: User "x" cannot list resource "nodes"';
    expect(rt.syncDetail()).toBe('caches not synced: Node (nodes is forbidden: User "x" cannot list resource "nodes")');
    let started = false;
    const start = rt.start().then(() => (started = true));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(started).toBe(false);
    expect(a.runs).toEqual([]);
    caches.syncAll();
    await start;
    expect(rt.hasSynced()).toBe(true);
    expect(rt.syncDetail()).toBeUndefined();
    await rt.queue('a.one')!.whenIdle();
    expect(a.runs).toEqual(['/n1']);
  });

  it('enqueues resync keys at start and then every interval', async () => {
    const caches = new FakeFactory();
    let n = 0;
    const a = reconciler('a.one', [{ type: Types.Node }], { resyncKeys: async () => [`k${++n}`] });
    const rt = new ControllerRuntime({ reconcilers: [a], caches, resyncIntervalMs: 60_000 });
    rt.startInformers();
    caches.syncAll();
    await rt.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(a.runs).toEqual(['k1']);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(a.runs).toEqual(['k1', 'k2']);
    await vi.advanceTimersByTimeAsync(120_000);
    expect(a.runs).toEqual(['k1', 'k2', 'k3', 'k4']);
    await rt.stop();
    await vi.advanceTimersByTimeAsync(600_000);
    expect(a.runs).toHaveLength(4);
  });

  it('logs and skips a reconciler whose keysFor or resyncKeys throws', async () => {
    const caches = new FakeFactory();
    const errors: string[] = [];
    const logger = {
      debug() {},
      info() {},
      warn() {},
      error: (msg: string) => void errors.push(msg),
      child() {
        return logger;
      },
    };
    const bad = reconciler('bad.one', [{ type: Types.Node }], {
      keysFor: () => {
        throw new Error('nope');
      },
      resyncKeys: async () => {
        throw new Error('nope');
      },
    });
    const good = reconciler('good.one', [{ type: Types.Node }], { resyncKeys: async () => [] });
    const rt = new ControllerRuntime({ reconcilers: [bad, good], caches, logger });
    rt.startInformers();
    caches.syncAll();
    await rt.start();
    caches.informerFor({ type: Types.Node }).emit(obj('Node', 'n1'));
    await vi.advanceTimersByTimeAsync(0);
    expect(good.runs).toEqual(['/n1']);
    expect(bad.runs).toEqual([]);
    expect(errors).toEqual(['listing resync keys failed', 'mapping an event to keys failed']);
  });

  it('stop unsubscribes, shuts the queues down and stops the informers', async () => {
    const caches = new FakeFactory();
    const a = reconciler('a.one', [{ type: Types.Node }], { resyncKeys: async () => [] });
    const rt = new ControllerRuntime({ reconcilers: [a], caches });
    rt.startInformers();
    caches.syncAll();
    await rt.start();
    await rt.stop();
    const nodes = caches.informerFor({ type: Types.Node });
    nodes.emit(obj('Node', 'n1'));
    await vi.advanceTimersByTimeAsync(0);
    expect(a.runs).toEqual([]);
    expect(nodes.stopped).toBe(true);
    expect(rt.queue('a.one')!.isShuttingDown).toBe(true);
  });

  it('syncInformers: true once synced, false when the stop signal ends the wait', async () => {
    const synced = new FakeFactory();
    const rt = new ControllerRuntime({ reconcilers: [reconciler('a.one', [{ type: Types.Node }])], caches: synced });
    const ok = rt.syncInformers(new AbortController().signal);
    synced.syncAll();
    await expect(ok).resolves.toBe(true);

    const stuck = new ControllerRuntime({ reconcilers: [reconciler('a.one', [{ type: Types.Node }])], caches: new FakeFactory() });
    const stop = new AbortController();
    const waiting = stuck.syncInformers(stop.signal);
    stop.abort();
    await expect(waiting).resolves.toBe(false);
  });

  it('refuses two reconcilers with one name', () => {
    const caches = new FakeFactory();
    expect(() => new ControllerRuntime({ reconcilers: [reconciler('x.y', []), reconciler('x.y', [])], caches })).toThrow(/x\.y/);
  });

  it('routes watches by cluster', () => {
    const control = new FakeFactory();
    const workload = new FakeFactory();
    const caches = routeByCluster({ control, workload });
    caches.informerFor({ type: Types.Deployment, cluster: 'control' });
    caches.informerFor({ type: Types.Node });
    caches.informerFor({ type: Types.CertificateSigningRequest, cluster: 'workload' });
    expect([...control.informers.values()].map((i) => i.watch.type.kind)).toEqual(['Deployment']);
    expect([...workload.informers.values()].map((i) => i.watch.type.kind)).toEqual(['Node', 'CertificateSigningRequest']);
  });
});
