import { PatchStrategy } from './client-node.js';
import {
  ConflictError,
  describeRef,
  foreignEntries,
  isoNow,
  isSubset,
  Names,
  noopMetrics,
  NotFoundError,
  refOf,
  replacingPatch,
  systemClock,
  TerminalError,
  TransientError,
  Types,
  updateFinalizersVia,
  type ApplyOptions,
  type Clock,
  type ClusterStore,
  type FinalizerChange,
  type KubeObject,
  type ListOptions,
  type Metrics,
  type ObjectRef,
  type TypeRef,
  type Watch,
  type WriteResult,
} from '@karpenter-operator/core/ports';
import { RuntimeMetrics } from '../runtime/metric-names.js';
import { toCoreError } from './errors.js';
import { defaultTransform } from './cache-projection.js';
import { isOlder } from './watch-scope.js';
import { resourcePath, type ResourceResolver } from './resources.js';
import type { KubeTransport } from './transport.js';

/** What the store needs of an informer: its scope, its cache, and read-your-writes updates. */
export interface StoreCache {
  readonly watch: Watch;
  hasSynced(): boolean;
  get(name: string, namespace?: string): KubeObject | undefined;
  list(): KubeObject[];
  /** The cached objects sorted by namespace, then name, in code-unit order (shared: never changed). */
  sortedList?(): readonly KubeObject[];
  upsertLocal(obj: KubeObject): void;
  removeLocal(name: string, namespace?: string): void;
}

/** Finds the informers of a kind (`InformerFactory` is one). */
export interface CacheLookup {
  informersOf(type: TypeRef): StoreCache[];
}

/** A kind (or namespace) was read or written through the store, but no reconciler watches it: a wiring bug. */
export class NotWatchedError extends TerminalError {}

export interface KubeClusterStoreOptions {
  transport: KubeTransport;
  resources: ResourceResolver;
  caches: CacheLookup;
  metrics?: Metrics;
  clock?: Clock;
  /** Default field manager. Default `karpenter-operator`. */
  fieldManager?: string;
}

const clone = <T>(v: T): T => structuredClone(v);

const writeKey = (ref: ObjectRef): string => `${ref.apiVersion}|${ref.kind}|${ref.namespace ?? ''}|${ref.name}`;

const isApproved = (csr: KubeObject | undefined) =>
  ((csr?.status as { conditions?: Array<{ type?: string }> } | undefined)?.conditions ?? []).some((c) => c.type === 'Approved');

/** A test of `ListOptions`' namespace and labels, built once per list. */
function listFilter(options: ListOptions): ((obj: KubeObject) => boolean) | undefined {
  const labels = Object.entries(options.labels ?? {});
  const ns = options.namespace;
  if (ns === undefined && labels.length === 0) return undefined;
  return (obj) =>
    (ns === undefined || obj.metadata.namespace === ns) &&
    labels.every(([k, v]) => (v === undefined ? obj.metadata.labels?.[k] !== undefined : obj.metadata.labels?.[k] === v));
}

/**
 * `ClusterStore` over the API server: reads from the informer caches of the kind (never a live LIST),
 * writes only when the cache does not already show the desired state, and puts every write's result in
 * the caches at once (read-your-writes), so the next reconcile does not write again before the watch event
 * arrives. Reading or writing a kind no informer covers throws `NotWatchedError` (a `TerminalError`);
 * reading before the cache synced throws `TransientError`.
 */
export class KubeClusterStore implements ClusterStore {
  private readonly transport: KubeTransport;
  private readonly resources: ResourceResolver;
  private readonly caches: CacheLookup;
  private readonly metrics: Metrics;
  private readonly clock: Clock;
  private readonly fieldManager: string;
  /** Per object, the last apply sent and the resourceVersion it left (see `apply`). */
  private readonly lastApply = new Map<string, { intent: string; resourceVersion: string }>();

  constructor(options: KubeClusterStoreOptions) {
    this.transport = options.transport;
    this.resources = options.resources;
    this.caches = options.caches;
    this.metrics = options.metrics ?? noopMetrics;
    this.clock = options.clock ?? systemClock;
    this.fieldManager = options.fieldManager ?? Names.fieldManager;
  }

  async get<T extends KubeObject = KubeObject>(ref: ObjectRef): Promise<T | undefined> {
    const found = this.cached(ref, `reading ${describeRef(ref)}`);
    return found ? (clone(found) as T) : undefined;
  }

  async list<T extends KubeObject = KubeObject>(type: TypeRef, options: ListOptions = {}): Promise<T[]> {
    const caches = this.cachesFor(type, options.namespace, `listing ${type.kind}`);
    const matches = listFilter(options);
    const only = caches.length === 1 ? caches[0]! : undefined;
    if (only?.sortedList) {
      // One informer: its sorted array, kept between changes (no sort per read of thousands of objects).
      const out: T[] = [];
      for (const o of only.sortedList()) if (!matches || matches(o)) out.push((options.readOnly ? o : clone(o)) as T);
      return out;
    }
    const byKey = new Map<string, KubeObject>();
    for (const c of caches) {
      for (const o of c.list()) {
        if (matches && !matches(o)) continue;
        const key = `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
        const seen = byKey.get(key);
        if (!seen || isOlder(seen, o)) byKey.set(key, o);
      }
    }
    // Code-unit order: a fraction of localeCompare's cost on thousands of keys, the same order for
    // Kubernetes names (lower-case letters, digits, '-' and '.').
    const sorted = [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return sorted.map(([, o]) => (options.readOnly ? o : clone(o)) as T);
  }

  async apply<T extends KubeObject = KubeObject>(desired: T, options: ApplyOptions = {}): Promise<WriteResult<T>> {
    const ref = refOf(desired);
    const action = `applying ${describeRef(ref)}`;
    const current = this.cached(ref, action);
    const owned = options.ownedWhole ?? [];
    const foreign = current ? foreignEntries(desired, current, owned) : [];
    if (current && !foreign.length && isSubset(desired, current)) return this.skipped('apply', ref, current) as WriteResult<T>;
    const key = writeKey(ref);
    const intent = JSON.stringify([desired, options]);
    const last = this.lastApply.get(key);
    // The object is exactly as our identical last write left it: sending it again changes nothing either
    // (a field the server normalises, an admission plug-in that puts something back), and each such write
    // would wake the watchers and come back here.
    if (current && last && last.intent === intent && last.resourceVersion === current.metadata.resourceVersion) {
      return this.skipped('apply', ref, current) as WriteResult<T>;
    }
    const info = await this.resources.resolve(ref);
    const fieldManager = options.fieldManager ?? this.fieldManager;
    // Apply never removes what another manager owns; a merge patch replaces the owned values whole.
    const result = foreign.length
      ? await this.send<T>(action, {
          verb: 'patch',
          kind: ref.kind,
          method: 'PATCH',
          path: resourcePath(ref, info, ref),
          query: { fieldManager },
          body: replacingPatch(desired, current, owned),
          contentType: PatchStrategy.MergePatch,
        })
      : await this.send<T>(action, {
          verb: 'apply',
          kind: ref.kind,
          method: 'PATCH',
          path: resourcePath(ref, info, ref),
          query: { fieldManager, force: options.force ?? true },
          body: desired,
          contentType: PatchStrategy.ServerSideApply,
        });
    const resourceVersion = result?.metadata?.resourceVersion;
    if (resourceVersion) this.lastApply.set(key, { intent, resourceVersion });
    return { changed: true, object: this.remember(result) };
  }

  async createIfAbsent<T extends KubeObject = KubeObject>(desired: T, options: ApplyOptions = {}): Promise<WriteResult<T>> {
    const ref = refOf(desired);
    const action = `creating ${describeRef(ref)}`;
    const current = this.cached(ref, action);
    if (current) return this.skipped('create', ref, current) as WriteResult<T>;
    const info = await this.resources.resolve(ref);
    try {
      const result = await this.send<T>(action, {
        verb: 'create',
        kind: ref.kind,
        method: 'POST',
        path: resourcePath(ref, info, { namespace: ref.namespace }),
        query: { fieldManager: options.fieldManager ?? this.fieldManager },
        body: desired,
      });
      return { changed: true, object: this.remember(result) };
    } catch (e) {
      if (!(e instanceof ConflictError)) throw e;
    }
    // It exists; the cache lags. Read it once so the next reconcile sees it.
    try {
      const live = await this.send<T>(action, { verb: 'get', kind: ref.kind, method: 'GET', path: resourcePath(ref, info, ref) });
      return { changed: false, object: this.remember(live) };
    } catch {
      return { changed: false, object: undefined };
    }
  }

  async patchStatus(ref: ObjectRef, status: Record<string, unknown>, options: { resourceVersion?: string } = {}): Promise<WriteResult> {
    const action = `patching status of ${describeRef(ref)}`;
    const current = this.cached(ref, action);
    if (!current) throw new NotFoundError(`${action}: not found`);
    if (isSubset({ status }, current)) return this.skipped('patchStatus', ref, current);
    const info = await this.resources.resolve(ref);
    const result = await this.send<KubeObject>(action, {
      verb: 'patch',
      kind: ref.kind,
      method: 'PATCH',
      path: resourcePath(ref, info, { ...ref, subresource: 'status' }),
      // A resourceVersion in a merge patch is a precondition: 409 when the object moved on.
      body: options.resourceVersion === undefined ? { status } : { metadata: { resourceVersion: options.resourceVersion }, status },
      contentType: PatchStrategy.MergePatch,
    });
    return { changed: true, object: this.remember(result) };
  }

  async patch(ref: ObjectRef, patch: Record<string, unknown>): Promise<WriteResult> {
    const action = `patching ${describeRef(ref)}`;
    const current = this.cached(ref, action);
    if (!current) throw new NotFoundError(`${action}: not found`);
    if (isSubset(patch, current)) return this.skipped('patch', ref, current);
    const info = await this.resources.resolve(ref);
    const result = await this.send<KubeObject>(action, {
      verb: 'patch',
      kind: ref.kind,
      method: 'PATCH',
      path: resourcePath(ref, info, ref),
      body: patch,
      contentType: PatchStrategy.MergePatch,
    });
    // An object being deleted goes away once its last finalizer is removed.
    if (result?.metadata?.deletionTimestamp && !(result.metadata.finalizers ?? []).length) {
      this.forget(ref);
      return { changed: true, object: undefined };
    }
    return { changed: true, object: this.remember(result) };
  }

  async updateFinalizers(ref: ObjectRef, change: FinalizerChange): Promise<WriteResult> {
    return updateFinalizersVia(this, ref, change);
  }

  async delete(ref: ObjectRef, options: { propagation?: 'Foreground' | 'Background' | 'Orphan' } = {}): Promise<boolean> {
    const action = `deleting ${describeRef(ref)}`;
    const current = this.cached(ref, action);
    if (!current || current.metadata.deletionTimestamp) {
      this.metrics.inc(RuntimeMetrics.apiWritesSkipped.name, { verb: 'delete', kind: ref.kind });
      return false;
    }
    const info = await this.resources.resolve(ref);
    let result: KubeObject | undefined;
    try {
      result = await this.send<KubeObject>(action, {
        verb: 'delete',
        kind: ref.kind,
        method: 'DELETE',
        path: resourcePath(ref, info, ref),
        body: {
          apiVersion: 'v1',
          kind: 'DeleteOptions',
          ...(options.propagation ? { propagationPolicy: options.propagation } : {}),
          // Never delete a namesake created after the cache saw this one.
          ...(current.metadata.uid ? { preconditions: { uid: current.metadata.uid } } : {}),
        },
      });
    } catch (e) {
      if (e instanceof NotFoundError) {
        this.forget(ref);
        return false;
      }
      throw e;
    }
    if (result?.kind === 'Status' || !result?.metadata?.deletionTimestamp) this.forget(ref);
    else this.remember(result);
    return true;
  }

  async approveCertificateSigningRequest(name: string, reason: string, message: string): Promise<WriteResult> {
    const ref: ObjectRef = { ...Types.CertificateSigningRequest, name };
    const action = `approving ${describeRef(ref)}`;
    let cached: KubeObject | undefined;
    try {
      cached = this.cached(ref, action);
    } catch (e) {
      // The live read below decides; a cache is only needed to skip the request.
      if (!(e instanceof NotWatchedError || e instanceof TransientError)) throw e;
    }
    if (cached && isApproved(cached)) return this.skipped('approve', ref, cached);
    const info = await this.resources.resolve(ref);
    const path = resourcePath(ref, info, ref);
    const live = await this.send<KubeObject>(action, { verb: 'get', kind: ref.kind, method: 'GET', path });
    if (isApproved(live)) return { changed: false, object: this.remember(live) };
    const now = isoNow(this.clock);
    const status = (live.status ?? {}) as { conditions?: unknown[] };
    const body: KubeObject = {
      ...live,
      apiVersion: ref.apiVersion,
      kind: ref.kind,
      status: {
        ...status,
        conditions: [
          ...(status.conditions ?? []),
          { type: 'Approved', status: 'True', reason, message, lastUpdateTime: now, lastTransitionTime: now },
        ],
      },
    };
    // The same request as client-node's CertificatesV1Api.replaceCertificateSigningRequestApproval, sent as
    // plain JSON (see NodeHttpTransport). The resourceVersion from the live read makes a concurrent
    // change a 409 (ConflictError: retried with fresh state).
    const result = await this.send<KubeObject>(action, {
      verb: 'update',
      kind: ref.kind,
      method: 'PUT',
      path: `${path}/approval`,
      query: { fieldManager: this.fieldManager },
      body,
    });
    return { changed: true, object: this.remember(result) };
  }

  private cachesFor(type: TypeRef, namespace: string | undefined, action: string): StoreCache[] {
    const all = this.caches.informersOf(type);
    const covering = namespace === undefined ? all : all.filter((c) => c.watch.namespace === undefined || c.watch.namespace === namespace);
    if (covering.length === 0) {
      const where = namespace ? ` in namespace ${namespace}` : '';
      throw new NotWatchedError(`${action}: ${type.kind} (${type.apiVersion})${where} is not watched; add a Watch for it to a reconciler`);
    }
    if (covering.some((c) => !c.hasSynced())) throw new TransientError(`${action}: the ${type.kind} cache has not synced yet`);
    return covering;
  }

  /**
   * The cached object (shared reference), or undefined: the newest copy (by resourceVersion) any informer covering `ref` holds. Informers of one kind with other
   * scopes watch on streams of their own: a reconcile woken by one informer's event must not read the older
   * copy another one still has, or it acts on the state before the event and nothing wakes it again.
   */
  private cached(ref: ObjectRef, action: string): KubeObject | undefined {
    let newest: KubeObject | undefined;
    for (const c of this.cachesFor(ref, ref.namespace, action)) {
      const o = c.get(ref.name, ref.namespace);
      if (o && (!newest || isOlder(newest, o))) newest = o;
    }
    return newest;
  }

  private skipped(verb: string, ref: ObjectRef, current: KubeObject): WriteResult {
    this.metrics.inc(RuntimeMetrics.apiWritesSkipped.name, { verb, kind: ref.kind });
    return { changed: false, object: clone(current) };
  }

  private async send<T>(action: string, req: Parameters<KubeTransport['request']>[0]): Promise<T> {
    try {
      return await this.transport.request<T>(req);
    } catch (e) {
      throw toCoreError(e, action);
    }
  }

  /** Read-your-writes: the write's result goes into every informer of the kind that covers it. */
  private remember<T extends KubeObject>(obj: T): T {
    const o = defaultTransform(obj) as T;
    for (const c of this.caches.informersOf(o)) c.upsertLocal(o);
    return clone(o);
  }

  private forget(ref: ObjectRef): void {
    this.lastApply.delete(writeKey(ref));
    for (const c of this.caches.informersOf(ref)) c.removeLocal(ref.name, ref.namespace);
  }
}
