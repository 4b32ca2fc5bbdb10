import type { ClusterFacts } from '../../model/cluster.js';
import type { Clock } from '../../ports/clock.js';
import type { CloudProvider, InstanceInfo } from '../../ports/cloud-provider.js';

export interface InstanceLookupOptions {
  cloud: CloudProvider;
  facts: () => Promise<ClusterFacts>;
  clock: Clock;
  /** How long a found instance is reused. */
  ttlMs: number;
  /** How long "not found" is reused: short, because a just-launched instance appears within seconds. */
  negativeTtlMs: number;
  /** How long IDs are collected before one call is made for all of them. */
  batchWindowMs: number;
  /** A batch is sent at once when it reaches this many IDs; batches run in parallel. */
  maxBatchSize: number;
  /**
   * A found instance used within this long of its expiry is refreshed in the background (it is still
   * served while fresh), so that under steady load entries do not all expire together and stall every
   * caller behind one large lookup. When one entry of a lookup is due, every found entry of that lookup
   * is refreshed with it (the set asked for together is kept fresh together). 0 disables it.
   */
  refreshAheadMs?: number;
  /**
   * Calls made for IDs that need an answer read after a given moment (`readAfterMs`) are paced by a token
   * bucket: up to `freshBurst` of them go out within `batchWindowMs`, then one per `freshBatchWindowMs`
   * (IDs collect meanwhile), so a few nodes joining get their answers at once and a burst of CSRs shares
   * few calls.
   */
  freshBatchWindowMs?: number;
  /** See `freshBatchWindowMs` (default 5). */
  freshBurst?: number;
  /** Runs `fn` after `ms`; injectable so tests and other runtimes control the batching timer. */
  schedule?: (fn: () => void, ms: number) => void;
}

/** IDs to look up: a list or a set (read more than once, and the same object is the same question). */
export type InstanceIds = readonly string[] | ReadonlySet<string>;

/** An instance as the cloud answered, with the moment (operator clock) the request for it was sent. */
export type ObservedInstance = InstanceInfo & { readAtMs: number };

type Found = ReadonlyMap<string, ObservedInstance>;

interface Batch {
  ids: Set<string>;
  promise: Promise<Found>;
  resolve: (found: Found) => void;
  reject: (e: unknown) => void;
  /** When the request was sent (operator clock); undefined while the batch still collects IDs. */
  sentAtMs: number | undefined;
}

export interface LookupOptions {
  /**
   * Only answers whose request was sent at or after this moment count (cached or in flight ones read
   * earlier are asked for again): "the instance was live after the CSR was created".
   */
  readAfterMs?: number;
}

/**
 * Instance lookups for many concurrent reconciles through few `describeInstances` calls: a short TTL
 * cache (clock-injected), and a micro-batch that collects the IDs asked for during `batchWindowMs` and
 * looks them all up in one call (or several parallel calls of `maxBatchSize`). An ID already in a call in
 * flight joins that call instead of starting another. Errors are not cached: every caller of a failed
 * batch gets the error (a failed background refresh only leaves the entry to expire).
 */
export class InstanceLookup {
  private readonly cache = new Map<string, { info: ObservedInstance | undefined; expiresAt: number; readAtMs: number }>();
  /** Bumped on every change of `cache`: a memoised answer of an earlier epoch is not reused. */
  private epoch = 0;
  /**
   * The last answer served wholly from the cache, for the same `ids` object (a listing's array of
   * candidates, shared by the reconciles of a burst): reused while the cache is unchanged and until the
   * first of its entries expires or is due for a refresh, so that a thousand decisions read one map.
   */
  private memo: { ids: InstanceIds; epoch: number; validUntil: number; found: ReadonlyMap<string, ObservedInstance> } | undefined;
  private readonly inFlight = new Map<string, Batch>();
  private next: Batch | undefined;
  private nextFresh: Batch | undefined;
  /** Token bucket pacing the batches of fresh IDs: tokens, and when they were last counted. */
  private freshTokens: number | undefined;
  private freshCountedAt = 0;
  private readonly schedule: (fn: () => void, ms: number) => void;

  constructor(private readonly options: InstanceLookupOptions) {
    this.schedule = options.schedule ?? ((fn, ms) => void setTimeout(fn, ms));
  }

  /**
   * The instances among `ids` that exist (IDs not found are absent). Throws what the cloud throws. The map
   * may be shared with other callers: read it, do not change it.
   */
  async lookup(ids: InstanceIds, opts: LookupOptions = {}): Promise<ReadonlyMap<string, ObservedInstance>> {
    const now = this.options.clock.now();
    const after = opts.readAfterMs;
    const hit = after === undefined ? this.memoised(ids, now) : undefined;
    if (hit) return hit;
    const found = new Map<string, ObservedInstance>();
    const pending = new Map<Batch, string[]>();
    const ahead = this.options.refreshAheadMs ?? 0;
    /** Found and fresh, not in a call: refreshed together once any of them is near expiry. */
    const refreshable: string[] = [];
    let refreshDue = false;
    /** Until when every answer used stays usable and none is due for a refresh. */
    let validUntil = Infinity;
    for (const id of new Set(ids)) {
      const cached = this.cache.get(id);
      if (cached && cached.expiresAt > now && (after === undefined || cached.readAtMs >= after)) {
        validUntil = Math.min(validUntil, this.usableUntil(cached));
        if (cached.info) {
          found.set(id, cached.info);
          if (ahead > 0 && !this.inFlight.has(id)) {
            refreshable.push(id);
            if (cached.expiresAt - now <= ahead) refreshDue = true;
          }
        }
        continue;
      }
      const flying = this.inFlight.get(id);
      const joinable = flying && (after === undefined || flying.sentAtMs === undefined || flying.sentAtMs >= after);
      const batch = joinable ? flying : this.enqueue(id, after !== undefined);
      pending.set(batch, [...(pending.get(batch) ?? []), id]);
    }
    // One refresh for the whole set asked for, not one per entry as each crosses the threshold: entries
    // then keep expiring together, and a burst of lookups of the same candidates costs a few calls per TTL
    // instead of a trickle of small ones.
    if (refreshDue) for (const id of refreshable) this.enqueue(id);
    if (after === undefined && pending.size === 0 && !refreshDue && validUntil > now) {
      this.memo = { ids, epoch: this.epoch, validUntil, found };
    }
    const results = await Promise.all([...pending.keys()].map((b) => b.promise));
    // Every caller a call released gets the one answer the cache now holds (no older than the call's),
    // not a map of its own: in a burst, hundreds of decisions wait on the same few calls.
    const shared = after === undefined ? this.peek(ids) : undefined;
    if (shared) return shared;
    [...pending.values()].forEach((batchIds, i) => {
      for (const id of batchIds) {
        const info = results[i]!.get(id);
        if (info) found.set(id, info);
      }
    });
    return found;
  }

  /**
   * What `lookup(ids)` would answer now without a call (the same shared map), or undefined when it would
   * need one: an ID not cached, or expired. Starts no call and no refresh.
   */
  peek(ids: InstanceIds): ReadonlyMap<string, ObservedInstance> | undefined {
    const now = this.options.clock.now();
    const memoised = this.memoised(ids, now);
    if (memoised) return memoised;
    const found = new Map<string, ObservedInstance>();
    let validUntil = Infinity;
    for (const id of ids) {
      const cached = this.cache.get(id);
      if (!cached || cached.expiresAt <= now) return undefined;
      validUntil = Math.min(validUntil, this.usableUntil(cached));
      if (cached.info) found.set(id, cached.info);
    }
    if (validUntil > now) this.memo = { ids, epoch: this.epoch, validUntil, found };
    return found;
  }

  /** The shared answer for this same `ids` object, while the cache is unchanged and it is still valid. */
  private memoised(ids: InstanceIds, now: number): ReadonlyMap<string, ObservedInstance> | undefined {
    const memo = this.memo;
    return memo && memo.ids === ids && memo.epoch === this.epoch && now < memo.validUntil ? memo.found : undefined;
  }

  /** Until when a cached answer is served without a refresh (found ones are refreshed ahead of expiry). */
  private usableUntil(cached: { info: ObservedInstance | undefined; expiresAt: number }): number {
    const ahead = this.options.refreshAheadMs ?? 0;
    return cached.info && ahead > 0 ? cached.expiresAt - ahead : cached.expiresAt;
  }

  /** Drops cached entries (e.g. when a NodeClaim's instance is known to have changed). */
  invalidate(ids?: Iterable<string>): void {
    this.epoch++;
    if (!ids) this.cache.clear();
    else for (const id of ids) this.cache.delete(id);
  }

  /** Removes expired entries so the cache does not grow with churned instances. */
  prune(): void {
    const now = this.options.clock.now();
    for (const [id, e] of this.cache) if (e.expiresAt <= now) this.cache.delete(id);
    this.epoch++;
  }

  /**
   * Adds `id` to the batch being collected. `fresh` IDs (an answer read from now on is needed) join an
   * unsent ordinary batch when there is one, else the fresh batch with its longer window.
   */
  private enqueue(id: string, fresh = false): Batch {
    const useFresh = fresh && !this.next;
    let batch = useFresh ? this.nextFresh : this.next;
    if (!batch) {
      let resolve!: (f: Found) => void;
      let reject!: (e: unknown) => void;
      const promise = new Promise<Found>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      // A batch nobody awaits any more (all callers gone) must not surface as an unhandled rejection.
      promise.catch(() => {});
      batch = { ids: new Set(), promise, resolve, reject, sentAtMs: undefined };
      if (useFresh) this.nextFresh = batch;
      else this.next = batch;
      const scheduled = batch;
      const window = useFresh ? Math.max(this.options.batchWindowMs, this.freshWait()) : this.options.batchWindowMs;
      this.schedule(() => void this.send(scheduled), window);
    }
    batch.ids.add(id);
    this.inFlight.set(id, batch);
    if (batch.ids.size >= this.options.maxBatchSize) void this.send(batch);
    return batch;
  }

  /** Refills the fresh-call bucket for the time passed; it starts full. */
  private countFreshTokens(): void {
    const now = this.options.clock.now();
    const burst = this.options.freshBurst ?? 5;
    const interval = Math.max(1, this.options.freshBatchWindowMs ?? this.options.batchWindowMs);
    this.freshTokens = Math.min(burst, (this.freshTokens ?? burst) + (now - this.freshCountedAt) / interval);
    this.freshCountedAt = now;
  }

  /** How long a new batch of fresh IDs waits for a token (0 when one is there). */
  private freshWait(): number {
    this.countFreshTokens();
    const interval = Math.max(1, this.options.freshBatchWindowMs ?? this.options.batchWindowMs);
    return this.freshTokens! >= 1 ? 0 : Math.ceil((1 - this.freshTokens!) * interval);
  }

  private async send(batch: Batch): Promise<void> {
    if (batch.sentAtMs !== undefined) return;
    batch.sentAtMs = this.options.clock.now();
    if (this.next === batch) this.next = undefined;
    if (this.nextFresh === batch) {
      this.nextFresh = undefined;
      this.countFreshTokens();
      this.freshTokens = this.freshTokens! - 1;
    }
    const ids = [...batch.ids];
    try {
      const facts = await this.options.facts();
      // The answer is as of the moment the request leaves, never earlier: stamped just before sending.
      const readAtMs = this.options.clock.now();
      batch.sentAtMs = readAtMs;
      const infos = await this.options.cloud.describeInstances(ids, facts);
      const now = this.options.clock.now();
      const byId = new Map(infos.map((i) => [i.instanceId, { ...i, readAtMs }]));
      this.epoch++;
      for (const id of ids) {
        // Calls overlap: an answer read earlier than the one cached (sent before it, back after it) must
        // not replace it.
        if ((this.cache.get(id)?.readAtMs ?? -Infinity) > readAtMs) continue;
        const info = byId.get(id);
        this.cache.set(id, { info, readAtMs, expiresAt: now + (info ? this.options.ttlMs : this.options.negativeTtlMs) });
      }
      batch.resolve(byId);
    } catch (e) {
      batch.reject(e);
    } finally {
      for (const id of ids) if (this.inFlight.get(id) === batch) this.inFlight.delete(id);
    }
  }
}
