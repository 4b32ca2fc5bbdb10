import { TerminalError, type LogFields, type Logger, type Result } from '@karpenter-operator/core';
import { RecordingMetrics } from '@karpenter-operator/core/testing';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { backoffDelay, type BackoffPolicy } from './backoff.js';
import { WorkQueue, YIELD_AFTER_MS, type WorkQueueOptions } from './work-queue.js';

const clock = { now: () => Date.now() };

interface Deferred {
  promise: Promise<Result>;
  resolve: (r?: Result) => void;
  reject: (e: Error) => void;
}
const deferred = (): Deferred => {
  let resolve!: (r?: Result) => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<Result>((res, rej) => {
    resolve = (r) => res(r ?? {});
    reject = rej;
  });
  return { promise, resolve, reject };
};

class RecordingLogger implements Logger {
  readonly lines: Array<{ level: string; msg: string; fields: LogFields }> = [];
  constructor(private readonly base: LogFields = {}) {}
  debug(msg: string, fields: LogFields = {}) {
    this.lines.push({ level: 'debug', msg, fields: { ...this.base, ...fields } });
  }
  info(msg: string, fields: LogFields = {}) {
    this.lines.push({ level: 'info', msg, fields: { ...this.base, ...fields } });
  }
  warn(msg: string, fields: LogFields = {}) {
    this.lines.push({ level: 'warn', msg, fields: { ...this.base, ...fields } });
  }
  error(msg: string, fields: LogFields = {}) {
    this.lines.push({ level: 'error', msg, fields: { ...this.base, ...fields } });
  }
  child(): Logger {
    return this;
  }
}

function makeQueue(handler: WorkQueueOptions['handler'], extra: Partial<WorkQueueOptions> = {}) {
  return new WorkQueue({ name: 'test.queue', handler, clock, random: () => 0, ...extra });
}

describe('backoffDelay', () => {
  const policy: BackoffPolicy = { baseMs: 200, capMs: 60_000, jitter: 0.2 };
  it.each([
    { name: 'first retry is the base', failures: 1, random: 0, want: 200 },
    { name: 'doubles per failure', failures: 2, random: 0, want: 400 },
    { name: 'fifth failure', failures: 5, random: 0, want: 3_200 },
    { name: 'capped', failures: 20, random: 0, want: 60_000 },
    { name: 'huge failure count stays capped', failures: 5_000, random: 0, want: 60_000 },
    { name: 'jitter takes up to 20% off', failures: 1, random: 0.999_999, want: 160 },
    { name: 'jitter half way', failures: 3, random: 0.5, want: 720 },
    { name: 'zero failures treated as first', failures: 0, random: 0, want: 200 },
  ])('$name', ({ failures, random, want }) => {
    expect(backoffDelay(failures, policy, () => random)).toBe(want);
  });

  it('never exceeds the cap or goes below (1 - jitter) of the exponential delay', () => {
    for (let n = 1; n < 40; n++) {
      for (const r of [0, 0.1, 0.5, 0.9, 0.999]) {
        const d = backoffDelay(n, policy, () => r);
        const exp = Math.min(60_000, 200 * 2 ** (n - 1));
        expect(d).toBeLessThanOrEqual(exp);
        expect(d).toBeGreaterThanOrEqual(Math.floor(exp * 0.8));
      }
    }
  });
});

describe('WorkQueue', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(Date.UTC(2026, 0, 1));
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('de-duplicates keys that are already waiting', async () => {
    const runs: string[] = [];
    const q = makeQueue(async (k) => {
      runs.push(k);
      return {};
    });
    q.add('a');
    q.add('a');
    q.add('b');
    q.add('a');
    expect(q.depth).toBe(2);
    q.start();
    await q.whenIdle();
    expect(runs).toEqual(['a', 'b']);
  });

  it('never runs one key twice at once; a key added while running runs once more afterwards', async () => {
    const gates: Deferred[] = [];
    let concurrent = 0;
    let maxConcurrent = 0;
    const q = makeQueue(
      async () => {
        concurrent++;
        maxConcurrent = Math.max(maxConcurrent, concurrent);
        const d = deferred();
        gates.push(d);
        try {
          return await d.promise;
        } finally {
          concurrent--;
        }
      },
      { concurrency: 4 },
    );
    q.start();
    q.add('a');
    await vi.advanceTimersByTimeAsync(0);
    expect(gates).toHaveLength(1);
    q.add('a');
    q.add('a');
    await vi.advanceTimersByTimeAsync(0);
    expect(gates).toHaveLength(1); // still one run in flight, despite 4 free workers
    gates[0]!.resolve();
    await vi.advanceTimersByTimeAsync(0);
    expect(gates).toHaveLength(2); // the dirty key ran again, once
    gates[1]!.resolve();
    await q.whenIdle();
    expect(gates).toHaveLength(2);
    expect(maxConcurrent).toBe(1);
  });

  it('runs up to `concurrency` different keys at once', async () => {
    const gates = new Map<string, Deferred>();
    let concurrent = 0;
    let maxConcurrent = 0;
    const q = makeQueue(
      async (k) => {
        concurrent++;
        maxConcurrent = Math.max(maxConcurrent, concurrent);
        const d = deferred();
        gates.set(k, d);
        try {
          return await d.promise;
        } finally {
          concurrent--;
        }
      },
      { concurrency: 2 },
    );
    for (const k of ['a', 'b', 'c', 'd']) q.add(k);
    q.start();
    await vi.advanceTimersByTimeAsync(0);
    expect([...gates.keys()]).toEqual(['a', 'b']);
    expect(q.active).toBe(2);
    expect(q.depth).toBe(2);
    gates.get('a')!.resolve();
    await vi.advanceTimersByTimeAsync(0);
    expect([...gates.keys()]).toEqual(['a', 'b', 'c']);
    for (const k of ['b', 'c']) gates.get(k)!.resolve();
    await vi.advanceTimersByTimeAsync(0);
    gates.get('d')!.resolve();
    await q.whenIdle();
    expect(maxConcurrent).toBe(2);
  });

  it('does not run keys before start()', async () => {
    const handler = vi.fn(async () => ({}));
    const q = makeQueue(handler);
    q.add('a');
    await vi.advanceTimersByTimeAsync(10_000);
    expect(handler).not.toHaveBeenCalled();
    q.start();
    await q.whenIdle();
    expect(handler).toHaveBeenCalledTimes(1);
  });

  it('retries failures with per-key exponential backoff and resets it on success', async () => {
    const times: number[] = [];
    const outcomes = ['fail', 'fail', 'fail', 'ok', 'fail', 'ok'];
    const t0 = Date.now();
    const q = makeQueue(async () => {
      times.push(Date.now() - t0);
      if (outcomes.shift() === 'fail') throw new Error('boom');
      return {};
    });
    q.start();
    q.add('a');
    await vi.advanceTimersByTimeAsync(0);
    expect(q.failuresOf('a')).toBe(1);
    await vi.advanceTimersByTimeAsync(200 + 400 + 800);
    expect(times).toEqual([0, 200, 600, 1400]);
    expect(q.failuresOf('a')).toBe(0);
    q.add('a'); // fails again: the backoff starts from the base, not from 1600 ms
    await vi.advanceTimersByTimeAsync(199);
    expect(times).toHaveLength(5);
    await vi.advanceTimersByTimeAsync(1);
    expect(times).toEqual([0, 200, 600, 1400, 1400, 1600]);
  });

  it('keeps backoff per key: one failing key does not delay another', async () => {
    const runs: Array<[string, number]> = [];
    const t0 = Date.now();
    const q = makeQueue(async (k) => {
      runs.push([k, Date.now() - t0]);
      if (k === 'bad') throw new Error('boom');
      return {};
    });
    q.start();
    q.add('bad');
    await vi.advanceTimersByTimeAsync(0);
    await vi.advanceTimersByTimeAsync(200);
    q.add('good');
    await vi.advanceTimersByTimeAsync(0);
    expect(runs).toEqual([
      ['bad', 0],
      ['bad', 200],
      ['good', 200],
    ]);
    expect(q.failuresOf('good')).toBe(0);
    expect(q.failuresOf('bad')).toBe(2);
    await q.shutdown();
  });

  it('applies jitter from the injected random source', async () => {
    const times: number[] = [];
    const t0 = Date.now();
    const q = makeQueue(
      async () => {
        times.push(Date.now() - t0);
        if (times.length < 2) throw new Error('boom');
        return {};
      },
      { random: () => 0.5 },
    );
    q.start();
    q.add('a');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(times).toEqual([0, 180]); // 200 ms minus half of the 20% jitter
  });

  it('schedules the next run after requeueAfterMs', async () => {
    const times: number[] = [];
    const t0 = Date.now();
    const q = makeQueue(async () => {
      times.push(Date.now() - t0);
      return times.length < 3 ? { requeueAfterMs: 5_000 } : {};
    });
    q.start();
    q.add('a');
    await vi.advanceTimersByTimeAsync(60_000);
    expect(times).toEqual([0, 5_000, 10_000]);
    expect(q.scheduled).toBe(0);
  });

  it('keeps the earliest of several delayed adds for one key', async () => {
    const times: number[] = [];
    const t0 = Date.now();
    const q = makeQueue(async () => {
      times.push(Date.now() - t0);
      return {};
    });
    q.start();
    q.addAfter('a', 10_000);
    q.addAfter('a', 3_000);
    q.addAfter('a', 7_000);
    expect(q.scheduled).toBe(1);
    await vi.advanceTimersByTimeAsync(20_000);
    expect(times).toEqual([3_000]);
  });

  it('stops retrying on TerminalError and logs it', async () => {
    const logger = new RecordingLogger();
    const handler = vi.fn(async () => {
      throw new TerminalError('spec.logLevel: must be one of debug, info, error');
    });
    const q = makeQueue(handler, { logger });
    q.start();
    q.add('a');
    await vi.advanceTimersByTimeAsync(120_000);
    expect(handler).toHaveBeenCalledTimes(1);
    expect(q.scheduled).toBe(0);
    expect(q.failuresOf('a')).toBe(0);
    expect(logger.lines).toContainEqual(
      expect.objectContaining({
        level: 'error',
        fields: expect.objectContaining({ key: 'a', error: expect.stringContaining('logLevel') }),
      }),
    );
    q.add('a'); // a new add (the inputs changed) runs it again
    await vi.advanceTimersByTimeAsync(0);
    expect(handler).toHaveBeenCalledTimes(2);
  });

  it('shutdown refuses adds, cancels delayed keys, drops waiting keys and waits for running ones', async () => {
    const gate = deferred();
    const runs: string[] = [];
    const q = makeQueue(async (k) => {
      runs.push(k);
      if (k === 'slow') return gate.promise;
      return { requeueAfterMs: 1_000 };
    });
    q.start();
    q.add('slow');
    q.add('waiting');
    q.addAfter('later', 1_000);
    await vi.advanceTimersByTimeAsync(0);
    expect(runs).toEqual(['slow']);
    let stopped = false;
    const done = q.shutdown().then(() => (stopped = true));
    q.add('refused');
    await vi.advanceTimersByTimeAsync(5_000);
    expect(stopped).toBe(false); // 'slow' still runs
    gate.resolve({ requeueAfterMs: 10 });
    await done;
    await vi.advanceTimersByTimeAsync(5_000);
    expect(runs).toEqual(['slow']);
    expect(q.depth).toBe(0);
    expect(q.scheduled).toBe(0);
  });

  it('shutdown with drain processes the waiting keys first', async () => {
    const runs: string[] = [];
    const q = makeQueue(async (k) => {
      runs.push(k);
      return {};
    });
    q.add('a');
    q.add('b');
    q.start();
    await q.shutdown({ drain: true });
    expect(runs).toEqual(['a', 'b']);
  });

  it('shutdown gives up waiting after timeoutMs', async () => {
    const q = makeQueue(() => new Promise<Result>(() => {}));
    q.start();
    q.add('hung');
    await vi.advanceTimersByTimeAsync(0);
    let stopped = false;
    void q.shutdown({ timeoutMs: 1_000 }).then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(999);
    expect(stopped).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(stopped).toBe(true);
  });

  it('reports depth, adds, retries, results and durations', async () => {
    const metrics = new RecordingMetrics();
    let n = 0;
    const q = makeQueue(
      async () => {
        vi.advanceTimersByTime(250); // the reconcile takes 250 ms of (fake) time
        if (++n === 1) throw new Error('boom');
        return {};
      },
      { metrics },
    );
    q.add('a');
    q.add('a');
    q.add('b');
    expect(metrics.gauges.get('karpenter_operator_workqueue_depth{name=test.queue}')).toBe(2);
    q.start();
    await vi.advanceTimersByTimeAsync(1_000);
    await q.whenIdle();
    expect(metrics.gauges.get('karpenter_operator_workqueue_depth{name=test.queue}')).toBe(0);
    // a, b, then the retry of a
    expect(metrics.counters.get('karpenter_operator_workqueue_adds_total{name=test.queue}')).toBe(3);
    expect(metrics.counters.get('karpenter_operator_workqueue_retries_total{name=test.queue}')).toBe(1);
    expect(metrics.counters.get('karpenter_operator_reconcile_total{controller=test.queue,result=error}')).toBe(1);
    expect(metrics.counters.get('karpenter_operator_reconcile_total{controller=test.queue,result=success}')).toBe(2);
    expect(metrics.counters.get('karpenter_operator_reconcile_errors_total{controller=test.queue}')).toBe(1);
    const work = metrics.observations.filter((o) => o.name === 'karpenter_operator_workqueue_work_duration_seconds');
    expect(work.map((o) => o.value)).toEqual([0.25, 0.25, 0.25]);
    const waits = metrics.observations.filter((o) => o.name === 'karpenter_operator_workqueue_queue_duration_seconds');
    // b waited while a ran; a's retry came due 200 ms after its failure, 50 ms before b finished
    expect(waits.map((o) => o.value)).toEqual([0, 0.25, 0.05]);
  });
});

describe('WorkQueue and the event loop', () => {
  it('lets timers run between keys when reconciles resolve without I/O for longer than YIELD_AFTER_MS', async () => {
    // Real timers; a clock that each reconcile moves on by 2 ms, as if it computed that long.
    let now = 0;
    const keys = Array.from({ length: 100 }, (_, i) => `k${i}`);
    let done = 0;
    const q = new WorkQueue({
      name: 'test.yield',
      clock: { now: () => now },
      random: () => 0,
      handler: async () => {
        now += 2;
        done++;
        return {};
      },
    });
    let doneWhenTimerRan: number | undefined;
    const timer = new Promise<void>((resolve) =>
      setTimeout(() => {
        doneWhenTimerRan = done;
        resolve();
      }, 0),
    );
    for (const k of keys) q.add(k);
    q.start();
    await timer;
    await q.shutdown({ drain: true });
    expect(done).toBe(keys.length);
    // Without the yield all 100 run as one chain of resolved promises before the timer.
    expect(doneWhenTimerRan).toBeLessThanOrEqual(YIELD_AFTER_MS / 2 + 1);
  });

  it('a shutdown without drain during a yield does not run the key that was yielding', async () => {
    let now = 0;
    const ran: string[] = [];
    let stopped: Promise<void> | undefined;
    const q: WorkQueue = new WorkQueue({
      name: 'test.yield-stop',
      clock: { now: () => now },
      random: () => 0,
      handler: async (k) => {
        ran.push(k);
        if (k === 'a') {
          now += YIELD_AFTER_MS; // 'a' used up the budget: 'b' yields before it runs
          // The Lease is lost while 'b' yields (this timer is queued before the yield's).
          setTimeout(() => {
            stopped = q.shutdown();
          }, 0);
        }
        return {};
      },
    });
    q.add('a');
    q.add('b');
    q.start();
    await new Promise((r) => setTimeout(r, 20));
    await stopped;
    expect(ran).toEqual(['a']);
  });
});
