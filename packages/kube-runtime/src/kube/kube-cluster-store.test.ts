import {
  ConflictError,
  ForbiddenError,
  NotFoundError,
  RejectedError,
  TerminalError,
  TransientError,
  Types,
  type KubeObject,
  type Watch,
} from '@karpenter-operator/core';
import { FakeClock, RecordingMetrics } from '@karpenter-operator/core/testing';
import { describe, expect, it } from 'vitest';
import { InformerFactory } from './informer-factory.js';
import { KubeClusterStore, NotWatchedError } from './kube-cluster-store.js';
import { ResourceResolver } from './resources.js';
import { FakeTransport, apiError } from './testing/fake-transport.js';
import type { KubeRequest } from './transport.js';

const ns = 'openshift-karpenter';
const deployment = (name: string, extra: Partial<KubeObject> = {}, meta: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace: ns, uid: `uid-${name}`, resourceVersion: '10', ...meta },
  spec: { replicas: 1, template: { spec: { containers: [{ name: 'c', image: 'img:1' }] } } },
  ...extra,
});
const nodePool = (name: string, labels?: Record<string, string>): KubeObject => ({
  apiVersion: 'karpenter.sh/v1',
  kind: 'NodePool',
  metadata: { name, uid: `uid-${name}`, resourceVersion: '10', ...(labels ? { labels } : {}) },
  spec: { weight: 1 },
});
const csr = (name: string, conditions: unknown[] = []): KubeObject => ({
  apiVersion: 'certificates.k8s.io/v1',
  kind: 'CertificateSigningRequest',
  metadata: { name, uid: `uid-${name}`, resourceVersion: '10' },
  spec: { request: 'LS0t', signerName: 'kubernetes.io/kube-apiserver-client-kubelet', usages: ['client auth'] },
  status: { conditions },
});

const defaultWatches: Watch[] = [
  { type: Types.Deployment, namespace: ns },
  { type: Types.NodePool },
  { type: Types.CertificateSigningRequest },
];

/** A synced store over a stub API server that holds `objects`; requests made while syncing are cleared. */
async function world(objects: KubeObject[], watches: Watch[] = defaultWatches) {
  const transport = new FakeTransport();
  const metrics = new RecordingMetrics();
  const resources = new ResourceResolver(transport);
  transport.on({ verb: 'list' }, (req: KubeRequest) => ({
    metadata: { resourceVersion: '100' },
    items: objects.filter(
      (o) =>
        req.path.endsWith(`/${o.kind.toLowerCase()}s`) ||
        (o.kind === 'CertificateSigningRequest' && req.path.endsWith('/certificatesigningrequests')),
    ),
  }));
  const caches = new InformerFactory({ transport, resources, staleAfterMs: 3_600_000 });
  for (const w of watches) caches.informerFor(w).start();
  await Promise.all(caches.all().map((i) => i.waitForSync()));
  transport.requests.length = 0;
  const store = new KubeClusterStore({ transport, resources, caches, metrics, clock: new FakeClock(Date.UTC(2026, 0, 1)) });
  const stop = () => caches.stop();
  return { transport, store, caches, metrics, stop };
}

describe('KubeClusterStore reads', () => {
  it('gets and lists from the cache: filtered, sorted, and copies that do not alias the cache', async () => {
    const { store, transport, stop } = await world([nodePool('b', { team: 'x' }), nodePool('a'), nodePool('c', { team: 'y' })]);
    const got = await store.get({ ...Types.NodePool, name: 'a' });
    expect(got?.metadata.name).toBe('a');
    (got!.spec as { weight: number }).weight = 99;
    expect(((await store.get({ ...Types.NodePool, name: 'a' }))!.spec as { weight: number }).weight).toBe(1);
    expect((await store.list(Types.NodePool)).map((o) => o.metadata.name)).toEqual(['a', 'b', 'c']);
    expect((await store.list(Types.NodePool, { labels: { team: 'x' } })).map((o) => o.metadata.name)).toEqual(['b']);
    expect((await store.list(Types.NodePool, { labels: { team: undefined } })).map((o) => o.metadata.name)).toEqual(['b', 'c']);
    expect(await store.get({ ...Types.NodePool, name: 'missing' })).toBeUndefined();
    expect(transport.requests).toEqual([]); // never a live read
    await stop();
  });

  it('lists the cached objects themselves when asked for a read-only list (no copies), copies otherwise', async () => {
    const { store, caches, stop } = await world([nodePool('b'), nodePool('a')]);
    const cached = caches.informersOf(Types.NodePool).flatMap((c) => c.list());
    const readOnly = await store.list(Types.NodePool, { readOnly: true });
    expect(readOnly.map((o) => o.metadata.name)).toEqual(['a', 'b']);
    for (const o of readOnly) expect(cached).toContain(o);
    for (const o of await store.list(Types.NodePool)) expect(cached).not.toContain(o);
    await stop();
  });

  it.each([
    { name: 'kind never watched', ref: { ...Types.Secret, name: 's', namespace: ns } },
    { name: 'namespace not covered', ref: { ...Types.Deployment, name: 'd', namespace: 'other' } },
  ])('throws NotWatchedError (terminal) when $name', async ({ ref }) => {
    const { store, stop } = await world([]);
    const err = await store.get(ref).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotWatchedError);
    expect(err).toBeInstanceOf(TerminalError);
    expect((err as Error).message).toMatch(/is not watched/);
    await stop();
  });

  it.each([
    { name: 'the scoped informer saw the newer version', newer: 1 },
    { name: 'the wide informer saw the newer version', newer: 0 },
  ])('reads the newest copy when informers of other scopes hold one object: $name', async ({ newer }) => {
    const watches: Watch[] = [{ type: Types.NodePool }, { type: Types.NodePool, fieldSelector: 'metadata.name=a' }];
    const { store, caches, stop } = await world([nodePool('a'), nodePool('b')], watches);
    const updated = { ...nodePool('a'), metadata: { ...nodePool('a').metadata, resourceVersion: '11' }, spec: { weight: 2 } };
    caches.informerFor(watches[newer]!).upsertLocal(updated);
    expect((await store.get({ ...Types.NodePool, name: 'a' }))?.spec).toEqual({ weight: 2 });
    expect((await store.list(Types.NodePool)).map((o) => [o.metadata.name, (o.spec as { weight: number }).weight])).toEqual([
      ['a', 2],
      ['b', 1],
    ]);
    await stop();
  });

  it('throws TransientError while the cache has not synced', async () => {
    const transport = new FakeTransport();
    const resources = new ResourceResolver(transport);
    const caches = new InformerFactory({ transport, resources });
    caches.informerFor({ type: Types.NodePool }); // never started
    const store = new KubeClusterStore({ transport, resources, caches });
    await expect(store.list(Types.NodePool)).rejects.toBeInstanceOf(TransientError);
  });
});

describe('KubeClusterStore.apply', () => {
  it('sends nothing when the cache already shows every desired field', async () => {
    const { store, transport, metrics, stop } = await world([deployment('karpenter', {}, { labels: { user: 'added' } })]);
    const desired = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'karpenter', namespace: ns }, spec: { replicas: 1 } };
    const r = await store.apply<KubeObject>(desired);
    expect(r.changed).toBe(false);
    expect(r.object?.metadata.labels).toEqual({ user: 'added' });
    expect(transport.requests).toEqual([]);
    expect(metrics.counters.get('karpenter_operator_api_writes_skipped_total{kind=Deployment,verb=apply}')).toBe(1);
    await stop();
  });

  it('server-side applies a difference, then serves the result from the cache so a second apply sends nothing', async () => {
    const { store, transport, stop } = await world([deployment('karpenter')]);
    const desired = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'karpenter', namespace: ns }, spec: { replicas: 2 } };
    transport.on({ method: 'PATCH' }, (req: KubeRequest) => ({
      ...deployment('karpenter', { spec: { replicas: 2 } }, { resourceVersion: '11', managedFields: [{ manager: 'karpenter-operator' }] }),
      _echo: req.body !== undefined,
    }));
    const r = await store.apply(desired);
    expect(r.changed).toBe(true);
    expect(r.object?.metadata).not.toHaveProperty('managedFields');
    expect(transport.requests).toEqual([
      {
        verb: 'apply',
        kind: 'Deployment',
        method: 'PATCH',
        path: `/apis/apps/v1/namespaces/${ns}/deployments/karpenter`,
        query: { fieldManager: 'karpenter-operator', force: true },
        body: desired,
        contentType: 'application/apply-patch+yaml',
      },
    ]);
    const again = await store.apply(desired);
    expect(again.changed).toBe(false);
    expect(transport.requests).toHaveLength(1);
    await stop();
  });

  it('merge-patches the owned values whole when a foreign entry is there, then sends nothing', async () => {
    const foreign = {
      spec: {
        replicas: 1,
        template: {
          spec: {
            containers: [
              { name: 'c', image: 'img:1' },
              { name: 'sidecar', image: 'evil' },
            ],
          },
        },
      },
    };
    const { store, transport, stop } = await world([deployment('karpenter', foreign, { labels: { user: 'added' } })]);
    const desired = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'karpenter', namespace: ns },
      spec: { template: { spec: { containers: [{ name: 'c', image: 'img:1' }] } } },
    };
    const ownedWhole = ['spec.template.spec.containers'];
    transport.on({ method: 'PATCH' }, deployment('karpenter', {}, { resourceVersion: '11', labels: { user: 'added' } }));
    const r = await store.apply(desired, { ownedWhole });
    expect(r.changed).toBe(true);
    expect(transport.requests).toEqual([
      {
        verb: 'patch',
        kind: 'Deployment',
        method: 'PATCH',
        path: `/apis/apps/v1/namespaces/${ns}/deployments/karpenter`,
        query: { fieldManager: 'karpenter-operator' },
        body: desired,
        contentType: 'application/merge-patch+json',
      },
    ]);
    expect((await store.apply(desired, { ownedWhole })).changed).toBe(false);
    expect(transport.requests).toHaveLength(1);
    await stop();
  });

  it('does not repeat a write the server did not take until the object changes', async () => {
    const { store, transport, caches, stop } = await world([deployment('karpenter')]);
    const desired = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'karpenter', namespace: ns }, spec: { replicas: 2 } };
    // The server (an admission plug-in, a normalisation) keeps replicas at 1.
    transport.on({ method: 'PATCH' }, deployment('karpenter', {}, { resourceVersion: '11' }));
    expect((await store.apply(desired)).changed).toBe(true);
    expect((await store.apply(desired)).changed).toBe(false);
    expect(transport.requests).toHaveLength(1);
    // Someone else changes the object: one more attempt, then quiet again.
    for (const c of caches.informersOf(Types.Deployment))
      c.upsertLocal(deployment('karpenter', {}, { resourceVersion: '12', labels: { edited: 'yes' } }));
    transport.on({ method: 'PATCH' }, deployment('karpenter', {}, { resourceVersion: '13' }));
    expect((await store.apply(desired)).changed).toBe(true);
    expect((await store.apply(desired)).changed).toBe(false);
    expect(transport.requests).toHaveLength(2);
    // A different desired state is always sent.
    expect((await store.apply({ ...desired, spec: { replicas: 3 } })).changed).toBe(true);
    expect(transport.requests).toHaveLength(3);
    await stop();
  });

  it('creates through apply when the cache shows none, with the given field manager and force', async () => {
    const { store, transport, stop } = await world([]);
    transport.on({ method: 'PATCH' }, nodePool('default'));
    await store.apply(nodePool('default'), { fieldManager: 'karpenter-operator-defaults', force: false });
    expect(transport.requests[0]).toMatchObject({
      path: '/apis/karpenter.sh/v1/nodepools/default',
      query: { fieldManager: 'karpenter-operator-defaults', force: false },
    });
    expect((await store.list(Types.NodePool)).map((o) => o.metadata.name)).toEqual(['default']);
    await stop();
  });

  it.each([
    { name: '403', error: apiError(403, 'deployments.apps "karpenter" is forbidden: User cannot patch'), type: ForbiddenError },
    { name: '422', error: apiError(422, 'Deployment.apps "karpenter" is invalid: spec.replicas: Invalid value: -1'), type: RejectedError },
    { name: '409', error: apiError(409, 'Apply failed with 1 conflict'), type: ConflictError },
    { name: '503', error: apiError(503, 'etcdserver: leader changed'), type: TransientError },
  ])('maps a $name to a core error naming the object and the server message', async ({ error, type }) => {
    const { store, transport, stop } = await world([]);
    transport.on({ method: 'PATCH' }, () => {
      throw error;
    });
    const err = await store.apply(deployment('karpenter')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(type);
    const serverMessage = JSON.parse(error.body as string).message as string;
    expect((err as Error).message).toBe(`applying Deployment ${ns}/karpenter: ${serverMessage}`);
    expect((err as Error).cause).toBe(error);
    await stop();
  });
});

describe('KubeClusterStore.createIfAbsent', () => {
  it('sends nothing when the cache shows the object, even if it differs', async () => {
    const { store, transport, stop } = await world([nodePool('default')]);
    const r = await store.createIfAbsent({ ...nodePool('default'), spec: { weight: 50 } });
    expect(r.changed).toBe(false);
    expect(transport.requests).toEqual([]);
    await stop();
  });

  it('POSTs to the collection when absent', async () => {
    const { store, transport, stop } = await world([]);
    transport.on({ method: 'POST' }, nodePool('default'));
    const r = await store.createIfAbsent(nodePool('default'));
    expect(r.changed).toBe(true);
    expect(transport.requests[0]).toMatchObject({
      method: 'POST',
      path: '/apis/karpenter.sh/v1/nodepools',
      query: { fieldManager: 'karpenter-operator' },
    });
    expect(await store.get({ ...Types.NodePool, name: 'default' })).toBeDefined();
    await stop();
  });

  it('treats 409 AlreadyExists as unchanged and caches the live object', async () => {
    const { store, transport, stop } = await world([]);
    transport.on({ method: 'POST' }, () => {
      throw apiError(409, 'nodepools.karpenter.sh "default" already exists', 'AlreadyExists');
    });
    transport.on({ method: 'GET', path: '/apis/karpenter.sh/v1/nodepools/default' }, nodePool('default'));
    const r = await store.createIfAbsent(nodePool('default'));
    expect(r).toMatchObject({ changed: false, object: { metadata: { name: 'default' } } });
    await store.createIfAbsent(nodePool('default'));
    expect(transport.requests.map((q) => q.method)).toEqual(['POST', 'GET']);
    await stop();
  });
});

describe('KubeClusterStore.patchStatus and patch', () => {
  it('skips a status already in place, merge-patches /status otherwise', async () => {
    const np = { ...nodePool('a'), status: { conditions: [{ type: 'Ready', status: 'True' }] } };
    const { store, transport, stop } = await world([np]);
    expect((await store.patchStatus({ ...Types.NodePool, name: 'a' }, { conditions: [{ type: 'Ready', status: 'True' }] })).changed).toBe(
      false,
    );
    expect(transport.requests).toEqual([]);
    transport.on(
      { method: 'PATCH' },
      { ...np, metadata: { ...np.metadata, resourceVersion: '11' }, status: { conditions: [{ type: 'Ready', status: 'False' }] } },
    );
    const r = await store.patchStatus({ ...Types.NodePool, name: 'a' }, { conditions: [{ type: 'Ready', status: 'False' }] });
    expect(r.changed).toBe(true);
    expect(transport.requests[0]).toMatchObject({
      method: 'PATCH',
      path: '/apis/karpenter.sh/v1/nodepools/a/status',
      contentType: 'application/merge-patch+json',
      body: { status: { conditions: [{ type: 'Ready', status: 'False' }] } },
    });
    expect((await store.patchStatus({ ...Types.NodePool, name: 'a' }, { conditions: [{ type: 'Ready', status: 'False' }] })).changed).toBe(
      false,
    );
    expect(transport.requests).toHaveLength(1);
    await stop();
  });

  it("sends a given resourceVersion as the merge patch's precondition", async () => {
    const np = { ...nodePool('a'), status: { conditions: [] } };
    const { store, transport, stop } = await world([np]);
    transport.on(
      { method: 'PATCH' },
      { ...np, metadata: { ...np.metadata, resourceVersion: '12' }, status: { conditions: [{ type: 'Ready', status: 'True' }] } },
    );
    await store.patchStatus(
      { ...Types.NodePool, name: 'a' },
      { conditions: [{ type: 'Ready', status: 'True' }] },
      { resourceVersion: '7' },
    );
    expect(transport.requests[0]?.body).toEqual({
      metadata: { resourceVersion: '7' },
      status: { conditions: [{ type: 'Ready', status: 'True' }] },
    });
    await stop();
  });

  it('throws NotFoundError for a status patch of an object the cache does not show', async () => {
    const { store, transport, stop } = await world([]);
    await expect(store.patchStatus({ ...Types.NodePool, name: 'gone' }, { a: 1 })).rejects.toBeInstanceOf(NotFoundError);
    expect(transport.requests).toEqual([]);
    await stop();
  });

  it('merge-patches metadata, and drops the object from the cache when its last finalizer goes during deletion', async () => {
    const deleting = {
      ...nodePool('a'),
      metadata: { ...nodePool('a').metadata, finalizers: ['x/y'], deletionTimestamp: '2026-01-01T00:00:00Z' },
    };
    const { store, transport, stop } = await world([deleting]);
    transport.on({ method: 'PATCH' }, { ...deleting, metadata: { ...deleting.metadata, finalizers: [], resourceVersion: '11' } });
    const r = await store.patch({ ...Types.NodePool, name: 'a' }, { metadata: { finalizers: null } });
    expect(r).toEqual({ changed: true, object: undefined });
    expect(transport.requests[0]).toMatchObject({ contentType: 'application/merge-patch+json', body: { metadata: { finalizers: null } } });
    expect(await store.get({ ...Types.NodePool, name: 'a' })).toBeUndefined();
    await stop();
  });
});

describe('KubeClusterStore.delete', () => {
  it.each([
    { name: 'absent', objects: [] as KubeObject[] },
    {
      name: 'already deleting',
      objects: [
        { ...nodePool('a'), metadata: { ...nodePool('a').metadata, deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['f'] } },
      ],
    },
  ])('sends nothing when the cache shows it $name', async ({ objects }) => {
    const { store, transport, stop } = await world(objects);
    expect(await store.delete({ ...Types.NodePool, name: 'a' })).toBe(false);
    expect(transport.requests).toEqual([]);
    await stop();
  });

  it('deletes with the propagation policy and a uid precondition', async () => {
    const { store, transport, stop } = await world([nodePool('a')]);
    transport.on({ method: 'DELETE' }, { kind: 'Status', apiVersion: 'v1', status: 'Success' });
    expect(await store.delete({ ...Types.NodePool, name: 'a' }, { propagation: 'Foreground' })).toBe(true);
    expect(transport.requests[0]).toMatchObject({
      method: 'DELETE',
      path: '/apis/karpenter.sh/v1/nodepools/a',
      body: { kind: 'DeleteOptions', propagationPolicy: 'Foreground', preconditions: { uid: 'uid-a' } },
    });
    expect(await store.get({ ...Types.NodePool, name: 'a' })).toBeUndefined();
    expect(await store.delete({ ...Types.NodePool, name: 'a' })).toBe(false);
    expect(transport.requests).toHaveLength(1);
    await stop();
  });

  it('returns false on 404 (someone else deleted it first)', async () => {
    const { store, transport, stop } = await world([nodePool('a')]);
    transport.on({ method: 'DELETE' }, () => {
      throw apiError(404, 'nodepools.karpenter.sh "a" not found', 'NotFound');
    });
    expect(await store.delete({ ...Types.NodePool, name: 'a' })).toBe(false);
    await stop();
  });

  it('keeps an object with finalizers in the cache as deleting', async () => {
    const { store, transport, stop } = await world([nodePool('a')]);
    transport.on(
      { method: 'DELETE' },
      {
        ...nodePool('a'),
        metadata: { ...nodePool('a').metadata, resourceVersion: '12', deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['f'] },
      },
    );
    expect(await store.delete({ ...Types.NodePool, name: 'a' })).toBe(true);
    expect((await store.get({ ...Types.NodePool, name: 'a' }))?.metadata.deletionTimestamp).toBeDefined();
    expect(await store.delete({ ...Types.NodePool, name: 'a' })).toBe(false);
    await stop();
  });
});

describe('KubeClusterStore.approveCertificateSigningRequest', () => {
  it('sends nothing when the cache shows it approved', async () => {
    const { store, transport, stop } = await world([csr('csr-1', [{ type: 'Approved', status: 'True' }])]);
    expect((await store.approveCertificateSigningRequest('csr-1', 'R', 'm')).changed).toBe(false);
    expect(transport.requests).toEqual([]);
    await stop();
  });

  it('reads the live CSR, appends Approved and PUTs the approval subresource', async () => {
    const { store, transport, stop } = await world([csr('csr-1')]);
    const path = '/apis/certificates.k8s.io/v1/certificatesigningrequests/csr-1';
    transport.on({ method: 'GET', path }, csr('csr-1'));
    transport.on({ method: 'PUT' }, (req: KubeRequest) => ({
      ...(req.body as KubeObject),
      metadata: { ...(req.body as KubeObject).metadata, resourceVersion: '11' },
    }));
    const r = await store.approveCertificateSigningRequest('csr-1', 'KarpenterNodeClaim', 'node of NodeClaim default-abc');
    expect(r.changed).toBe(true);
    expect(transport.requests.map((q) => `${q.method} ${q.path}`)).toEqual([`GET ${path}`, `PUT ${path}/approval`]);
    expect((transport.requests[1]!.body as KubeObject).status).toEqual({
      conditions: [
        {
          type: 'Approved',
          status: 'True',
          reason: 'KarpenterNodeClaim',
          message: 'node of NodeClaim default-abc',
          lastUpdateTime: '2026-01-01T00:00:00Z',
          lastTransitionTime: '2026-01-01T00:00:00Z',
        },
      ],
    });
    expect((transport.requests[1]!.body as KubeObject).metadata.resourceVersion).toBe('10');
    expect((await store.approveCertificateSigningRequest('csr-1', 'R', 'm')).changed).toBe(false);
    expect(transport.requests).toHaveLength(2);
    await stop();
  });

  it('does not PUT when the live CSR is already approved, and throws NotFoundError when it is gone', async () => {
    const { store, transport, stop } = await world([csr('csr-1'), csr('csr-2')]);
    transport.on(
      { method: 'GET', path: '/apis/certificates.k8s.io/v1/certificatesigningrequests/csr-1' },
      csr('csr-1', [{ type: 'Approved', status: 'True' }]),
    );
    transport.on({ method: 'GET', path: '/apis/certificates.k8s.io/v1/certificatesigningrequests/csr-2' }, () => {
      throw apiError(404, 'certificatesigningrequests.certificates.k8s.io "csr-2" not found');
    });
    expect((await store.approveCertificateSigningRequest('csr-1', 'R', 'm')).changed).toBe(false);
    await expect(store.approveCertificateSigningRequest('csr-2', 'R', 'm')).rejects.toThrow(
      /approving CertificateSigningRequest csr-2: .*not found/,
    );
    expect(transport.writes()).toEqual([]);
    await stop();
  });
});
