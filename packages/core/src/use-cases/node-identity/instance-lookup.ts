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
  /** How long `prefetch` collects IDs (longer: nobody waits for it, and NodeClaims come in waves). */
  prefetchWindowMs?: number;
  /** A batch is sent at once when it reaches this many IDs; batches run in parallel. */
  maxBatchSize: number;
  /**
   * When a found instance is used within this long of its expiry, every instance used during the last
   * TTL that expires this soon is refreshed in the background, in one sweep (entries are still served only
   * while fresh). Under steady load entries then do not expire and stall callers behind a large lookup,
   * and instances nobody asks about any more are not refreshed. 0 disables it.
   */
  refreshAheadMs?: number;
  /** Runs `fn` after `ms`; injectable so tests and other runtimes control the batching timer. */
  schedule?: (fn: () => void, ms: number) => void;
}

type Found = ReadonlyMap<string, InstanceInfo>;

interface Batch {
  ids: Set<string>;
  promise: Promise<Found>;
  resolve: (found: Found) => void;
  reject: (e: unknown) => void;
  sent: boolean;
}

/**
 * Instance lookups for many concurrent reconciles through few `describeInstances` calls: a short TTL
 * cache (clock-injected), and a micro-batch that collects the IDs asked for during `batchWindowMs` and
 * looks them all up in one call (or several parallel calls of `maxBatchSize`). An ID already in a call in
 * flight joins that call instead of starting another. Errors are not cached: every caller of a failed
 * batch gets the error (a failed background refresh only leaves the entry to expire).
 */
interface Entry {
  info: InstanceInfo | undefined;
  expiresAt: number;
  /** Last time a caller was answered from this entry (not when it was written): what a sweep keeps warm. */
  usedAt: number;
}

const SWEEP_INTERVAL_MS = 2_000;

export class InstanceLookup {
  private readonly cache = new Map<string, Entry>();
  /** The last answer for each instance found, kept past expiry (see `lastSeen`). */
  private readonly seen = new Map<string, InstanceInfo>();
  private lastSweep = -Infinity;
  private readonly inFlight = new Map<string, Batch>();
  private next: Batch | undefined;
  private nextBackground: Batch | undefined;
  private readonly schedule: (fn: () => void, ms: number) => void;

  constructor(private readonly options: InstanceLookupOptions) {
    this.schedule = options.schedule ?? ((fn, ms) => void setTimeout(fn, ms));
  }

  /** The instances among `ids` that exist (IDs not found are absent). Throws what the cloud throws. */
  async lookup(ids: Iterable<string>): Promise<Map<string, InstanceInfo>> {
    const now = this.options.clock.now();
    const found = new Map<string, InstanceInfo>();
    const pending = new Map<Batch, string[]>();
    for (const id of new Set(ids)) {
      const cached = this.cache.get(id);
      if (cached && cached.expiresAt > now) {
        cached.usedAt = now;
        if (cached.info) {
          found.set(id, cached.info);
          const ahead = this.options.refreshAheadMs ?? 0;
          if (ahead > 0 && cached.expiresAt - now <= ahead) this.sweep(now, ahead);
        }
        continue;
      }
      const joined = this.inFlight.get(id);
      // Someone waits now: a prefetch batch still collecting goes out at once.
      if (joined && !joined.sent && joined === this.nextBackground) void this.send(joined);
      const batch = joined ?? this.enqueue(id);
      pending.set(batch, [...(pending.get(batch) ?? []), id]);
    }
    const results = await Promise.all([...pending.keys()].map((b) => b.promise));
    [...pending.values()].forEach((batchIds, i) => {
      for (const id of batchIds) {
        const info = results[i]!.get(id);
        if (info) found.set(id, info);
      }
    });
    return found;
  }

  /**
   * Marks `ids` as still needed, without any call: a refresh-ahead sweep keeps their entries fresh even if
   * nobody reads them until later (e.g. CSRs queued behind a burst).
   */
  touch(ids: Iterable<string>): void {
    const now = this.options.clock.now();
    for (const id of ids) {
      const e = this.cache.get(id);
      if (e) e.usedAt = now;
    }
    const ahead = this.options.refreshAheadMs ?? 0;
    if (ahead > 0) this.sweep(now, ahead);
  }

  /**
   * Starts a background lookup of the IDs neither fresh in the cache nor in flight (batched like
   * `lookup`); nobody waits for it, and a failure only leaves them unknown.
   */
  prefetch(ids: Iterable<string>): void {
    const now = this.options.clock.now();
    for (const id of ids) {
      const cached = this.cache.get(id);
      if ((cached && cached.expiresAt > now) || this.inFlight.has(id)) continue;
      this.enqueue(id, true);
    }
  }

  /**
   * The last answer for each of `ids` that was ever found, fresh or not, without any call. Only for what
   * does not change during an instance's life (its private DNS name): state and tags need `lookup`.
   */
  lastSeen(ids: Iterable<string>): Map<string, InstanceInfo> {
    const out = new Map<string, InstanceInfo>();
    for (const id of ids) {
      const info = this.seen.get(id);
      if (info) out.set(id, info);
    }
    return out;
  }

  /** Drops cached entries (e.g. when a NodeClaim's instance is known to have changed). */
  invalidate(ids?: Iterable<string>): void {
    if (!ids) this.cache.clear();
    else for (const id of ids) this.cache.delete(id);
  }

  /** Forgets expired entries, and everything about instances not in `keep` (e.g. of NodeClaims gone). */
  prune(keep?: ReadonlySet<string>): void {
    const now = this.options.clock.now();
    for (const [id, e] of this.cache) if (e.expiresAt <= now || (keep && !keep.has(id))) this.cache.delete(id);
    if (keep) for (const id of this.seen.keys()) if (!keep.has(id)) this.seen.delete(id);
  }

  private sweep(now: number, ahead: number): void {
    if (now - this.lastSweep < SWEEP_INTERVAL_MS) return;
    this.lastSweep = now;
    for (const [id, e] of this.cache) {
      const fresh = e.expiresAt > now;
      if (e.info && fresh && e.expiresAt - now <= ahead && e.usedAt >= now - this.options.ttlMs && !this.inFlight.has(id)) this.enqueue(id);
    }
  }

  private enqueue(id: string, background = false): Batch {
    let batch = background ? this.nextBackground : this.next;
    if (!batch) {
      let resolve!: (f: Found) => void;
      let reject!: (e: unknown) => void;
      const promise = new Promise<Found>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      // A batch nobody awaits any more (all callers gone) must not surface as an unhandled rejection.
      promise.catch(() => {});
      batch = { ids: new Set(), promise, resolve, reject, sent: false };
      if (background) this.nextBackground = batch;
      else this.next = batch;
      const scheduled = batch;
      const windowMs = background ? (this.options.prefetchWindowMs ?? this.options.batchWindowMs) : this.options.batchWindowMs;
      this.schedule(() => void this.send(scheduled), windowMs);
    }
    batch.ids.add(id);
    this.inFlight.set(id, batch);
    if (batch.ids.size >= this.options.maxBatchSize) void this.send(batch);
    return batch;
  }

  private async send(batch: Batch): Promise<void> {
    if (batch.sent) return;
    batch.sent = true;
    if (this.next === batch) this.next = undefined;
    if (this.nextBackground === batch) this.nextBackground = undefined;
    const ids = [...batch.ids];
    try {
      const facts = await this.options.facts();
      const infos = await this.options.cloud.describeInstances(ids, facts);
      const now = this.options.clock.now();
      const byId = new Map(infos.map((i) => [i.instanceId, i]));
      for (const id of ids) {
        const info = byId.get(id);
        const usedAt = this.cache.get(id)?.usedAt ?? -Infinity;
        this.cache.set(id, { info, expiresAt: now + (info ? this.options.ttlMs : this.options.negativeTtlMs), usedAt });
        if (info) this.seen.set(id, info);
        else this.seen.delete(id);
      }
      batch.resolve(byId);
    } catch (e) {
      batch.reject(e);
    } finally {
      for (const id of ids) if (this.inFlight.get(id) === batch) this.inFlight.delete(id);
    }
  }
}
