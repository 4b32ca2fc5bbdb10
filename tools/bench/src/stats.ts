/** Figures the benchmarks report: quantiles, medians and ratios, rounded the same way everywhere. */

/** Nearest-rank quantile of an ascending array (`q` in [0, 1]); NaN for an empty array. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[Math.min(sorted.length, rank) - 1]!;
}

export function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** p50/p90/p99/min/max/mean of a sample, in the sample's unit, rounded to 0.1. */
export function summarize(values: readonly number[]): {
  n: number;
  min: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
} {
  const s = [...values].sort((a, b) => a - b);
  const r = (v: number) => Math.round(v * 10) / 10;
  const mean = s.length ? s.reduce((a, b) => a + b, 0) / s.length : NaN;
  return {
    n: s.length,
    min: r(s[0] ?? NaN),
    p50: r(quantile(s, 0.5)),
    p90: r(quantile(s, 0.9)),
    p99: r(quantile(s, 0.99)),
    max: r(s[s.length - 1] ?? NaN),
    mean: r(mean),
  };
}

/** `value / base` to two decimals; null when the base is 0 or missing (a ratio would be meaningless). */
export function ratio(value: number, base: number): number | null {
  if (!Number.isFinite(value) || !Number.isFinite(base) || base === 0) return null;
  return Math.round((value / base) * 100) / 100;
}

/**
 * The least-squares line through `points` (`x` and `y` in the caller's units): its slope, intercept, R² and
 * the slope's standard error.
 * NaN slope for fewer than two distinct x.
 */
export function linearFit(points: ReadonlyArray<{ x: number; y: number }>): {
  n: number;
  slope: number;
  intercept: number;
  r2: number;
  /** The slope's standard error (NaN below three points): how far the slope may be off by noise alone. */
  slopeStdErr: number;
} {
  const n = points.length;
  const mx = points.reduce((a, p) => a + p.x, 0) / n;
  const my = points.reduce((a, p) => a + p.y, 0) / n;
  let sxx = 0;
  let sxy = 0;
  let syy = 0;
  for (const p of points) {
    sxx += (p.x - mx) ** 2;
    sxy += (p.x - mx) * (p.y - my);
    syy += (p.y - my) ** 2;
  }
  if (!(n >= 2) || sxx === 0) return { n, slope: NaN, intercept: NaN, r2: NaN, slopeStdErr: NaN };
  const slope = sxy / sxx;
  const intercept = my - slope * mx;
  const residuals = points.reduce((a, p) => a + (p.y - intercept - slope * p.x) ** 2, 0);
  const slopeStdErr = n > 2 ? Math.sqrt(residuals / (n - 2) / sxx) : NaN;
  return { n, slope, intercept, r2: syy === 0 ? 1 : (sxy * sxy) / (sxx * syy), slopeStdErr };
}

/**
 * The lowest point of every `width`-wide bucket of x (buckets from the first point's x; empty buckets are
 * skipped). A garbage-collected heap is a sawtooth: its floor after collections is what a leak raises.
 */
export function bucketMinima(points: ReadonlyArray<{ x: number; y: number }>, width: number): Array<{ x: number; y: number }> {
  if (points.length === 0) return [];
  const x0 = Math.min(...points.map((p) => p.x));
  const low = new Map<number, { x: number; y: number }>();
  for (const p of points) {
    const b = Math.floor((p.x - x0) / width);
    const cur = low.get(b);
    if (!cur || p.y < cur.y) low.set(b, p);
  }
  return [...low.entries()].sort((a, b) => a[0] - b[0]).map(([, p]) => p);
}

/** Runs `fn` over `items` with at most `concurrency` calls in flight; the first rejection rejects the whole run. */
export async function pool<T>(items: readonly T[], concurrency: number, fn: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  let failed = false;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (!failed && next < items.length) {
        const i = next++;
        try {
          await fn(items[i]!, i);
        } catch (e) {
          failed = true;
          throw e;
        }
      }
    }),
  );
}

/**
 * Sweeps the intervals [created, approved) of the burst's CSRs (one never approved stays open to the end):
 * the most open at once, and how long more than `cap` were open.
 */
export function pendingSweep(
  created: ReadonlyMap<string, number>,
  approved: ReadonlyMap<string, number>,
  cap: number,
): { peak: number; msAboveCap: number } {
  const edges: Array<[number, number]> = [];
  for (const [name, at] of created) {
    edges.push([at, 1]);
    const done = approved.get(name);
    if (done !== undefined) edges.push([done, -1]);
  }
  // At equal times the approval closes before a creation opens: a CSR approved as the next one is created
  // is not pending with it.
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let open = 0;
  let peak = 0;
  let msAboveCap = 0;
  let prev = edges[0]?.[0] ?? 0;
  for (const [at, d] of edges) {
    if (open > cap) msAboveCap += at - prev;
    prev = at;
    open += d;
    peak = Math.max(peak, open);
  }
  return { peak, msAboveCap: Math.round(msAboveCap) };
}
