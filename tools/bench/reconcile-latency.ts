// reconcile-latency: N MachineSet AMI changes → time until EC2NodeClass default shows each (p50/p99; target p99 < 500 ms)
//
// The operator runs converged as its ServiceAccount. Each change patches the AMI of one worker MachineSet
// (round robin over the three), as admin, then waits until an admin watch on EC2NodeClass `default` shows
// that AMI in spec.amiSelectorTerms. End to end = client time before the PATCH → watch event received.
// The audit log splits it: the API server receiving the MachineSet PATCH → receiving the operator's apply.
//
//   npm run bench -- reconcile-latency [--changes 50] [--gap-ms 300] [--amis copies|fake] [--timeout-s 900]
import { performance } from 'node:perf_hooks';
import { CopyImageCommand, EC2Client } from '@aws-sdk/client-ec2';
import { parseArgs } from 'node:util';
import { kubeRequest, type KubeObj } from '@karpenter-operator/testkit';
import { summarizeAuditWindow } from './src/audit-window.js';
import {
  applyKarpenterAndCredentials,
  EC2NODECLASS,
  installManifests,
  OPERATOR_USER,
  runBench,
  sleep,
  startOperator,
  waitConverged,
  watchPath,
} from './src/harness.js';
import { byLabel, sumOf, type PromSample } from './src/prom.js';
import { summarize } from './src/stats.js';

const { values: args } = parseArgs({
  options: {
    changes: { type: 'string', default: '50' },
    'gap-ms': { type: 'string', default: '300' },
    'per-change-timeout-ms': { type: 'string', default: '15000' },
    // `copies`: AMIs that exist in the emulator (copies of the RHCOS image), so verification passes and
    // the status stays put; `fake`: ids EC2 does not know, so every change also rewrites a Degraded message.
    amis: { type: 'string', default: 'copies' },
    'timeout-s': { type: 'string', default: '900' },
  },
});
if (!['copies', 'fake'].includes(args.amis)) throw new Error(`--amis must be copies or fake, got ${args.amis}`);
const CHANGES = Number(args.changes);
const GAP_MS = Number(args['gap-ms']);
const PER_CHANGE_TIMEOUT_MS = Number(args['per-change-timeout-ms']);
const TARGET_P99_MS = 500;
const MACHINE_API = 'openshift-machine-api';

const amiIds = (nc: KubeObj): string[] =>
  ((nc.spec as { amiSelectorTerms?: Array<{ id?: string }> } | undefined)?.amiSelectorTerms ?? []).map((t) => t.id ?? '?');

await runBench('reconcile-latency', { timeoutMs: Number(args['timeout-s']) * 1000 }, async (ctx) => {
  const kc = ctx.admin();
  await installManifests(ctx);
  await applyKarpenterAndCredentials(ctx);
  const op = await startOperator(ctx, { name: 'operator' });
  await op.waitReady();
  await waitConverged(ctx);
  ctx.log('converged');

  const amis: string[] = [];
  if (args.amis === 'copies') {
    const ec2 = new EC2Client(ctx.cluster.ec2Config());
    for (let i = 0; i < CHANGES; i++) {
      const r = await ec2.send(
        new CopyImageCommand({
          SourceImageId: ctx.world.facts.amis.x86_64,
          SourceRegion: ctx.world.facts.region,
          Name: `rhcos-bench-${i}`,
        }),
      );
      amis.push(r.ImageId!);
    }
    ec2.destroy();
    ctx.log(`copied the RHCOS AMI ${CHANGES} times in the emulator`);
  } else {
    for (let i = 0; i < CHANGES; i++) amis.push(`ami-0b${(0x1000 + i).toString(16).padStart(15, '0')}`);
  }
  if (new Set(amis).size !== CHANGES) throw new Error('AMI ids are not distinct');

  // Every observed state of EC2NodeClass default, with the client time it arrived.
  const seen: Array<{ at: number; amis: string[] }> = [];
  let waiter: { ami: string; resolve: (at: number) => void } | undefined;
  const watch = await watchPath(
    kc,
    `/apis/${EC2NODECLASS.apiVersion}/ec2nodeclasses`,
    (_type, obj) => {
      const at = performance.now();
      const amis = amiIds(obj);
      seen.push({ at, amis });
      if (waiter && amis.includes(waiter.ami)) waiter.resolve(at);
    },
    { fieldSelector: 'metadata.name=default' },
  );
  ctx.onCleanup(() => watch.stop());
  await sleep(3_000);
  const before = await op.metrics();

  const machineSets = ctx.world.facts.workerMachineSets;
  const results: Array<{ i: number; machineSet: string; ami: string; endToEndMs?: number; sentAt: Date }> = [];
  const windowStart = new Date();
  for (let i = 0; i < CHANGES; i++) {
    const machineSet = machineSets[i % machineSets.length]!;
    const ami = amis[i]!;
    const reflected = new Promise<number | undefined>((resolve) => {
      const timer = setTimeout(() => resolve(undefined), PER_CHANGE_TIMEOUT_MS);
      waiter = { ami, resolve: (at) => (clearTimeout(timer), resolve(at)) };
    });
    const sentAt = new Date();
    const t0 = performance.now();
    const r = await kubeRequest(kc, 'PATCH', `/apis/machine.openshift.io/v1beta1/namespaces/${MACHINE_API}/machinesets/${machineSet}`, {
      body: { spec: { template: { spec: { providerSpec: { value: { ami: { id: ami } } } } } } },
      contentType: 'application/merge-patch+json',
    });
    if (r.status !== 200) throw new Error(`patching MachineSet ${machineSet}: HTTP ${r.status}: ${r.text}`);
    const at = await reflected;
    waiter = undefined;
    results.push({ i, machineSet, ami, sentAt, ...(at !== undefined ? { endToEndMs: Math.round((at - t0) * 10) / 10 } : {}) });
    if (at === undefined) ctx.log(`change ${i}: ${ami} on ${machineSet} not reflected within ${PER_CHANGE_TIMEOUT_MS} ms`);
    await sleep(GAP_MS);
  }
  const windowEnd = new Date(Date.now() + 1_000);
  await sleep(1_000);
  const after = await op.metrics();
  watch.stop();

  // Server side: MachineSet PATCH received → the operator's write of EC2NodeClass default received.
  const adminPatches = ctx.cluster
    .auditEvents({ verbs: ['patch'], resource: 'machinesets', since: windowStart })
    .filter((e) => e.user.username !== OPERATOR_USER)
    .map((e) => Date.parse(e.requestReceivedTimestamp));
  const operatorWrites = ctx.cluster
    .auditEvents({ user: OPERATOR_USER, verbs: ['patch', 'update', 'create'], resource: 'ec2nodeclasses', since: windowStart })
    .filter((e) => e.objectRef?.name === 'default' && !e.objectRef.subresource)
    .map((e) => Date.parse(e.requestReceivedTimestamp));
  const serverSide: number[] = [];
  for (const [k, t] of adminPatches.entries()) {
    const next = adminPatches[k + 1] ?? Infinity;
    const w = operatorWrites.find((x) => x >= t && x < next);
    if (w !== undefined) serverSide.push(w - t);
  }

  const reflected = results.filter((r) => r.endToEndMs !== undefined).map((r) => r.endToEndMs!);
  const e2e = summarize(reflected);
  const delta = (name: string, label: string) => {
    const a = byLabel(after, name, label);
    const b = byLabel(before, name, label);
    return Object.fromEntries(
      Object.entries(a)
        .map(([k, v]) => [k, v - (b[k] ?? 0)])
        .filter(([, v]) => v !== 0),
    );
  };
  // Where the operator's time goes, from its own histograms (deltas over the run).
  const NC_CONTROLLER = 'ec2nodeclass.default';
  const histMeanMs = (name: string) => {
    const d = (m: PromSample[], suffix: string) => sumOf(m, `${name}_${suffix}`, { name: NC_CONTROLLER }) ?? 0;
    const count = d(after, 'count') - d(before, 'count');
    return count > 0 ? Math.round(((d(after, 'sum') - d(before, 'sum')) / count) * 10_000) / 10 : null;
  };
  const finalAmis = seen[seen.length - 1]?.amis ?? [];
  const expectedFinal = machineSets.map((_, m) => results.filter((r) => r.machineSet === machineSets[m]).pop()?.ami).filter(Boolean);
  const audit = summarizeAuditWindow(
    ctx.cluster.auditEvents({ user: OPERATOR_USER, stage: '*', since: windowStart }),
    windowStart,
    windowEnd,
  );

  return {
    changes: CHANGES,
    amis: args.amis,
    reflected: reflected.length,
    gapMs: GAP_MS,
    endToEndMs: e2e,
    serverSideMs: summarize(serverSide),
    p50Ms: e2e.p50,
    p99Ms: e2e.p99,
    targets: { p99Below500Ms: e2e.p99 < TARGET_P99_MS, everyChangeReflected: reflected.length === CHANGES },
    finalAmiSelectorTerms: finalAmis,
    finalMatchesMachineSets: [...finalAmis].sort().join() === [...expectedFinal].sort().join(),
    operatorRequestsDuringRun: audit.byVerbResource,
    reconcilesDuringRun: delta('karpenter_operator_reconcile_total', 'controller'),
    defaultNodeClassController: {
      reconcilesPerChange:
        Math.round(((delta('karpenter_operator_reconcile_total', 'controller')[NC_CONTROLLER] ?? 0) / CHANGES) * 100) / 100,
      meanQueueWaitMs: histMeanMs('karpenter_operator_workqueue_queue_duration_seconds'),
      meanReconcileMs: histMeanMs('karpenter_operator_workqueue_work_duration_seconds'),
    },
    notes: [
      'endToEndMs: client time before the MachineSet PATCH → admin watch event on EC2NodeClass default showing the AMI.',
      "serverSideMs: audit requestReceivedTimestamp of the MachineSet PATCH → of the operator's EC2NodeClass default write.",
      `One change at a time, ${GAP_MS} ms apart; MachineSets patched round robin; AMIs: ${args.amis === 'copies' ? 'copies of the RHCOS image in the emulator' : 'ids unknown to EC2'}.`,
      'With 50 samples p99 is the maximum (nearest rank).',
    ],
  };
});
