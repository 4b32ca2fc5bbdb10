import { describe, expect, it } from 'vitest';
import { TransientError } from '../../errors.js';
import type { ClusterFacts } from '../../model/cluster.js';
import type { InstanceInfo } from '../../ports/cloud-provider.js';
import { FakeClock } from '../../testing/fake-clock.js';
import { FakeCloudProvider } from '../../testing/fake-cloud-provider.js';
import { InstanceLookup, type InstanceLookupOptions } from './instance-lookup.js';

const facts: ClusterFacts = { platform: 'AWS', infrastructureName: 'c-1', apiServerInternalURL: 'https://api-int:6443', resourceTags: [] };
const inst = (id: string): InstanceInfo => ({
  instanceId: id,
  live: true,
  privateIpAddresses: [],
  publicIpAddresses: [],
  ownedByCluster: true,
});

/** A lookup over a fake cloud holding `ids` (i-1..i-4 unless given); options as the tests below need them. */
function setup(o: Partial<Omit<InstanceLookupOptions, 'cloud' | 'facts' | 'clock'>> & { ids?: string[]; latencyMs?: number } = {}) {
  const { ids = ['i-1', 'i-2', 'i-3', 'i-4'], latencyMs = 5, ...options } = o;
  const clock = new FakeClock();
  const cloud = new FakeCloudProvider({ instances: ids.map(inst), latencyMs });
  const lookup = new InstanceLookup({
    cloud,
    facts: async () => facts,
    clock,
    ttlMs: 15_000,
    negativeTtlMs: 3_000,
    batchWindowMs: 2,
    maxBatchSize: 1000,
    ...options,
  });
  const calls = () => cloud.callsOf('describeInstances').map((c) => c.args[0] as string[]);
  return { clock, cloud, lookup, calls };
}

/** A lookup that refreshes found entries 4 s before their 15 s expiry, over `ids`. */
const refreshingAhead = (ids: string[]) => setup({ ids, batchWindowMs: 1, maxBatchSize: 200, refreshAheadMs: 4_000 });

describe('InstanceLookup', () => {
  it('coalesces concurrent lookups into one call and answers each caller with its own IDs', async () => {
    const { lookup, calls } = setup();
    const [a, b, c] = await Promise.all([lookup.lookup(['i-1', 'i-2']), lookup.lookup(['i-2', 'i-3']), lookup.lookup(['i-9'])]);
    expect(calls()).toEqual([['i-1', 'i-2', 'i-3', 'i-9']]);
    expect([...a.keys()]).toEqual(['i-1', 'i-2']);
    expect([...b.keys()]).toEqual(['i-2', 'i-3']);
    expect(c.size).toBe(0);
  });

  it('joins a call in flight instead of starting another', async () => {
    const { lookup, calls } = setup();
    const first = lookup.lookup(['i-1']);
    await new Promise((r) => setTimeout(r, 3)); // the batch is sent, the call is in flight
    const second = lookup.lookup(['i-1']);
    await Promise.all([first, second]);
    expect(calls()).toEqual([['i-1']]);
  });

  it('serves found instances for the TTL and "not found" for the shorter negative TTL', async () => {
    const { lookup, calls, clock } = setup();
    await lookup.lookup(['i-1', 'i-9']);
    clock.advance(2_999);
    await lookup.lookup(['i-1', 'i-9']);
    expect(calls()).toHaveLength(1);
    clock.advance(1);
    await lookup.lookup(['i-1', 'i-9']);
    expect(calls()).toEqual([['i-1', 'i-9'], ['i-9']]);
    clock.advance(12_000);
    await lookup.lookup(['i-1']);
    expect(calls()).toEqual([['i-1', 'i-9'], ['i-9'], ['i-1']]);
  });

  it('gives every caller of a failed batch the error and caches nothing', async () => {
    const { lookup, cloud, calls } = setup();
    cloud.failNext('describeInstances', new TransientError('describing instances: throttled'));
    const results = await Promise.allSettled([lookup.lookup(['i-1']), lookup.lookup(['i-2'])]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect((await lookup.lookup(['i-1', 'i-2'])).size).toBe(2);
    expect(calls()).toHaveLength(2);
  });

  it('splits batches at maxBatchSize', async () => {
    const { lookup, calls } = setup({ maxBatchSize: 3 });
    await Promise.all([lookup.lookup(['i-1', 'i-2']), lookup.lookup(['i-3', 'i-4'])]);
    expect(calls()).toEqual([['i-1', 'i-2', 'i-3'], ['i-4']]);
  });
});

describe('InstanceLookup refresh-ahead', () => {
  it('refreshes a found instance in the background near expiry, so callers never wait on expiry', async () => {
    const { clock, cloud, lookup } = refreshingAhead(['i-1']);
    await lookup.lookup(['i-1']);
    clock.advance(10_999);
    await lookup.lookup(['i-1']);
    expect(cloud.callsOf('describeInstances')).toHaveLength(1);
    clock.advance(1);
    cloud.removeInstance('i-1');
    // Still fresh: answered from the cache at once, while a refresh goes out.
    expect((await lookup.lookup(['i-1'])).has('i-1')).toBe(true);
    await new Promise((r) => setTimeout(r, 20));
    expect(cloud.callsOf('describeInstances')).toHaveLength(2);
    // The refresh saw it gone: "not found" from now on, without another call.
    expect((await lookup.lookup(['i-1'])).has('i-1')).toBe(false);
    expect(cloud.callsOf('describeInstances')).toHaveLength(2);
  });
});

describe('InstanceLookup coalesced refresh', () => {
  it('refreshes every found entry of a lookup together once one is due, in one call', async () => {
    const ids = Array.from({ length: 50 }, (_, i) => `i-${i}`);
    const { clock, cloud, lookup } = setup({
      ids,
      latencyMs: 1,
      ttlMs: 60_000,
      batchWindowMs: 1,
      maxBatchSize: 200,
      refreshAheadMs: 30_000,
    });
    // Entries learned at different times (a trickle of NodeClaims) would otherwise come due one by one.
    for (const id of ids) {
      await lookup.lookup([id]);
      clock.advance(100);
    }
    expect(cloud.callsOf('describeInstances')).toHaveLength(50);
    clock.advance(30_000 - 50 * 100 + 1); // the first entry is due now, the last one is not
    for (let i = 0; i < 20; i++) {
      expect((await lookup.lookup(ids)).size).toBe(50);
      await new Promise((r) => setTimeout(r, 3));
      clock.advance(100);
    }
    const refreshes = cloud
      .callsOf('describeInstances')
      .slice(50)
      .map((c) => (c.args[0] as string[]).length);
    expect(refreshes).toEqual([50]);
  });
});

describe('InstanceLookup answers read after a given moment (readAfterMs)', () => {
  it('asks again for a cached answer read before the moment, and stamps answers with when they were read', async () => {
    const { lookup, calls, clock, cloud } = setup();
    const t0 = clock.now();
    const cached = await lookup.lookup(['i-1']);
    expect(cached.get('i-1')?.readAtMs).toBe(t0);
    clock.advance(1_000);
    // The instance is terminated after the first answer: only a fresh read can tell.
    cloud.removeInstance('i-1');
    expect((await lookup.lookup(['i-1'])).has('i-1')).toBe(true); // cached, no moment asked for
    expect((await lookup.lookup(['i-1'], { readAfterMs: t0 + 500 })).has('i-1')).toBe(false);
    expect(calls()).toEqual([['i-1'], ['i-1']]);
    // An answer read at or after the moment is reused.
    await lookup.lookup(['i-2'], { readAfterMs: clock.now() });
    await lookup.lookup(['i-2'], { readAfterMs: clock.now() });
    expect(calls()).toHaveLength(3);
  });

  it('does not join a call sent before the moment, and one fresh batch serves every caller that waits for it', async () => {
    const { lookup, calls, clock } = setup();
    const early = lookup.lookup(['i-1']);
    await new Promise((r) => setTimeout(r, 3)); // that batch is sent, its call in flight
    clock.advance(10);
    const moment = clock.now();
    const fresh = await Promise.all([
      lookup.lookup(['i-1'], { readAfterMs: moment }),
      lookup.lookup(['i-2'], { readAfterMs: moment }),
      lookup.lookup(['i-3'], { readAfterMs: moment - 5 }),
    ]);
    await early;
    expect(calls()).toEqual([['i-1'], ['i-1', 'i-2', 'i-3']]);
    for (const f of fresh) for (const i of f.values()) expect(i.readAtMs).toBeGreaterThanOrEqual(moment);
  });

  it('paces fresh batches by a token bucket: a few at once, then one per freshBatchWindowMs', async () => {
    const timers: Array<{ fn: () => void; ms: number }> = [];
    const { clock, cloud, lookup } = setup({
      ids: ['i-1', 'i-2'],
      latencyMs: 0,
      freshBatchWindowMs: 1_000,
      freshBurst: 2,
      schedule: (fn, ms) => void timers.push({ fn, ms }),
    });
    const fresh = async (ids: string[]) => {
      const done = Promise.all(ids.map((id) => lookup.lookup([id], { readAfterMs: clock.now() })));
      timers.at(-1)!.fn();
      await done;
    };
    await fresh(['i-1', 'i-2']); // one batch: both IDs, sent within the ordinary window
    clock.advance(10);
    await fresh(['i-1']); // the bucket's second token
    clock.advance(10);
    await fresh(['i-2']); // empty bucket: waits for the next token
    expect(timers.map((t) => t.ms)).toEqual([2, 2, 980]);
    expect(cloud.callsOf('describeInstances').map((c) => c.args[0])).toEqual([['i-1', 'i-2'], ['i-1'], ['i-2']]);
  });
});

describe('InstanceLookup shared answers', () => {
  it('hands every caller of the same IDs one answer while nothing changes, and a new one after', async () => {
    const { lookup, clock, cloud } = setup();
    const candidates = ['i-1', 'i-2', 'i-9'];
    await lookup.lookup(candidates); // a call
    // Served from the cache: the same map, not a copy per caller.
    const first = await lookup.lookup(candidates);
    expect(await lookup.lookup(candidates)).toBe(first);
    expect(lookup.peek(candidates)).toBe(first);
    // Another array with the same IDs is another question: answered alike, not shared.
    expect([...(await lookup.lookup([...candidates])).keys()]).toEqual(['i-1', 'i-2']);

    // A call answers (the cache changes): the next answer is built anew and shows it.
    cloud.removeInstance('i-2');
    clock.advance(10);
    await lookup.lookup(['i-2'], { readAfterMs: clock.now() });
    const after = await lookup.lookup(candidates);
    expect(after).not.toBe(first);
    expect([...after.keys()]).toEqual(['i-1']);

    // An entry expires ('i-9' not found: 3 s): the shared answer is not served past it.
    clock.advance(2_990);
    expect(lookup.peek(candidates)).toBeUndefined();
    const renewed = await lookup.lookup(candidates);
    expect(renewed).not.toBe(after);
  });

  it('gives every caller a call released the same answer', async () => {
    const { lookup, calls } = setup();
    const candidates = ['i-1', 'i-2', 'i-9'];
    const answers = await Promise.all(Array.from({ length: 20 }, () => lookup.lookup(candidates)));
    expect(calls()).toEqual([candidates]);
    expect(new Set(answers).size).toBe(1);
    expect([...answers[0]!.keys()]).toEqual(['i-1', 'i-2']);
  });

  it('still refreshes ahead of expiry when the same list is asked for again and again', async () => {
    const { clock, cloud, lookup } = refreshingAhead(['i-1', 'i-2']);
    const candidates = ['i-1', 'i-2'];
    await lookup.lookup(candidates);
    clock.advance(10_999);
    const shared = await lookup.lookup(candidates);
    expect(await lookup.lookup(candidates)).toBe(shared);
    expect(cloud.callsOf('describeInstances')).toHaveLength(1);
    clock.advance(1); // the refresh is due: the shared answer is not served past that moment
    expect(await lookup.lookup(candidates)).not.toBe(shared);
    await new Promise((r) => setTimeout(r, 20));
    expect(cloud.callsOf('describeInstances')).toHaveLength(2);
  });

  it('never replaces a cached answer with one read earlier that came back later', async () => {
    const clock = new FakeClock();
    const cloud = new FakeCloudProvider({ instances: [inst('i-1')] });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const slow = Object.assign(Object.create(cloud) as FakeCloudProvider, {
      // The first call is read now but answers last.
      describeInstances: async (ids: string[], f: ClusterFacts) => {
        const answer = await cloud.describeInstances(ids, f);
        if (cloud.callsOf('describeInstances').length === 1) await held;
        return answer;
      },
    });
    const lookup = new InstanceLookup({
      cloud: slow,
      facts: async () => facts,
      clock,
      ttlMs: 15_000,
      negativeTtlMs: 3_000,
      batchWindowMs: 1,
      maxBatchSize: 10,
    });
    const early = lookup.lookup(['i-1']);
    await new Promise((r) => setTimeout(r, 5));
    clock.advance(100);
    cloud.removeInstance('i-1');
    const late = await lookup.lookup(['i-1'], { readAfterMs: clock.now() });
    expect(late.has('i-1')).toBe(false);
    release();
    // The cache keeps the later read: the instance is gone, also for the earlier call's caller.
    expect((await early).has('i-1')).toBe(false);
    expect(lookup.peek(['i-1'])?.has('i-1')).toBe(false);
  });
});
