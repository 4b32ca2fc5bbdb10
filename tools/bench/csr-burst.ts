// csr-burst: N NodeClaims with instances in the EC2 emulator, N kubelet client CSRs submitted at once by
// the node-bootstrapper ServiceAccount, approved by the operator's node-identity use-case (real informers,
// work queue, cluster store and AWS provider) on the local cluster. The floor is a no-checks approver run
// in the same process, against the same cluster, through the same runtime, on N other CSRs.
//
// Prints one JSON document: time to approve all, p50/p99 latency from creation to approval (as seen by
// an informer), DescribeInstances calls (port calls and EC2 requests), for both runs.
//
//   node tools/cluster/bundle.mjs tools/bench/csr-burst.ts .local/bench/csr-burst.mjs
//   node .local/bench/csr-burst.mjs [--n 1000] [--workers 16] [--submit-concurrency 64]
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { CreateSubnetCommand, EC2Client, RunInstancesCommand, type Instance, type _InstanceType } from '@aws-sdk/client-ec2';
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
import { InformerFactory } from '../../apps/operator/src/kube/informer.js';
import { KubeClusterStore } from '../../apps/operator/src/kube/kube-cluster-store.js';
import { ResourceResolver } from '../../apps/operator/src/kube/resources.js';
import { createKubeTransport } from '../../apps/operator/src/kube/transport.js';
import { ControllerRuntime } from '../../apps/operator/src/runtime/controller-runtime.js';

const { values: args } = parseArgs({
  options: {
    n: { type: 'string', default: '1000' },
    workers: { type: 'string', default: '16' },
    'submit-concurrency': { type: 'string', default: '64' },
    'timeout-s': { type: 'string', default: '900' },
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
}

async function pool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

const quantile = (sorted: number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? NaN;

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
    const approvedAt = new Map<string, number>();
    let resolveDone!: () => void;
    const done = new Promise<void>((r) => (resolveDone = r));
    env.informers.informerFor({ type: Types.CertificateSigningRequest }).addHandler((obj) => {
      const name = obj.metadata.name;
      if (!names.has(name) || approvedAt.has(name) || csrState(obj) === 'pending') return;
      approvedAt.set(name, performance.now());
      if (approvedAt.size === names.size) resolveDone();
    });

    log(`${label}: submitting ${csrs.length} CSRs`);
    const t0 = performance.now();
    await pool(csrs, SUBMIT_CONCURRENCY, async (csr) => {
      created.set(csr.metadata.name, performance.now());
      const res = await kubeRequest(bootstrapper, 'POST', '/apis/certificates.k8s.io/v1/certificatesigningrequests', { body: csr });
      if (res.status !== 201) throw new Error(`creating CSR ${csr.metadata.name}: HTTP ${res.status}: ${res.text}`);
    });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([done, new Promise<void>((r) => (timer = setTimeout(r, TIMEOUT_MS)))]);
    clearTimeout(timer);
    await runtime.stop();
    await env.informers.stop();

    const latencies = [...approvedAt].map(([n, at]) => at - created.get(n)!).sort((a, b) => a - b);
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
    };
    log(`${label}: ${JSON.stringify(result)}`);
    return result;
  };

  interface RunEnv {
    informers: InformerFactory;
    store: ClusterStore;
    cloud: CloudProvider;
    counts: { port: number; ec2: number; durations: number[] };
  }

  const wire = (): RunEnv => {
    const transport = createKubeTransport(cluster.kubeConfig(), { metrics: noopMetrics });
    const resources = new ResourceResolver(transport);
    const informers = new InformerFactory({ transport, resources, metrics: noopMetrics, logger: silentLogger, clock: systemClock });
    const store = new KubeClusterStore({ transport, resources, caches: informers, metrics: noopMetrics, clock: systemClock });
    const counts = { port: 0, ec2: 0, durations: [] as number[] };
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
          counts.durations.push(Math.round(performance.now() - start));
        }
      },
      instanceIdFromProviderId: (p: string) => aws.instanceIdFromProviderId(p),
    });
    return { informers, store, cloud, counts };
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
      'Latency: client-side time before the create request to the first informer event showing the CSR approved.',
      'Events are recorded in memory in both runs; both runs use the same runtime, informers and store.',
    ],
  };
}

await main();
