import type { Clock } from '../../ports/clock.js';

/**
 * One build of `T` shared by every caller within `ttlMs` (single flight: callers during a build await the
 * same promise). A failed build is not kept. Each build has a generation, so that a caller that has acted
 * on one can ask for a newer one (`get(used)`).
 */
export class SharedSnapshot<T> {
  private entry: { at: number; generation: number; promise: Promise<T> } | undefined;
  private builds = 0;

  constructor(
    private readonly clock: Clock,
    private readonly ttlMs: number,
    private readonly build: () => Promise<T>,
  ) {}

  /** The shared build, or a new one when it is older than `ttlMs` or is generation `used`. */
  async get(used?: number): Promise<{ value: T; generation: number }> {
    const entry = this.current(used);
    return { value: await entry.promise, generation: entry.generation };
  }

  /**
   * Marks the shared build out of date (its source changed): the next `get` builds anew. Drops a reference,
   * nothing else: no build starts, so calling it costs nothing where no `get` follows (a standby).
   */
  invalidate(): void {
    this.entry = undefined;
  }

  private current(used: number | undefined): { at: number; generation: number; promise: Promise<T> } {
    const now = this.clock.now();
    const cur = this.entry;
    if (cur && now - cur.at < this.ttlMs && cur.generation !== used) return cur;
    const entry = { at: now, generation: ++this.builds, promise: this.build() };
    this.entry = entry;
    entry.promise.catch(() => {
      if (this.entry === entry) this.entry = undefined;
    });
    return entry;
  }
}
