import {
  describeError,
  isTerminalError,
  noopMetrics,
  silentLogger,
  systemClock,
  type Clock,
  type Logger,
  type Metrics,
  type Result,
} from '@karpenter-operator/core/ports';
import { queueBackoff, retryDelay, type BackoffPolicy } from './backoff.js';
import { RuntimeMetrics } from './metric-names.js';
import { sleep, systemTimers, type TimerHandle, type Timers } from './timers.js';

export interface WorkQueueOptions {
  /** Controller name; the `name`/`controller` label of every metric. */
  name: string;
  handler: (key: string) => Promise<Result>;
  /** Keys processed at the same time (never the same key twice). Default 1. */
  concurrency?: number;
  backoff?: BackoffPolicy;
  clock?: Clock;
  timers?: Timers;
  random?: () => number;
  metrics?: Metrics;
  logger?: Logger;
}

export interface ShutdownOptions {
  /** Process the keys already waiting before stopping (new adds are refused either way). Default false. */
  drain?: boolean;
  /** Stop waiting for running reconciles after this long. Default: wait for them. */
  timeoutMs?: number;
}

/** A queue whose workers have kept the event loop this long yields to it before its next key. */
export const YIELD_AFTER_MS = 10;

/**
 * A keyed work queue with the semantics of client-go's rate-limited workqueue:
 *
 * 1. A key waiting in the queue is not added twice.
 * 2. A key never runs twice at once; a key added while it runs is marked dirty and runs again right after.
 * 3. A failed run is retried after a per-key exponential backoff with jitter, or after the `Retry-After`
 *    its error carries (`retryDelay`); success resets it.
 * 4. `TerminalError` stops retrying (logged); the key runs again only when it is added again.
 * 5. `Result.requeueAfterMs` schedules the next run; of several pending delays the earliest wins.
 * 6. Keys added before `start()` wait; `shutdown()` refuses new adds, cancels delayed ones and waits for
 *    running reconciles (with `drain`, also for the keys already waiting).
 */
export class WorkQueue {
  readonly name: string;
  private readonly handler: (key: string) => Promise<Result>;
  private readonly concurrency: number;
  private readonly backoff: BackoffPolicy;
  private readonly clock: Clock;
  private readonly timers: Timers;
  private readonly random: () => number;
  private readonly metrics: Metrics;
  private readonly logger: Logger;

  private readonly queue: string[] = [];
  private readonly waiting = new Set<string>();
  private readonly running = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly delayed = new Map<string, { due: number; handle: TimerHandle }>();
  private readonly failures = new Map<string, number>();
  private readonly addedAt = new Map<string, number>();
  private readonly inflight = new Set<Promise<void>>();
  private idleWaiters: Array<() => void> = [];
  private started = false;
  private shuttingDown = false;
  private draining = false;
  /** Whether keys ran since the queue was last idle, and when the workers last let timers and I/O run. */
  private busy = false;
  private lastYieldMs = 0;

  constructor(options: WorkQueueOptions) {
    this.name = options.name;
    this.handler = options.handler;
    this.concurrency = Math.max(1, options.concurrency ?? 1);
    this.backoff = options.backoff ?? queueBackoff;
    this.clock = options.clock ?? systemClock;
    this.timers = options.timers ?? systemTimers;
    this.random = options.random ?? Math.random;
    this.metrics = options.metrics ?? noopMetrics;
    this.logger = (options.logger ?? silentLogger).child({ controller: options.name });
  }

  /** Keys waiting to run (not delayed, not running). */
  get depth(): number {
    return this.queue.length;
  }

  /** Keys running now. */
  get active(): number {
    return this.running.size;
  }

  /** Keys with a scheduled (delayed) add. */
  get scheduled(): number {
    return this.delayed.size;
  }

  /** Consecutive failures of `key` since its last success. */
  failuresOf(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  add(key: string): void {
    if (this.shuttingDown) return;
    if (this.running.has(key)) {
      if (!this.dirty.has(key)) {
        this.dirty.add(key);
        this.metrics.inc(RuntimeMetrics.queueAdds.name, { name: this.name });
      }
      return;
    }
    if (this.waiting.has(key)) return;
    this.waiting.add(key);
    this.queue.push(key);
    this.addedAt.set(key, this.clock.now());
    this.metrics.inc(RuntimeMetrics.queueAdds.name, { name: this.name });
    this.reportDepth();
    this.pump();
  }

  /** Adds `key` after `ms`. An earlier pending delay for the same key is kept; a later one is replaced. */
  addAfter(key: string, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) return this.add(key);
    const due = this.clock.now() + ms;
    const existing = this.delayed.get(key);
    if (existing && existing.due <= due) return;
    if (existing) this.timers.clearTimeout(existing.handle);
    const handle = this.timers.setTimeout(() => {
      const current = this.delayed.get(key);
      if (current?.handle !== handle) return;
      this.delayed.delete(key);
      this.add(key);
    }, ms);
    this.delayed.set(key, { due, handle });
  }

  start(): void {
    if (this.started || this.shuttingDown) return;
    this.started = true;
    this.pump();
  }

  /** Resolves when nothing waits and nothing runs (delayed keys do not count). */
  whenIdle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  async shutdown(options: ShutdownOptions = {}): Promise<void> {
    this.shuttingDown = true;
    for (const { handle } of this.delayed.values()) this.timers.clearTimeout(handle);
    this.delayed.clear();
    this.dirty.clear();
    if (options.drain && this.started) {
      this.draining = true;
      this.pump();
    } else {
      this.queue.length = 0;
      this.waiting.clear();
      this.addedAt.clear();
    }
    this.reportDepth();
    const done = (async () => {
      while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
    })();
    if (options.timeoutMs === undefined) {
      await done;
    } else {
      let handle: TimerHandle | undefined;
      const timeout = new Promise<void>((resolve) => {
        handle = this.timers.setTimeout(resolve, options.timeoutMs!);
      });
      await Promise.race([done, timeout]);
      this.timers.clearTimeout(handle);
    }
    this.notifyIdle();
  }

  private isIdle(): boolean {
    return this.queue.length === 0 && this.running.size === 0;
  }

  private notifyIdle(): void {
    if (this.isIdle()) this.busy = false;
    if (!this.isIdle() && !(this.shuttingDown && this.running.size === 0)) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  private reportDepth(): void {
    this.metrics.set(RuntimeMetrics.queueDepth.name, this.queue.length, { name: this.name });
  }

  private pump(): void {
    if (!this.started) return;
    if (this.shuttingDown && !this.draining) return;
    if (!this.busy && this.queue.length > 0) {
      this.busy = true;
      this.lastYieldMs = this.clock.now();
    }
    while (this.running.size < this.concurrency && this.queue.length > 0) {
      const key = this.queue.shift()!;
      this.waiting.delete(key);
      this.running.add(key);
      const addedAt = this.addedAt.get(key);
      this.addedAt.delete(key);
      if (addedAt !== undefined) {
        this.metrics.observe(RuntimeMetrics.queueLatency.name, (this.clock.now() - addedAt) / 1000, { name: this.name });
      }
      const p = this.run(key).finally(() => this.inflight.delete(p));
      this.inflight.add(p);
    }
    this.reportDepth();
  }

  private async run(key: string): Promise<void> {
    // Reconciles that finish without real I/O (cache reads only) chain as resolved promises: thousands of
    // keys at once (a fresh start among thousands of CSRs) would hold the event loop, and the leader
    // Lease renewal and the watches with it, until the last one. Let them in between keys.
    if (this.clock.now() - this.lastYieldMs >= YIELD_AFTER_MS) {
      await sleep(this.timers, 0);
      this.lastYieldMs = this.clock.now();
      // A shutdown without drain (a lost Lease) may have come during the yield: the key must not run.
      if (this.shuttingDown && !this.draining) {
        this.running.delete(key);
        this.notifyIdle();
        return;
      }
    }
    const started = this.clock.now();
    let result: Result | undefined;
    let error: unknown;
    let failed = false;
    try {
      result = await this.handler(key);
    } catch (e) {
      failed = true;
      error = e;
    }
    this.metrics.observe(RuntimeMetrics.workDuration.name, (this.clock.now() - started) / 1000, { name: this.name });
    this.running.delete(key);

    if (failed) {
      this.metrics.inc(RuntimeMetrics.reconcileErrors.name, { controller: this.name });
      if (isTerminalError(error)) {
        this.failures.delete(key);
        this.metrics.inc(RuntimeMetrics.reconcileTotal.name, { controller: this.name, result: 'terminal' });
        this.logger.error('reconcile failed; not retrying until the inputs change', { key, error: describeError(error) });
      } else {
        const attempt = (this.failures.get(key) ?? 0) + 1;
        this.failures.set(key, attempt);
        const delay = retryDelay(attempt, this.backoff, error, this.clock.now(), this.random);
        this.metrics.inc(RuntimeMetrics.reconcileTotal.name, { controller: this.name, result: 'error' });
        this.metrics.inc(RuntimeMetrics.queueRetries.name, { name: this.name });
        this.logger.warn('reconcile failed; retrying', { key, attempt, retryInMs: delay, error: describeError(error) });
        this.addAfter(key, delay);
      }
    } else {
      this.failures.delete(key);
      const after = result?.requeueAfterMs;
      if (after !== undefined && after > 0) {
        this.metrics.inc(RuntimeMetrics.reconcileTotal.name, { controller: this.name, result: 'requeue' });
        this.addAfter(key, after);
      } else {
        this.metrics.inc(RuntimeMetrics.reconcileTotal.name, { controller: this.name, result: 'success' });
      }
    }

    if (this.dirty.delete(key)) this.add(key);
    this.pump();
    this.notifyIdle();
  }
}
