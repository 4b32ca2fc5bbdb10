import {
  describeError,
  noopMetrics,
  silentLogger,
  systemClock,
  type Clock,
  type KubeObject,
  type Logger,
  type Metrics,
  type Reconciler,
} from '@karpenter-operator/core/ports';
import type { BackoffPolicy } from './backoff.js';
import type { CacheFactory, SharedInformer } from './cache.js';
import { systemTimers, type TimerHandle, type Timers } from './timers.js';
import { WorkQueue } from './work-queue.js';

export interface ControllerRuntimeOptions {
  reconcilers: Reconciler[];
  caches: CacheFactory;
  metrics?: Metrics;
  logger?: Logger;
  clock?: Clock;
  timers?: Timers;
  random?: () => number;
  /** Workers per controller; a number for all, or by controller name. Default 1. */
  concurrency?: number | Record<string, number>;
  /** Re-enqueue every controller's `resyncKeys()` this often (from the caches, no LIST). Default 10 minutes. */
  resyncIntervalMs?: number;
  backoff?: BackoffPolicy;
}

export interface StopOptions {
  /** Give up on running reconciles after this long. Default 25 s (inside the pod's 30 s grace period). */
  timeoutMs?: number;
}

/**
 * Runs reconcilers: one shared informer per distinct watch, one work queue per reconciler. Every informer
 * event of a watched kind calls `keysFor` (level-based: adds, updates and deletes alike) and enqueues the
 * keys on that reconciler's queue. Workers start only after every cache has synced (and, with leader
 * election, only on the leader); informers run on standby replicas too, so a new leader starts warm.
 */
export class ControllerRuntime {
  private readonly reconcilers: Reconciler[];
  private readonly caches: CacheFactory;
  private readonly metrics: Metrics;
  private readonly logger: Logger;
  private readonly timers: Timers;
  private readonly resyncIntervalMs: number;
  private readonly queues = new Map<string, WorkQueue>();
  private readonly informers = new Set<SharedInformer>();
  private readonly unsubscribe: Array<() => void> = [];
  private resyncTimer: TimerHandle | undefined;
  private informersStarted = false;
  private workersStarted = false;
  private stopped = false;

  constructor(options: ControllerRuntimeOptions) {
    this.reconcilers = options.reconcilers;
    this.caches = options.caches;
    this.metrics = options.metrics ?? noopMetrics;
    this.logger = options.logger ?? silentLogger;
    this.timers = options.timers ?? systemTimers;
    this.resyncIntervalMs = options.resyncIntervalMs ?? 10 * 60_000;

    const names = new Set<string>();
    for (const r of this.reconcilers) {
      if (names.has(r.name)) throw new Error(`two reconcilers are named ${r.name}`);
      names.add(r.name);
      const concurrency = typeof options.concurrency === 'number' ? options.concurrency : (options.concurrency?.[r.name] ?? 1);
      this.queues.set(
        r.name,
        new WorkQueue({
          name: r.name,
          handler: (key) => r.reconcile(key),
          concurrency,
          clock: options.clock ?? systemClock,
          timers: this.timers,
          metrics: this.metrics,
          logger: this.logger,
          ...(options.backoff ? { backoff: options.backoff } : {}),
          ...(options.random ? { random: options.random } : {}),
        }),
      );
    }
  }

  /** The queue of a controller (for probes, metrics and tests). */
  queue(name: string): WorkQueue | undefined {
    return this.queues.get(name);
  }

  /** Enqueues `key` on controller `name` (e.g. from a timer outside the informers). */
  enqueue(name: string, key: string): void {
    this.queues.get(name)?.add(key);
  }

  /** Creates (or reuses) the informers, subscribes the reconcilers and starts them. Idempotent. */
  startInformers(): void {
    if (this.informersStarted || this.stopped) return;
    this.informersStarted = true;
    for (const r of this.reconcilers) {
      const queue = this.queues.get(r.name)!;
      const seen = new Set<SharedInformer>();
      for (const watch of r.watches) {
        const informer = this.caches.informerFor(watch);
        this.informers.add(informer);
        if (seen.has(informer)) continue;
        seen.add(informer);
        this.unsubscribe.push(informer.addHandler((obj) => this.dispatch(r, queue, obj)));
      }
    }
    for (const informer of this.informers) informer.start();
  }

  /** True once every informer has listed: the readiness of `/readyz`. */
  hasSynced(): boolean {
    return this.informersStarted && [...this.informers].every((i) => i.hasSynced());
  }

  /**
   * Why `hasSynced` is false, for `/readyz`: the kinds still unlisted (namespace too, when scoped) and what
   * their last list said, e.g. a 403 under a Role that lacks `list` on one of them. Undefined when synced.
   */
  syncDetail(): string | undefined {
    if (!this.informersStarted) return 'informers not started';
    const waiting = [...this.informers].filter((i) => !i.hasSynced());
    if (!waiting.length) return undefined;
    const shown = waiting.slice(0, 3).map((i) => {
      const what = i.watch.namespace ? `${i.watch.type.kind} in ${i.watch.namespace}` : i.watch.type.kind;
      const problem = i.syncProblem();
      return problem ? `${what} (${problem})` : what;
    });
    const more = waiting.length > shown.length ? ` and ${waiting.length - shown.length} more` : '';
    return `caches not synced: ${shown.join('; ')}${more}`;
  }

  async waitForSync(signal?: AbortSignal): Promise<void> {
    await Promise.all([...this.informers].map((i) => i.waitForSync(signal)));
  }

  /**
   * Enqueues every controller's resync keys and starts the workers and the periodic resync. Call after
   * `waitForSync` (and after acquiring the lease). Idempotent.
   */
  async startWorkers(): Promise<void> {
    if (this.workersStarted || this.stopped) return;
    this.workersStarted = true;
    await this.resync();
    for (const q of this.queues.values()) q.start();
    this.scheduleResync();
  }

  /**
   * `startInformers` + `waitForSync`, for a binary's start-up: false when `signal` (the process stopping)
   * ended the wait, so the caller returns to its manager instead of failing. Other errors are thrown.
   */
  async syncInformers(signal: AbortSignal): Promise<boolean> {
    this.startInformers();
    try {
      await this.waitForSync(signal);
      return true;
    } catch (e) {
      if (signal.aborted) return false;
      throw e;
    }
  }

  /** `startInformers` + `waitForSync` + `startWorkers`. */
  async start(signal?: AbortSignal): Promise<void> {
    this.startInformers();
    await this.waitForSync(signal);
    await this.startWorkers();
  }

  /** Re-enqueues `resyncKeys()` of every controller now. A failing controller is logged and skipped. */
  async resync(): Promise<void> {
    await Promise.all(
      this.reconcilers.map(async (r) => {
        try {
          const keys = await r.resyncKeys();
          const queue = this.queues.get(r.name)!;
          for (const k of keys) queue.add(k);
        } catch (e) {
          this.logger.error('listing resync keys failed', { controller: r.name, error: describeError(e) });
        }
      }),
    );
  }

  /** Stops the resync, shuts the queues down (waiting for running reconciles) and stops the informers. */
  async stop(options: StopOptions = {}): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.resyncTimer !== undefined) this.timers.clearTimeout(this.resyncTimer);
    this.resyncTimer = undefined;
    for (const u of this.unsubscribe.splice(0)) u();
    const timeoutMs = options.timeoutMs ?? 25_000;
    await Promise.all([...this.queues.values()].map((q) => q.shutdown({ timeoutMs })));
    await Promise.all([...this.informers].map((i) => i.stop()));
  }

  private scheduleResync(): void {
    if (this.stopped || this.resyncIntervalMs <= 0) return;
    this.resyncTimer = this.timers.setTimeout(() => {
      void this.resync().finally(() => this.scheduleResync());
    }, this.resyncIntervalMs);
  }

  private dispatch(r: Reconciler, queue: WorkQueue, obj: KubeObject): void {
    let keys: string[];
    try {
      keys = r.keysFor(obj);
    } catch (e) {
      this.logger.error('mapping an event to keys failed', {
        controller: r.name,
        kind: obj.kind,
        name: obj.metadata?.name,
        namespace: obj.metadata?.namespace,
        error: describeError(e),
      });
      return;
    }
    for (const k of keys) queue.add(k);
  }
}
