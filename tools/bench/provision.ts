// provision: N pending pods needing separate nodes → all Running, with the real Karpenter; p50/p99 pod pending → node Ready and the operator's share (target < 10%)
//
// The operator converges, the real karpenter-provider-aws controller runs its Deployment (testkit runner),
// simulated kubelets bootstrap every launched instance through the CSR flow the operator approves. For each
// N (default 1, 10): a Deployment of N pods that each need a node of their own (required hostname
// anti-affinity) is created; every pod's pending → Running time is measured, and per node the breakdown:
// Karpenter (pod created → NodeClaim Launched), the machine (Launched → client CSR submitted; simulated,
// near 0 here, minutes on EC2), CSR approval (client CSR created → approved: the operator's share, with
// the serving CSR), registration (certificate → NodeClaim Registered, Karpenter) and readiness
// (Registered → Node Ready). The workload is scaled to 0 and the nodes consolidated between sizes.
//
//   npm run bench -- provision [--sizes 1,10] [--timeout-s 1500]
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  applyObject,
  getObject,
  karpenterBinary,
  listObjects,
  loadToolchain,
  startKarpenterRunner,
  startKubeletSimulator,
  startMachineConfigRenderer,
  waitFor,
  type KubeObj,
} from '@karpenter-operator/testkit';
import { applyKarpenterAndCredentials, EC2NODECLASS, installManifests, runBench, startOperator, waitConverged } from './src/harness.js';
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
type Obj = KubeObj & { status?: { conditions?: Cond[]; nodeName?: string; phase?: string; providerID?: string }; spec?: { nodeName?: string } };
type Csr = KubeObj & { spec: { username: string }; status?: { conditions?: Cond[] } };

const at = (c: Cond | undefined) => (c?.lastTransitionTime ? Date.parse(c.lastTransitionTime) : NaN);
const condOf = (o: { status?: { conditions?: Cond[] } } | undefined, type: string) => o?.status?.conditions?.find((c) => c.type === type && c.status === 'True');
const created = (o: KubeObj) => Date.parse(String(o.metadata.creationTimestamp));

await runBench('provision', { timeoutMs: Number(args['timeout-s']) * 1000 }, async (ctx) => {
  const kc = ctx.admin();
  const binary = karpenterBinary(loadToolchain(ctx.root));
  await installManifests(ctx);
  await applyKarpenterAndCredentials(ctx);
  const op = await startOperator(ctx, {
    name: 'operator',
    env: { OPERATOR_IMAGE: 'quay.io/openshift/origin-karpenter-operator:bench', OPERAND_AWS_ENDPOINT_URL_EC2: ctx.cluster.info.ec2Endpoint ?? '' },
  });
  await op.waitReady();
  await waitConverged(ctx);
  const stopRenderer = startMachineConfigRenderer(ctx.cluster);
  ctx.onCleanup(stopRenderer);
  const dir = join(ctx.logDir, 'karpenter');
  mkdirSync(dir, { recursive: true });
  const runner = startKarpenterRunner({ cluster: ctx.cluster, karpenterBinary: binary, operatorEntry: join(ctx.root, 'apps/operator/dist/main.js'), baseDir: dir, log: (l) => ctx.log(`runner: ${l}`) });
  ctx.onCleanup(() => runner.stop());
  const kubelets = startKubeletSimulator({ cluster: ctx.cluster });
  ctx.onCleanup(() => kubelets.stop());

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
  await applyObject(kc, {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name: POOL },
    spec: {
      template: {
        spec: {
          nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
          requirements: [
            { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
            { key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['m6i.large', 'm5.large'] },
          ],
        },
      },
      disruption: { consolidationPolicy: 'WhenEmptyOrUnderutilized', consolidateAfter: '5s' },
      limits: { cpu: '1000' },
    },
  });

  const workload = (replicas: number) =>
    applyObject(kc, {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'spread', namespace: NS },
      spec: {
        replicas,
        selector: { matchLabels: { app: 'spread' } },
        template: {
          metadata: { labels: { app: 'spread' } },
          spec: {
            nodeSelector: { 'karpenter.sh/nodepool': POOL },
            affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { app: 'spread' } } }] } },
            terminationGracePeriodSeconds: 0,
            containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10', resources: { requests: { cpu: '500m', memory: '512Mi' } } }],
          },
        },
      },
    });

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
    const claims = (await listObjects<Obj>(kc, 'karpenter.sh/v1', 'NodeClaim')).filter((c) => c.metadata.labels?.['karpenter.sh/nodepool'] === POOL);
    const nodes = await listObjects<Obj>(kc, 'v1', 'Node', undefined, `karpenter.sh/nodepool=${POOL}`);
    const csrs = await listObjects<Csr>(kc, 'certificates.k8s.io/v1', 'CertificateSigningRequest');
    const csrByName = new Map(csrs.map((c) => [c.metadata.name, c]));
    const sims = kubelets.kubelets();

    const podToNodeReady: number[] = [];
    for (const p of pods) {
      const node = nodes.find((x) => x.metadata.name === p.spec?.nodeName);
      podToNodeReady.push((at(condOf(node, 'Ready')) - created(p)) / 1000);
    }
    const breakdown = { karpenterLaunch: [] as number[], machine: [] as number[], csrApproval: [] as number[], registration: [] as number[], readiness: [] as number[], operatorShare: [] as number[] };
    for (const c of claims) {
      const sim = sims.find((k) => k.nodeClaim === c.metadata.name);
      const client = sim?.clientCsr ? csrByName.get(sim.clientCsr) : undefined;
      const serving = sim?.servingCsr ? csrByName.get(sim.servingCsr) : undefined;
      const node = nodes.find((x) => x.metadata.name === c.status?.nodeName);
      const firstPod = Math.min(...pods.map(created));
      const launched = at(condOf(c, 'Launched'));
      const clientApproved = at(condOf(client, 'Approved'));
      const servingApproved = at(condOf(serving, 'Approved'));
      const registered = at(condOf(c, 'Registered'));
      const ready = at(condOf(node, 'Ready'));
      const operator = clientApproved - created(client!) + (servingApproved - created(serving!));
      breakdown.karpenterLaunch.push((launched - firstPod) / 1000);
      breakdown.machine.push((created(client!) - launched) / 1000);
      breakdown.csrApproval.push((clientApproved - created(client!)) / 1000);
      breakdown.registration.push((registered - clientApproved) / 1000);
      breakdown.readiness.push((ready - registered) / 1000);
      breakdown.operatorShare.push(operator / (ready - firstPod));
    }
    const share = summarize(breakdown.operatorShare.map((v) => v * 100));
    runs.push({
      pods: n,
      nodes: claims.length,
      wallS: Math.round(wall * 10) / 10,
      podPendingToNodeReadyS: summarize(podToNodeReady),
      breakdownS: Object.fromEntries(Object.entries(breakdown).filter(([k]) => k !== 'operatorShare').map(([k, v]) => [k, summarize(v)])),
      operatorSharePercent: share,
      targetOperatorShareUnder10Percent: share.max < 10,
      // Kubernetes condition timestamps have one-second resolution: sub-second steps read as 0 or 1.
      resolutionS: 1,
    });
    ctx.log(`N=${n}: ${JSON.stringify(runs.at(-1))}`);

    await workload(0);
    await waitFor('the pool consolidated to no nodes', async () => (await listObjects<Obj>(kc, 'karpenter.sh/v1', 'NodeClaim')).every((c) => c.metadata.labels?.['karpenter.sh/nodepool'] !== POOL), {
      timeoutMs: 600_000,
      intervalMs: 2000,
    });
  }
  const crashes = runner.crashes();
  return { karpenterReadyS, runs, operandCrashes: crashes.length, karpenterProcesses: runner.replicas().length, ok: crashes.length === 0 };
});
