export interface BackoffPolicy {
  /** Delay after the first failure. */
  baseMs: number;
  /** Upper bound of any delay. */
  capMs: number;
  /**
   * Fraction of the delay that is randomised away, in [0, 1]: the delay is drawn from
   * `[d * (1 - jitter), d]`. Spreads retries of many keys (or many replicas) that failed together.
   */
  jitter: number;
}

/** Work-queue default: 200 ms doubling to 60 s, like controller-runtime's per-item limiter (5 ms..1000 s) but gentler on the API server. */
export const queueBackoff: BackoffPolicy = { baseMs: 200, capMs: 60_000, jitter: 0.2 };

/** Informer restart default: 1 s doubling to 30 s (client-go's reflector backs off 800 ms..30 s). */
export const watchBackoff: BackoffPolicy = { baseMs: 1_000, capMs: 30_000, jitter: 0.5 };

/**
 * Delay before retry number `failures` (1 = first retry): `min(cap, base * 2^(failures-1))`, minus up to
 * `jitter` of it. Pure; `random` returns a number in [0, 1).
 */
export function backoffDelay(failures: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const n = Math.max(1, Math.floor(failures));
  // 2^n overflows to Infinity long after the cap is reached; min() keeps it finite.
  const exp = Math.min(policy.capMs, policy.baseMs * 2 ** (n - 1));
  const jitter = Math.min(1, Math.max(0, policy.jitter));
  return Math.round(exp * (1 - jitter * random()));
}
