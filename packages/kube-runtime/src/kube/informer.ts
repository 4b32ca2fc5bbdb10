import {
  describeError,
  isNotFoundError,
  noopMetrics,
  silentLogger,
  systemClock,
  type Clock,
  type KubeObject,
  type Logger,
  type Metrics,
  type Watch,
} from '@karpenter-operator/core/ports';
import { retryDelay, watchBackoff, type BackoffPolicy } from '../runtime/backoff.js';
import type { InformerHandler, SharedInformer } from '../runtime/cache.js';
import { RuntimeMetrics } from '../runtime/metric-names.js';
import { sleep, systemTimers, type TimerHandle, type Timers } from '../runtime/timers.js';
import { httpStatusOf, serverMessage } from './errors.js';
import { crdNameOf, resourcePath, type ResourceResolver } from './resources.js';
import type { KubeTransport, QueryParams, WatchHandle } from './transport.js';
import { cacheProjection } from './cache-projection.js';
import { inScope, isOlder, labelSelectorString } from './watch-scope.js';

/** How often an informer whose kind is not served re-checks for it. */
const NOT_SERVED_POLL_MS = 1_000;
/** Handlers are called for at most this many objects of a relist between two yields to the event loop. */
const NOTIFY_SLICE = 500;

export interface InformerOptions {
  watch: Watch;
  transport: KubeTransport;
  resources: ResourceResolver;
  logger?: Logger;
  metrics?: Metrics;
  clock?: Clock;
  timers?: Timers;
  random?: () => number;
  /** Restart backoff after errors. Default 1 s doubling to 30 s, 50% jitter. */
  backoff?: BackoffPolicy;
  /**
   * Restart the watch when nothing (no event, no bookmark) arrived for this long: a half-open connection
   * otherwise stalls the cache silently. The API server sends a bookmark about every minute. Default 3 min.
   */
  staleAfterMs?: number;
  /** Server-side watch timeout per request; default a random 5..10 minutes, like client-go's reflector. */
  watchTimeoutSeconds?: () => number;
  /** LIST page size. Default 500. */
  pageSize?: number;
  /** Field projection applied to every object before it is cached (after `cacheProjection` of its kind). */
  transform?: (obj: KubeObject) => KubeObject;
  /**
   * Called when this informer gets through to the API server again after failures (a list or a watch
   * connection succeeded). The factory uses it to cut the other informers' backoff short.
   */
  onReachable?: () => void;
  /**
   * Resolves once CRD `name` is Established (or `signal` aborts); calls `whileAbsent` first when it is not
   * (once the CRD cache has synced, so a served kind is never reported empty). Given by the factory; used before listing a
   * kind whose CRD the operator installs (`ResourceInfo.installedCrd`), so no LIST is answered 404 while the
   * CRD does not exist. Without it, such a kind is polled like any other kind that is not served.
   */
  crdEstablished?: (name: string, signal: AbortSignal, whileAbsent: () => void) => Promise<void>;
}

/** The watch ended because the resource version is too old (HTTP 410 / ERROR event with code 410): relist. */
class GoneError extends Error {
  override readonly name = 'GoneError';
}

/** No event or bookmark arrived within `staleAfterMs`. */
class StaleWatchError extends Error {
  override readonly name = 'StaleWatchError';
}

const cacheKey = (name: string, namespace?: string) => `${namespace ?? ''}/${name}`;

interface ListResponse {
  metadata?: { resourceVersion?: string; continue?: string };
  items?: KubeObject[];
}

/**
 * A list+watch informer that does not give up: any error (not only 410) restarts the watch with jittered
 * exponential backoff, 410 Gone relists, and a watchdog restarts a watch that went silent. The cache is
 * keyed by namespace/name and holds objects after `cacheProjection` (managedFields and, for some kinds,
 * fields no controller reads dropped) and `transform`.
 *
 * Handlers are called for every watch event and for every object a relist adds, changes or removes;
 * never for `upsertLocal` (a write's own result), so other controllers still hear about the change when
 * its watch event arrives.
 */
export class Informer implements SharedInformer {
  readonly watch: Watch;
  private readonly transport: KubeTransport;
  private readonly resources: ResourceResolver;
  private readonly logger: Logger;
  private readonly metrics: Metrics;
  private readonly clock: Clock;
  private readonly timers: Timers;
  private readonly random: () => number;
  private readonly backoff: BackoffPolicy;
  private readonly staleAfterMs: number;
  private readonly watchTimeoutSeconds: () => number;
  private readonly pageSize: number;
  private readonly transform: (obj: KubeObject) => KubeObject;

  private readonly objects = new Map<string, KubeObject>();
  /** The cache's keys in code-unit order, while no key is added or removed. */
  private sortedKeys: string[] | undefined;
  /** The cached objects in that order, while nothing changes. */
  private sorted: readonly KubeObject[] | undefined;
  private readonly handlers = new Set<InformerHandler>();
  private syncWaiters: Array<() => void> = [];
  private synced = false;
  private resourceVersion = '';
  private running: Promise<void> | undefined;
  private readonly abort = new AbortController();
  private stopCurrentWatch: (() => void) | undefined;
  private backoffWake: AbortController | undefined;
  private failing = false;
  /** Why the last list failed, until the first one succeeds (`syncProblem`). */
  private listProblem: string | undefined;
  private readonly onReachable: (() => void) | undefined;
  private readonly crdEstablished: InformerOptions['crdEstablished'];
  /** Restarts so far, for tests and diagnostics. */
  restarts = 0;

  constructor(options: InformerOptions) {
    this.watch = options.watch;
    this.transport = options.transport;
    this.resources = options.resources;
    this.metrics = options.metrics ?? noopMetrics;
    this.clock = options.clock ?? systemClock;
    this.timers = options.timers ?? systemTimers;
    this.random = options.random ?? Math.random;
    this.backoff = options.backoff ?? watchBackoff;
    this.staleAfterMs = options.staleAfterMs ?? 3 * 60_000;
    this.watchTimeoutSeconds = options.watchTimeoutSeconds ?? (() => Math.floor(300 * (1 + this.random())));
    this.pageSize = options.pageSize ?? 500;
    this.onReachable = options.onReachable;
    this.crdEstablished = options.crdEstablished;
    const extra = options.transform;
    const projection = cacheProjection(this.watch.type);
    this.transform = extra ? (o) => extra(projection(o)) : projection;
    this.logger = (options.logger ?? silentLogger).child({
      informer: this.watch.type.kind,
      ...(this.watch.namespace ? { namespace: this.watch.namespace } : {}),
      ...(this.watch.labels ? { labelSelector: labelSelectorString(this.watch.labels) } : {}),
      ...(this.watch.fieldSelector ? { fieldSelector: this.watch.fieldSelector } : {}),
    });
  }

  /**
   * Ends a backoff wait now: another informer of the same API server just got through, so this one's next
   * attempt will likely succeed too (after an outage every watch otherwise waits out its own, by then long,
   * backoff). A no-op while the informer is not waiting.
   */
  retryNow(): void {
    this.backoffWake?.abort();
  }

  /** The API server answered: tell the factory once per recovery. */
  private reached(): void {
    if (!this.failing) return;
    this.failing = false;
    this.onReachable?.();
  }

  addHandler(handler: InformerHandler): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  start(): void {
    if (this.running || this.abort.signal.aborted) return;
    this.running = this.run();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.stopCurrentWatch?.();
    await this.running;
  }

  hasSynced(): boolean {
    return this.synced;
  }

  syncProblem(): string | undefined {
    return this.synced ? undefined : this.listProblem;
  }

  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.synced) return Promise.resolve();
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(new Error(`waiting for the ${this.watch.type.kind} cache: aborted`));
      const done = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        this.syncWaiters = this.syncWaiters.filter((w) => w !== done);
        reject(new Error(`waiting for the ${this.watch.type.kind} cache: aborted`));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.syncWaiters.push(done);
    });
  }

  get(name: string, namespace?: string): KubeObject | undefined {
    return this.objects.get(cacheKey(name, namespace));
  }

  list(): KubeObject[] {
    return [...this.objects.values()];
  }

  /**
   * The cached objects sorted by namespace, then name (code-unit order): one array, kept until the cache
   * changes, so that listing thousands of objects sorts them once, not on every read. Shared: never change
   * it or its objects. A change of an object keeps the order (only an added or removed key sorts again).
   */
  sortedList(): readonly KubeObject[] {
    if (!this.sorted) {
      this.sortedKeys ??= [...this.objects.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      this.sorted = this.sortedKeys.map((k) => this.objects.get(k)!);
    }
    return this.sorted;
  }

  private setObject(key: string, o: KubeObject): void {
    if (!this.objects.has(key)) this.sortedKeys = undefined;
    this.objects.set(key, o);
    this.sorted = undefined;
  }

  private deleteObject(key: string): void {
    if (!this.objects.delete(key)) return;
    this.sortedKeys = undefined;
    this.sorted = undefined;
  }

  /** The last resource version seen (list, event or bookmark). */
  get lastResourceVersion(): string {
    return this.resourceVersion;
  }

  /**
   * Read-your-writes: puts a write's result in the cache at once, unless the cache already holds a newer
   * version or the object is outside this informer's scope (then it is removed, as the watch will do).
   * Does not call handlers.
   */
  upsertLocal(obj: KubeObject): void {
    const o = this.normalize(obj);
    const key = cacheKey(o.metadata.name, o.metadata.namespace);
    const scope = inScope(this.watch, o);
    if (scope === false) {
      this.deleteObject(key);
      return;
    }
    if (scope === undefined) return;
    if (isOlder(o, this.objects.get(key))) return;
    this.setObject(key, o);
  }

  /** Read-your-writes for a delete that removed the object at once. Does not call handlers. */
  removeLocal(name: string, namespace?: string): void {
    this.deleteObject(cacheKey(name, namespace));
  }

  private normalize(raw: KubeObject): KubeObject {
    const o = { ...raw };
    o.apiVersion ??= this.watch.type.apiVersion;
    o.kind ??= this.watch.type.kind;
    return this.transform(o);
  }

  private notify(obj: KubeObject): void {
    for (const h of this.handlers) {
      try {
        h(obj);
      } catch (e) {
        this.logger.error('informer handler failed', { name: obj.metadata.name, error: describeError(e) });
      }
    }
  }

  private setSynced(): void {
    if (this.synced) return;
    this.synced = true;
    this.listProblem = undefined;
    this.metrics.set(RuntimeMetrics.informerSynced.name, 1, { kind: this.watch.type.kind });
    for (const w of this.syncWaiters.splice(0)) w();
  }

  private selectorQuery(): QueryParams {
    const q: QueryParams = {};
    const labelSelector = labelSelectorString(this.watch.labels);
    if (labelSelector) q.labelSelector = labelSelector;
    if (this.watch.fieldSelector) q.fieldSelector = this.watch.fieldSelector;
    return q;
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    let failures = 0;
    while (!signal.aborted) {
      let events = 0;
      try {
        const info = await this.resources.resolve(this.watch.type);
        const path = resourcePath(this.watch.type, info, { namespace: this.watch.namespace });
        const crd = info.installedCrd && this.crdEstablished ? crdNameOf(this.watch.type, info) : undefined;
        // Until the operator has installed the CRD the cache is empty and synced (start-up does not wait).
        if (!this.resourceVersion && crd) await this.crdEstablished!(crd, signal, () => this.setSynced());
        if (signal.aborted) break;
        if (!this.resourceVersion) {
          await this.relist(path);
          this.reached();
        }
        if (signal.aborted) break;
        const startedAt = this.clock.now();
        events = await this.watchOnce(path);
        // A watch the server closes at once with nothing in it must not become a tight loop.
        if (events === 0 && this.clock.now() - startedAt < 1_000 && !signal.aborted) {
          throw new Error('the watch closed immediately');
        }
        failures = 0;
      } catch (e) {
        if (signal.aborted) break;
        if (e instanceof GoneError) {
          this.resourceVersion = '';
          this.countRestart('gone');
          this.logger.info('watch expired (410 Gone); relisting');
          continue;
        }
        // 404 from the list, or NotFoundError from discovery (a kind outside the known table, e.g. a
        // provider's NodeClass whose CRD is not installed: the Azure stub's AKSNodeClass).
        if (httpStatusOf(e) === 404 || isNotFoundError(e)) {
          // The kind is not served (yet): its CRD is one the operator installs, or was deleted. That is an
          // empty, synced cache, so start-up does not wait for it; poll briefly until the kind appears.
          this.resourceVersion = '';
          if (this.objects.size) await this.replace([]);
          if (!this.synced) this.logger.info('kind not served yet; treating it as empty until it is');
          this.setSynced();
          // Then, for a kind whose CRD the operator installs, the next pass waits for the CRD (above).
          await sleep(this.timers, NOT_SERVED_POLL_MS, signal);
          continue;
        }
        if (events > 0) failures = 0;
        failures++;
        const delay = retryDelay(failures, this.backoff, e, this.clock.now(), this.random);
        const reason = e instanceof StaleWatchError ? 'stale' : 'error';
        this.countRestart(reason);
        const fields = { attempt: failures, retryInMs: delay, error: describeError(e) };
        if (!this.synced) {
          const status = httpStatusOf(e);
          this.listProblem = status === undefined ? serverMessage(e) : `HTTP ${status}: ${serverMessage(e)}`;
        }
        if (reason === 'stale' || failures < 5) this.logger.warn('watch failed; restarting', fields);
        else this.logger.error('watch keeps failing; restarting', fields);
        this.failing = reason === 'error';
        const wake = new AbortController();
        this.backoffWake = wake;
        await sleep(this.timers, delay, AbortSignal.any([signal, wake.signal]));
        this.backoffWake = undefined;
      }
    }
  }

  private countRestart(reason: 'gone' | 'stale' | 'error'): void {
    this.restarts++;
    this.metrics.inc(RuntimeMetrics.informerRestarts.name, { kind: this.watch.type.kind, reason });
  }

  private async relist(path: string): Promise<void> {
    const items: KubeObject[] = [];
    let cont: string | undefined;
    let rv = '';
    do {
      let page: ListResponse;
      try {
        page = await this.transport.request<ListResponse>({
          verb: 'list',
          kind: this.watch.type.kind,
          method: 'GET',
          path,
          query: { ...this.selectorQuery(), limit: this.pageSize, continue: cont },
        });
      } catch (e) {
        // An expired continue token: start the list over.
        if (httpStatusOf(e) === 410) throw new GoneError(serverMessage(e));
        throw e;
      }
      // Normalised page by page: the raw page can go, and 5,000 objects are not copied in one go at the end.
      for (const i of page.items ?? []) items.push(this.normalize(i));
      cont = page.metadata?.continue || undefined;
      rv = page.metadata?.resourceVersion ?? '';
    } while (cont);
    await this.replace(items);
    this.resourceVersion = rv;
    this.setSynced();
  }

  /**
   * Replaces the cache with a fresh list; notifies for what was added, changed or removed, `NOTIFY_SLICE`
   * objects at a time between yields to the event loop: the first list of thousands of objects would
   * otherwise run every handler for all of them in one go, the Lease renewal waiting behind.
   */
  private async replace(items: KubeObject[]): Promise<void> {
    const next = new Map(items.map((o) => [cacheKey(o.metadata.name, o.metadata.namespace), o]));
    const changed: KubeObject[] = [];
    const removed: KubeObject[] = [];
    for (const [k, old] of this.objects) if (!next.has(k)) removed.push(old);
    for (const [k, o] of next) {
      const old = this.objects.get(k);
      if (!old || old.metadata.resourceVersion !== o.metadata.resourceVersion) changed.push(o);
    }
    this.objects.clear();
    for (const [k, o] of next) this.objects.set(k, o);
    this.sortedKeys = undefined;
    this.sorted = undefined;
    this.reportSize();
    let n = 0;
    for (const o of [...removed, ...changed]) {
      if (++n % NOTIFY_SLICE === 0) await sleep(this.timers, 0, this.abort.signal);
      this.notify(o);
    }
  }

  private reportSize(): void {
    this.metrics.set(RuntimeMetrics.informerObjects.name, this.objects.size, { kind: this.watch.type.kind });
  }

  /** Runs one watch request; resolves with the number of events seen when it ends cleanly. */
  private watchOnce(path: string): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      let settled = false;
      let handle: WatchHandle | undefined;
      let watchdog: TimerHandle | undefined;
      let lastActivity = this.clock.now();
      let events = 0;

      const finish = (error?: unknown) => {
        if (settled) return;
        settled = true;
        if (watchdog !== undefined) this.timers.clearTimeout(watchdog);
        this.stopCurrentWatch = undefined;
        handle?.abort();
        if (error === undefined) resolve(events);
        else reject(error);
      };
      this.stopCurrentWatch = () => finish();

      const check = () => {
        const idle = this.clock.now() - lastActivity;
        if (idle >= this.staleAfterMs) {
          finish(new StaleWatchError(`no event or bookmark for ${Math.round(idle / 1000)} s`));
        } else {
          watchdog = this.timers.setTimeout(check, this.staleAfterMs - idle);
        }
      };
      watchdog = this.timers.setTimeout(check, this.staleAfterMs);

      const onEvent = (type: string, raw: unknown) => {
        if (settled) return;
        lastActivity = this.clock.now();
        events++;
        const obj = raw as KubeObject;
        switch (type) {
          case 'ADDED':
          case 'MODIFIED': {
            const o = this.normalize(obj);
            const key = cacheKey(o.metadata.name, o.metadata.namespace);
            // An event older than this process's own write (`upsertLocal`) is not allowed to bring the state
            // before that write back: a reconcile would repeat the write. Handlers hear of it all the same.
            const cached = this.objects.get(key);
            const latest = isOlder(o, cached) ? cached! : o;
            this.setObject(key, latest);
            this.resourceVersion = o.metadata.resourceVersion ?? this.resourceVersion;
            this.reportSize();
            this.notify(latest);
            return;
          }
          case 'DELETED': {
            const o = this.normalize(obj);
            const key = cacheKey(o.metadata.name, o.metadata.namespace);
            // The deletion of an older object than the one this process has since created keeps the new one.
            if (!isOlder(o, this.objects.get(key))) this.deleteObject(key);
            this.resourceVersion = o.metadata.resourceVersion ?? this.resourceVersion;
            this.reportSize();
            this.notify(o);
            return;
          }
          case 'BOOKMARK':
            this.resourceVersion = obj?.metadata?.resourceVersion ?? this.resourceVersion;
            return;
          case 'ERROR': {
            const status = raw as { code?: number; message?: string };
            if (status?.code === 410) return finish(new GoneError(status.message ?? 'resource version too old'));
            const err = Object.assign(new Error(`watch error: ${status?.message ?? JSON.stringify(raw)}`), {
              statusCode: status?.code,
            });
            return finish(err);
          }
          default:
            return;
        }
      };

      const onDone = (error: unknown) => {
        if (error === null || error === undefined) return finish();
        if (httpStatusOf(error) === 410) return finish(new GoneError(serverMessage(error)));
        finish(error);
      };

      const query: QueryParams = {
        ...this.selectorQuery(),
        resourceVersion: this.resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds: this.watchTimeoutSeconds(),
      };
      this.transport.watch({ kind: this.watch.type.kind, path, query, onEvent, onDone }).then(
        (h) => {
          handle = h;
          if (settled) h.abort();
          else this.reached();
        },
        (e) => onDone(e ?? new Error('watch failed')),
      );
    });
  }
}
