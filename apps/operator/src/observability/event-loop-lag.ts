import { monitorEventLoopDelay, performance, type EventLoopUtilization } from 'node:perf_hooks';
// The module's timers, not the globals: fake timers in a test must not strand a pending check.
import { clearImmediate, clearInterval, clearTimeout, setImmediate, setInterval, setTimeout } from 'node:timers';

export interface LagReading {
  /** Seconds. */
  min: number;
  max: number;
  mean: number;
  stddev: number;
  p50: number;
  p90: number;
  p99: number;
}

export interface EventLoopLagOptions {
  /** Resolution of the fine monitor while the loop is busy, ms. Default 10 (prom-client's default). */
  resolutionMs?: number;
  /** How often the loop's activity is sampled to turn the fine monitor on or off, ms. Default 500. */
  sampleMs?: number;
  /**
   * A sampling window with at least this much activity (ms) counts as busy. Default 15: the fine monitor's
   * own ticks are ~2.5 ms of activity per 500 ms window, so a quiet loop with the monitor on reads quiet
   * even when a loaded machine makes them several times slower. A stall shorter than this while the fine
   * monitor is off is still read (as the window's active time), it just does not turn the monitor on.
   */
  busyMs?: number;
  /** Quiet windows in a row before the fine monitor is turned off. Default 4. */
  quietWindows?: number;
}

/**
 * Event-loop lag without a 10 ms timer waking an idle process. `monitorEventLoopDelay` measures lag with a
 * libuv timer that fires every `resolution` ms for the life of the process: ~0.5 s of CPU per 120 s of idle
 * on its own. A stall can only happen while the loop is running something, and the longest stall in a
 * window is never longer than the loop's active time in it (`eventLoopUtilization`). So: a coarse sampler
 * (every `sampleMs`) reads the active time; the fine monitor runs while the loop is busy and is turned off
 * after `quietWindows` quiet windows. For a window the fine monitor did not cover, the maximum is at least
 * that window's active time: an upper bound of any stall in it (a single stall reads its own length,
 * several short tasks read their sum), never less than the truth. Idle, that is a few milliseconds instead
 * of the fine monitor's interval (~10 ms). The fine monitor's readings are `monitorEventLoopDelay`'s,
 * interval included, as prom-client reports them. It starts on: start-up is busy.
 *
 * "Covered" means more than on: the monitor measures a delay from its previous tick, and after it is
 * enabled or reset (every scrape) it has none, so a stall before its first tick is not recorded. Until
 * the monitor has recorded a tick the window counts as uncovered, and a short extra sample (a few ticks
 * after the enable or reset) closes that window early, so that a busy loop's bound covers tens of
 * milliseconds rather than a whole sampling window.
 *
 * A window's active time may be many short tasks. `wake`, called where work arrives (the Kubernetes transport's
 * watch chunks and responses), splits it: with the fine monitor off, the loop iteration that receives work is
 * read on its own, so the first burst after a quiet spell reads its longest iteration, not the window's sum.
 */
export class EventLoopLag {
  private readonly fine: ReturnType<typeof monitorEventLoopDelay>;
  private readonly busyMs: number;
  private readonly quietWindows: number;
  private readonly timer: NodeJS.Timeout;
  private readonly coverMs: number;
  private coverTimer: NodeJS.Timeout | undefined;
  /** A `wake` check is scheduled: its immediate, then its timer (see `wake`). */
  private checkImmediate: NodeJS.Immediate | undefined;
  private checkTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Active time (ms) accounted since the last sample: what decides whether the window was busy. */
  private windowActiveMs = 0;
  private fineOn = false;
  /** The fine monitor is on but has not recorded a tick since it was enabled or reset. */
  private uncovered = false;
  private quiet = 0;
  private last: EventLoopUtilization;
  /** Largest active time (ms) of a window in which the fine monitor was off, since the last reset. */
  private boundMs = 0;
  /**
   * What the fine monitor recorded before it was last turned off, since the last reset (seconds). It is
   * reset when turned off: a monitor turned on again would otherwise count the whole time it was off as one
   * delay (it measures from its previous tick).
   */
  private carried: { reading: LagReading; count: number } | undefined;

  constructor(options: EventLoopLagOptions = {}) {
    const resolution = options.resolutionMs ?? 10;
    this.fine = monitorEventLoopDelay({ resolution });
    // Two ticks: the first after a reset only sets the monitor's reference time, the second records.
    this.coverMs = 2 * resolution + 5;
    this.busyMs = options.busyMs ?? 15;
    this.quietWindows = options.quietWindows ?? 4;
    this.last = performance.eventLoopUtilization();
    this.setFine(true);
    this.timer = setInterval(() => this.sample(), options.sampleMs ?? 500);
    this.timer.unref();
  }

  /** Accounts the window since the last sample; called by the timer and before every reading. */
  sample(): void {
    this.account();
    const active = this.windowActiveMs;
    this.windowActiveMs = 0;
    if (active >= this.busyMs) {
      this.quiet = 0;
      this.setFine(true);
    } else if (this.fineOn && ++this.quiet >= this.quietWindows) {
      this.setFine(false);
    }
  }

  /**
   * Work is arriving (a watch chunk, a response): with the fine monitor off, the loop iteration this is called
   * in is read on its own. A timer that came due during that iteration's work fires only in the next timers
   * phase, after the iteration's other immediates and after every timer due before it: the reading is taken by
   * a 0 ms timer set at the end of the iteration (its check phase), which runs after all of those, so the
   * active time since the last reading bounds the delay of any timer in that stretch. A burst of work after a
   * quiet spell then reads the length of its longest such stretch rather than the sum of a whole sampling
   * window. Nothing wakes an idle process for it: a flag check when the fine monitor is on or a check is
   * already due, one immediate and one timer otherwise.
   */
  wake(): void {
    if (this.fineOn || this.checkImmediate || this.checkTimer || this.stopped) return;
    this.checkImmediate = setImmediate(() => {
      this.checkImmediate = undefined;
      this.checkTimer = setTimeout(() => {
        this.checkTimer = undefined;
        this.account();
      }, 0);
    });
  }

  /** Reads the active time since the last reading into the bound when that stretch was uncovered. */
  private account(): void {
    const now = performance.eventLoopUtilization();
    const active = performance.eventLoopUtilization(now, this.last).active;
    this.last = now;
    this.windowActiveMs += active;
    if (!this.fineOn || this.uncovered) this.boundMs = Math.max(this.boundMs, active);
    if (this.fineOn && this.fine.count > 0) this.uncovered = false;
  }

  /** Marks the fine monitor uncovered and closes that window a few ticks later. */
  private uncover(): void {
    this.uncovered = true;
    if (this.coverTimer) return;
    this.coverTimer = setTimeout(() => {
      this.coverTimer = undefined;
      this.account();
      if (this.uncovered && this.fineOn) this.uncover(); // no tick yet (a loaded machine): look again
    }, this.coverMs);
    this.coverTimer.unref();
  }

  /** The lag since the last reset (seconds), then resets. */
  readAndReset(): LagReading {
    this.sample();
    this.carry();
    const bound = this.boundMs / 1e3;
    const c = this.carried?.reading;
    // The bound is a maximum, not a sample: it raises only the max of what the fine monitor measured, and
    // stands for every statistic only when the monitor measured nothing.
    const reading: LagReading = c
      ? { ...c, max: Math.max(c.max, bound) }
      : { min: bound, max: bound, mean: bound, stddev: 0, p50: bound, p90: bound, p99: bound };
    this.carried = undefined;
    this.boundMs = 0;
    return reading;
  }

  /**
   * Moves what the fine monitor recorded into `carried` and resets it. Several stretches combine exactly for
   * min, max and mean; percentiles and stddev take the larger of the stretches (never below the truth's max).
   */
  private carry(): void {
    const h = this.fine;
    if (h.count > 0) {
      const now: LagReading = {
        min: h.min / 1e9,
        max: h.max / 1e9,
        mean: h.mean / 1e9,
        stddev: h.stddev / 1e9,
        p50: h.percentile(50) / 1e9,
        p90: h.percentile(90) / 1e9,
        p99: h.percentile(99) / 1e9,
      };
      const c = this.carried;
      this.carried = c
        ? {
            count: c.count + h.count,
            reading: {
              min: Math.min(c.reading.min, now.min),
              max: Math.max(c.reading.max, now.max),
              mean: (c.reading.mean * c.count + now.mean * h.count) / (c.count + h.count),
              stddev: Math.max(c.reading.stddev, now.stddev),
              p50: Math.max(c.reading.p50, now.p50),
              p90: Math.max(c.reading.p90, now.p90),
              p99: Math.max(c.reading.p99, now.p99),
            },
          }
        : { count: h.count, reading: now };
    }
    h.reset();
    if (this.fineOn) this.uncover();
  }

  /** Whether the fine monitor is running (for tests and diagnostics). */
  get fineMonitorOn(): boolean {
    return this.fineOn;
  }

  stop(): void {
    this.stopped = true;
    clearImmediate(this.checkImmediate);
    clearTimeout(this.checkTimer);
    this.checkImmediate = this.checkTimer = undefined;
    clearInterval(this.timer);
    this.setFine(false);
    clearTimeout(this.coverTimer);
    this.coverTimer = undefined;
  }

  private setFine(on: boolean): void {
    if (on === this.fineOn) return;
    this.fineOn = on;
    if (on) {
      this.fine.enable();
      this.uncover();
    } else {
      this.fine.disable();
      this.carry();
    }
  }
}
