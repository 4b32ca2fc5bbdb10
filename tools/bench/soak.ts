// soak: a day of churn compressed — the real Karpenter scales two NodePools up and down under NodeClass and MachineSet edits, forged CSRs and leader failovers; the operator's memory, handles, event-loop lag and request rate over time with slopes, and its writes per change
//
// Two operator replicas (leader election, as its ServiceAccount), the real karpenter-provider-aws controller
// (testkit runner), the real MCC/MCS and simulated kubelets. Two NodePools: `soak-a` of EC2NodeClass
// `default` (the operator's, from the MachineSets) and `soak-b` of a user's EC2NodeClass `soak`. Until the
// duration is over, cycle after cycle:
//   - every other cycle an edit, then a quiet window in which the operator's writes are counted:
//       nodeclass:  a tag of EC2NodeClass `soak` changes (the operator has nothing to write; Karpenter drifts
//                   the pool's nodes and replaces them);
//       machineset: every worker MachineSet's AMI flips between the RHCOS AMI and a copy of it (the operator
//                   writes amiSelectorTerms, a field it owns, on both NodeClasses for each distinct set of
//                   AMIs the MachineSets pass through: patched one by one, old → both → new, so 4 writes;
//                   Karpenter drifts and replaces the nodes);
//   - both workloads are scaled to random sizes (pods that need a node each) and the bench waits until
//     every pod runs; scaling down leaves Karpenter to consolidate.
// Every fourth machine also submits a forged client CSR (extra `system:masters`), which must stay unapproved.
// Leader failovers (SIGKILL or SIGTERM of the leader, a new standby started) happen in the first half, so the last
// leader runs the whole second half: its samples are the leak test.
//
// Every sample (each --sample-s) of each live replica: RSS, V8 heap used, external memory, open file
// descriptors (/proc), event-loop lag (p99 and max), API requests (its own counter). Reported: slopes per
// hour of RSS, heap, the heap's floor (the lowest sample of each 2-minute bucket: a collected heap is a
// sawtooth, a leak lifts its floor) and descriptors over the longest leader term after --warmup-s, the heap
// floor's growth per NodeClaim launched in that term (± two standard errors: what the run can resolve),
// request rate, and the operator's writes per edit (audit log).
// At the end both pools scale to 0: no instance, NodeClaim or forged approval may be left.
//
//   npm run bench -- soak [--duration-s 1800] [--sample-s 10] [--max-nodes 6] [--failovers 3]
//                         [--warmup-s 180] [--seed N] [--timeout-s DURATION+2400]
import { readdirSync, readFileSync, mkdirSync } from 'node:fs';
import { CopyImageCommand, EC2Client } from '@aws-sdk/client-ec2';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  aNodePool,
  aPoolWorkload,
  applyObject,
  getObject,
  instancesOfPool,
  karpenterBinary,
  kubeRequest,
  listObjects,
  loadToolchain,
  startRealOperand,
  waitFor,
  WRITE_VERBS,
  type KubeObj,
} from '@karpenter-operator/testkit';
import {
  applyKarpenterAndCredentials,
  conditionOf,
  EC2NODECLASS,
  installManifests,
  OPERATOR_USER,
  runBench,
  sleep,
  startOperator,
  waitConverged,
  watchPath,
  type OperatorRun,
} from './src/harness.js';
import { sumOf } from './src/prom.js';
import { bucketMinima, linearFit, summarize } from './src/stats.js';

const { values: args } = parseArgs({
  options: {
    'duration-s': { type: 'string', default: '1800' },
    'sample-s': { type: 'string', default: '10' },
    'max-nodes': { type: 'string', default: '6' },
    failovers: { type: 'string', default: '3' },
    'warmup-s': { type: 'string', default: '180' },
    'quiet-s': { type: 'string', default: '30' },
    seed: { type: 'string' },
    'timeout-s': { type: 'string' },
  },
});
const DURATION_MS = Number(args['duration-s']) * 1000;
const SAMPLE_MS = Number(args['sample-s']) * 1000;
const MAX_NODES = Number(args['max-nodes']);
const FAILOVERS = Number(args.failovers);
const WARMUP_MS = Number(args['warmup-s']) * 1000;
const QUIET_MS = Number(args['quiet-s']) * 1000;
const TIMEOUT_MS = Number(args['timeout-s'] ?? DURATION_MS / 1000 + 2400) * 1000;
for (const [k, v] of Object.entries({ DURATION_MS, SAMPLE_MS, MAX_NODES, WARMUP_MS, QUIET_MS }))
  if (!(v > 0)) throw new Error(`soak: ${k} must be positive`);
if (!(FAILOVERS >= 0)) throw new Error('soak: --failovers must be 0 or more');

// A small seeded PRNG (mulberry32): the run's choices can be replayed with --seed.
const SEED = Number(args.seed ?? Math.floor(Math.random() * 2 ** 31));
let rs = SEED >>> 0;
const rand = () => {
  rs = (rs + 0x6d2b79f5) >>> 0;
  let t = rs;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const randInt = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));

const NS = 'bench-soak';
const POOLS = [
  { pool: 'soak-a', nodeClass: 'default', workload: 'a', max: MAX_NODES },
  { pool: 'soak-b', nodeClass: 'soak', workload: 'b', max: Math.max(1, Math.ceil(MAX_NODES / 2)) },
] as const;
const MS = { apiVersion: 'machine.openshift.io/v1beta1', kind: 'MachineSet' } as const;
const MACHINE_API_NS = 'openshift-machine-api';
const TAG = 'bench-soak-cycle';

type Obj = KubeObj & { spec?: Record<string, unknown>; status?: { conditions?: Array<{ type: string; status: string }>; phase?: string } };

interface Sample {
  tS: number;
  op: string;
  leader: boolean;
  rssMiB: number;
  heapUsedMiB: number;
  externalMiB: number;
  fds: number;
  lagP99Ms: number;
  lagMaxMs: number;
  requests: number;
}

interface Replica {
  name: string;
  run: OperatorRun;
  startedMs: number;
  leaderSinceMs?: number;
  endedMs?: number;
}

const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
const MiB = 2 ** 20;

await runBench('soak', { timeoutMs: TIMEOUT_MS }, async (ctx) => {
  const kc = ctx.admin();
  ctx.log(`seed ${SEED}; ${DURATION_MS / 1000} s of churn, ${FAILOVERS} failovers in the first half`);
  await installManifests(ctx);
  await applyKarpenterAndCredentials(ctx);

  // --- the operator replicas -----------------------------------------------------------------------
  const replicas: Replica[] = [];
  let spawned = 0;
  const spawnReplica = async () => {
    const name = `operator-${++spawned}`;
    const run = await startOperator(ctx, {
      name,
      env: {
        OPERATOR_IMAGE: 'quay.io/openshift/origin-karpenter-operator:bench',
        OPERAND_AWS_ENDPOINT_URL_EC2: ctx.cluster.info.ec2Endpoint ?? '',
      },
    });
    const r: Replica = { name, run, startedMs: Date.now() };
    replicas.push(r);
    return r;
  };
  const alive = () => replicas.filter((r) => r.endedMs === undefined && r.run.proc.isRunning());
  /** Whether the replica's log says it leads (it exits when it loses the Lease, so once said it holds). */
  const leads = (r: Replica) => {
    if (r.leaderSinceMs !== undefined) return true;
    try {
      if (readFileSync(r.run.proc.logFile, 'utf8').includes('"became leader"')) r.leaderSinceMs = Date.now();
    } catch {
      // not written yet
    }
    return r.leaderSinceMs !== undefined;
  };
  const leader = () => alive().find(leads);

  const first = await spawnReplica();
  await first.run.waitReady();
  await waitConverged(ctx);
  await waitFor('the first replica to lead', async () => leads(first), { timeoutMs: 60_000, intervalMs: 200 });
  const second = await spawnReplica();
  await second.run.waitReady();

  // --- the real operand, its kubelets, and what the bench watches ------------------------------------
  const dir = join(ctx.logDir, 'karpenter');
  mkdirSync(dir, { recursive: true });
  let machines = 0;
  const operand = startRealOperand({
    cluster: ctx.cluster,
    karpenterBinary: karpenterBinary(loadToolchain(ctx.root)),
    operatorEntry: join(ctx.root, 'apps/operator/dist/main.js'),
    baseDir: dir,
    log: (l) => {
      if (l.startsWith('runner: ')) ctx.log(l);
    },
    kubelets: {
      forgeCsr: () => (++machines % 4 === 0 ? [{ request: { organizations: ['system:nodes', 'system:masters'] } }] : undefined),
    },
  });
  ctx.onCleanup(() => operand.stop());

  const claimsSeen = new Map<string, number>();
  const claimsWatch = await watchPath(kc, '/apis/karpenter.sh/v1/nodeclaims', (type, o) => {
    if (type === 'ADDED' && !claimsSeen.has(o.metadata.name)) claimsSeen.set(o.metadata.name, Date.now());
  });
  ctx.onCleanup(() => claimsWatch.stop());

  const servesItsPool = async (name: string) => {
    const nc = await getObject<Obj>(kc, EC2NODECLASS.apiVersion, EC2NODECLASS.kind, name);
    return conditionOf(nc, 'Ready')?.status === 'True' && String(nc?.spec?.userData ?? '').includes(`/config/karpenter-${name}"`);
  };
  await waitFor('EC2NodeClass default Ready and serving its pool', () => servesItsPool('default'), {
    timeoutMs: 600_000,
    intervalMs: 1000,
  });
  const base = (await getObject<Obj>(kc, EC2NODECLASS.apiVersion, EC2NODECLASS.kind, 'default'))!.spec!;
  const { userData: _ud, ...soakSpec } = base;
  await applyObject(kc, { ...EC2NODECLASS, metadata: { name: 'soak' }, spec: { ...soakSpec, tags: { [TAG]: '0' } } });
  await waitFor('EC2NodeClass soak Ready and serving its pool', () => servesItsPool('soak'), { timeoutMs: 600_000, intervalMs: 1000 });
  await applyObject(kc, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  for (const p of POOLS)
    await applyObject(kc, aNodePool(p.pool, { nodeClass: p.nodeClass, instanceTypes: ['m6i.large', 'm5.large'], limits: { cpu: '1000' } }));
  const scale = (p: (typeof POOLS)[number], replicas: number) =>
    applyObject(kc, aPoolWorkload(p.workload, NS, { pool: p.pool, replicas, cpu: '500m', memory: '512Mi', oneNodeEach: true }));

  // --- sampling -------------------------------------------------------------------------------------
  const t0 = Date.now();
  const samples: Sample[] = [];
  let sampling = true;
  const sampleOnce = async () => {
    for (const r of alive()) {
      const m = await r.run.metrics().catch(() => undefined);
      if (!m) continue;
      let fds = NaN;
      try {
        fds = readdirSync(`/proc/${r.run.proc.pid}/fd`).length;
      } catch {
        // exited between the two reads
      }
      samples.push({
        tS: round((Date.now() - t0) / 1000, 1),
        op: r.name,
        leader: leads(r),
        rssMiB: round((sumOf(m, 'process_resident_memory_bytes') ?? NaN) / MiB),
        heapUsedMiB: round((sumOf(m, 'nodejs_heap_size_used_bytes') ?? NaN) / MiB),
        externalMiB: round((sumOf(m, 'nodejs_external_memory_bytes') ?? NaN) / MiB),
        fds,
        lagP99Ms: round((sumOf(m, 'nodejs_eventloop_lag_p99_seconds') ?? NaN) * 1000),
        lagMaxMs: round((sumOf(m, 'nodejs_eventloop_lag_max_seconds') ?? NaN) * 1000),
        requests: sumOf(m, 'karpenter_operator_api_requests_total') ?? NaN,
      });
    }
  };
  const sampler = (async () => {
    while (sampling) {
      await sampleOnce();
      await sleep(SAMPLE_MS);
    }
  })();
  ctx.onCleanup(async () => {
    sampling = false;
    await sampler;
  });

  // --- leader failovers in the first half ------------------------------------------------------------
  const failovers: Array<{ atS: number; signal: string; killed: string; takeoverS: number; newLeader: string }> = [];
  const failoverLoop = (async () => {
    for (let k = 1; k <= FAILOVERS; k++) {
      const at = t0 + (k * DURATION_MS) / 2 / (FAILOVERS + 1);
      while (Date.now() < at && sampling) await sleep(1000);
      if (!sampling) return;
      const victim = leader();
      if (!victim)
        throw new Error(
          `failover ${k}: no replica leads (${alive()
            .map((r) => r.name)
            .join(', ')} alive)`,
        );
      // Odd failovers SIGKILL the leader (its Lease runs out: takeover within the lease duration), even ones
      // SIGTERM it (it releases the Lease: takeover at once).
      const signal = k % 2 === 1 ? 'SIGKILL' : 'SIGTERM';
      const killedAt = Date.now();
      process.kill(victim.run.proc.pid, signal);
      await victim.run.proc.exited;
      victim.endedMs = Date.now();
      const next = await waitFor(`failover ${k}: a new leader after ${victim.name} was killed`, async () => alive().find(leads), {
        timeoutMs: 300_000,
        intervalMs: 200,
      });
      failovers.push({
        atS: round((killedAt - t0) / 1000, 1),
        signal,
        killed: victim.name,
        takeoverS: round((next.leaderSinceMs! - killedAt) / 1000, 1),
        newLeader: next.name,
      });
      ctx.log(`failover ${k}: killed ${victim.name}, ${next.name} leads after ${failovers.at(-1)!.takeoverS} s`);
      const standby = await spawnReplica();
      await standby.run.waitReady();
    }
  })();
  // A failed failover fails the bench; the churn loop checks it between steps.
  let failoverError: Error | undefined;
  failoverLoop.catch((e: Error) => (failoverError = e));

  // --- the churn -------------------------------------------------------------------------------------
  type EditKind = 'nodeclass' | 'machineset';
  const edits: Array<{ kind: EditKind; cycle: number; sinceMs: number; untilMs: number }> = [];
  const scaleUps: number[] = [];
  const stalls: string[] = [];
  const target: Record<string, number> = { a: 0, b: 0 };

  // Merge patches, not applies: the bench must not take ownership of fields the operator writes (userData).
  const editNodeClass = async (cycle: number) => {
    const r = await kubeRequest(kc, 'PATCH', '/apis/karpenter.k8s.aws/v1/ec2nodeclasses/soak', {
      body: { spec: { tags: { [TAG]: String(cycle) } } },
      contentType: 'application/merge-patch+json',
    });
    if (r.status !== 200) throw new Error(`patching EC2NodeClass soak: HTTP ${r.status}`);
  };
  // The AMIs the MachineSets alternate between: the seeded RHCOS AMI and a copy (Karpenter must resolve both).
  const ec2 = new EC2Client(ctx.cluster.ec2Config());
  const copy = await ec2.send(
    new CopyImageCommand({ SourceImageId: ctx.world.facts.amis.x86_64, SourceRegion: ctx.world.facts.region, Name: 'rhcos-soak-copy' }),
  );
  ec2.destroy();
  const amis = [ctx.world.facts.amis.x86_64, copy.ImageId!];
  let machineSetEdits = 0;
  const editMachineSets = async () => {
    const ami = amis[++machineSetEdits % 2]!;
    for (const name of ctx.world.facts.workerMachineSets) {
      const r = await kubeRequest(kc, 'PATCH', `/apis/${MS.apiVersion}/namespaces/${MACHINE_API_NS}/machinesets/${name}`, {
        body: { spec: { template: { spec: { providerSpec: { value: { ami: { id: ami } } } } } } },
        contentType: 'application/merge-patch+json',
      });
      if (r.status !== 200) throw new Error(`patching MachineSet ${MACHINE_API_NS}/${name}: HTTP ${r.status}`);
    }
  };
  const runningPods = async (workload: string) =>
    (await listObjects<Obj>(kc, 'v1', 'Pod', NS, `app=${workload}`)).filter(
      (p) => p.status?.phase === 'Running' && !p.metadata.deletionTimestamp,
    ).length;

  let cycle = 0;
  while (Date.now() - t0 < DURATION_MS) {
    if (failoverError) throw failoverError;
    cycle++;
    const edit: EditKind | undefined = cycle % 2 === 0 ? (cycle % 4 === 0 ? 'machineset' : 'nodeclass') : undefined;
    if (edit) {
      const sinceMs = Date.now();
      await (edit === 'nodeclass' ? editNodeClass(cycle) : editMachineSets());
      await sleep(QUIET_MS);
      edits.push({ kind: edit, cycle, sinceMs, untilMs: Date.now() });
    }
    for (const p of POOLS) target[p.workload] = randInt(0, p.max);
    const since = Date.now();
    for (const p of POOLS) await scale(p, target[p.workload]!);
    try {
      await waitFor(
        `cycle ${cycle}: pods Running a=${target.a} b=${target.b}`,
        async () => {
          for (const p of POOLS) if ((await runningPods(p.workload)) < target[p.workload]!) return false;
          return true;
        },
        { timeoutMs: 600_000, intervalMs: 1000 },
      );
      scaleUps.push((Date.now() - since) / 1000);
    } catch (e) {
      stalls.push(`cycle ${cycle}: ${(e as Error).message}`);
      ctx.log(`stall: ${stalls.at(-1)}`);
    }
    ctx.log(
      `cycle ${cycle} (${Math.round((Date.now() - t0) / 1000)} s): a=${target.a} b=${target.b}${edit ? `, ${edit} edit` : ''}; ` +
        `${claimsSeen.size} NodeClaims so far, leader ${leader()?.name ?? 'none'}`,
    );
  }
  const churnEndedMs = Date.now();
  await failoverLoop.catch(() => undefined);
  if (failoverError) throw failoverError;

  // --- wind down: both pools to 0, nothing left -----------------------------------------------------
  for (const p of POOLS) await scale(p, 0);
  const leftover = await waitFor(
    'both pools consolidated to no NodeClaims and no instances',
    async () => {
      const claims = (await listObjects<Obj>(kc, 'karpenter.sh/v1', 'NodeClaim')).filter((c) =>
        POOLS.some((p) => c.metadata.labels?.['karpenter.sh/nodepool'] === p.pool),
      );
      const instances = (await Promise.all(POOLS.map((p) => instancesOfPool(ctx.cluster, p.pool)))).flat();
      return claims.length === 0 && instances.length === 0 ? { claims: 0, instances: 0 } : undefined;
    },
    { timeoutMs: 900_000, intervalMs: 5000 },
  ).catch((e: Error) => ({ error: e.message }));
  sampling = false;
  await sampler;

  // --- CSRs ------------------------------------------------------------------------------------------
  type Csr = KubeObj & { spec?: { signerName?: string }; status?: { conditions?: Array<{ type: string; status: string }> } };
  const csrs = await listObjects<Csr>(kc, 'certificates.k8s.io/v1', 'CertificateSigningRequest');
  const approvals = (c: Csr) => (c.status?.conditions ?? []).filter((x) => x.type === 'Approved').length;
  const sims = operand.kubelets.kubelets();
  const forged = new Set(sims.flatMap((k) => k.forgedCsrs));
  const clientCsrs = new Set(sims.map((k) => k.clientCsr).filter((n): n is string => !!n));
  const byName = new Map(csrs.map((c) => [c.metadata.name, c]));
  const forgedApproved = [...forged].filter((n) => approvals(byName.get(n) ?? ({} as Csr)) > 0);
  const approvedTwice = csrs.filter((c) => approvals(c) > 1).map((c) => c.metadata.name);
  const clientApproved = [...clientCsrs].filter((n) => approvals(byName.get(n) ?? ({} as Csr)) === 1).length;

  // --- writes per edit (audit log) -------------------------------------------------------------------
  const audit = ctx.cluster.auditEvents({ user: OPERATOR_USER, stage: 'ResponseComplete', since: new Date(t0) });
  const writes = audit.filter(
    (e) => (WRITE_VERBS as readonly string[]).includes(e.verb) && !['leases', 'events'].includes(e.objectRef?.resource ?? ''),
  );
  const resourceOf = (e: (typeof writes)[number]) =>
    `${e.objectRef?.resource ?? '?'}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`;
  const writesPerEdit = Object.fromEntries(
    (['nodeclass', 'machineset'] as const).map((kind) => {
      const ws = edits.filter((e) => e.kind === kind);
      const inWindow = ws.map((w) =>
        writes.filter((e) => {
          const at = Date.parse(e.requestReceivedTimestamp);
          return at >= w.sinceMs && at < w.untilMs;
        }),
      );
      const ec2nc = inWindow.map((list) => list.filter((e) => e.objectRef?.resource === 'ec2nodeclasses').length);
      const byResource: Record<string, number> = {};
      for (const e of inWindow.flat()) byResource[resourceOf(e)] = (byResource[resourceOf(e)] ?? 0) + 1;
      return [kind, { edits: ws.length, ec2NodeClassWrites: summarize(ec2nc), allWritesInWindowsByResource: byResource }];
    }),
  );
  const writesByResource: Record<string, number> = {};
  for (const e of writes) writesByResource[resourceOf(e)] = (writesByResource[resourceOf(e)] ?? 0) + 1;

  // --- the figures over time -------------------------------------------------------------------------
  const perHour = (slopePerS: number) => round(slopePerS * 3600, 3);
  const terms = replicas
    .filter((r) => r.leaderSinceMs !== undefined)
    .map((r) => {
      const fromS = (r.leaderSinceMs! - t0) / 1000;
      const toS = ((r.endedMs ?? churnEndedMs) - t0) / 1000;
      return { r, fromS, toS, lengthS: toS - Math.max(0, fromS) };
    })
    .sort((a, b) => b.lengthS - a.lengthS);
  const longest = terms[0];
  if (!longest) throw new Error('no replica ever led');
  const warm = samples.filter(
    (s) =>
      s.op === longest.r.name &&
      s.leader &&
      s.tS >= Math.max(longest.fromS, (longest.r.startedMs - t0) / 1000) + WARMUP_MS / 1000 &&
      s.tS <= longest.toS,
  );
  const fitOf = (pick: (s: Sample) => number, pts = warm.map((s) => ({ x: s.tS, y: pick(s) }))) => {
    const f = linearFit(pts.filter((p) => Number.isFinite(p.y)));
    return { perHour: perHour(f.slope), plusMinus: perHour(2 * f.slopeStdErr), r2: round(f.r2, 3), n: f.n };
  };
  const heapFloor = bucketMinima(
    warm.map((s) => ({ x: s.tS, y: s.heapUsedMiB })),
    120,
  );
  const heapFloorFit = linearFit(heapFloor);
  const termFromS = warm[0]?.tS ?? NaN;
  const termToS = warm.at(-1)?.tS ?? NaN;
  const nodesInTerm = [...claimsSeen.values()].filter((at) => (at - t0) / 1000 >= termFromS && (at - t0) / 1000 <= termToS).length;
  // KiB per NodeClaim launched in the term, and what noise alone could make of it (two standard errors).
  const perNode = (slopeMiBPerS: number) => (nodesInTerm > 0 ? (slopeMiBPerS * (termToS - termFromS) * 1024) / nodesInTerm : NaN);
  const heapFloorKiBPerNode = perNode(heapFloorFit.slope);
  const heapFloorKiBPerNodeResolution = 2 * perNode(heapFloorFit.slopeStdErr);
  // A leak of a few KiB per node is a leak: 4 KiB per NodeClaim must be excluded, at two standard errors.
  const LEAK_KIB_PER_NODE = 4;
  const leakExcluded = heapFloorKiBPerNode + heapFloorKiBPerNodeResolution < LEAK_KIB_PER_NODE;
  const leakResolvable = heapFloorKiBPerNodeResolution < LEAK_KIB_PER_NODE;

  // The leader's request rate per 5 minutes (its own counter; a new leader starts from its own count).
  const rate: Array<{ fromS: number; op: string; requestsPerS: number }> = [];
  for (const t of terms) {
    const own = samples.filter((s) => s.op === t.r.name && s.leader).sort((a, b) => a.tS - b.tS);
    for (let i = 0; i < own.length;) {
      let j = i;
      while (j + 1 < own.length && own[j + 1]!.tS - own[i]!.tS <= 300) j++;
      if (j > i)
        rate.push({
          fromS: own[i]!.tS,
          op: t.r.name,
          requestsPerS: round((own[j]!.requests - own[i]!.requests) / (own[j]!.tS - own[i]!.tS), 3),
        });
      i = j + 1;
    }
  }
  rate.sort((a, b) => a.fromS - b.fromS);
  // One sample a minute of the leader of the longest term, for the curve.
  const curve = samples
    .filter((s) => s.op === longest.r.name)
    .filter((s, i, all) => i === 0 || Math.floor(s.tS / 60) !== Math.floor(all[i - 1]!.tS / 60))
    .map(({ op: _op, ...s }) => s);
  const leaderSamples = samples.filter((s) => s.leader);
  const crashes = operand.runner.crashes();

  const rssFit = fitOf((s) => s.rssMiB);
  const heapFit = fitOf((s) => s.heapUsedMiB);
  const result = {
    seed: SEED,
    // `durationS` is the harness's: the whole run, cluster start and wind-down included.
    churnS: Math.round((churnEndedMs - t0) / 1000),
    cycles: cycle,
    nodeClaimsLaunched: claimsSeen.size,
    scaleUpToAllRunningS: summarize(scaleUps),
    stalls,
    failovers,
    replicas: replicas.map((r) => ({
      name: r.name,
      startedS: round((r.startedMs - t0) / 1000, 1),
      ledFromS: r.leaderSinceMs === undefined ? null : round((r.leaderSinceMs - t0) / 1000, 1),
      endedS: r.endedMs === undefined ? null : round((r.endedMs - t0) / 1000, 1),
    })),
    longestLeaderTerm: {
      op: longest.r.name,
      measuredFromS: termFromS,
      measuredToS: termToS,
      samples: warm.length,
      nodeClaimsLaunched: nodesInTerm,
      rssMiBPerHour: rssFit,
      heapUsedMiBPerHour: heapFit,
      heapFloorMiBPerHour: {
        perHour: perHour(heapFloorFit.slope),
        plusMinus: perHour(2 * heapFloorFit.slopeStdErr),
        r2: round(heapFloorFit.r2, 3),
        buckets: heapFloor.length,
      },
      heapFloorGrowthKiBPerNodeClaim: { value: round(heapFloorKiBPerNode), plusMinus: round(heapFloorKiBPerNodeResolution) },
      externalMiBPerHour: fitOf((s) => s.externalMiB),
      fdsPerHour: fitOf((s) => s.fds),
      rssMiB: summarize(warm.map((s) => s.rssMiB)),
      heapUsedMiB: summarize(warm.map((s) => s.heapUsedMiB)),
      fds: summarize(warm.map((s) => s.fds)),
    },
    leaderEventLoopLagMs: {
      p99OfSamples: summarize(leaderSamples.map((s) => s.lagP99Ms)),
      maxOfSamples: summarize(leaderSamples.map((s) => s.lagMaxMs)),
    },
    leaderRequestsPerS: { perFiveMinutes: rate, summary: summarize(rate.map((r) => r.requestsPerS)) },
    writesPerEdit,
    operatorWritesByResource: writesByResource,
    csrs: {
      clientCsrs: clientCsrs.size,
      clientApprovedOnce: clientApproved,
      approvedMoreThanOnce: approvedTwice,
      forgedSubmitted: forged.size,
      forgedApproved,
    },
    windDown: leftover,
    operandCrashes: crashes.length,
    targets: {
      // The heap floor's growth per NodeClaim plus two standard errors below 4 KiB; null when the run is too
      // short (or has too few nodes) to resolve 4 KiB per node at all.
      noLeakOf4KiBPerNodeClaim: leakResolvable ? leakExcluded : null,
      noForgedApproved: forgedApproved.length === 0,
      noCsrApprovedTwice: approvedTwice.length === 0,
      everyClientCsrApproved: clientApproved === clientCsrs.size,
      nothingLeft: 'claims' in leftover,
      noStalls: stalls.length === 0,
    },
    curve,
    notes: [
      'Slopes are least-squares fits over the longest leader term after the warm-up; the heap floor is the lowest sample of each 2-minute bucket.',
      'Requests per second are the leader replica’s own karpenter_operator_api_requests_total, over 5-minute windows.',
      'Writes per edit: the operator’s writes (audit log, leases and events apart) in the quiet window after each edit; node churn of earlier cycles (CSR approvals) may fall in it.',
    ],
  };
  return result;
});
