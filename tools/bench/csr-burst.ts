// csr-burst: N NodeClaims with instances in the EC2 emulator, N kubelet client CSRs submitted at once by
// the node-bootstrapper ServiceAccount, approved by the operator's node-identity use-case (real informers,
// work queue, cluster store and AWS provider) on the local cluster. The floor is a no-checks approver run
// in the same process, against the same cluster, through the same runtime, on N other CSRs.
//
// The CSRs are submitted from a child process, as kubelets on other machines would: their TLS handshakes
// are not the approver's event loop's work.
//
// Prints one JSON document: time to approve all, p50/p99 latency from creation to approval (as seen by
// an informer), DescribeInstances calls (port calls and EC2 requests), and where the latency went (`phases`:
// created → seen by the informer → the deciding DescribeInstances call sent → answered → approved), for
// both runs.
//
//   node tools/cluster/bundle.mjs tools/bench/csr-burst.ts .local/bench/csr-burst.mjs
//   node .local/bench/csr-burst.mjs [--n 1000] [--workers 16] [--submit-concurrency 64]
import 'reflect-metadata';
import { spawn } from 'node:child_process';
import { webcrypto } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { CreateSubnetCommand, EC2Client, RunInstancesCommand, type Instance, type _InstanceType } from '@aws-sdk/client-ec2';
import { KubeConfig } from '@kubernetes/client-node';
import { Pkcs10CertificateRequestGenerator } from '@peculiar/x509';
import {
  Names,
  Types,
  noopMetrics,
  silentLogger,
  systemClock,
  type CloudProvider,
  type ClusterFacts,
  type ClusterStore,
  type EventRecorder,
  type KubeObject,
  type Reconciler,
} from '@karpenter-operator/core';
import { AwsCloudProvider, createEc2Client } from '@karpenter-operator/provider-aws';
import {
  applyObject,
  applyStatus,
  crdFiles,
  installCrds,
  kubeRequest,
  listObjects,
  startOpenShiftAwsCluster,
  type ClusterHandle,
} from '@karpenter-operator/testkit';
import { KubeletClientSigner, csrState } from '../../packages/core/src/policy/csr.js';
import { NodeIdentityReconciler } from '../../packages/core/src/use-cases/node-identity/node-identity.js';
import {
  ControllerRuntime,
  createKubeTransport,
  InformerFactory,
  KubeClusterStore,
  ResourceResolver,
} from '@karpenter-operator/kube-runtime';
import { pendingSweep, pool, quantile } from './src/stats.js';

const { values: args } = parseArgs({
  options: {
    n: { type: 'string', default: '1000' },
    workers: { type: 'string', default: '16' },
    'submit-concurrency': { type: 'string', default: '64' },
    'timeout-s': { type: 'string', default: '900' },
    /** Internal: run as the CSR submitter child process (see `submitElsewhere`). */
    submitter: { type: 'boolean', default: false },
  },
});
const N = Number(args.n);
const WORKERS = Number(args.workers);
const SUBMIT_CONCURRENCY = Number(args['submit-concurrency']);
const TIMEOUT_MS = Number(args['timeout-s']) * 1000;
const log = (line: string) => console.error(`csr-burst: ${line}`);

interface RunResult {
  approved: number;
  expected: number;
  /** First create sent → last approval observed. */
  totalMs: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  describeInstancesPortCalls: number;
  describeInstancesEc2Requests: number;
  /** Duration of each DescribeInstances port call (ms), in order. */
  describeInstancesCallMs: number[];
  /** CSRs left pending, with the last decision the approver recorded for each. */
  notApproved: Array<{ name: string; lastDecision?: string }>;
  /** Where each CSR's latency went (see `breakdown`). */
  phases: Record<string, PhaseFigures>;
  /**
   * The most CSRs of the burst pending at once (created, approval not yet seen): what cluster-machine-approver
   * counts toward its cap of `max(machines, nodes) + 100` pending CSRs, above which it approves nothing.
   */
  peakPending: number;
  /** How long more than `MACHINE_APPROVER_CAP` of them were pending: cluster-machine-approver approved nothing then. */
  msAboveMachineApproverCap: number;
}

/**
 * cluster-machine-approver's cap on a cluster of three control-plane and three worker Machines:
 * `max(machines, nodes) + 100`. The burst's own nodes raise it once they register; not counted here.
 */
const MACHINE_APPROVER_CAP = 6 + 100;

/** One phase of a CSR's latency over all approved CSRs, and its mean among the slowest 1%. */
interface PhaseFigures {
  p50Ms: number;
  p99Ms: number;
  slowestMeanMs: number;
}

/**
 * Splits each approved CSR's latency into consecutive phases (each an array of timestamps per CSR, the
 * first one its creation, the last its approval seen) and reports every phase's p50/p99 and its mean among
 * the CSRs whose whole latency is at or above the p99: what the slowest CSRs waited for.
 */
function breakdown(names: string[], marks: Record<string, Map<string, number>>, order: string[]): Record<string, PhaseFigures> {
  const rows = names.flatMap((n) => {
    const ts = order.map((m) => marks[m]!.get(n));
    return ts.every((t) => t !== undefined) ? [ts as number[]] : [];
  });
  const total = rows.map((ts) => ts[ts.length - 1]! - ts[0]!).sort((a, b) => a - b);
  const cut = quantile(total, 0.99);
  const slow = rows.filter((ts) => ts[ts.length - 1]! - ts[0]! >= cut);
  const out: Record<string, PhaseFigures> = {};
  for (let i = 1; i < order.length; i++) {
    const d = rows.map((ts) => ts[i]! - ts[i - 1]!).sort((a, b) => a - b);
    const slowMean = slow.reduce((sum, ts) => sum + ts[i]! - ts[i - 1]!, 0) / Math.max(1, slow.length);
    out[`${order[i - 1]}→${order[i]}`] = {
      p50Ms: Math.round(quantile(d, 0.5)),
      p99Ms: Math.round(quantile(d, 0.99)),
      slowestMeanMs: Math.round(slowMean),
    };
  }
  return out;
}

/**
 * The kubelets' side: submits `csrs` from a child process (kubelets are other machines; their TLS
 * handshakes and request encoding are not the operator's event loop's work), `SUBMIT_CONCURRENCY` at a
 * time. Returns when each create request started, on this process's `performance.now()` clock.
 */
async function submitElsewhere(kubeconfig: string, csrs: KubeObject[]): Promise<Map<string, number>> {
  const child = spawn(process.execPath, [process.argv[1]!, '--submitter'], { stdio: ['pipe', 'pipe', 'inherit'] });
  child.stdin.end(JSON.stringify({ kubeconfig, csrs, concurrency: SUBMIT_CONCURRENCY }));
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  if (code !== 0) throw new Error(`the CSR submitter exited with ${code}: ${out.slice(-2000)}`);
  const started = JSON.parse(out) as Record<string, number>;
  // Both clocks count from their process's time origin (epoch ms): one timeline.
  return new Map(Object.entries(started).map(([name, epochMs]) => [name, epochMs - performance.timeOrigin]));
}

/** The child process of `submitElsewhere`: reads its work on stdin, prints when each create started. */
async function submitter(): Promise<void> {
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  const { kubeconfig, csrs, concurrency } = JSON.parse(input) as { kubeconfig: string; csrs: KubeObject[]; concurrency: number };
  const kc = new KubeConfig();
  kc.loadFromString(kubeconfig);
  const started: Record<string, number> = {};
  await pool(csrs, concurrency, async (csr) => {
    started[csr.metadata.name] = performance.timeOrigin + performance.now();
    const res = await kubeRequest(kc, 'POST', '/apis/certificates.k8s.io/v1/certificatesigningrequests', { body: csr });
    if (res.status !== 201) throw new Error(`creating CSR ${csr.metadata.name}: HTTP ${res.status}: ${res.text}`);
  });
  process.stdout.write(JSON.stringify(started));
}

async function main(): Promise<void> {
  process.env.AWS_ACCESS_KEY_ID ??= 'testing';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'testing';
  log(`starting the local cluster (N=${N}, workers=${WORKERS})`);
  const { cluster, world } = await startOpenShiftAwsCluster({ log: (l) => log(l) });
  try {
    const out = await bench(cluster, world.facts, world.ec2!);
    console.log(JSON.stringify(out, null, 2));
  } finally {
    await cluster.stop();
  }
}

async function bench(
  cluster: ClusterHandle,
  f: Awaited<ReturnType<typeof startOpenShiftAwsCluster>>['world']['facts'],
  ec2World: NonNullable<Awaited<ReturnType<typeof startOpenShiftAwsCluster>>['world']['ec2']>,
) {
  const admin = cluster.kubeConfig();
  await installCrds(admin, crdFiles(cluster.info.crdDir, 'karpenter'));

  // Karpenter's side, run while the operator is up (as in a cluster): launch and create NodeClaims.
  const launchWorld = async (): Promise<Instance[]> => {
    // --- N instances in the emulator, N NodeClaims pointing at them. Their own subnet: moto hands out
    // addresses in order, and the seeded private subnets hold the simulated MachineSet nodes, whose names an
    // instance there could take (the operator rightly refuses a CSR for an existing Node's name).
    const zone = f.zones[0]!;
    const ec2 = new EC2Client(cluster.ec2Config());
    const subnet = await ec2.send(
      new CreateSubnetCommand({
        VpcId: ec2World.vpcId,
        CidrBlock: '10.0.64.0/20',
        AvailabilityZone: zone,
        TagSpecifications: [
          {
            ResourceType: 'subnet',
            Tags: [
              { Key: 'Name', Value: `${f.infraId}-bench-${zone}` },
              { Key: f.clusterTagKey, Value: 'owned' },
            ],
          },
        ],
      }),
    );
    const instances: Instance[] = [];
    let t = performance.now();
    for (let left = N; left > 0; left -= Math.min(left, 250)) {
      const count = Math.min(left, 250);
      const r = await ec2.send(
        new RunInstancesCommand({
          ImageId: f.amis.x86_64,
          InstanceType: f.workerInstanceType as _InstanceType,
          MinCount: count,
          MaxCount: count,
          SubnetId: subnet.Subnet!.SubnetId!,
          TagSpecifications: [
            {
              ResourceType: 'instance',
              Tags: [
                { Key: f.clusterTagKey, Value: 'owned' },
                { Key: 'karpenter.sh/nodepool', Value: 'default' },
              ],
            },
          ],
        }),
      );
      instances.push(...(r.Instances ?? []));
    }
    ec2.destroy();
    log(`launched ${instances.length} instances in ${((performance.now() - t) / 1000).toFixed(1)}s`);
    const nodeNames = new Set((await listObjects(admin, 'v1', 'Node')).map((n) => n.metadata.name));
    const dnsNames = new Set(instances.map((i) => i.PrivateDnsName));
    const clash = instances.filter((i) => nodeNames.has(i.PrivateDnsName!));
    if (clash.length || dnsNames.size !== instances.length) {
      throw new Error(
        `bench world is inconsistent: ${clash.length} instance(s) named like existing Nodes, ${instances.length - dnsNames.size} duplicate DNS names`,
      );
    }

    t = performance.now();
    const claims = instances.map((inst, i) => ({
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: { name: `default-${i.toString().padStart(5, '0')}`, labels: { [Names.nodePoolLabel]: 'default' } },
      spec: {
        nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
        requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }],
      },
      status: { providerID: `aws:///${zone}/${inst.InstanceId}` },
    }));
    await pool(claims, 32, async (nc) => {
      await applyObject(admin, nc);
      await applyStatus(admin, nc);
    });
    log(`created ${claims.length} NodeClaims in ${((performance.now() - t) / 1000).toFixed(1)}s`);
    return instances;
  };

  // --- CSRs, generated before any clock starts
  const keys = (await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, [
    'sign',
    'verify',
  ])) as webcrypto.CryptoKeyPair;
  const csrFor = async (name: string, nodeName: string) => {
    const req = await Pkcs10CertificateRequestGenerator.create({
      name: `CN=system:node:${nodeName}, O=system:nodes`,
      keys,
      signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' } as webcrypto.EcdsaParams,
    });
    return {
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'CertificateSigningRequest',
      metadata: { name },
      spec: {
        request: Buffer.from(req.toString('pem')).toString('base64'),
        signerName: KubeletClientSigner,
        usages: ['digital signature', 'client auth'],
      },
    };
  };
  const floorCsrs = await Promise.all(Array.from({ length: N }, (_, i) => csrFor(`floor-${i}`, `floor-node-${i}.ec2.internal`)));
  const bootstrapper = await cluster.kubeConfigFor(Names.mcoNamespace, 'node-bootstrapper', { expirationSeconds: 7200 });

  const facts: ClusterFacts = {
    platform: 'AWS',
    region: f.region,
    infrastructureName: f.infraId,
    apiServerInternalURL: f.apiServerInternalURI,
    resourceTags: f.resourceTags,
  };

  // The last decision per CSR (the events the approver records), to explain any CSR left pending.
  const lastDecision = new Map<string, string>();
  const events: EventRecorder = { record: (ref, _type, reason, message) => void lastDecision.set(ref.name, `${reason}: ${message}`) };

  type Csr = (typeof floorCsrs)[number];
  const run = async (label: string, make: (env: RunEnv) => Reconciler, prepare: (env: RunEnv) => Promise<Csr[]>): Promise<RunResult> => {
    const env = wire();
    lastDecision.clear();
    const reconciler = make(env);
    const runtime = new ControllerRuntime({
      reconcilers: [reconciler],
      caches: env.informers,
      concurrency: WORKERS,
      resyncIntervalMs: 3_600_000,
    });
    await runtime.start();
    const csrs = await prepare(env);
    const names = new Set(csrs.map((c) => c.metadata.name));
    const created = new Map<string, number>();
    const seenAt = new Map<string, number>();
    const approvedAt = new Map<string, number>();
    let resolveDone!: () => void;
    const done = new Promise<void>((r) => (resolveDone = r));
    env.informers.informerFor({ type: Types.CertificateSigningRequest }).addHandler((obj) => {
      const name = obj.metadata.name;
      if (names.has(name) && !seenAt.has(name)) seenAt.set(name, performance.now());
      if (!names.has(name) || approvedAt.has(name) || csrState(obj) === 'pending') return;
      approvedAt.set(name, performance.now());
      if (approvedAt.size === names.size) resolveDone();
    });

    log(`${label}: submitting ${csrs.length} CSRs`);
    for (const [name, at] of await submitElsewhere(bootstrapper.exportConfig(), csrs)) created.set(name, at);
    // The clock of the run starts with the first create request (not with the submitter's start-up).
    const t0 = Math.min(...created.values());
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([done, new Promise<void>((r) => (timer = setTimeout(r, TIMEOUT_MS)))]);
    clearTimeout(timer);
    await runtime.stop();
    await env.informers.stop();

    const latencies = [...approvedAt].map(([n, at]) => at - created.get(n)!).sort((a, b) => a - b);
    // The call that decided a CSR: the first one for its instance sent after the CSR was seen (the approver
    // needs an answer read after it saw the CSR) and answered before its approval was seen.
    const sentAt = new Map<string, number>();
    const answeredAt = new Map<string, number>();
    let undecided = 0;
    for (const [name, at] of approvedAt) {
      const id = env.instanceOf.get(name);
      const seen = seenAt.get(name);
      const call =
        id === undefined || seen === undefined
          ? undefined
          : env.counts.calls.find((c) => c.ids.has(id) && c.sentAt >= seen && c.answeredAt <= at);
      if (call) {
        sentAt.set(name, call.sentAt);
        answeredAt.set(name, call.answeredAt);
      } else if (id !== undefined) undecided++;
    }
    if (undecided) log(`${label}: ${undecided} approved CSR(s) with no call sent after they were seen (left out of the phases)`);
    const marks = { created, seen: seenAt, sent: sentAt, answered: answeredAt, approved: approvedAt };
    const phases = breakdown(
      [...approvedAt.keys()],
      marks,
      sentAt.size ? ['created', 'seen', 'sent', 'answered', 'approved'] : ['created', 'seen', 'approved'],
    );
    const sweep = pendingSweep(created, approvedAt, MACHINE_APPROVER_CAP);
    const result: RunResult = {
      approved: approvedAt.size,
      expected: csrs.length,
      totalMs: Math.round(Math.max(...approvedAt.values()) - t0),
      p50Ms: Math.round(quantile(latencies, 0.5)),
      p99Ms: Math.round(quantile(latencies, 0.99)),
      maxMs: Math.round(latencies[latencies.length - 1] ?? NaN),
      describeInstancesPortCalls: env.counts.port,
      describeInstancesEc2Requests: env.counts.ec2,
      describeInstancesCallMs: env.counts.durations,
      notApproved: [...names].filter((n) => !approvedAt.has(n)).map((name) => ({ name, lastDecision: lastDecision.get(name) })),
      phases,
      peakPending: sweep.peak,
      msAboveMachineApproverCap: sweep.msAboveCap,
    };
    log(`${label}: ${JSON.stringify(result)}`);
    return result;
  };

  interface RunEnv {
    informers: InformerFactory;
    store: ClusterStore;
    cloud: CloudProvider;
    counts: { port: number; ec2: number; durations: number[]; calls: Array<{ ids: Set<string>; sentAt: number; answeredAt: number }> };
    /** CSR name → the instance its node runs on (operator run only). */
    instanceOf: Map<string, string>;
  }

  const wire = (): RunEnv => {
    const transport = createKubeTransport(cluster.kubeConfig(), { metrics: noopMetrics });
    const resources = new ResourceResolver(transport);
    const informers = new InformerFactory({ transport, resources, metrics: noopMetrics, logger: silentLogger, clock: systemClock });
    const store = new KubeClusterStore({ transport, resources, caches: informers, metrics: noopMetrics, clock: systemClock });
    const counts: RunEnv['counts'] = { port: 0, ec2: 0, durations: [], calls: [] };
    const ec2Options = { endpoint: cluster.info.ec2Endpoint!, region: f.region };
    const aws = new AwsCloudProvider({
      crdDir: cluster.info.crdDir,
      ec2: ec2Options,
      ec2ClientFor: (region) => {
        const client = createEc2Client(ec2Options, region);
        client.middlewareStack.add(
          (next, context) => async (a) => {
            if (context.commandName === 'DescribeInstancesCommand') counts.ec2++;
            return next(a);
          },
          { step: 'initialize', name: 'csrBurstCount' },
        );
        return client;
      },
    });
    // Cross-cutting concerns wrap the port: here, counting calls.
    const cloud: CloudProvider = Object.assign(Object.create(aws) as CloudProvider, {
      describeInstances: async (ids: string[], fx: ClusterFacts) => {
        counts.port++;
        const start = performance.now();
        try {
          return await aws.describeInstances(ids, fx);
        } finally {
          const end = performance.now();
          counts.durations.push(Math.round(end - start));
          counts.calls.push({ ids: new Set(ids), sentAt: start, answeredAt: end });
        }
      },
      instanceIdFromProviderId: (p: string) => aws.instanceIdFromProviderId(p),
    });
    return { informers, store, cloud, counts, instanceOf: new Map() };
  };

  const floor = await run(
    'floor (no checks)',
    ({ store }) => ({
      name: 'certificatesigningrequest.no-checks',
      watches: [{ type: Types.CertificateSigningRequest }],
      keysFor: (o) => [o.metadata.name],
      resyncKeys: async () => [],
      async reconcile(name) {
        const csr = await store.get<KubeObject>({ ...Types.CertificateSigningRequest, name });
        if (csr && csrState(csr) === 'pending') await store.approveCertificateSigningRequest(name, 'NoChecks', 'benchmark floor');
        return {};
      },
    }),
    async () => floorCsrs,
  );

  const operator = await run(
    'operator (node-identity)',
    ({ store, cloud }) =>
      new NodeIdentityReconciler({
        store,
        cloud,
        facts: async () => facts,
        clock: systemClock,
        events,
        metrics: noopMetrics,
        logger: silentLogger,
      }),
    async (env) => {
      const instances = await launchWorld();
      const csrs = await Promise.all(instances.map((inst, i) => csrFor(`operator-${i}`, inst.PrivateDnsName!)));
      instances.forEach((inst, i) => env.instanceOf.set(`operator-${i}`, inst.InstanceId!));
      // NodeClaim events cost no cloud call: the operator looks instances up when CSRs arrive.
      log(`operator made ${env.counts.port} DescribeInstances call(s) before the first CSR`);
      return csrs;
    },
  );

  return {
    benchmark: 'csr-burst',
    n: N,
    workers: WORKERS,
    submitConcurrency: SUBMIT_CONCURRENCY,
    floor,
    operator,
    ratios: {
      p99VsFloor: Number((operator.p99Ms / floor.p99Ms).toFixed(2)),
      totalVsFloor: Number((operator.totalMs / floor.totalMs).toFixed(2)),
    },
    targets: {
      everyCsrApproved: operator.approved === operator.expected,
      p99Within2xFloor: operator.p99Ms <= 2 * floor.p99Ms,
      describeInstancesBelowNOver20: operator.describeInstancesPortCalls < N / 20,
    },
    notes: [
      'The operator runs before the instances and NodeClaims are created (as in a cluster); CSRs are submitted right after; every DescribeInstances call is counted. Each client CSR is approved only on an instance answer read after the operator saw it (one batched call a second serves every CSR seen before it).',
      'Latency: client-side time before the create request (in the submitter process) to the first informer event showing the CSR approved.',
      "Phases: per CSR, the deciding call is the first DescribeInstances call that asked for its instance, sent after the CSR was seen and answered before its approval was seen; 'slowestMeanMs' is a phase's mean among the CSRs at or above the p99 latency.",
      'Events are recorded in memory in both runs; both runs use the same runtime, informers and store.',
      "peakPending: the most CSRs of the burst pending at once, by the submitter's create time and the informer's approval time; cluster-machine-approver stops approving any CSR while more than max(machines, nodes) + 100 are pending; msAboveMachineApproverCap is how long more than 106 (a six-Machine cluster) were, the burst's own nodes not counted.",
    ],
  };
}

if (args.submitter) await submitter();
else await main();
