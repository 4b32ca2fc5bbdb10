import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyObject, deleteObject, getObject, waitFor, WRITE_VERBS, type AuditEvent } from '@karpenter-operator/testkit';
import { testCluster } from '@karpenter-operator/testkit/vitest';
import {
  credentialsFileText,
  installManifests,
  OPERATOR_NS,
  OPERATOR_USER,
  RELEASE,
  resetOperatorWorld,
  startOperator,
  type OperatorProcess,
} from '../support/operator-process.js';

const cluster = testCluster();
const kc = () => cluster.kubeConfig();
const LEASE = ['coordination.k8s.io/v1', 'Lease', 'karpenter-operator.openshift.io', OPERATOR_NS] as const;
const holder = async () => ((await getObject(kc(), ...LEASE))?.spec as { holderIdentity?: string } | undefined)?.holderIdentity ?? '';
const leading = (p: OperatorProcess) => p.logs().includes('"became leader"');
/** What each replica sends as User-Agent (they share a ServiceAccount): `karpenter-operator/<version> (<POD_NAME>)`. */
const agentOf = (podName: string) => `karpenter-operator/${RELEASE} (${podName})`;
const receivedAt = (e: AuditEvent) => Date.parse(e.requestReceivedTimestamp);
const isLeaseWrite = (e: AuditEvent) =>
  e.objectRef?.resource === 'leases' && e.objectRef.name === LEASE[2] && (e.verb === 'update' || e.verb === 'create');
const ok = (e: AuditEvent) => (e.responseStatus?.code ?? 0) >= 200 && (e.responseStatus?.code ?? 0) < 300;
const brief = (e: AuditEvent) => `${e.requestReceivedTimestamp} ${e.verb} ${e.requestURI} -> ${e.responseStatus?.code}`;

describe('two operator replicas with leader election', () => {
  const procs: OperatorProcess[] = [];
  // Requests received before this file started its replicas belong to other files' operators.
  let filesStart = 0;

  beforeAll(async () => {
    await installManifests(cluster);
    await resetOperatorWorld(cluster);
    await applyObject(kc(), {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'karpenter-cloud-credentials', namespace: OPERATOR_NS },
      stringData: { credentials: credentialsFileText() },
    });
    filesStart = Date.now();
    procs.push(await startOperator(cluster, { name: 'replica-a', electionTiming: 'fast' }));
    procs.push(await startOperator(cluster, { name: 'replica-b', electionTiming: 'fast' }));
  }, 180_000);

  afterAll(async () => {
    await deleteObject(kc(), 'autoscaling.openshift.io/v1alpha1', 'Karpenter', 'default').catch(() => {});
    for (const p of procs) if (!p.exited()) p.proc.kill('SIGCONT'); // a failed freeze test must not leave one stopped
    const alive = procs.filter((p) => !p.exited());
    if (alive.length) {
      await waitFor(
        'teardown to finish',
        async () => (await getObject(kc(), 'autoscaling.openshift.io/v1alpha1', 'Karpenter', 'default')) === undefined,
        { timeoutMs: 60_000 },
      ).catch(() => {});
    }
    await Promise.all(procs.map((p) => p.stop()));
    await resetOperatorWorld(cluster);
  }, 120_000);

  it('exactly one replica leads; both are ready; the Lease names the leader', async () => {
    await waitFor('a leader', async () => procs.some(leading), { timeoutMs: 30_000 });
    // Give a wrongly-eager second replica the time to show itself.
    await new Promise((r) => setTimeout(r, 4_000));
    expect(procs.filter(leading)).toHaveLength(1);
    const leader = procs.find(leading)!;
    expect(await holder()).toMatch(leader === procs[0] ? /^replica-a_/ : /^replica-b_/);
    for (const p of procs) expect((await fetch(`http://127.0.0.1:${p.healthPort}/readyz`)).status).toBe(200);
  });

  it('killing the leader (SIGKILL): the standby takes over within the lease duration and keeps reconciling', async () => {
    const leader = procs.find(leading)!;
    const standby = procs.find((p) => p !== leader)!;
    const killedAt = Date.now();
    await leader.kill();
    await waitFor('the standby to lead', async () => leading(standby), { timeoutMs: 25_000, intervalMs: 100 });
    const failoverMs = Date.now() - killedAt;
    // Like client-go, a standby counts the lease from when it *observed* the last renewal (no trust in
    // clocks across hosts), and it retries right at expiry: worst case lease 15 s + one jittered retry
    // period (up to 2.2 × 2 s) of late observation after the last renewal, which precedes the kill.
    expect(failoverMs).toBeLessThan(15_000 + 2 * 2_400 + 1_000);
    console.error(`leader-election: failover took ${failoverMs} ms`);

    await applyObject(kc(), {
      apiVersion: 'autoscaling.openshift.io/v1alpha1',
      kind: 'Karpenter',
      metadata: { name: 'default' },
      spec: {},
    });
    await waitFor('the new leader to deploy the operand', () => getObject(kc(), 'apps/v1', 'Deployment', 'karpenter', OPERATOR_NS), {
      timeoutMs: 60_000,
    });
    expect(standby.exited()).toBe(false);
  }, 120_000);

  it('freezing the leader (SIGSTOP) past the lease: the standby takes over and reconciles; the old leader writes nothing after the takeover and exits 2', async () => {
    // The SIGKILLed replica is gone: start a new standby.
    const standby = await startOperator(cluster, { name: 'replica-c', electionTiming: 'fast' });
    procs.push(standby);
    const leader = procs.find((p) => p !== standby && !p.exited() && leading(p))!;
    expect(leader).toBeDefined();
    await waitFor('the standby to see the leader', async () => standby.logs().includes('"another replica leads"'), { timeoutMs: 15_000 });
    expect(leading(standby)).toBe(false);
    const oldName = (await holder()).split('_')[0]!;
    expect(oldName).toMatch(/^replica-[ab]$/);
    const before = (await getObject(kc(), 'apps/v1', 'Deployment', 'karpenter', OPERATOR_NS))!;
    expect(before).toBeDefined();

    const recreated = (uid: unknown) => async () => {
      const d = await getObject(kc(), 'apps/v1', 'Deployment', 'karpenter', OPERATOR_NS);
      return d !== undefined && d.metadata.uid !== uid;
    };

    const stoppedAt = Date.now();
    leader.proc.kill('SIGSTOP');
    let resumedAt = 0;
    try {
      await waitFor('the standby to lead', async () => leading(standby), { timeoutMs: 30_000, intervalMs: 100 });
      console.error(`leader-election: standby leads ${Date.now() - stoppedAt} ms after SIGSTOP`);
      expect(await holder()).toMatch(/^replica-c_/);
      // The new leader reconciles: an owned object deleted now comes back, from it.
      await deleteObject(kc(), 'apps/v1', 'Deployment', 'karpenter', OPERATOR_NS);
      await waitFor('the new leader to recreate the operand Deployment', recreated(before.metadata.uid), { timeoutMs: 60_000 });
      // Frozen well past the lease duration, whatever the timing above.
      await new Promise((r) => setTimeout(r, Math.max(0, stoppedAt + 20_000 - Date.now())));
    } finally {
      resumedAt = Date.now();
      leader.proc.kill('SIGCONT');
    }
    expect(resumedAt - stoppedAt).toBeGreaterThanOrEqual(20_000);
    // The old leader finds its renew deadline long past and exits with "lost lease" instead of carrying on.
    await waitFor('the old leader to exit', async () => leader.exited(), { timeoutMs: 40_000 });
    expect(await leader.stop()).toBe(2);
    expect(leader.logs()).toContain('lost the leader lease; exiting');

    const events = cluster.auditEvents({ user: OPERATOR_USER, since: new Date(stoppedAt - 60_000) });
    const oldAgent = agentOf(oldName);
    const newAgent = agentOf('replica-c');
    const acquired = events.find((e) => e.userAgent === newAgent && isLeaseWrite(e) && ok(e) && receivedAt(e) >= stoppedAt);
    expect(acquired, 'the standby acquiring the Lease, in the audit log').toBeDefined();
    const takeover = receivedAt(acquired!);
    const lastRenewal = events.filter((e) => e.userAgent === oldAgent && isLeaseWrite(e) && ok(e) && receivedAt(e) < takeover).at(-1);
    expect(lastRenewal, "the old leader's last renewal, in the audit log").toBeDefined();
    const failoverMs = takeover - receivedAt(lastRenewal!);

    // Writes by the old leader after the takeover. The one write allowed: a renewal of its own Lease that was
    // in flight or due when it froze. client-go's leader renews from the Lease it last wrote, so such a PUT
    // carries the old resourceVersion and the API server refuses it with 409 Conflict — it changes nothing.
    // Any other write, or a Lease write that went through, is split brain.
    const oldWrites = events.filter(
      (e) => e.userAgent === oldAgent && (WRITE_VERBS as readonly string[]).includes(e.verb) && receivedAt(e) >= takeover,
    );
    const refusedRenewals = oldWrites.filter((e) => isLeaseWrite(e) && e.responseStatus?.code === 409);
    const violations = oldWrites.filter((e) => !refusedRenewals.includes(e));
    // Refused by the write fence before they were sent (logged by the reconcile or the event recorder). Not
    // asserted: whether the old leader tries to write at all depends on what runs before its renew timer on
    // SIGCONT (earlier timers; watch events only if the freeze caught it outside epoll_wait). Without the
    // fence this test has caught such a write (an Event create); the unit tests pin the fence down.
    const heldBack = leader.logs().match(/not sent: /g)?.length ?? 0;
    const oldAfter = events.filter((e) => e.userAgent === oldAgent && receivedAt(e) >= takeover);
    const reverted = events.filter(
      (e) =>
        e.userAgent === newAgent &&
        e.objectRef?.resource === 'deployments' &&
        e.objectRef.name === 'karpenter' &&
        ok(e) &&
        receivedAt(e) >= takeover,
    );
    console.error(
      `leader-election: SIGSTOP ${resumedAt - stoppedAt} ms; failover ${failoverMs} ms after the last renewal ` +
        `(${takeover - stoppedAt} ms after SIGSTOP); old leader after the takeover: ${oldAfter.length} requests, ` +
        `${oldWrites.length} writes (${refusedRenewals.length} refused Lease renewals, ${violations.length} others); exit 2; ` +
        `writes it held back: ${heldBack}`,
    );
    for (const e of oldWrites) console.error(`leader-election: old leader wrote: ${brief(e)}`);

    expect(failoverMs).toBeLessThanOrEqual(15_000 + 5_000);
    expect(
      reverted.map((e) => e.verb),
      'the new leader recreating the Deployment',
    ).not.toEqual([]);
    expect(violations.map(brief)).toEqual([]);
    // The replicas are told apart on every request, watches included.
    const agents = new Set(
      cluster
        .auditEvents({ user: OPERATOR_USER, since: new Date(Math.max(stoppedAt - 60_000, filesStart)), stage: '*' })
        .map((e) => e.userAgent),
    );
    expect([...agents].filter((a) => !/^karpenter-operator\/4\.22\.0 \(replica-[abc]\)$/.test(a ?? ''))).toEqual([]);
    expect(cluster.auditEvents({ user: OPERATOR_USER, stage: '*', verbs: ['watch'] }).some((e) => e.userAgent === newAgent)).toBe(true);
    expect(standby.exited()).toBe(false);
  }, 180_000);
});
