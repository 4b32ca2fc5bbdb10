// scale-cpu: the fresh start at N Nodes/NodeClaims/approved CSRs without a cluster (CPU and event-loop stalls only)
//
// The operator's own work at scale, in one process per size, with nothing else competing for the CPU: the
// real informers, cluster store, controller runtime and work queues, node-identity and default-NodeClass
// discovery behind the Karpenter gate, over an in-memory API server (lists in pages of 500, watches, writes
// echoed back as watch events) and the fake cloud provider. Per size, like `scale`'s fresh start:
//   - startup: informers list N Nodes + N NodeClaims + N approved kubelet client CSRs, workers run the resync
//     and the initial events until every queue is idle;
//   - trigger (twice: "fresh", then "warm"): a launched NodeClaim with its instance, then a kubelet client
//     CSR for it, an annotation on the Karpenter CR and a MachineSet change; the time until the CSR is
//     approved and until every queue is idle again.
// Each phase reports the longest event-loop stall: `lagMaxMs` (perf_hooks.monitorEventLoopDelay at 10 ms,
// as the operator's `nodejs_eventloop_lag_max_seconds`) and `longestStretchMs` (the longest gap between two
// runs of a 1 ms timer: the longest synchronous stretch). Ratios are against the first size.
//
// With `--stream N`, each process then receives N more triplets as watch events at `--stream-rate` per second
// (CSRs created pending, then approved), as `scale`'s long-running process does while the next size is
// created; `streamed` reports the stalls meanwhile and the heap and RSS after a 3 s settle.
//
//   npm run bench -- scale-cpu [--sizes 0,5000] [--runs 3] [--cpu-prof] [--stream 0] [--stream-rate 40]
// `--cpu-prof` writes V8 CPU profiles of each size's phases (startup, fresh, warm; the last run's) into
// .local/bench/scale-cpu-profiles/ (summarize with `node tools/bench/src/cpu-profile-top.mjs <file>`).
import 'reflect-metadata';
import { spawn } from 'node:child_process';
import { webcrypto } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Pkcs10CertificateRequestGenerator } from '@peculiar/x509';
import {
  ManagedCrdsWatch,
  Names,
  NodeBootstrapperGroups,
  StandaloneTopology,
  Types,
  noopMetrics,
  silentLogger,
  systemClock,
  type ClusterFacts,
  type EventRecorder,
  type KubeObject,
  type Reconciler,
} from '@karpenter-operator/core';
import { FakeCloudProvider } from '@karpenter-operator/core/testing';
import {
  ControllerRuntime,
  InformerFactory,
  KubeClusterStore,
  ResourceResolver,
  type KubeRequest,
  type KubeTransport,
  type KubeWatchRequest,
  type WatchHandle,
} from '@karpenter-operator/kube-runtime';
import { nodeLifecycleReconcilers } from '../../apps/operator/src/node-lifecycle.js';
import { median } from './src/stats.js';

const { values: args } = parseArgs({
  options: {
    sizes: { type: 'string', default: '0,5000' },
    runs: { type: 'string', default: '3' },
    'cpu-prof': { type: 'boolean', default: false },
    stream: { type: 'string', default: '0' },
    'stream-rate': { type: 'string', default: '40' },
    // Internal: run one size in this process and print its figures.
    child: { type: 'string' },
    'profile-dir': { type: 'string' },
  },
});

const KUBELET_CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client-kubelet';
const EC2NodeClass = { apiVersion: 'karpenter.k8s.aws/v1', kind: 'EC2NodeClass' };
const ZONE = 'us-east-1a';
const facts: ClusterFacts = {
  platform: 'AWS',
  region: 'us-east-1',
  infrastructureName: 'bench-x7k2p',
  apiServerInternalURL: 'https://api-int.bench.example.com:6443',
  resourceTags: [],
};
const nodeName = (i: number) => `ip-10-1-${i >> 8}-${i & 255}.ec2.internal`;
const instanceId = (i: number) => `i-0be${i.toString(16).padStart(14, '0')}`;
const probeName = (step: number) => `ip-10-0-200-${step + 1}.ec2.internal`;
const probeInstance = (step: number) => `i-0probe${step.toString(16).padStart(10, '0')}`;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

// --- an in-memory API server: collections by path, paged lists, watches, writes echoed as events -------

type Collection = { items: Map<string, KubeObject>; watches: Set<KubeWatchRequest> };

class MemoryApi implements KubeTransport {
  private readonly collections = new Map<string, Collection>();
  private rv = 1;
  /** When each CSR was approved (performance.now()). */
  readonly approvedAt = new Map<string, number>();
  writes = 0;

  private collection(path: string): Collection {
    let c = this.collections.get(path);
    if (!c) {
      c = { items: new Map(), watches: new Set() };
      this.collections.set(path, c);
    }
    return c;
  }

  /** Puts an object in its collection (and tells the watches). */
  put(path: string, obj: KubeObject, notify = true): KubeObject {
    const c = this.collection(path);
    const prev = c.items.get(obj.metadata.name);
    const o = structuredClone(obj);
    o.metadata.resourceVersion = String(++this.rv);
    o.metadata.uid ??= prev?.metadata.uid ?? `uid-${this.rv}`;
    o.metadata.creationTimestamp ??= prev?.metadata.creationTimestamp ?? new Date().toISOString();
    c.items.set(o.metadata.name, o);
    if (notify) for (const w of c.watches) w.onEvent(prev ? 'MODIFIED' : 'ADDED', structuredClone(o));
    return o;
  }

  get(path: string, name: string): KubeObject | undefined {
    return this.collections.get(path)?.items.get(name);
  }

  async request<T = unknown>(req: KubeRequest): Promise<T> {
    await Promise.resolve();
    if (req.verb === 'list') {
      const c = this.collection(req.path);
      const all = [...c.items.values()];
      const limit = Number(req.query?.limit ?? all.length) || all.length;
      const from = Number(req.query?.continue ?? 0);
      const page = all.slice(from, from + limit);
      const next = from + limit < all.length ? String(from + limit) : undefined;
      // Encoded here, then decoded after a turn of the event loop, as the transport decodes a response.
      const text = JSON.stringify({ metadata: { resourceVersion: String(this.rv), ...(next ? { continue: next } : {}) }, items: page });
      await new Promise((resolve) => setImmediate(resolve));
      return JSON.parse(text) as T;
    }
    this.writes++;
    const parts = req.path.split('/');
    const sub = parts.at(-1) === 'approval' || parts.at(-1) === 'status' ? parts.pop() : undefined;
    const name = req.method === 'POST' ? (req.body as KubeObject).metadata.name : parts.pop()!;
    const path = parts.join('/');
    const cur = this.get(path, name);
    const body = (req.body ?? {}) as KubeObject;
    if (sub === 'approval') {
      this.approvedAt.set(name, performance.now());
      return this.put(path, { ...cur!, status: { conditions: (body.status as { conditions?: unknown })?.conditions } }) as T;
    }
    if (req.method === 'DELETE') return {} as T;
    // Apply, create, merge patch, status: the body's top-level fields over the object (enough here).
    const merged = { ...(cur ?? {}), ...body, metadata: { ...(cur?.metadata ?? {}), ...(body.metadata ?? {}), name } } as KubeObject;
    return this.put(path, merged) as T;
  }

  async watch(req: KubeWatchRequest): Promise<WatchHandle> {
    const c = this.collection(req.path);
    c.watches.add(req);
    return { abort: () => c.watches.delete(req) };
  }
}

const paths = {
  csrs: '/apis/certificates.k8s.io/v1/certificatesigningrequests',
  nodes: '/api/v1/nodes',
  nodeClaims: '/apis/karpenter.sh/v1/nodeclaims',
  crds: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
  karpenters: '/apis/autoscaling.openshift.io/v1alpha1/karpenters',
  machineSets: `/apis/machine.openshift.io/v1beta1/namespaces/${Names.machineApiNamespace}/machinesets`,
};

// --- the objects, shaped like the `scale` benchmark's --------------------------------------------------

async function seed(api: MemoryApi, size: number, cloud: FakeCloudProvider): Promise<webcrypto.CryptoKeyPair> {
  const keys = (await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, [
    'sign',
    'verify',
  ])) as webcrypto.CryptoKeyPair;
  const old = new Date(Date.now() - 3600_000).toISOString();
  for (const crd of cloud.crdList) api.put(paths.crds, crd, false);
  api.put(paths.karpenters, { ...Types.Karpenter, metadata: { name: Names.karpenterCr, generation: 1 }, spec: {} }, false);
  api.put(
    paths.machineSets,
    {
      ...Types.MachineSet,
      metadata: { name: 'bench-worker-a', namespace: Names.machineApiNamespace },
      spec: { template: { spec: { providerSpec: { value: { ami: { id: 'ami-0' } } } } } },
    },
    false,
  );
  for (let i = 0; i < size; i++) putTriplet(api, i, await requestFor(keys, nodeName(i)), old, false);
  return keys;
}

/**
 * A Node, its registered NodeClaim and its kubelet client CSR (pending, then approved as an administrator
 * would), as the `scale` benchmark creates them; `notify`: as watch events.
 */
function putTriplet(api: MemoryApi, i: number, request: string, created: string, notify: boolean): void {
  const name = nodeName(i);
  api.put(
    paths.nodes,
    {
      ...Types.Node,
      metadata: {
        name,
        creationTimestamp: created,
        labels: {
          'kubernetes.io/arch': 'amd64',
          'kubernetes.io/os': 'linux',
          'kubernetes.io/hostname': name.split('.')[0]!,
          'node.kubernetes.io/instance-type': 'm6i.xlarge',
          'topology.kubernetes.io/region': 'us-east-1',
          'topology.kubernetes.io/zone': ZONE,
          'karpenter.sh/nodepool': 'bench',
          'karpenter.sh/registered': 'true',
          'karpenter.k8s.aws/ec2nodeclass': 'default',
          'node-role.kubernetes.io/worker': '',
        },
      },
      spec: {
        providerID: `aws:///${ZONE}/${instanceId(i)}`,
        taints: [{ key: 'node.kubernetes.io/unreachable', effect: 'NoSchedule', timeAdded: created }],
      },
      status: {
        addresses: [
          { type: 'InternalIP', address: `10.1.${i >> 8}.${i & 255}` },
          { type: 'Hostname', address: name },
          { type: 'InternalDNS', address: name },
        ],
        capacity: { cpu: '4', memory: '16Gi', pods: '250' },
        allocatable: { cpu: '3500m', memory: '15Gi', pods: '250' },
        conditions: ['Ready', 'MemoryPressure', 'DiskPressure', 'PIDPressure'].map((type) => ({
          type,
          status: 'Unknown',
          reason: 'NodeStatusNeverUpdated',
          message: 'Kubelet never posted node status.',
          lastHeartbeatTime: created,
          lastTransitionTime: created,
        })),
      },
    },
    notify,
  );
  const claim = `bench-${i.toString().padStart(5, '0')}`;
  api.put(
    paths.nodeClaims,
    {
      ...Types.NodeClaim,
      metadata: { name: claim, creationTimestamp: created, labels: { 'karpenter.sh/nodepool': 'bench' } },
      spec: {
        nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
        requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }],
      },
      status: { providerID: `aws:///${ZONE}/${instanceId(i)}`, nodeName: name, imageID: 'ami-0' },
    },
    notify,
  );
  api.put(
    paths.csrs,
    {
      ...Types.CertificateSigningRequest,
      metadata: { name: `bench-csr-${i.toString().padStart(5, '0')}`, creationTimestamp: created },
      spec: {
        request,
        signerName: KUBELET_CLIENT_SIGNER,
        username: Names.nodeBootstrapperUser,
        groups: [...NodeBootstrapperGroups],
        usages: ['digital signature', 'client auth'],
      },
    },
    notify,
  );
  const csr = api.get(paths.csrs, `bench-csr-${i.toString().padStart(5, '0')}`)!;
  api.put(
    paths.csrs,
    { ...csr, status: { conditions: [{ type: 'Approved', status: 'True', reason: 'BenchOldNode', message: 'approved long ago' }] } },
    notify,
  );
}

async function requestFor(keys: webcrypto.CryptoKeyPair, name: string): Promise<string> {
  const req = await Pkcs10CertificateRequestGenerator.create({
    name: `CN=system:node:${name}, O=system:nodes`,
    keys,
    signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' } as webcrypto.EcdsaParams,
  });
  return Buffer.from(req.toString('pem')).toString('base64');
}

// --- event-loop stalls ----------------------------------------------------------------------------------

/** The longest event-loop delay (10 ms monitor, as prom-client's) and the longest gap between 1 ms timer runs. */
class StallMeter {
  private readonly h = monitorEventLoopDelay({ resolution: 10 });
  private last = performance.now();
  private longest = 0;
  private timer: NodeJS.Timeout | undefined;

  start(): void {
    this.h.enable();
    const tick = () => {
      const now = performance.now();
      this.longest = Math.max(this.longest, now - this.last);
      this.last = now;
      this.timer = setTimeout(tick, 1);
    };
    this.last = performance.now();
    this.timer = setTimeout(tick, 1);
  }

  /** Figures since the last read; resets them. */
  read(): { lagMaxMs: number; longestStretchMs: number } {
    const out = { lagMaxMs: round(this.h.max / 1e6), longestStretchMs: round(this.longest) };
    this.h.reset();
    this.longest = 0;
    this.last = performance.now();
    return out;
  }

  stop(): void {
    this.h.disable();
    clearTimeout(this.timer);
  }
}

const round = (n: number) => Math.round(n * 10) / 10;

// --- one size in this process ------------------------------------------------------------------------

/** A V8 CPU profile of one phase, written to `dir` (no profile without a dir). */
async function profiled<T>(dir: string | undefined, name: string, fn: () => Promise<T>): Promise<T> {
  if (!dir) return fn();
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  try {
    return await fn();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(join(dir, `${name}.cpuprofile`), JSON.stringify(profile));
    session.disconnect();
  }
}

async function runChild(size: number, profileDir: string | undefined, stream: { count: number; perSecond: number }): Promise<void> {
  const api = new MemoryApi();
  const cloud = new FakeCloudProvider({
    nodeClassType: EC2NodeClass,
    nodeClassLabel: 'karpenter.k8s.aws/ec2nodeclass',
    crds: ['nodepools.karpenter.sh', 'nodeclaims.karpenter.sh', 'ec2nodeclasses.karpenter.k8s.aws'].map((name) => ({
      ...Types.CustomResourceDefinition,
      metadata: { name, labels: { [Names.managedLabel]: 'true' } },
      status: { conditions: [{ type: 'Established', status: 'True' }] },
    })),
    defaultNodeClass: (input) => ({
      object: {
        ...EC2NodeClass,
        metadata: { name: 'default' },
        spec: { amiSelectorTerms: [{ id: JSON.stringify(input.machineSets.length) }], userData: 'x' },
      },
      protectedSpec: { amiSelectorTerms: [{ id: JSON.stringify(input.machineSets.length) }], userData: 'x' },
    }),
  });
  // The fake records every call with its arguments; the harness has no use for that record and must not grow.
  const record = cloud.calls;
  const events: EventRecorder = { record: () => undefined };
  await seed(api, size, cloud);
  record.length = 0;

  const transport = api;
  const resources = new ResourceResolver(transport);
  const caches = new InformerFactory({ transport, resources, logger: silentLogger, metrics: noopMetrics, crdWatch: ManagedCrdsWatch });
  const store = new KubeClusterStore({ transport, resources, caches, metrics: noopMetrics });
  const topology = new StandaloneTopology({ store, namespace: 'openshift-karpenter', clock: systemClock });
  const board = { setCondition: () => undefined, conditions: () => [] } as never;
  const reconcilers: Reconciler[] = [
    // The CRD installer's watch, so the gate can read the CRDs (its reconcile does nothing here).
    { name: 'crds', watches: [ManagedCrdsWatch], keysFor: () => [], resyncKeys: async () => [], reconcile: async () => ({}) },
    ...nodeLifecycleReconcilers({
      topology,
      cloud,
      board,
      clock: systemClock,
      logger: silentLogger,
      metrics: noopMetrics,
      events,
      facts: async () => facts,
      parts: ['default-nodeclass', 'node-identity'],
    }),
  ];
  const runtime = new ControllerRuntime({
    reconcilers,
    caches,
    metrics: noopMetrics,
    logger: silentLogger,
    concurrency: { 'certificatesigningrequest.node-identity': 8 },
  });
  const idle = async () => {
    for (;;) {
      await Promise.all(reconcilers.map((r) => runtime.queue(r.name)!.whenIdle()));
      await sleep(50);
      if (reconcilers.every((r) => runtime.queue(r.name)!.depth === 0 && runtime.queue(r.name)!.active === 0)) return;
    }
  };

  const meter = new StallMeter();
  meter.start();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let syncedMs = 0;
  await profiled(profileDir, `scale-cpu-${size}-startup`, async () => {
    await runtime.start();
    syncedMs = performance.now() - t0;
    await idle();
  });
  const startup = { syncedMs: round(syncedMs), idleMs: round(performance.now() - t0), ...meter.read() };
  const cpuStartup = process.cpuUsage(cpu0);
  await sleep(200);
  meter.read();

  const trigger = async (step: number, phase: string) => {
    // Before the window: the instance and its launched NodeClaim, as Karpenter creates them.
    cloud.putInstance({
      instanceId: probeInstance(step),
      live: true,
      privateDnsName: probeName(step),
      privateIpAddresses: [`10.0.200.${step + 1}`],
      publicIpAddresses: [],
      ownedByCluster: true,
    });
    const claim = `probe-${step}`;
    api.put(paths.nodeClaims, { ...Types.NodeClaim, metadata: { name: claim }, spec: {} });
    api.put(paths.nodeClaims, {
      ...Types.NodeClaim,
      metadata: { name: claim },
      spec: {},
      status: { providerID: `aws:///${ZONE}/${probeInstance(step)}` },
    });
    const keys = (await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, [
      'sign',
      'verify',
    ])) as webcrypto.CryptoKeyPair;
    const request = await requestFor(keys, probeName(step));
    await idle();
    await sleep(1_100); // past the shared snapshots' TTL, as the benchmark's 3 s
    record.length = 0;
    return profiled(profileDir, `scale-cpu-${size}-${phase}`, () => window(step, request));
  };
  const window = async (step: number, request: string) => {
    meter.read();
    const cpu = process.cpuUsage();
    const start = performance.now();
    const csr = `probe-${step}`;
    api.put(paths.csrs, {
      ...Types.CertificateSigningRequest,
      metadata: { name: csr },
      spec: {
        request,
        signerName: KUBELET_CLIENT_SIGNER,
        username: Names.nodeBootstrapperUser,
        groups: [...NodeBootstrapperGroups],
        usages: ['digital signature', 'client auth'],
      },
    });
    const k = api.get(paths.karpenters, Names.karpenterCr)!;
    api.put(paths.karpenters, { ...k, metadata: { ...k.metadata, annotations: { 'bench/touch': String(step) } } });
    const ms = api.get(paths.machineSets, 'bench-worker-a')!;
    api.put(paths.machineSets, { ...ms, spec: { template: { spec: { providerSpec: { value: { ami: { id: `ami-${step + 1}` } } } } } } });
    const until = performance.now() + 30_000;
    while (!api.approvedAt.has(csr) && performance.now() < until) await sleep(5);
    const approvedMs = api.approvedAt.has(csr) ? round(api.approvedAt.get(csr)! - start) : null;
    await idle();
    const idleMs = round(performance.now() - start);
    const used = process.cpuUsage(cpu);
    return { approvedMs, idleMs, cpuMs: Math.round((used.user + used.system) / 1000), ...meter.read() };
  };
  const fresh = await trigger(0, 'fresh');
  const warm = await trigger(1, 'warm');

  // Then, like the process `scale` keeps running while it creates the next size's objects: `count` more
  // triplets as watch events at `perSecond`, a settle, and what the process holds afterwards.
  let streamed: Record<string, number> | undefined;
  if (stream.count > 0) {
    const keys = (await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, [
      'sign',
      'verify',
    ])) as webcrypto.CryptoKeyPair;
    const requests: string[] = [];
    for (let k = 0; k < stream.count; k++) requests.push(await requestFor(keys, nodeName(size + k)));
    await idle();
    meter.read();
    const cpu = process.cpuUsage();
    const start = performance.now();
    const tickMs = 25;
    const perTick = Math.max(1, Math.round((stream.perSecond * tickMs) / 1000));
    for (let k = 0; k < stream.count; k += perTick) {
      for (let j = k; j < Math.min(stream.count, k + perTick); j++) putTriplet(api, size + j, requests[j]!, new Date().toISOString(), true);
      await sleep(tickMs);
    }
    await idle();
    const seconds = (performance.now() - start) / 1000;
    const used = process.cpuUsage(cpu);
    const during = meter.read();
    await sleep(3_000);
    const mem = process.memoryUsage();
    streamed = {
      count: stream.count,
      seconds: round(seconds),
      cpuMs: Math.round((used.user + used.system) / 1000),
      ...during,
      heapUsedMiB: Math.round(mem.heapUsed / 1048576),
      heapTotalMiB: Math.round(mem.heapTotal / 1048576),
      rssMiB: Math.round(mem.rss / 1048576),
    };
  }
  meter.stop();
  await runtime.stop({ timeoutMs: 5_000 });
  const heapMiB = Math.round(process.memoryUsage().heapUsed / 1048576);
  process.stdout.write(
    JSON.stringify({
      size,
      startup: { ...startup, cpuMs: Math.round((cpuStartup.user + cpuStartup.system) / 1000) },
      fresh,
      warm,
      heapMiB,
      ...(streamed ? { streamed } : {}),
    }) + '\n',
  );
}

// --- the parent: one process per size and run ---------------------------------------------------------

interface ChildResult {
  size: number;
  startup: { syncedMs: number; idleMs: number; lagMaxMs: number; longestStretchMs: number; cpuMs: number };
  fresh: { approvedMs: number | null; idleMs: number; cpuMs: number; lagMaxMs: number; longestStretchMs: number };
  warm: ChildResult['fresh'];
  heapMiB: number;
  streamed?: Record<string, number>;
}

function runOne(size: number, profileDir: string | undefined): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        '--enable-source-maps',
        process.argv[1]!,
        '--child',
        String(size),
        '--stream',
        args.stream,
        '--stream-rate',
        args['stream-rate'],
        ...(profileDir ? ['--profile-dir', profileDir] : []),
      ],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`size ${size}: exit code ${code}`));
      try {
        resolve(JSON.parse(out.trim().split('\n').at(-1)!) as ChildResult);
      } catch (e) {
        reject(e instanceof Error ? e : new Error(String(e)));
      }
    });
  });
}

async function main(): Promise<void> {
  if (args.child !== undefined)
    return runChild(Number(args.child), args['profile-dir'], { count: Number(args.stream), perSecond: Number(args['stream-rate']) });
  const sizes = args.sizes.split(',').map(Number);
  const runs = Number(args.runs);
  const profileDir = args['cpu-prof'] ? join(process.cwd(), '.local/bench/scale-cpu-profiles') : undefined;
  if (profileDir) mkdirSync(profileDir, { recursive: true });
  const results: ChildResult[][] = sizes.map(() => []);
  // Interleaved (0, N, 0, N, ...): a change in the machine's load hits every size alike.
  for (let r = 0; r < runs; r++) {
    for (const [k, size] of sizes.entries()) {
      const res = await runOne(size, profileDir);
      console.error(`scale-cpu: run ${r + 1}/${runs} size ${size}: ${JSON.stringify(res)}`);
      results[k]!.push(res);
    }
  }
  const med = (k: number, pick: (r: ChildResult) => number | null) => median(results[k]!.map(pick).filter((v): v is number => v !== null));
  const summary = sizes.map((size, k) => ({
    size,
    startupIdleMs: med(k, (r) => r.startup.idleMs),
    startupCpuMs: med(k, (r) => r.startup.cpuMs),
    startupLagMaxMs: med(k, (r) => r.startup.lagMaxMs),
    startupLongestStretchMs: med(k, (r) => r.startup.longestStretchMs),
    firstCsrApprovedMs: med(k, (r) => r.fresh.approvedMs),
    firstCsrWindowCpuMs: med(k, (r) => r.fresh.cpuMs),
    firstCsrLagMaxMs: med(k, (r) => r.fresh.lagMaxMs),
    firstCsrLongestStretchMs: med(k, (r) => r.fresh.longestStretchMs),
    warmCsrApprovedMs: med(k, (r) => r.warm.approvedMs),
    warmCsrWindowCpuMs: med(k, (r) => r.warm.cpuMs),
    warmLagMaxMs: med(k, (r) => r.warm.lagMaxMs),
    warmLongestStretchMs: med(k, (r) => r.warm.longestStretchMs),
    heapMiB: med(k, (r) => r.heapMiB),
  }));
  const base = summary[0]!;
  const ratio = (a: number, b: number) => (b > 0 ? Math.round((a / b) * 100) / 100 : null);
  const ratios = summary.map((s) => ({
    size: s.size,
    firstCsrApprovedMs: ratio(s.firstCsrApprovedMs, base.firstCsrApprovedMs),
    warmCsrApprovedMs: ratio(s.warmCsrApprovedMs, base.warmCsrApprovedMs),
    firstCsrWindowCpuMs: ratio(s.firstCsrWindowCpuMs, base.firstCsrWindowCpuMs),
  }));
  process.stdout.write(
    `${JSON.stringify({ ok: true, benchmark: 'scale-cpu', date: new Date().toISOString(), runs, sizes, medians: summary, ratiosVsFirstSize: ratios, perRun: results }, null, 2)}\n`,
  );
}

await main();
