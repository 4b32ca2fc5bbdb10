// drift: how fast, and with how many requests, the operator repairs drift of its operand (median of N)
//
// The operator runs converged as its ServiceAccount. Each repair is one admin change to the operand
// Deployment `openshift-karpenter/karpenter`, then the wait until an admin watch sees it as rendered again:
//   delete:   the Deployment is deleted → the watch sees it ADDED again (a new uid);
//   replicas: spec.replicas is set to 5 → the watch sees the rendered replica count again.
// End to end = client time before the admin request → that watch event. The audit log gives the operator's
// requests in the repair window (Lease renewals and Events apart) per repair. What the issue asked to keep
// ahead of the Go implementation (91 vs 104 ms median, 2 vs 12.5 requests per repair).
//
//   npm run bench -- drift [--repairs 20] [--mode delete|replicas] [--gap-ms 500] [--timeout-s 600]
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { kubeRequest, type KubeObj } from '@karpenter-operator/testkit';
import { IDLE_ALLOWED_WRITE_RESOURCES, summarizeAuditWindow } from './src/audit-window.js';
import {
  applyKarpenterAndCredentials,
  installManifests,
  OPERATOR_NS,
  OPERATOR_USER,
  runBench,
  sleep,
  startOperator,
  waitConverged,
  watchPath,
} from './src/harness.js';
import { median, summarize } from './src/stats.js';

const { values: args } = parseArgs({
  options: {
    repairs: { type: 'string', default: '20' },
    mode: { type: 'string', default: 'delete' },
    'gap-ms': { type: 'string', default: '500' },
    'per-repair-timeout-ms': { type: 'string', default: '15000' },
    'timeout-s': { type: 'string', default: '600' },
  },
});
if (!['delete', 'replicas'].includes(args.mode)) throw new Error(`--mode must be delete or replicas, got ${args.mode}`);
const REPAIRS = Number(args.repairs);
if (!Number.isInteger(REPAIRS) || REPAIRS < 1) throw new Error(`--repairs must be a positive integer, got ${args.repairs}`);
const GAP_MS = Number(args['gap-ms']);
const PER_REPAIR_TIMEOUT_MS = Number(args['per-repair-timeout-ms']);
const DEPLOYMENT = 'karpenter';
const PATH = `/apis/apps/v1/namespaces/${OPERATOR_NS}/deployments/${DEPLOYMENT}`;

const replicasOf = (d: KubeObj): number | undefined => (d.spec as { replicas?: number } | undefined)?.replicas;

await runBench('drift', { timeoutMs: Number(args['timeout-s']) * 1000 }, async (ctx) => {
  const kc = ctx.admin();
  await installManifests(ctx);
  await applyKarpenterAndCredentials(ctx);
  const op = await startOperator(ctx, { name: 'operator' });
  await op.waitReady();
  await waitConverged(ctx);
  ctx.log('converged');

  const initial = await kubeRequest<KubeObj>(kc, 'GET', PATH);
  if (initial.status !== 200) throw new Error(`reading Deployment ${OPERATOR_NS}/${DEPLOYMENT}: HTTP ${initial.status}`);
  const rendered = replicasOf(initial.body!);

  // The repaired state of the Deployment, as the watch shows it, with the client time it arrived.
  let waiter: { repaired: (type: string, d: KubeObj) => boolean; resolve: (at: number) => void } | undefined;
  const watch = await watchPath(
    kc,
    `/apis/apps/v1/namespaces/${OPERATOR_NS}/deployments`,
    (type, obj) => {
      const at = performance.now();
      if (waiter?.repaired(type, obj)) waiter.resolve(at);
    },
    { fieldSelector: `metadata.name=${DEPLOYMENT}` },
  );
  ctx.onCleanup(() => watch.stop());
  await sleep(2_000);

  const results: Array<{ i: number; endToEndMs?: number }> = [];
  const windowStart = new Date();
  for (let i = 0; i < REPAIRS; i++) {
    const before = await kubeRequest<KubeObj>(kc, 'GET', PATH);
    if (before.status !== 200) throw new Error(`reading Deployment ${OPERATOR_NS}/${DEPLOYMENT}: HTTP ${before.status}`);
    const uid = before.body!.metadata?.uid;
    // Replicas: the drifted count must be seen first, so a late event of the previous repair cannot count.
    let drifted = false;
    const repaired =
      args.mode === 'delete'
        ? (type: string, d: KubeObj) => type === 'ADDED' && d.metadata?.uid !== uid
        : (type: string, d: KubeObj) => {
            if (type !== 'MODIFIED') return false;
            if (replicasOf(d) === (rendered ?? 1) + 4) drifted = true;
            return drifted && replicasOf(d) === rendered;
          };
    const done = new Promise<number | undefined>((resolve) => {
      const timer = setTimeout(() => resolve(undefined), PER_REPAIR_TIMEOUT_MS);
      waiter = { repaired, resolve: (at) => (clearTimeout(timer), resolve(at)) };
    });
    const t0 = performance.now();
    const r =
      args.mode === 'delete'
        ? await kubeRequest(kc, 'DELETE', PATH)
        : await kubeRequest(kc, 'PATCH', PATH, {
            body: { spec: { replicas: (rendered ?? 1) + 4 } },
            contentType: 'application/merge-patch+json',
          });
    if (r.status !== 200 && r.status !== 202) throw new Error(`${args.mode} of Deployment ${OPERATOR_NS}/${DEPLOYMENT}: HTTP ${r.status}`);
    const at = await done;
    waiter = undefined;
    results.push({ i, ...(at !== undefined ? { endToEndMs: Math.round((at - t0) * 10) / 10 } : {}) });
    if (at === undefined) ctx.log(`repair ${i}: not seen within ${PER_REPAIR_TIMEOUT_MS} ms`);
    await sleep(GAP_MS);
  }
  const windowEnd = new Date(Date.now() + 1_000);
  await sleep(1_000);
  watch.stop();

  const audit = summarizeAuditWindow(
    ctx.cluster.auditEvents({ user: OPERATOR_USER, stage: '*', since: windowStart }),
    windowStart,
    windowEnd,
  );
  // The repair's own requests: everything but the Lease renewals and Events that any window has.
  const allowed = IDLE_ALLOWED_WRITE_RESOURCES as readonly string[];
  const repairRequests = Object.entries(audit.byVerbResource)
    .filter(([vr]) => !allowed.includes(vr.split(' ')[1]!.split('/')[0]!))
    .reduce((n, [, c]) => n + c, 0);
  const repairedMs = results.filter((r) => r.endToEndMs !== undefined).map((r) => r.endToEndMs!);
  const e2e = summarize(repairedMs);
  return {
    mode: args.mode,
    repairs: REPAIRS,
    repaired: repairedMs.length,
    gapMs: GAP_MS,
    endToEndMs: e2e,
    medianMs: Math.round(median(repairedMs) * 10) / 10,
    requestsPerRepair: Math.round((repairRequests / REPAIRS) * 100) / 100,
    operatorRequestsDuringRun: audit.byVerbResource,
    operatorErrorsDuringRun: audit.errors,
    targets: {
      everyRepairSeen: repairedMs.length === REPAIRS,
      // The Go implementation's figures in the same conditions (issue 18): 104 ms median, 12.5 requests.
      medianBelowGo104Ms: median(repairedMs) < 104,
      requestsPerRepairBelowGo12_5: repairRequests / REPAIRS < 12.5,
    },
    notes: [
      `endToEndMs: client time before the admin ${args.mode === 'delete' ? 'DELETE' : 'replicas PATCH'} → admin watch event showing the Deployment repaired.`,
      "requestsPerRepair: the operator's requests in the window (audit log), Lease renewals and Events apart, divided by the repairs.",
      `One repair at a time, ${GAP_MS} ms apart.`,
    ],
  };
});
