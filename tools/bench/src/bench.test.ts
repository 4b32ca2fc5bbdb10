import { describe, expect, it } from 'vitest';
import type { AuditEvent } from '@karpenter-operator/testkit';
import { summarizeAuditWindow } from './audit-window.js';
import { anonymousMappings, byLabel, memoryBreakdown, parsePromText, residentSplit, sumOf } from './prom.js';
import { bucketMinima, linearFit, median, pendingSweep, pool, quantile, ratio, summarize } from './stats.js';

describe('quantile', () => {
  it.each([
    { name: 'empty', values: [], q: 0.5, want: NaN },
    { name: 'one value', values: [7], q: 0.99, want: 7 },
    { name: 'p50 of 1..10', values: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], q: 0.5, want: 5 },
    { name: 'p99 of 1..100 is 99', values: Array.from({ length: 100 }, (_, i) => i + 1), q: 0.99, want: 99 },
    { name: 'p99 of 50 values is the max', values: Array.from({ length: 50 }, (_, i) => i + 1), q: 0.99, want: 50 },
    { name: 'q 0 is the min', values: [3, 4], q: 0, want: 3 },
  ])('$name', ({ values, q, want }) => {
    expect(quantile(values, q)).toBe(want);
  });
});

describe('median, ratio, summarize', () => {
  it.each([
    { name: 'odd count', values: [5, 1, 3], want: 3 },
    { name: 'even count', values: [4, 1, 3, 2], want: 2.5 },
    { name: 'empty', values: [], want: NaN },
  ])('median: $name', ({ values, want }) => {
    expect(median(values)).toBe(want);
  });

  it.each([
    { name: 'double', value: 200, base: 100, want: 2 },
    { name: 'rounded', value: 1, base: 3, want: 0.33 },
    { name: 'zero base', value: 5, base: 0, want: null },
    { name: 'NaN', value: NaN, base: 1, want: null },
  ])('ratio: $name', ({ value, base, want }) => {
    expect(ratio(value, base)).toBe(want);
  });

  it('summarize rounds to 0.1 and sorts', () => {
    expect(summarize([3.14159, 1, 2])).toEqual({ n: 3, min: 1, p50: 2, p90: 3.1, p99: 3.1, max: 3.1, mean: 2 });
  });
});

describe('pool', () => {
  it('never has more than `concurrency` calls in flight and visits every item once', async () => {
    let inFlight = 0;
    let peak = 0;
    const seen: number[] = [];
    await pool(
      Array.from({ length: 20 }, (_, i) => i),
      3,
      async (i) => {
        inFlight++;
        peak = Math.max(peak, inFlight);
        await new Promise((r) => setTimeout(r, 1));
        seen.push(i);
        inFlight--;
      },
    );
    expect(peak).toBe(3);
    expect(seen.sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });

  it('rejects with the first failure and stops taking items', async () => {
    let calls = 0;
    await expect(
      pool([1, 2, 3, 4, 5, 6], 1, async (i) => {
        calls++;
        if (i === 2) throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(calls).toBe(2);
  });
});

describe('parsePromText', () => {
  const text = [
    '# HELP process_resident_memory_bytes Resident memory size in bytes.',
    '# TYPE process_resident_memory_bytes gauge',
    'process_resident_memory_bytes 123456789',
    'karpenter_operator_reconcile_total{controller="crds",result="success"} 3',
    'karpenter_operator_reconcile_total{controller="operand",result="success"} 4',
    'karpenter_operator_reconcile_total{controller="operand",result="error"} 1',
    'karpenter_operator_api_requests_total{verb="get",kind="Lease"} 7 1700000000000',
    'weird{le="+Inf"} +Inf',
    'not a sample',
    'escaped{msg="a \\"b\\""} 1',
  ].join('\n');
  const samples = parsePromText(text);

  it.each<{ name: string; metric: string; match: Record<string, string>; want: number | undefined }>([
    { name: 'plain gauge', metric: 'process_resident_memory_bytes', match: {}, want: 123456789 },
    { name: 'sum over labels', metric: 'karpenter_operator_reconcile_total', match: {}, want: 8 },
    { name: 'filtered by label', metric: 'karpenter_operator_reconcile_total', match: { controller: 'operand' }, want: 5 },
    { name: 'with timestamp', metric: 'karpenter_operator_api_requests_total', match: { kind: 'Lease' }, want: 7 },
    { name: 'missing metric', metric: 'nodejs_heap_size_used_bytes', match: {}, want: undefined },
    { name: '+Inf value', metric: 'weird', match: { le: '+Inf' }, want: Infinity },
    { name: 'escaped label value', metric: 'escaped', match: { msg: 'a "b"' }, want: 1 },
  ])('$name', ({ metric, match, want }) => {
    expect(sumOf(samples, metric, match)).toBe(want);
  });

  it('groups by one label', () => {
    expect(byLabel(samples, 'karpenter_operator_reconcile_total', 'controller')).toEqual({ crds: 3, operand: 5 });
  });
});

describe('summarizeAuditWindow', () => {
  const ev = (id: string, stage: string, verb: string, at: string, resource: string, code = 200, sub?: string): AuditEvent => ({
    auditID: id,
    stage,
    verb,
    requestURI: `/x/${resource}${sub ? `/${sub}` : ''}`,
    user: { username: 'op' },
    objectRef: { resource, ...(sub ? { subresource: sub } : {}) },
    responseStatus: { code },
    requestReceivedTimestamp: at,
    stageTimestamp: at,
  });
  const since = new Date('2025-01-01T00:00:10Z');
  const until = new Date('2025-01-01T00:00:20Z');
  const events = [
    ev('a', 'ResponseComplete', 'get', '2025-01-01T00:00:09.999Z', 'leases'), // before the window
    ev('b', 'ResponseComplete', 'update', '2025-01-01T00:00:10Z', 'leases'),
    ev('c', 'ResponseStarted', 'watch', '2025-01-01T00:00:11Z', 'nodes'),
    ev('c', 'ResponseComplete', 'watch', '2025-01-01T00:00:11Z', 'nodes'),
    ev('d', 'ResponseComplete', 'create', '2025-01-01T00:00:12Z', 'events'),
    ev('e', 'ResponseComplete', 'patch', '2025-01-01T00:00:13Z', 'clusteroperators', 200, 'status'),
    ev('f', 'ResponseComplete', 'list', '2025-01-01T00:00:14Z', 'nodes', 403),
    ev('g', 'ResponseComplete', 'get', '2025-01-01T00:00:20Z', 'leases'), // at the end: outside
  ];
  const s = summarizeAuditWindow(events, since, until);

  it.each([
    { name: 'total counts each request once', got: s.total, want: 5 },
    { name: 'by verb', got: s.byVerb, want: { update: 1, watch: 1, create: 1, patch: 1, list: 1 } },
    { name: 'subresource in the key', got: s.byVerbResource['patch clusteroperators/status'], want: 1 },
    { name: 'writes other than leases and events', got: s.writesExceptLeasesEvents, want: ['patch /x/clusteroperators/status'] },
    { name: 'lists', got: s.lists, want: ['/x/nodes'] },
    { name: 'watches', got: s.watches, want: ['/x/nodes'] },
    { name: 'errors', got: s.errors, want: ['403 list /x/nodes'] },
  ])('$name', ({ got, want }) => {
    expect(got).toEqual(want);
  });
});

describe('memoryBreakdown', () => {
  it('splits RSS into the V8 heap, external memory and the rest, with the heap used per space', () => {
    const MiB = 2 ** 20;
    const samples = parsePromText(
      [
        `process_resident_memory_bytes ${100 * MiB}`,
        `nodejs_heap_size_total_bytes ${40 * MiB}`,
        `nodejs_heap_size_used_bytes ${30 * MiB}`,
        `nodejs_external_memory_bytes ${10 * MiB}`,
        `nodejs_heap_space_size_used_bytes{space="old"} ${25 * MiB}`,
        `nodejs_heap_space_size_used_bytes{space="new"} ${5 * MiB}`,
        `nodejs_heap_space_size_used_bytes{space="read_only"} 1024`,
      ].join('\n'),
    );
    expect(memoryBreakdown(samples)).toEqual({
      rssMiB: 100,
      heapTotalMiB: 40,
      heapUsedMiB: 30,
      externalMiB: 10,
      otherMiB: 50,
      heapUsedBySpaceMiB: { old: 25, new: 5 },
    });
    expect(memoryBreakdown([]).otherMiB).toBeUndefined();
  });
});

describe('anonymousMappings', () => {
  it.runIf(process.platform === 'linux')("splits this process's anonymous memory into glibc's heap and the other mappings", () => {
    const m = anonymousMappings(process.pid);
    const { rssAnonMiB } = residentSplit(process.pid);
    const sum = m.brkHeapMiB! + m.mallocArenasMiB! + m.otherAnonMiB!;
    expect(m.brkHeapMiB).toBeGreaterThan(0);
    expect(m.otherAnonMiB).toBeGreaterThan(0); // V8's heap pages at least
    expect(Number.isInteger(m.mallocArenas)).toBe(true);
    // Named anonymous mappings ([stack], [vvar]…) are left out: the parts add up to about RssAnon.
    expect(sum).toBeGreaterThan(rssAnonMiB! * 0.5);
    expect(sum).toBeLessThanOrEqual(rssAnonMiB! * 1.05 + 1);
  });

  it('is empty for a process that does not exist', () => {
    expect(anonymousMappings(2 ** 30)).toEqual({});
  });
});

describe('pendingSweep', () => {
  const m = (o: Record<string, number>) => new Map(Object.entries(o));
  it('counts the most CSRs pending at once and the time more than the cap were', () => {
    // a: 0–10, b: 2–6, c: 4–12, d: 5 and never approved (open to the last edge, 12).
    const r = pendingSweep(m({ a: 0, b: 2, c: 4, d: 5 }), m({ a: 10, b: 6, c: 12 }), 2);
    expect(r.peak).toBe(4);
    // More than 2 pending from 4 (c) to 10 (a approved, leaving c and d).
    expect(r.msAboveCap).toBe(6);
  });
  it('an approval at the instant of the next creation does not overlap it', () => {
    expect(pendingSweep(m({ a: 0, b: 5 }), m({ a: 5, b: 9 }), 0)).toEqual({ peak: 1, msAboveCap: 9 });
  });
  it('nothing created: nothing pending', () => {
    expect(pendingSweep(new Map(), new Map(), 100)).toEqual({ peak: 0, msAboveCap: 0 });
  });
});

describe('linearFit', () => {
  it.each([
    { name: 'a rising line', points: [0, 1, 2, 3].map((x) => ({ x, y: 2 * x + 1 })), slope: 2, intercept: 1, r2: 1 },
    { name: 'flat', points: [0, 1, 2].map((x) => ({ x, y: 5 })), slope: 0, intercept: 5, r2: 1 },
    {
      name: 'a symmetric sawtooth has slope 0',
      points: [11, 9, 9, 11].map((y, x) => ({ x, y })),
      slope: 0,
      intercept: 10,
      r2: 0,
    },
  ])('$name', ({ points, slope, intercept, r2 }) => {
    const fit = linearFit(points);
    expect(fit.slope).toBeCloseTo(slope, 9);
    expect(fit.intercept).toBeCloseTo(intercept, 9);
    expect(fit.r2).toBeCloseTo(r2, 9);
    expect(fit.n).toBe(points.length);
  });

  it('gives the slope a standard error: 0 on a line, the textbook figure on noise', () => {
    expect(linearFit([0, 1, 2, 3].map((x) => ({ x, y: 3 * x }))).slopeStdErr).toBe(0);
    // y = 0, 1, 0, 1 at x = 0..3: slope 0.2, residuals sum 0.8, sxx 5 → sqrt(0.8 / 2 / 5).
    const fit = linearFit([0, 1, 0, 1].map((y, x) => ({ x, y })));
    expect(fit.slope).toBeCloseTo(0.2, 9);
    expect(fit.slopeStdErr).toBeCloseTo(Math.sqrt(0.08), 9);
    expect(linearFit([0, 1].map((x) => ({ x, y: x }))).slopeStdErr).toBeNaN();
  });

  it('is NaN for one point or one x', () => {
    expect(linearFit([{ x: 1, y: 2 }]).slope).toBeNaN();
    expect(
      linearFit([
        { x: 1, y: 2 },
        { x: 1, y: 3 },
      ]).slope,
    ).toBeNaN();
  });
});

describe('bucketMinima', () => {
  it('keeps the lowest point of each bucket, skipping empty buckets', () => {
    const pts = [
      { x: 0, y: 5 },
      { x: 4, y: 3 },
      { x: 9, y: 4 },
      { x: 10, y: 8 },
      { x: 31, y: 1 },
    ];
    expect(bucketMinima(pts, 10)).toEqual([
      { x: 4, y: 3 },
      { x: 10, y: 8 },
      { x: 31, y: 1 },
    ]);
    expect(bucketMinima([], 10)).toEqual([]);
  });
});
