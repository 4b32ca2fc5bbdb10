import type { Clock } from '../../ports/clock.js';

/**
 * One build of `T` shared by every caller within `ttlMs` (single flight: callers during a build await the
 * same promise). A failed build is not kept.
 */
export class SharedSnapshot<T> {
  private entry: { at: number; promise: Promise<T> } | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly ttlMs: number,
    private readonly build: () => Promise<T>,
  ) {}

  get(): Promise<T> {
    const now = this.clock.now();
    if (this.entry && now - this.entry.at < this.ttlMs) return this.entry.promise;
    const entry = { at: now, promise: this.build() };
    this.entry = entry;
    entry.promise.catch(() => {
      if (this.entry === entry) this.entry = undefined;
    });
    return entry.promise;
  }

  invalidate(): void {
    this.entry = undefined;
  }
}
