import { CertificatesV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeIdentityController, Reasons } from '@karpenter-operator/core';
import { EC2_DEFAULTS } from '@karpenter-operator/provider-aws';
import {
  deleteObject,
  getObject,
  invocationsOf,
  startEc2FaultProxy,
  waitFor,
  type Ec2FaultProxy,
  type ProxiedRequest,
} from '@karpenter-operator/testkit';
import { seededWorld, testCluster } from '@karpenter-operator/testkit/vitest';
import { adminRequest, clusterOperator, conditionOf } from '../support/k8s.js';
import { installManifests, resetOperatorWorld, startOperator, type OperatorProcess } from '../support/operator-process.js';
import {
  applyKarpenterAndCredentials,
  csrApproved,
  isConverged,
  launchKarpenterInstance,
  submitClientCsr,
  waitCsrApproved,
  type LaunchedNode,
} from '../support/scenario.js';

/**
 * Chaos, EC2 side: the operator's EC2 endpoint is a fault-injecting proxy in front of the emulator. Faults
 * hit DescribeInstances only (node identity's lookups); NodeClass verification keeps working, so what the
 * test sees is node identity alone. One fault window, in turn: throttling (EC2's 400
 * `RequestLimitExceeded` / `Throttling`), 503 `Unavailable`, then hung responses. Over it:
 *
 * (a) every SDK call stays within the configured attempts, and calls come only from failed lookups (the
 *     work queue's backoff paces them), with jittered gaps between attempts;
 * (b) a hung response is abandoned at the configured request timeout, and the operator keeps working
 *     (readyz, a deleted pool re-created) while lookups hang;
 * (c) ClusterOperator `karpenter` turns Degraded (RepeatedFailures, naming node identity and the EC2 call);
 * (d) a legitimate client CSR submitted at the start stays pending for the whole window;
 * (e) faults off: that CSR is approved within 30 s and Degraded clears.
 * Before the window a slow phase checks that slow answers under the timeout are waited for, not retried.
 */
const cluster = testCluster();
const kc = () => cluster.kubeConfig();
const MAX_ATTEMPTS = EC2_DEFAULTS.maxAttempts;
const REQUEST_TIMEOUT_MS = EC2_DEFAULTS.requestTimeoutMs;
const LOOKUP = 'DescribeInstances';
const SLOW_MS = 2_500;
const THROTTLE_MS = 20_000;
const SERVER_ERROR_MS = 12_000;
// Long enough for two hung attempts to reach the client's request timeout.
const HANG_MS = 2 * REQUEST_TIMEOUT_MS + 5_000;
const RECOVERY_MS = 30_000;
const PREFIX = 'chaos-ec2-';
const MCP = ['machineconfiguration.openshift.io/v1', 'MachineConfigPool', 'karpenter-default'] as const;

let proxy: Ec2FaultProxy;
let op: OperatorProcess;
const nodes: LaunchedNode[] = [];
const csrs: string[] = [];
const figures: Record<string, unknown> = {};

const sleepUntil = (t: number) => new Promise((r) => setTimeout(r, Math.max(0, t - Date.now())));

/** Failed node-identity reconciles so far (the operator's own counter). */
async function lookupFailures(): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${op.metricsPort}/metrics`)).text();
  const m = new RegExp(
    `^karpenter_operator_reconcile_errors_total\\{controller="${NodeIdentityController.replace(/\./g, '\\.')}"\\} (\\d+)`,
    'm',
  ).exec(text);
  return m ? Number(m[1]) : 0;
}

interface DegradedSample {
  at: number;
  status?: string;
  reason?: string;
  message?: string;
}

/** Polls the CSR and the ClusterOperator every 250 ms until stopped (bounded by `maxMs`). */
function watch(csr: string, maxMs: number) {
  const samples: DegradedSample[] = [];
  let approvedSeenAt: number | undefined;
  let stop = false;
  const deadline = Date.now() + maxMs;
  const done = (async () => {
    while (!stop && Date.now() < deadline) {
      const [approved, co] = await Promise.all([
        csrApproved(cluster, csr).catch(() => false),
        clusterOperator(cluster).catch(() => undefined),
      ]);
      const now = Date.now();
      if (approved && approvedSeenAt === undefined) approvedSeenAt = now;
      const d = conditionOf(co, 'Degraded');
      samples.push({ at: now, ...(d ? { status: d.status, reason: d.reason, message: d.message } : {}) });
      await new Promise((r) => setTimeout(r, 250));
    }
  })();
  return {
    samples,
    approvedSeenAt: () => approvedSeenAt,
    stop: async () => {
      stop = true;
      await done;
    },
  };
}

const lookupRequests = (from: number, to: number): ProxiedRequest[] =>
  proxy.requests().filter((r) => r.action === LOOKUP && r.receivedAt >= from && r.receivedAt < to);

/** Requests per Action, SDK calls and attempts of the lookups that started in `[from, to)`. */
function windowFigures(from: number, to: number, failedReconciles?: number) {
  const all = proxy.requests();
  const startedHere = new Set(
    lookupRequests(from, to)
      .filter((r) => r.attempt === 1)
      .map((r) => r.invocationId),
  );
  const calls = invocationsOf(all.filter((r) => r.action === LOOKUP)).filter((c) => startedHere.has(c.invocationId));
  const touching = new Set(lookupRequests(from, to).map((r) => r.invocationId));
  return {
    ms: to - from,
    requestsByAction: proxy.countsByAction(from, to),
    /** SDK calls whose first attempt is in the window. */
    lookupCalls: calls.length,
    /** SDK calls with any attempt in the window (some started in the window before). */
    callsTouching: touching.size,
    maxAttemptsPerCall: Math.max(0, ...calls.map((c) => c.attempts)),
    attemptsPerCall: calls.map((c) => c.attempts),
    retryGapsMs: calls.flatMap((c) => c.gapsMs),
    ...(failedReconciles !== undefined ? { failedReconciles } : {}),
  };
}

async function deleteNodeClaim(name: string): Promise<void> {
  const path = `/apis/karpenter.sh/v1/nodeclaims/${name}`;
  // Before the operator first ran on this cluster the NodeClaim CRD is not there at all.
  if (!(await getObject(kc(), 'karpenter.sh/v1', 'NodeClaim', name).catch(() => undefined))) return;
  await adminRequest(cluster, 'PATCH', path, { metadata: { finalizers: null } }, 'application/merge-patch+json');
  await deleteObject(kc(), 'karpenter.sh/v1', 'NodeClaim', name).catch(() => false);
}

describe('chaos: EC2 faults through a proxy in front of the emulator', () => {
  beforeAll(async () => {
    await installManifests(cluster);
    await resetOperatorWorld(cluster);
    for (const n of ['slow', '1', '2']) await deleteNodeClaim(`${PREFIX}${n}`);
    proxy = await startEc2FaultProxy(cluster.info.ec2Endpoint!);
    op = await startOperator(cluster, { name: 'chaos-ec2', leaderElect: false, env: { AWS_ENDPOINT_URL_EC2: proxy.url } });
    await applyKarpenterAndCredentials(cluster, {});
    await waitFor('convergence', () => isConverged(cluster), { timeoutMs: 90_000, intervalMs: 300 });
    // Degraded must be False before the faults, or (c) and (e) would assert on someone else's failure.
    await waitFor(
      'Degraded=False before the faults',
      async () => conditionOf(await clusterOperator(cluster), 'Degraded')?.status === 'False',
      { timeoutMs: 30_000, intervalMs: 300 },
    );
    // The operator's EC2 calls go through the proxy (NodeClass verification at start-up).
    const counts = proxy.countsByAction();
    expect(counts.DescribeSubnets ?? 0, JSON.stringify(counts)).toBeGreaterThan(0);
  }, 180_000);

  afterAll(async () => {
    proxy?.setFault({ kind: 'none' });
    await op?.stop();
    const certs = kc().makeApiClient(CertificatesV1Api);
    for (const name of csrs) await certs.deleteCertificateSigningRequest({ name }).catch(() => undefined);
    for (const n of nodes) {
      await deleteNodeClaim(n.nodeClaim);
      await n.terminate().catch(() => undefined);
    }
    await resetOperatorWorld(cluster);
    await proxy?.close();
  }, 120_000);

  it('slow answers under the request timeout are waited for, not retried', async () => {
    const from = Date.now();
    proxy.setFault({ kind: 'slow', ms: SLOW_MS }, { actions: [LOOKUP] });
    const node = await launchKarpenterInstance(cluster, seededWorld(), `${PREFIX}slow`);
    nodes.push(node);
    const csr = await submitClientCsr(cluster, node.dns);
    csrs.push(csr);
    await waitCsrApproved(cluster, csr, 30_000);
    const approvedMs = Date.now() - from;
    proxy.setFault({ kind: 'none' });
    const reqs = lookupRequests(from, Date.now());
    expect(reqs.length).toBeGreaterThan(0);
    for (const r of reqs)
      expect(r, 'a slow answer was retried or abandoned').toMatchObject({ attempt: 1, fault: 'slow', status: 200, abandoned: false });
    figures.slow = { delayMs: SLOW_MS, requests: reqs.length, approvedAfterMs: approvedMs };
  }, 60_000);

  it('throttling, 5xx and hangs: bounded retries, Degraded, no approval; recovery approves the CSR and clears Degraded', async () => {
    // (a) throttling: EC2's answer when an account's API rate is exceeded.
    const tFault = Date.now();
    const errs0 = await lookupFailures();
    proxy.setFault({ kind: 'throttle', codes: ['RequestLimitExceeded', 'Throttling'] }, { actions: [LOOKUP] });
    const node = await launchKarpenterInstance(cluster, seededWorld(), `${PREFIX}1`);
    nodes.push(node);
    const csr = await submitClientCsr(cluster, node.dns);
    csrs.push(csr);
    const watcher = watch(csr, THROTTLE_MS + SERVER_ERROR_MS + HANG_MS + 2 * RECOVERY_MS);
    await sleepUntil(tFault + THROTTLE_MS);

    // (a) server errors.
    const tServer = Date.now();
    const errs1 = await lookupFailures();
    proxy.setFault({ kind: '5xx', status: 503, code: 'Unavailable' }, { actions: [LOOKUP] });
    await sleepUntil(tServer + SERVER_ERROR_MS);

    // (b) hung responses; a new NodeClaim makes the operator look its instance up at once.
    const tHang = Date.now();
    const errs2 = await lookupFailures();
    proxy.setFault({ kind: 'hang' }, { actions: [LOOKUP] });
    nodes.push(await launchKarpenterInstance(cluster, seededWorld(), `${PREFIX}2`));
    await new Promise((r) => setTimeout(r, 2_000));
    // Not wedged while lookups hang: probes answer and other controllers still act.
    expect((await fetch(`http://127.0.0.1:${op.healthPort}/readyz`)).status).toBe(200);
    const uid = (await getObject(kc(), ...MCP))!.metadata.uid;
    const deletedAt = Date.now();
    await deleteObject(kc(), ...MCP);
    await waitFor(
      'the deleted pool re-created while EC2 hangs',
      async () => {
        const p = await getObject(kc(), ...MCP);
        return p !== undefined && p.metadata.uid !== uid;
      },
      { timeoutMs: 15_000, intervalMs: 200 },
    );
    const poolRecreatedMs = Date.now() - deletedAt;
    expect(Date.now(), 'the pool took the whole hang window').toBeLessThan(tHang + HANG_MS);
    await sleepUntil(tHang + HANG_MS);

    // (e) faults stop.
    const tRecover = Date.now();
    const errs3 = await lookupFailures();
    proxy.setFault({ kind: 'none' });
    const approvedSeenDuringFaults = watcher.approvedSeenAt();
    await waitCsrApproved(cluster, csr, RECOVERY_MS);
    const approvedMs = Date.now() - tRecover;
    await waitFor('Degraded to clear', async () => conditionOf(await clusterOperator(cluster), 'Degraded')?.status === 'False', {
      timeoutMs: RECOVERY_MS,
      intervalMs: 250,
    });
    const clearedMs = Date.now() - tRecover;
    await watcher.stop();
    const tEnd = Date.now();
    expect(op.exited()).toBe(false);

    const throttle = windowFigures(tFault, tServer, errs1 - errs0);
    const server = windowFigures(tServer, tHang, errs2 - errs1);
    const hang = windowFigures(tHang, tRecover, errs3 - errs2);
    const abandoned = proxy.requests().filter((r) => r.action === LOOKUP && r.fault === 'hang' && r.abandoned && r.endedAt !== undefined);
    const heldMs = abandoned.map((r) => r.endedAt! - r.receivedAt);
    const degraded = watcher.samples.filter((s) => s.at < tRecover && s.status === 'True' && s.reason === Reasons.RepeatedFailures);
    const afterFirst = degraded.length ? watcher.samples.filter((s) => s.at >= degraded[0]!.at && s.at < tRecover) : [];
    figures.sdk = {
      retryMode: 'adaptive',
      maxAttempts: MAX_ATTEMPTS,
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
      connectionTimeoutMs: EC2_DEFAULTS.connectionTimeoutMs,
    };
    figures.windows = { throttle, '5xx': server, hang, recovery: windowFigures(tRecover, tEnd) };
    figures.abandonedAfterMs = heldMs;
    figures.hungStillOpenAtEnd = proxy.requests().filter((r) => r.fault === 'hang' && r.endedAt === undefined).length;
    figures.poolRecreatedDuringHangMs = poolRecreatedMs;
    figures.degradedAfterMs = degraded.length ? degraded[0]!.at - tFault : null;
    figures.degradedMessage = degraded[0]?.message ?? null;
    figures.degradedFlapsDuringFaults = afterFirst.filter((s, i) => i > 0 && s.status !== afterFirst[i - 1]!.status).length;
    figures.csrPendingThroughFaultsMs = tRecover - tFault;
    figures.csrApprovedAfterRecoveryMs = approvedMs;
    figures.degradedClearedAfterRecoveryMs = clearedMs;
    console.log(`chaos-ec2: ${JSON.stringify(figures)}`);

    // (d) no approval while the lookup failed: not seen approved, and no lookup succeeded to prove it.
    expect(approvedSeenDuringFaults, 'the CSR was approved while DescribeInstances failed').toBeUndefined();
    const okDuringFaults = lookupRequests(tFault, tRecover).filter((r) => r.status === 200);
    expect(okDuringFaults, 'a lookup got through during the fault window').toEqual([]);
    const approvedCond = (
      await kc().makeApiClient(CertificatesV1Api).readCertificateSigningRequest({ name: csr })
    ).status?.conditions?.find((c) => c.type === 'Approved');
    expect(new Date(approvedCond!.lastUpdateTime!).getTime()).toBeGreaterThanOrEqual(Math.floor(tRecover / 1000) * 1000);
    // (e)
    expect(approvedMs).toBeLessThan(RECOVERY_MS);

    // (c) Degraded after repeated failures, naming node identity and the EC2 call.
    expect(degraded.length, `Degraded never turned True during the faults: ${JSON.stringify(watcher.samples.slice(-3))}`).toBeGreaterThan(
      0,
    );
    expect(degraded[0]!.message).toContain(NodeIdentityController);
    expect(degraded[0]!.message).toMatch(/describing instances: (RequestLimitExceeded|Throttling|Unavailable)/);

    // (a) bounded retries: no call beyond the configured attempts, calls only from failed lookups.
    for (const r of lookupRequests(tFault, tRecover))
      expect(r.maxAttempts, "the SDK is not configured with the operator's max attempts").toBe(MAX_ATTEMPTS);
    for (const w of [throttle, server, hang]) {
      expect(w.maxAttemptsPerCall).toBeLessThanOrEqual(MAX_ATTEMPTS);
      expect(w.requestsByAction[LOOKUP] ?? 0, JSON.stringify(w)).toBeLessThanOrEqual(MAX_ATTEMPTS * w.callsTouching);
    }
    for (const w of [throttle, server]) {
      expect(w.lookupCalls, JSON.stringify(w)).toBeGreaterThan(0);
      // One call per failed reconcile (concurrent ones share it), plus the look-ahead of a new NodeClaim
      // and a call still running at the window's end.
      expect(w.lookupCalls, JSON.stringify(w)).toBeLessThanOrEqual(w.failedReconciles! + 2);
    }
    expect(throttle.maxAttemptsPerCall, 'throttled calls are retried').toBeGreaterThan(1);
    // Jitter: the gaps between attempts are drawn, not fixed.
    const gaps = [...throttle.retryGapsMs, ...server.retryGapsMs];
    expect(new Set(gaps.map((g) => Math.round(g / 25))).size, `retry gaps ${JSON.stringify(gaps)}`).toBeGreaterThanOrEqual(
      Math.min(3, gaps.length),
    );

    // (b) a hung request is abandoned at the request timeout.
    expect(heldMs.length, 'no hung request was abandoned').toBeGreaterThan(0);
    for (const ms of heldMs) {
      expect(ms).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 100);
      expect(ms).toBeLessThan(REQUEST_TIMEOUT_MS + 2_000);
    }
  }, 180_000);
});
