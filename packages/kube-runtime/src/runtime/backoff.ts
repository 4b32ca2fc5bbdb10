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

/** Start-up reads (the platform from Infrastructure): 1 s doubling to 30 s, retried for as long as it takes. */
export const startupBackoff: BackoffPolicy = { baseMs: 1_000, capMs: 30_000, jitter: 0.2 };

/**
 * The wait an HTTP error asks for: its `Retry-After` header (delay-seconds or an HTTP date), found on the
 * error or its `cause` chain (a core error wrapping a client-node `ApiException`, whose `headers` are
 * lower-case), in ms. `undefined` when there is none or it cannot be read. Pure; `now` is epoch ms.
 */
export function retryAfterMs(error: unknown, now: number): number | undefined {
  for (let cur: unknown = error, depth = 0; typeof cur === 'object' && cur !== null && depth < 5; depth++) {
    const headers = (cur as { headers?: unknown }).headers;
    if (typeof headers === 'object' && headers !== null) {
      const raw = (headers as Record<string, unknown>)['retry-after'];
      const value = Array.isArray(raw) ? raw[0] : raw;
      if (typeof value === 'string' && value.trim()) {
        const text = value.trim();
        if (/^\d+$/.test(text)) return Number(text) * 1_000;
        // An HTTP date names its day and month; Date.parse alone would take "-1" for a year.
        const at = /[a-z]/i.test(text) ? Date.parse(text) : Number.NaN;
        return Number.isNaN(at) ? undefined : Math.max(0, at - now);
      }
    }
    cur = (cur as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * Delay before retry number `failures` after `error`. An overloaded API server (429, or 503 from a
 * restarting one) says when to come back in `Retry-After`: that wait is honoured as given — never sooner,
 * spread by up to `jitter` later so that retries asked for together do not arrive together, and at most the
 * cap — instead of the exponential backoff, which would either hammer it sooner or, after a long overload,
 * come back long after it recovered. Without `Retry-After`, `backoffDelay`. Pure.
 */
export function retryDelay(
  failures: number,
  policy: BackoffPolicy,
  error: unknown,
  now: number,
  random: () => number = Math.random,
): number {
  const asked = retryAfterMs(error, now);
  if (asked === undefined || asked <= 0) return backoffDelay(failures, policy, random);
  const jitter = Math.min(1, Math.max(0, policy.jitter));
  return Math.min(policy.capMs, Math.round(asked * (1 + jitter * random())));
}
