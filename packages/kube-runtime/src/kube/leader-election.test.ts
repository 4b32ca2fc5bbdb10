import { RecordingMetrics } from '@karpenter-operator/core/testing';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  decide,
  electionTimingProblem,
  LeaderElector,
  leaderIdentity,
  microTime,
  openshiftElectionTiming,
  type LeaseObject,
  type LeaseSpec,
} from './leader-election.js';
import { FakeTransport, apiError } from './testing/fake-transport.js';
import type { KubeRequest, WriteGate } from './transport.js';

const T0 = Date.UTC(2026, 0, 1);
const me = 'operator-a_1';
const lease = (spec: LeaseSpec, rv = '5'): LeaseObject => ({
  apiVersion: 'coordination.k8s.io/v1',
  kind: 'Lease',
  metadata: { name: 'karpenter-operator.openshift.io', namespace: 'openshift-karpenter', resourceVersion: rv },
  spec,
});

describe('microTime', () => {
  it('has six fractional digits', () => {
    expect(microTime(T0 + 123)).toBe('2026-01-01T00:00:00.123000Z');
  });
});

describe('decide', () => {
  const opts = { leaseDurationMs: 15_000 };
  it.each([
    { name: 'no lease: create', lease: undefined, now: T0, observedAt: undefined, want: 'create' },
    {
      name: 'held by me: renew',
      lease: lease({ holderIdentity: me, renewTime: microTime(T0 - 60_000), leaseDurationSeconds: 15 }),
      now: T0,
      observedAt: undefined,
      want: 'renew',
    },
    {
      name: 'released (empty holder): acquire',
      lease: lease({ holderIdentity: '', leaseDurationSeconds: 1 }),
      now: T0,
      observedAt: T0,
      want: 'acquire',
    },
    { name: 'no spec: acquire', lease: lease({}), now: T0, observedAt: T0, want: 'acquire' },
    {
      name: 'other holder, valid: wait',
      lease: lease({ holderIdentity: 'b', renewTime: microTime(T0 - 5_000), leaseDurationSeconds: 15 }),
      now: T0,
      observedAt: undefined,
      want: 'wait',
    },
    {
      name: 'other holder, expired by renewTime: acquire',
      lease: lease({ holderIdentity: 'b', renewTime: microTime(T0 - 15_000), leaseDurationSeconds: 15 }),
      now: T0,
      observedAt: undefined,
      want: 'acquire',
    },
    {
      name: 'other holder, old renewTime but first observed just now: wait (clock-skew safe)',
      lease: lease({ holderIdentity: 'b', renewTime: microTime(T0 - 3_600_000), leaseDurationSeconds: 15 }),
      now: T0,
      observedAt: T0 - 1_000,
      want: 'wait',
    },
    {
      name: 'other holder, unchanged since observed 15 s ago: acquire',
      lease: lease({ holderIdentity: 'b', renewTime: microTime(T0 + 3_600_000), leaseDurationSeconds: 15 }),
      now: T0,
      observedAt: T0 - 15_000,
      want: 'acquire',
    },
    {
      name: "honours the holder's lease duration",
      lease: lease({ holderIdentity: 'b', renewTime: microTime(T0 - 20_000), leaseDurationSeconds: 30 }),
      now: T0,
      observedAt: undefined,
      want: 'wait',
    },
  ])('$name', ({ lease: l, now, observedAt, want }) => {
    expect(decide(l, now, me, observedAt === undefined ? opts : { ...opts, observedAt }).action).toBe(want);
  });

  it('creates holding the lease with transitions 0', () => {
    expect(decide(undefined, T0, me, opts)).toEqual({
      action: 'create',
      spec: { holderIdentity: me, leaseDurationSeconds: 15, acquireTime: microTime(T0), renewTime: microTime(T0), leaseTransitions: 0 },
    });
  });

  it('a takeover counts a transition and resets acquireTime; a renewal keeps both', () => {
    const taken = decide(lease({ holderIdentity: '', leaseTransitions: 3, acquireTime: microTime(T0 - 99_000) }), T0, me, opts);
    expect(taken).toMatchObject({ action: 'acquire', spec: { holderIdentity: me, leaseTransitions: 4, acquireTime: microTime(T0) } });
    const renewed = decide(lease({ holderIdentity: me, leaseTransitions: 4, acquireTime: microTime(T0 - 10_000) }), T0, me, opts);
    expect(renewed).toMatchObject({
      action: 'renew',
      spec: { leaseTransitions: 4, acquireTime: microTime(T0 - 10_000), renewTime: microTime(T0) },
    });
  });

  it('reports when a valid lease expires', () => {
    const d = decide(lease({ holderIdentity: 'b', renewTime: microTime(T0 - 5_000), leaseDurationSeconds: 15 }), T0, me, opts);
    expect(d).toEqual({ action: 'wait', holder: 'b', expiresAt: T0 + 10_000 });
  });
});

describe('openshiftElectionTiming', () => {
  it.each([
    {
      name: 'HighlyAvailable: 137 s / 107 s / 26 s',
      topology: 'HighlyAvailable',
      want: { leaseDurationMs: 137_000, renewDeadlineMs: 107_000, retryPeriodMs: 26_000 },
    },
    {
      name: 'SingleReplica: 270 s / 240 s / 60 s',
      topology: 'SingleReplica',
      want: { leaseDurationMs: 270_000, renewDeadlineMs: 240_000, retryPeriodMs: 60_000 },
    },
    {
      name: 'External (hosted control plane): the HA timings',
      topology: 'External',
      want: { leaseDurationMs: 137_000, renewDeadlineMs: 107_000, retryPeriodMs: 26_000 },
    },
    {
      name: 'unknown (Infrastructure without the field): the HA timings',
      topology: undefined,
      want: { leaseDurationMs: 137_000, renewDeadlineMs: 107_000, retryPeriodMs: 26_000 },
    },
  ])('$name', ({ topology, want }) => {
    expect(openshiftElectionTiming(topology)).toEqual(want);
  });

  it.each(['HighlyAvailable', 'SingleReplica'])(
    '%s: consistent, and the renew deadline rides out a 60 s API-server gap with a retry to spare',
    (topology) => {
      const t = openshiftElectionTiming(topology);
      expect(electionTimingProblem(t)).toBeUndefined();
      // A renewal due just before the gap fails; the first retry after it must still fall within the deadline.
      expect(t.renewDeadlineMs).toBeGreaterThanOrEqual(60_000 + t.retryPeriodMs);
    },
  );
});

describe('leaderIdentity', () => {
  it('is the pod name plus a random suffix', () => {
    expect(leaderIdentity('karpenter-operator-7d9f-abcde', () => 'r4nd')).toBe('karpenter-operator-7d9f-abcde_r4nd');
  });
});

/** A stub API server holding one Lease, with optimistic concurrency like the real one. */
class LeaseServer {
  lease: LeaseObject | undefined;
  rv = 1;
  down = false;
  constructor(readonly transport: FakeTransport) {
    const base = '/apis/coordination.k8s.io/v1/namespaces/openshift-karpenter/leases';
    transport.on({ method: 'GET', path: `${base}/karpenter-operator.openshift.io` }, () => {
      if (this.down) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      if (!this.lease) throw apiError(404, 'not found');
      return this.lease;
    });
    transport.on({ method: 'POST', path: base }, (req: KubeRequest) => {
      if (this.down) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      if (this.lease) throw apiError(409, 'already exists', 'AlreadyExists');
      return (this.lease = this.stamp(req.body as LeaseObject));
    });
    transport.on({ method: 'PUT', path: `${base}/karpenter-operator.openshift.io` }, (req: KubeRequest) => {
      if (this.down) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      const body = req.body as LeaseObject;
      if (!this.lease || body.metadata.resourceVersion !== this.lease.metadata.resourceVersion) {
        throw apiError(409, 'the object has been modified', 'Conflict');
      }
      return (this.lease = this.stamp(body));
    });
  }
  private stamp(l: LeaseObject): LeaseObject {
    return { ...l, metadata: { ...l.metadata, resourceVersion: String(++this.rv) } };
  }
}

describe('LeaderElector', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(T0);
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const elector = (transport: FakeTransport, identity: string, events: string[], metrics = new RecordingMetrics(), random = () => 0) =>
    new LeaderElector({
      transport,
      namespace: 'openshift-karpenter',
      identity,
      clock: { now: () => Date.now() },
      random,
      metrics,
      onStartedLeading: () => events.push(`${identity} started`),
      onStoppedLeading: () => events.push(`${identity} stopped`),
      onNewLeader: (l) => events.push(`${identity} sees ${l}`),
    });

  it('creates the lease when there is none and renews it every retry period', async () => {
    const transport = new FakeTransport();
    const server = new LeaseServer(transport);
    const events: string[] = [];
    const metrics = new RecordingMetrics();
    const a = elector(transport, 'a', events, metrics);
    a.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(events).toEqual(['a started']);
    expect(a.isLeader()).toBe(true);
    expect(server.lease?.spec).toMatchObject({ holderIdentity: 'a', leaseDurationSeconds: 15, leaseTransitions: 0 });
    expect(metrics.gauges.get('karpenter_operator_leader{lease=karpenter-operator.openshift.io}')).toBe(1);
    transport.requests.length = 0;
    await vi.advanceTimersByTimeAsync(10_000);
    // Renewals go straight to PUT from the last write: no GET per renewal.
    expect(transport.requests.map((r) => r.method)).toEqual(['PUT', 'PUT', 'PUT', 'PUT', 'PUT']);
    expect(server.lease?.spec?.renewTime).toBe(microTime(T0 + 10_000));
    await a.stop();
  });

  it('with two electors exactly one leads; the other takes over within the lease duration when the leader dies', async () => {
    const transport = new FakeTransport();
    const server = new LeaseServer(transport);
    const events: string[] = [];
    const a = elector(transport, 'a', events);
    const b = elector(transport, 'b', events);
    a.start();
    await vi.advanceTimersByTimeAsync(0);
    b.start();
    await vi.advanceTimersByTimeAsync(30_000);
    expect([a.isLeader(), b.isLeader()]).toEqual([true, false]);
    expect(events).toEqual(['a started', 'b sees a']);
    // a dies without releasing: simulate by aborting its loop without the release.
    (a as unknown as { abort: AbortController }).abort.abort();
    const diedAt = Date.now();
    await vi.advanceTimersByTimeAsync(20_000);
    expect(b.isLeader()).toBe(true);
    const tookOverAfter = Date.parse(server.lease!.spec!.acquireTime!) - diedAt;
    expect(tookOverAfter).toBeGreaterThan(0);
    expect(tookOverAfter).toBeLessThanOrEqual(15_000 + 2_000 * 2.2);
    expect(server.lease?.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
    await b.stop();
  });

  it('a graceful stop releases the lease so the standby takes over at once', async () => {
    const transport = new FakeTransport();
    const server = new LeaseServer(transport);
    const events: string[] = [];
    const a = elector(transport, 'a', events);
    const b = elector(transport, 'b', events);
    a.start();
    await vi.advanceTimersByTimeAsync(0);
    b.start();
    await vi.advanceTimersByTimeAsync(4_000);
    await a.stop();
    expect(server.lease?.spec).toMatchObject({ holderIdentity: '', leaseDurationSeconds: 1 });
    expect(events).not.toContain('a stopped'); // a voluntary stop is not a loss
    await vi.advanceTimersByTimeAsync(2_500);
    expect(b.isLeader()).toBe(true);
    await b.stop();
  });

  it('loses a creation race (409) and waits', async () => {
    const transport = new FakeTransport();
    const server = new LeaseServer(transport);
    transport.once({ method: 'POST' }, () => {
      server.lease = lease({ holderIdentity: 'other', renewTime: microTime(T0), leaseDurationSeconds: 15 });
      throw apiError(409, 'already exists', 'AlreadyExists');
    });
    const events: string[] = [];
    const a = elector(transport, 'a', events);
    a.start();
    await vi.advanceTimersByTimeAsync(2_000);
    expect(a.isLeader()).toBe(false);
    expect(events).toEqual(['a sees other']);
    await a.stop();
  });

  it('stops leading (and says so) when it cannot renew within the renew deadline', async () => {
    const transport = new FakeTransport();
    const server = new LeaseServer(transport);
    const events: string[] = [];
    const a = elector(transport, 'a', events);
    a.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(a.isLeader()).toBe(true);
    server.down = true;
    const downAt = Date.now();
    await vi.advanceTimersByTimeAsync(9_000);
    expect(events).toEqual(['a started']);
    await vi.advanceTimersByTimeAsync(3_000);
    expect(events).toEqual(['a started', 'a stopped']);
    expect(a.isLeader()).toBe(false);
    await a.done();
    expect(Date.now() - downAt).toBeLessThanOrEqual(12_000);
  });

  it("with OpenShift's timings, a 60 s API-server gap (a kube-apiserver rollout) neither demotes the leader nor fences its writes", async () => {
    const transport = new FakeTransport();
    const server = new LeaseServer(transport);
    const events: string[] = [];
    const box: { gate?: WriteGate } = {};
    Object.assign(transport, { fence: (g: WriteGate) => (box.gate = g) });
    const a = new LeaderElector({
      transport,
      namespace: 'openshift-karpenter',
      identity: 'a',
      clock: { now: () => Date.now() },
      random: () => 0,
      timing: openshiftElectionTiming('HighlyAvailable'),
      onStartedLeading: () => events.push('a started'),
      onStoppedLeading: () => events.push('a stopped'),
    });
    a.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(a.isLeader()).toBe(true);
    // The worst moment: just after a renewal, so the gap eats into the deadline from its start.
    await vi.advanceTimersByTimeAsync(26_000);
    const renewedAt = Date.parse(server.lease!.spec!.renewTime!);
    server.down = true;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(a.isLeader()).toBe(true);
    expect(
      box.gate!({
        verb: 'update',
        kind: 'Deployment',
        method: 'PUT',
        path: '/apis/apps/v1/namespaces/openshift-karpenter/deployments/karpenter',
      }),
    ).toBeUndefined();
    server.down = false;
    await vi.advanceTimersByTimeAsync(30_000);
    expect(events).toEqual(['a started']);
    expect(Date.parse(server.lease!.spec!.renewTime!)).toBeGreaterThan(renewedAt + 60_000);
    await a.stop();
  });

  it('gives up a renewal that hangs, before the renew deadline passes', async () => {
    const transport = new FakeTransport();
    new LeaseServer(transport);
    const events: string[] = [];
    const a = elector(transport, 'a', events);
    a.start();
    await vi.advanceTimersByTimeAsync(0);
    transport.on({ method: 'PUT' }, () => new Promise(() => {}));
    await vi.advanceTimersByTimeAsync(12_000);
    expect(events).toEqual(['a started', 'a stopped']);
  });

  it('a standby tries again when the Lease it waits for expires, not up to a jittered retry period later', async () => {
    const transport = new FakeTransport();
    const server = new LeaseServer(transport);
    const reads: number[] = [];
    transport.on({ method: 'GET' }, () => {
      reads.push(Date.now());
      if (!server.lease) throw apiError(404, 'not found');
      return server.lease;
    });
    const events: string[] = [];
    // Longest jitter: the standby reads every 4.4 s, so without the wake-up at expiry it would take over
    // 4 × 4.4 = 17.6 s after it first saw the last renewal.
    const a = elector(transport, 'a', events, new RecordingMetrics(), () => 1);
    const b = elector(transport, 'b', events, new RecordingMetrics(), () => 1);
    a.start();
    await vi.advanceTimersByTimeAsync(0);
    b.start();
    await vi.advanceTimersByTimeAsync(30_000);
    (a as unknown as { abort: AbortController }).abort.abort();
    const lastRenewal = Date.parse(server.lease!.spec!.renewTime!);
    await vi.advanceTimersByTimeAsync(25_000);
    expect(b.isLeader()).toBe(true);
    const firstSeen = reads.find((t) => t >= lastRenewal)!;
    const takeover = Date.parse(server.lease!.spec!.acquireTime!);
    expect(takeover - firstSeen).toBe(15_000);
    expect(takeover - lastRenewal).toBeLessThanOrEqual(15_000 + 2_000 * 2.2);
    await b.stop();
  });

  describe('write fence', () => {
    const leases = '/apis/coordination.k8s.io/v1/namespaces/openshift-karpenter/leases';
    const put = (path: string): KubeRequest => ({ verb: 'update', kind: '-', method: 'PUT', path });
    const write = put('/apis/apps/v1/namespaces/openshift-karpenter/deployments/karpenter');
    const fenced = (transport: FakeTransport) => {
      const box: { gate?: WriteGate } = {};
      Object.assign(transport, { fence: (g: WriteGate) => (box.gate = g) });
      return box;
    };

    it('start() installs it on the transport; it refuses writes until this replica leads, but never the Lease', async () => {
      const transport = new FakeTransport();
      const server = new LeaseServer(transport);
      server.lease = lease({ holderIdentity: 'other', renewTime: microTime(T0), leaseDurationSeconds: 15 });
      const box = fenced(transport);
      const a = elector(transport, 'a', []);
      a.start();
      await vi.advanceTimersByTimeAsync(0);
      expect(a.isLeader()).toBe(false);
      expect(box.gate!(write)).toBe('this replica does not lead');
      expect(box.gate!(put(`${leases}/karpenter-operator.openshift.io`))).toBeUndefined();
      const create = (name: string): KubeRequest => ({
        verb: 'create',
        kind: 'Lease',
        method: 'POST',
        path: leases,
        body: { metadata: { name } },
      });
      expect(box.gate!(create('karpenter-operator.openshift.io'))).toBeUndefined();
      expect(box.gate!(create('another-lease'))).toBe('this replica does not lead');
      expect(box.gate!(put(`${leases}/someone-elses`))).toBe('this replica does not lead');
      await vi.advanceTimersByTimeAsync(20_000);
      expect(a.isLeader()).toBe(true);
      expect(box.gate!(write)).toBeUndefined();
      await a.stop();
      expect(box.gate!(write)).toBe('this replica does not lead');
    });

    it('closes once the last renewal is a renew deadline old, before the renew loop notices (a frozen process)', async () => {
      const transport = new FakeTransport();
      new LeaseServer(transport);
      const box = fenced(transport);
      const events: string[] = [];
      const a = elector(transport, 'a', events);
      a.start();
      await vi.advanceTimersByTimeAsync(30_000);
      expect(box.gate!(write)).toBeUndefined();
      // SIGSTOP for 20 s: the clock moves on, no timer has fired yet. On SIGCONT whatever fell due before the
      // renew timer (a requeue, an Event write) runs while the elector still thinks it leads.
      vi.setSystemTime(Date.now() + 20_000);
      expect(a.isLeader()).toBe(true);
      expect(box.gate!(write)).toMatch(
        /^the leader lease was last renewed 2\d{4} ms ago \(renew deadline 10000 ms\); another replica may lead$/,
      );
      expect(box.gate!(put(`${leases}/karpenter-operator.openshift.io`))).toBeUndefined();
      await vi.advanceTimersByTimeAsync(2_000);
      expect(events).toEqual(['a started', 'a stopped']);
      expect(box.gate!(write)).toBe('this replica does not lead');
    });

    it('stays open while renewals succeed; a write is refused once renewals have failed for the renew deadline', async () => {
      const transport = new FakeTransport();
      const server = new LeaseServer(transport);
      const box = fenced(transport);
      const a = elector(transport, 'a', []);
      a.start();
      await vi.advanceTimersByTimeAsync(0);
      const open: boolean[] = [];
      for (let i = 0; i < 30; i++) {
        await vi.advanceTimersByTimeAsync(1_000);
        open.push(box.gate!(write) === undefined);
      }
      expect(open.every(Boolean)).toBe(true);
      server.down = true;
      const lastRenewal = Date.parse(server.lease!.spec!.renewTime!);
      await vi.advanceTimersByTimeAsync(lastRenewal + 9_999 - Date.now());
      expect(box.gate!(write)).toBeUndefined();
      // The renew loop gives up at the same instant here; either way the write is refused.
      await vi.advanceTimersByTimeAsync(1);
      expect(box.gate!(write)).toBeDefined();
    });
  });

  it('refuses inconsistent timing', () => {
    expect(
      () =>
        new LeaderElector({
          transport: new FakeTransport(),
          namespace: 'x',
          identity: 'a',
          timing: { renewDeadlineMs: 20_000 },
          onStartedLeading() {},
          onStoppedLeading() {},
        }),
    ).toThrow(/leaseDuration/);
  });
});
