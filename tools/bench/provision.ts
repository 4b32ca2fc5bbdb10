// provision: N pending pods needing separate nodes → all Running, with the real Karpenter; p50/p99 pod pending → node Ready and the operator's share (target < 10%)
//
// The operator converges, the real karpenter-provider-aws controller runs its Deployment (testkit runner),
// simulated kubelets bootstrap every launched instance through the CSR flow the operator approves. For each
// N (default 1, 10): a Deployment of N pods that each need a node of their own (required hostname
// anti-affinity) is created; every pod's pending → Running time is measured, and per node the breakdown:
// Karpenter (pod created → NodeClaim Launched), the machine (Launched → client CSR submitted; simulated,
// near 0 here, minutes on EC2), CSR approval (client CSR created → approved: the operator's share, with
// the serving CSR), registration (certificate → NodeClaim Registered, Karpenter) and readiness
// (Registered → Node Ready; negative here: KWOK marks a Node Ready as soon as it exists, before Karpenter
// registers it). Times are when the bench's watches first saw each step (condition timestamps have
// one-second resolution). The workload is scaled to 0 and the nodes consolidated between sizes.
//
//   npm run bench -- provision [--sizes 1,10] [--timeout-s 1500]
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  aNodePool,
  aPoolWorkload,
  applyObject,
  getObject,
  karpenterBinary,
  listObjects,
  loadToolchain,
  startRealOperand,
  waitFor,
  type KubeObj,
} from '@karpenter-operator/testkit';
import {
  applyKarpenterAndCredentials,
  EC2NODECLASS,
  installManifests,
  runBench,
  startOperator,
  waitConverged,
  watchPath,
} from './src/harness.js';
import { summarize } from './src/stats.js';

const { values: args } = parseArgs({
  options: {
    sizes: { type: 'string', default: '1,10' },
    'timeout-s': { type: 'string', default: '1500' },
  },
});
const SIZES = args.sizes.split(',').map(Number);
const POOL = 'bench';
const NS = 'bench-provision';

interface Cond {
  type: string;
  status: string;
  lastTransitionTime?: string;
}
type Obj = KubeObj & {
  status?: { conditions?: Cond[]; nodeName?: string; phase?: string; providerID?: string };
  spec?: { nodeName?: string };
};
type Csr = KubeObj & { status?: { conditions?: Cond[] } };

const condOf = (o: { status?: { conditions?: Cond[] } } | undefined, type: string) =>
  o?.status?.conditions?.find((c) => c.type === type && c.status === 'True');

/**
 * When the bench's watches first saw each thing happen, in epoch ms (condition timestamps have one-second
 * resolution, too coarse for steps that take a fraction of one): `<kind>/<name>/<event>`.
 */
const seen = new Map<string, number>();
const mark = (key: string) => {
  if (!seen.has(key)) seen.set(key, Date.now());
};
const when = (key: string) => seen.get(key) ?? NaN;

await runBench('provision', { timeoutMs: Number(args['timeout-s']) * 1000 }, async (ctx) => {
  const kc = ctx.admin();
  const binary = karpenterBinary(loadToolchain(ctx.root));
  await installManifests(ctx);
  await applyKarpenterAndCredentials(ctx);
  const op = await startOperator(ctx, {
    name: 'operator',
    env: {
      OPERATOR_IMAGE: 'quay.io/openshift/origin-karpenter-operator:bench',
      OPERAND_AWS_ENDPOINT_URL_EC2: ctx.cluster.info.ec2Endpoint ?? '',
    },
  });
  await op.waitReady();
  await waitConverged(ctx);
  const dir = join(ctx.logDir, 'karpenter');
  mkdirSync(dir, { recursive: true });
  const operand = startRealOperand({
    cluster: ctx.cluster,
    karpenterBinary: binary,
    operatorEntry: join(ctx.root, 'apps/operator/dist/main.js'),
    baseDir: dir,
    // The operand's process lines only: a line per kubelet step would be the bench's own load.
    log: (l) => {
      if (l.startsWith('runner: ')) ctx.log(l);
    },
  });
  ctx.onCleanup(() => operand.stop());
  const { runner, kubelets } = operand;

  const watches = await Promise.all([
    watchPath(kc, `/api/v1/namespaces/${NS}/pods`, (type, o: Obj) => {
      mark(`pod/${o.metadata.name}/created`);
      if (o.status?.phase === 'Running') mark(`pod/${o.metadata.name}/running`);
    }),
    watchPath(kc, '/apis/karpenter.sh/v1/nodeclaims', (type, o: Obj) => {
      for (const t of ['Launched', 'Registered', 'Initialized']) if (condOf(o, t)) mark(`nodeclaim/${o.metadata.name}/${t}`);
    }),
    watchPath(kc, '/api/v1/nodes', (type, o: Obj) => {
      mark(`node/${o.metadata.name}/created`);
      if (condOf(o, 'Ready')) mark(`node/${o.metadata.name}/Ready`);
    }),
    watchPath(kc, '/apis/certificates.k8s.io/v1/certificatesigningrequests', (type, o: Csr) => {
      mark(`csr/${o.metadata.name}/created`);
      if (condOf(o, 'Approved')) mark(`csr/${o.metadata.name}/Approved`);
    }),
  ]);
  ctx.onCleanup(() => watches.forEach((w) => w.stop()));
  const t0 = Date.now();
  await waitFor(
    'EC2NodeClass default Ready with userData at its pool',
    async () => {
      const nc = await getObject<Obj & { spec?: { userData?: string } }>(kc, EC2NODECLASS.apiVersion, EC2NODECLASS.kind, 'default');
      return condOf(nc, 'Ready') !== undefined && (nc?.spec?.userData ?? '').includes('/config/karpenter-default"');
    },
    { timeoutMs: 600_000, intervalMs: 1000 },
  );
  const karpenterReadyS = (Date.now() - t0) / 1000;
  ctx.log(`Karpenter up and NodeClass Ready in ${karpenterReadyS.toFixed(1)} s`);
  await applyObject(kc, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  await applyObject(kc, aNodePool(POOL, { instanceTypes: ['m6i.large', 'm5.large'], limits: { cpu: '1000' } }));

  const workload = (replicas: number) =>
    applyObject(kc, aPoolWorkload('spread', NS, { pool: POOL, replicas, cpu: '500m', memory: '512Mi', oneNodeEach: true }));

  const runs: Record<string, unknown>[] = [];
  for (const n of SIZES) {
    const since = Date.now();
    await workload(n);
    const pods = await waitFor(
      `${n} pods Running`,
      async () => {
        const ps = await listObjects<Obj>(kc, 'v1', 'Pod', NS, 'app=spread');
        const running = ps.filter((p) => p.status?.phase === 'Running' && !p.metadata.deletionTimestamp);
        return running.length >= n ? running : undefined;
      },
      { timeoutMs: 300_000 + n * 30_000, intervalMs: 500 },
    );
    const wall = (Date.now() - since) / 1000;
    const claims = (await listObjects<Obj>(kc, 'karpenter.sh/v1', 'NodeClaim')).filter(
      (c) => c.metadata.labels?.['karpenter.sh/nodepool'] === POOL,
    );
    const sims = kubelets.kubelets();
    const firstPod = Math.min(...pods.map((p) => when(`pod/${p.metadata.name}/created`)));
    const podToNodeReady = pods.map((p) => (when(`node/${p.spec?.nodeName}/Ready`) - when(`pod/${p.metadata.name}/created`)) / 1000);
    const podToRunning = pods.map((p) => (when(`pod/${p.metadata.name}/running`) - when(`pod/${p.metadata.name}/created`)) / 1000);
    const breakdown = {
      karpenterLaunch: [] as number[],
      machine: [] as number[],
      csrApproval: [] as number[],
      registration: [] as number[],
      readiness: [] as number[],
      operatorShare: [] as number[],
    };
    for (const c of claims) {
      const sim = sims.find((k) => k.nodeClaim === c.metadata.name);
      const launched = when(`nodeclaim/${c.metadata.name}/Launched`);
      const clientCreated = when(`csr/${sim?.clientCsr}/created`);
      const clientApproved = when(`csr/${sim?.clientCsr}/Approved`);
      const registered = when(`nodeclaim/${c.metadata.name}/Registered`);
      const ready = when(`node/${c.status?.nodeName}/Ready`);
      // The serving CSR is approved after the node is Ready-able; only the client CSR is on the critical path.
      breakdown.karpenterLaunch.push((launched - firstPod) / 1000);
      breakdown.machine.push((clientCreated - launched) / 1000);
      breakdown.csrApproval.push((clientApproved - clientCreated) / 1000);
      breakdown.registration.push((registered - clientApproved) / 1000);
      breakdown.readiness.push((ready - registered) / 1000);
      breakdown.operatorShare.push((clientApproved - clientCreated) / (ready - firstPod));
    }
    const share = summarize(breakdown.operatorShare.map((v) => v * 100));
    runs.push({
      pods: n,
      nodes: claims.length,
      wallS: Math.round(wall * 10) / 10,
      podPendingToNodeReadyS: summarize(podToNodeReady),
      podPendingToRunningS: summarize(podToRunning),
      breakdownS: Object.fromEntries(
        Object.entries(breakdown)
          .filter(([k]) => k !== 'operatorShare')
          .map(([k, v]) => [k, summarize(v)]),
      ),
      operatorSharePercent: share,
      targetOperatorShareUnder10Percent: share.max < 10,
    });
    ctx.log(`N=${n}: ${JSON.stringify(runs.at(-1))}`);

    await workload(0);
    await waitFor(
      'the pool consolidated to no nodes',
      async () =>
        (await listObjects<Obj>(kc, 'karpenter.sh/v1', 'NodeClaim')).every((c) => c.metadata.labels?.['karpenter.sh/nodepool'] !== POOL),
      {
        timeoutMs: 600_000,
        intervalMs: 2000,
      },
    );
  }
  const crashes = runner.crashes();
  return { karpenterReadyS, runs, operandCrashes: crashes.length, karpenterProcesses: runner.replicas().length, ok: crashes.length === 0 };
});
