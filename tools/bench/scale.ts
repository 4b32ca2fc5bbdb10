// scale: operator RSS/heap, API requests per reconcile and the fresh-start CSR wait with 0, 1,000 and 5,000 Nodes,
// NodeClaims and old approved CSRs
//
// One cluster, sizes in increasing order; objects are added as admin (bounded concurrency) up to each size:
// a Node (no kubelet: not simulated), a registered NodeClaim pointing at it, and an approved kubelet client
// CSR for it. At each size:
//   - memory: process_resident_memory_bytes and nodejs_heap_size_used_bytes from the operator's /metrics,
//     for the process that has run since size 0 ("live") and for a fresh process started at this size;
//   - requests per reconcile: a fixed trigger (a kubelet CSR of a real emulator instance with its NodeClaim,
//     an annotation on the Karpenter CR, an AMI change on one MachineSet), then a fixed window; the operator's
//     requests in the window (audit log, leases aside) divided by its reconciles in the window (its metrics).
// Ratios are against size 0. Creation stops at the time budget; the sizes reached are reported.
//
//   npm run bench -- scale [--sizes 0,1000,5000] [--concurrency 16] [--window-s 15] [--settle-s 20] [--budget-s 900] [--timeout-s 2700]
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import { parseArgs } from 'node:util';
import { CopyImageCommand, CreateSubnetCommand, EC2Client, RunInstancesCommand, type _InstanceType } from '@aws-sdk/client-ec2';
import { Pkcs10CertificateRequestGenerator } from '@peculiar/x509';
import type { KubeConfig } from '@kubernetes/client-node';
import { createKubeletClientCsr, kubeRequest, tailLog } from '@karpenter-operator/testkit';
import { summarizeAuditWindow } from './src/audit-window.js';
import {
  applyKarpenterAndCredentials,
  installManifests,
  KARPENTER,
  kubeRequestRetrying,
  mib,
  nodeEnvFrom,
  OPERATOR_USER,
  runBench,
  sleep,
  startOperator,
  waitConverged,
  type BenchContext,
  type OperatorRun,
} from './src/harness.js';
import { anonymousMappings, byLabel, memoryBreakdown, residentSplit, sumOf, type PromSample } from './src/prom.js';
import { median, pool, ratio } from './src/stats.js';

const { values: args } = parseArgs({
  options: {
    sizes: { type: 'string', default: '0,1000,5000' },
    concurrency: { type: 'string', default: '16' },
    'window-s': { type: 'string', default: '15' },
    'settle-s': { type: 'string', default: '20' },
    'budget-s': { type: 'string', default: '900' },
    'timeout-s': { type: 'string', default: '2700' },
    shadow: { type: 'string', multiple: true, default: [] },
  },
});
const SIZES = args.sizes.split(',').map(Number);
if (SIZES.some((n) => !Number.isInteger(n) || n < 0) || SIZES.some((n, i) => i > 0 && n <= SIZES[i - 1]!))
  throw new Error(`--sizes must be increasing integers, got ${args.sizes}`);
const CONCURRENCY = Number(args.concurrency);
const WINDOW_MS = Number(args['window-s']) * 1000;
const SETTLE_MS = Number(args['settle-s']) * 1000;
const BUDGET_MS = Number(args['budget-s']) * 1000;
/**
 * `--shadow 'name=NAME;flags=NODE FLAGS;env=K=V K2=V2;main=DIR/main.js'` (repeatable; each field but the name
 * optional, the others as the leader's): another operator process, started after the first one leads and
 * stopped before it is, a follower that lists and watches everything as the leader does (caches synced, no
 * reconciles). Its memory is measured beside the leader's at the first size and after the objects of the
 * next one arrived: variants of the launcher (V8 flags, glibc tunables) or another build, compared in one
 * run with the same burst of watch events.
 */
interface Shadow {
  name: string;
  nodeFlags?: string[];
  nodeEnv?: Record<string, string>;
  main?: string;
}
const SHADOWS: Shadow[] = (args.shadow ?? []).map((spec) => {
  const fields = Object.fromEntries(
    spec.split(';').map((f) => {
      const eq = f.indexOf('=');
      if (eq <= 0) throw new Error(`--shadow: expected field=value, got ${JSON.stringify(f)} in ${JSON.stringify(spec)}`);
      return [f.slice(0, eq).trim(), f.slice(eq + 1)];
    }),
  ) as Record<string, string>;
  if (!fields.name) throw new Error(`--shadow ${JSON.stringify(spec)}: name= is required`);
  return {
    name: fields.name,
    ...(fields.flags !== undefined ? { nodeFlags: fields.flags.split(/\s+/).filter(Boolean) } : {}),
    ...(fields.env !== undefined ? { nodeEnv: nodeEnvFrom(fields.env) ?? {} } : {}),
    ...(fields.main ? { main: fields.main } : {}),
  };
});
const KUBELET_CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client-kubelet';
const MACHINE_API = 'openshift-machine-api';
const MCO_NS = 'openshift-machine-config-operator';

// Bench objects live outside the VPC's addresses (10.1.0.0/16) so no emulator instance is named like them.
const nodeName = (i: number) => `ip-10-1-${i >> 8}-${i & 255}.ec2.internal`;
const instanceId = (i: number) => `i-0be${i.toString(16).padStart(14, '0')}`;

interface Created {
  count: number;
  seconds: number;
  requests: number;
}

async function createObjects(
  ctx: BenchContext,
  from: number,
  to: number,
  deadline: number,
  keys: webcrypto.CryptoKeyPair,
): Promise<Created> {
  const kc = ctx.admin();
  const zone = ctx.world.facts.zones[0]!;
  const started = Date.now();
  let requests = 0;
  const must = async (what: string, method: string, path: string, body: unknown, contentType?: string) => {
    requests++;
    const r = await kubeRequestRetrying(kc, method, path, { body, ...(contentType ? { contentType } : {}) });
    if (r.status >= 300 && r.status !== 409) throw new Error(`${what}: HTTP ${r.status}: ${r.text.slice(0, 300)}`);
  };
  const indexes = Array.from({ length: to - from }, (_, k) => from + k);
  let stoppedEarly = false;
  await pool(indexes, CONCURRENCY, async (i) => {
    if (Date.now() > deadline) {
      stoppedEarly = true;
      return;
    }
    const name = nodeName(i);
    await must(`creating Node ${name}`, 'POST', '/api/v1/nodes', {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name,
        labels: {
          'kubernetes.io/arch': 'amd64',
          'kubernetes.io/os': 'linux',
          'kubernetes.io/hostname': name.split('.')[0],
          'node.kubernetes.io/instance-type': ctx.world.facts.workerInstanceType,
          'topology.kubernetes.io/region': ctx.world.facts.region,
          'topology.kubernetes.io/zone': zone,
          'karpenter.sh/nodepool': 'bench',
          'karpenter.sh/registered': 'true',
          'karpenter.k8s.aws/ec2nodeclass': 'default',
          'node-role.kubernetes.io/worker': '',
        },
      },
      spec: { providerID: `aws:///${zone}/${instanceId(i)}` },
      status: {
        addresses: [
          { type: 'InternalIP', address: `10.1.${i >> 8}.${i & 255}` },
          { type: 'Hostname', address: name },
          { type: 'InternalDNS', address: name },
        ],
        capacity: { cpu: '4', memory: '16Gi', pods: '250' },
        allocatable: { cpu: '3500m', memory: '15Gi', pods: '250' },
      },
    });
    const claim = `bench-${i.toString().padStart(5, '0')}`;
    await must(`creating NodeClaim ${claim}`, 'POST', '/apis/karpenter.sh/v1/nodeclaims', {
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: { name: claim, labels: { 'karpenter.sh/nodepool': 'bench' } },
      spec: {
        nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
        requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }],
      },
    });
    await must(
      `writing the status of NodeClaim ${claim}`,
      'PATCH',
      `/apis/karpenter.sh/v1/nodeclaims/${claim}/status`,
      { status: { providerID: `aws:///${zone}/${instanceId(i)}`, nodeName: name, imageID: ctx.world.facts.amis.x86_64 } },
      'application/merge-patch+json',
    );
    const csrName = `bench-csr-${i.toString().padStart(5, '0')}`;
    const req = await Pkcs10CertificateRequestGenerator.create({
      name: `CN=system:node:${name}, O=system:nodes`,
      keys,
      signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' } as webcrypto.EcdsaParams,
    });
    await must(`creating CSR ${csrName}`, 'POST', '/apis/certificates.k8s.io/v1/certificatesigningrequests', {
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'CertificateSigningRequest',
      metadata: { name: csrName },
      spec: {
        request: Buffer.from(req.toString('pem')).toString('base64'),
        signerName: KUBELET_CLIENT_SIGNER,
        usages: ['digital signature', 'client auth'],
      },
    });
    await must(`approving CSR ${csrName}`, 'PUT', `/apis/certificates.k8s.io/v1/certificatesigningrequests/${csrName}/approval`, {
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'CertificateSigningRequest',
      metadata: { name: csrName },
      spec: {
        request: Buffer.from(req.toString('pem')).toString('base64'),
        signerName: KUBELET_CLIENT_SIGNER,
        usages: ['digital signature', 'client auth'],
      },
      status: {
        conditions: [{ type: 'Approved', status: 'True', reason: 'BenchOldNode', message: 'approved long ago (benchmark fixture)' }],
      },
    });
    const done = i + 1 - from;
    if (done % 500 === 0) ctx.log(`  created ${done}/${to - from} (${((Date.now() - started) / 1000).toFixed(0)} s)`);
  });
  // With a pool, indexes below `created` may be missing when the budget stopped it: count what exists.
  const count = stoppedEarly ? await countBenchNodes(kc) : to;
  return { count, seconds: Math.round((Date.now() - started) / 100) / 10, requests };
}

async function countBenchNodes(kc: KubeConfig): Promise<number> {
  const r = await kubeRequest<{ items?: unknown[] }>(kc, 'GET', '/api/v1/nodes?labelSelector=karpenter.sh%2Fnodepool%3Dbench');
  return r.body.items?.length ?? 0;
}

async function memory(op: OperatorRun) {
  const rss: number[] = [];
  const heap: number[] = [];
  const lag: number[] = [];
  let last: PromSample[] = [];
  for (let k = 0; k < 3; k++) {
    if (k) await sleep(2_000);
    last = await op.metrics();
    rss.push(sumOf(last, 'process_resident_memory_bytes') ?? NaN);
    heap.push(sumOf(last, 'nodejs_heap_size_used_bytes') ?? NaN);
    lag.push(lagMs(last));
  }
  // Where the resident memory is, at the last sample: V8 heap (reserved, used, per space), external, and the
  // kernel's split of the rest (anonymous vs file-backed; glibc's arenas vs other anonymous mappings).
  const breakdown = { ...memoryBreakdown(last), ...residentSplit(op.proc.pid), ...anonymousMappings(op.proc.pid) };
  return {
    rssMiB: mib(median(rss))!,
    heapUsedMiB: mib(median(heap))!,
    eventLoopLagMaxMs: Math.max(...lag),
    samples: 3,
    breakdown,
  };
}

/** The operator's longest event-loop delay since its previous scrape (prom-client resets it per scrape), in ms. */
function lagMs(m: PromSample[]): number {
  return Math.round((sumOf(m, 'nodejs_eventloop_lag_max_seconds') ?? NaN) * 1000);
}

/**
 * The process's Lease requests as the API server saw them: a long gap between requests received means the
 * operator did not send them (a blocked event loop); long durations mean a slow API server.
 */
function leaseTimeline(ctx: BenchContext, op: OperatorRun) {
  const events = ctx.cluster.auditEvents({ user: OPERATOR_USER, resource: 'leases', since: new Date(op.spawnedAt) });
  const received = events.map((e) => Date.parse(e.requestReceivedTimestamp));
  const gaps = received.slice(1).map((t, k) => t - received[k]!);
  const durations = events.map((e) => Date.parse(e.stageTimestamp) - Date.parse(e.requestReceivedTimestamp));
  return {
    requests: events.length,
    maxGapBetweenRequestsMs: gaps.length ? Math.max(...gaps) : null,
    maxRequestDurationMs: durations.length ? Math.max(...durations) : null,
    failed: events.filter((e) => (e.responseStatus?.code ?? 0) >= 400).map((e) => `${e.responseStatus?.code} ${e.verb}`),
  };
}

interface Probe {
  ec2: EC2Client;
  subnetId: string;
  amiCopies: string[];
  bootstrapper: KubeConfig;
}

/** The fixed trigger, then the window: the operator's requests and reconciles in it. */
async function triggerWindow(ctx: BenchContext, op: OperatorRun, probe: Probe, step: number) {
  const kc = ctx.admin();
  const f = ctx.world.facts;
  const zone = f.zones[0]!;
  // Before the window: an instance and its launched NodeClaim (as Karpenter would create them).
  const run = await probe.ec2.send(
    new RunInstancesCommand({
      ImageId: f.amis.x86_64,
      InstanceType: f.workerInstanceType as _InstanceType,
      MinCount: 1,
      MaxCount: 1,
      SubnetId: probe.subnetId,
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
  const inst = run.Instances![0]!;
  const claim = `probe-${step}`;
  const created = await kubeRequestRetrying(kc, 'POST', '/apis/karpenter.sh/v1/nodeclaims', {
    body: {
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: { name: claim, labels: { 'karpenter.sh/nodepool': 'default' } },
      spec: {
        nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
        requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }],
      },
    },
  });
  if (created.status !== 201) throw new Error(`creating NodeClaim ${claim}: HTTP ${created.status}: ${created.text}`);
  await kubeRequestRetrying(kc, 'PATCH', `/apis/karpenter.sh/v1/nodeclaims/${claim}/status`, {
    body: { status: { providerID: `aws:///${zone}/${inst.InstanceId}` } },
    contentType: 'application/merge-patch+json',
  });
  const csr = await createKubeletClientCsr(inst.PrivateDnsName!);
  await sleep(3_000);

  const before = await op.metrics();
  const since = new Date();
  const t0 = Date.now();
  const sub = await kubeRequest<{ metadata?: { name?: string } }>(
    probe.bootstrapper,
    'POST',
    '/apis/certificates.k8s.io/v1/certificatesigningrequests',
    {
      body: {
        apiVersion: 'certificates.k8s.io/v1',
        kind: 'CertificateSigningRequest',
        metadata: { generateName: 'probe-' },
        spec: {
          request: Buffer.from(csr.csrPem).toString('base64'),
          signerName: KUBELET_CLIENT_SIGNER,
          usages: ['digital signature', 'client auth'],
        },
      },
    },
  );
  if (sub.status !== 201) throw new Error(`submitting the probe CSR: HTTP ${sub.status}: ${JSON.stringify(sub.body)}`);
  const csrName = sub.body.metadata!.name!;
  await kubeRequestRetrying(kc, 'PATCH', `/apis/${KARPENTER.apiVersion}/karpenters/default`, {
    body: { metadata: { annotations: { 'bench.karpenter-operator.openshift.io/touch': String(step) } } },
    contentType: 'application/merge-patch+json',
  });
  const ms = f.workerMachineSets[0]!;
  await kubeRequestRetrying(kc, 'PATCH', `/apis/machine.openshift.io/v1beta1/namespaces/${MACHINE_API}/machinesets/${ms}`, {
    body: { spec: { template: { spec: { providerSpec: { value: { ami: { id: probe.amiCopies[step % probe.amiCopies.length] } } } } } } },
    contentType: 'application/merge-patch+json',
  });
  let approvedMs: number | undefined;
  const until = t0 + WINDOW_MS;
  while (Date.now() < until) {
    if (approvedMs === undefined) {
      const r = await kubeRequest<{ status?: { conditions?: Array<{ type: string }> } }>(
        kc,
        'GET',
        `/apis/certificates.k8s.io/v1/certificatesigningrequests/${csrName}`,
      );
      if (r.body.status?.conditions?.some((c) => c.type === 'Approved')) approvedMs = Date.now() - t0;
    }
    await sleep(200);
  }
  const end = new Date(until);
  await sleep(1_000);
  const after = await op.metrics();
  const audit = summarizeAuditWindow(ctx.cluster.auditEvents({ user: OPERATOR_USER, stage: '*', since }), since, end);
  const leases = Object.entries(audit.byVerbResource)
    .filter(([k]) => k.endsWith(' leases'))
    .reduce((a, [, v]) => a + v, 0);
  const reconcilesBy = (m: PromSample[]) => byLabel(m, 'karpenter_operator_reconcile_total', 'controller');
  const ra = reconcilesBy(after);
  const rb = reconcilesBy(before);
  const reconcilesByController: Record<string, number> = Object.fromEntries(
    Object.entries(ra)
      .map(([k, v]) => [k, v - (rb[k] ?? 0)] as const)
      .filter(([, v]) => v !== 0),
  );
  const reconciles = Object.values(reconcilesByController).reduce((a, b) => a + b, 0);
  const requests = audit.total - leases;
  return {
    requestsInWindow: requests,
    leaseRequestsInWindow: leases,
    reconcilesInWindow: reconciles,
    requestsPerReconcile: reconciles ? Math.round((requests / reconciles) * 100) / 100 : null,
    probeCsrApprovedMs: approvedMs ?? null,
    // prom-client resets its event-loop delay histogram on every scrape: `after` holds the max since `before`.
    eventLoopLagMaxMs: lagMs(after),
    byVerbResource: audit.byVerbResource,
    lists: audit.lists.length,
    reconcilesByController,
  };
}

await runBench('scale', { timeoutMs: Number(args['timeout-s']) * 1000 }, async (ctx) => {
  const f = ctx.world.facts;
  await installManifests(ctx);
  await applyKarpenterAndCredentials(ctx);
  const first = await startOperator(ctx, { name: 'operator-live' });
  let live: OperatorRun | undefined = first;
  await first.waitReady();
  await waitConverged(ctx);
  ctx.log('converged at size 0');
  let shadows: Array<{ shadow: Shadow; run: OperatorRun; memory: Record<string, unknown> }> = [];

  const ec2 = new EC2Client(ctx.cluster.ec2Config());
  ctx.onCleanup(() => ec2.destroy());
  const subnet = await ec2.send(
    new CreateSubnetCommand({
      VpcId: ctx.world.ec2!.vpcId,
      CidrBlock: '10.0.64.0/20',
      AvailabilityZone: f.zones[0]!,
      TagSpecifications: [
        {
          ResourceType: 'subnet',
          Tags: [
            { Key: 'Name', Value: `${f.infraId}-bench-${f.zones[0]}` },
            { Key: f.clusterTagKey, Value: 'owned' },
          ],
        },
      ],
    }),
  );
  const amiCopies: string[] = [];
  for (let k = 0; k < 2; k++)
    amiCopies.push(
      (await ec2.send(new CopyImageCommand({ SourceImageId: f.amis.x86_64, SourceRegion: f.region, Name: `rhcos-scale-${k}` }))).ImageId!,
    );
  const probe: Probe = {
    ec2,
    subnetId: subnet.Subnet!.SubnetId!,
    amiCopies,
    bootstrapper: await ctx.cluster.kubeConfigFor(MCO_NS, 'node-bootstrapper', { expirationSeconds: 4 * 3600 }),
  };
  const keys = (await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, [
    'sign',
    'verify',
  ])) as webcrypto.CryptoKeyPair;

  const deadline = Date.now() + BUDGET_MS;
  const results: Array<Record<string, unknown> & { size: number }> = [];
  let have = 0;
  let skipped: number[] = [];
  for (const [step, size] of SIZES.entries()) {
    if (size > have) {
      if (Date.now() > deadline) {
        skipped = SIZES.slice(step);
        ctx.log(`time budget spent: sizes ${skipped.join(', ')} not measured`);
        break;
      }
      ctx.log(`size ${size}: creating ${size - have} Nodes, NodeClaims and approved CSRs (concurrency ${CONCURRENCY})`);
      const c = await createObjects(ctx, have, size, deadline, keys);
      ctx.log(`size ${size}: ${c.count - have} of each created in ${c.seconds} s (${c.requests} requests)`);
      results.push({
        size: c.count,
        requestedSize: size,
        creation: { seconds: c.seconds, requests: c.requests, requestsPerSecond: Math.round(c.requests / c.seconds) },
      } as never);
      have = c.count;
    } else {
      results.push({ size, requestedSize: size });
    }
    const row = results[results.length - 1]!;
    ctx.log(`size ${row.size}: settling ${SETTLE_MS / 1000} s`);
    await sleep(SETTLE_MS);
    if (!live) break;
    const liveMem = await memory(live).catch(() => undefined);
    // The shadows saw the same objects arrive: measured beside the leader, then stopped before it is.
    for (const s of shadows) {
      s.memory[String(row.size)] = await memory(s.run).catch((e: Error) => ({ error: (e as Error).message }));
      ctx.log(`size ${row.size}: shadow ${s.shadow.name} ${JSON.stringify(s.memory[String(row.size)])}`);
      await s.run.stop();
    }
    if (shadows.length)
      Object.assign(row, { shadows: Object.fromEntries(shadows.map((s) => [s.shadow.name, { ...s.shadow, memory: s.memory }])) });
    shadows = [];
    const liveObjects = liveMem ? byLabel(await live.metrics(), 'karpenter_operator_informer_objects', 'kind') : undefined;
    if (!live.proc.isRunning()) {
      const exit = await live.proc.exited;
      ctx.log(`size ${row.size}: the running operator exited (${exit}) while the objects were created`);
      Object.assign(row, { liveExited: { exit, lease: leaseTimeline(ctx, live), logTail: tailLog(live.proc.logFile, 4).split('\n') } });
    }
    // A fresh process at this size: what a restart (or a new leader) costs.
    await live.stop();
    // A Deployment restarts an operator that exits; so does this benchmark, twice at most, and reports why.
    const failures: unknown[] = [];
    let fresh: OperatorRun | undefined;
    for (let attempt = 1; attempt <= 3 && !fresh; attempt++) {
      const candidate = await startOperator(ctx, { name: `operator-${row.size}${attempt > 1 ? `-${attempt}` : ''}` });
      try {
        const readyAt = await candidate.waitReady(180_000);
        await waitConverged(ctx);
        const freshReadyMs = readyAt - candidate.spawnedAt;
        await sleep(SETTLE_MS);
        const freshMem = await memory(candidate);
        ctx.log(
          `size ${row.size}: live ${JSON.stringify(liveMem)}, fresh ${JSON.stringify(freshMem)}; trigger + ${WINDOW_MS / 1000} s window`,
        );
        // Twice: the first kubelet CSR after a start pays for the process's first look at the cluster's CSRs.
        const window = await triggerWindow(ctx, candidate, probe, 2 * step);
        ctx.log(
          `size ${row.size}: ${JSON.stringify({ requests: window.requestsInWindow, reconciles: window.reconcilesInWindow, perReconcile: window.requestsPerReconcile, approvedMs: window.probeCsrApprovedMs, lagMaxMs: window.eventLoopLagMaxMs })}`,
        );
        const windowWarm = await triggerWindow(ctx, candidate, probe, 2 * step + 1);
        ctx.log(
          `size ${row.size}: warm ${JSON.stringify({ requests: windowWarm.requestsInWindow, reconciles: windowWarm.reconcilesInWindow, perReconcile: windowWarm.requestsPerReconcile, approvedMs: windowWarm.probeCsrApprovedMs, lagMaxMs: windowWarm.eventLoopLagMaxMs })}`,
        );
        Object.assign(row, {
          memory: freshMem,
          memoryLive: liveMem,
          freshReadyMs,
          freshLease: leaseTimeline(ctx, candidate),
          informerObjects: liveObjects,
          window,
          windowWarm,
        });
        fresh = candidate;
      } catch (e) {
        if (candidate.proc.isRunning()) throw e;
        const exit = await candidate.proc.exited;
        const failure = {
          attempt,
          exit,
          error: (e as Error).message.split('\n')[0],
          lease: leaseTimeline(ctx, candidate),
          logTail: tailLog(candidate.proc.logFile, 4).split('\n'),
        };
        ctx.log(`size ${row.size}: the fresh operator exited (${exit}): ${JSON.stringify(failure.lease)}`);
        failures.push(failure);
      }
    }
    if (failures.length) Object.assign(row, { freshFailures: failures });
    if (!fresh) {
      ctx.log(`size ${row.size}: no fresh operator survived 3 starts; stopping here`);
      Object.assign(row, { memoryLive: liveMem, informerObjects: liveObjects });
      live = undefined;
      break;
    }
    live = fresh; // the next size's objects stream into this one
    if (step === 0 && SIZES.length > 1 && SHADOWS.length) {
      // Followers, started once this process leads: they sync their caches and watch, never reconcile.
      for (const shadow of SHADOWS)
        shadows.push({ shadow, run: await startOperator(ctx, { ...shadow, name: `shadow-${shadow.name}` }), memory: {} });
      for (const s of shadows) await s.run.waitReady(180_000);
      await sleep(SETTLE_MS);
      for (const s of shadows) {
        s.memory[String(row.size)] = await memory(s.run);
        ctx.log(`size ${row.size}: shadow ${s.shadow.name} ${JSON.stringify(s.memory[String(row.size)])}`);
      }
    }
  }
  await live?.stop();

  const base = results[0]!;
  const num = (r: Record<string, unknown>, path: string[]) =>
    path.reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], r) as number;
  const ratios = results.map((r) => ({
    size: r.size,
    rss: ratio(num(r, ['memory', 'rssMiB']), num(base, ['memory', 'rssMiB'])),
    heapUsed: ratio(num(r, ['memory', 'heapUsedMiB']), num(base, ['memory', 'heapUsedMiB'])),
    rssLive: ratio(num(r, ['memoryLive', 'rssMiB']), num(base, ['memoryLive', 'rssMiB'])),
    requestsPerReconcile: ratio(num(r, ['window', 'requestsPerReconcile']), num(base, ['window', 'requestsPerReconcile'])),
    requestsInWindow: ratio(num(r, ['window', 'requestsInWindow']), num(base, ['window', 'requestsInWindow'])),
    requestsPerReconcileWarm: ratio(num(r, ['windowWarm', 'requestsPerReconcile']), num(base, ['windowWarm', 'requestsPerReconcile'])),
    probeCsrApprovedMs: ratio(num(r, ['window', 'probeCsrApprovedMs']), num(base, ['window', 'probeCsrApprovedMs'])),
    probeCsrApprovedMsWarm: ratio(num(r, ['windowWarm', 'probeCsrApprovedMs']), num(base, ['windowWarm', 'probeCsrApprovedMs'])),
    freshReadyMs: ratio(num(r, ['freshReadyMs']), num(base, ['freshReadyMs'])),
  }));
  // The fresh start per size: the first kubelet CSR's wait, its ratio to size 0, and the longest event-loop
  // stall of the fresh process, from its start to the end of the settle (startup) and in that CSR's window.
  const freshStart = results.map((r) => ({
    size: r.size,
    csrWaitMs: num(r, ['window', 'probeCsrApprovedMs']) ?? null,
    csrWaitVsSize0: ratio(num(r, ['window', 'probeCsrApprovedMs']), num(base, ['window', 'probeCsrApprovedMs'])),
    eventLoopLagMaxMs: {
      startup: num(r, ['memory', 'eventLoopLagMaxMs']) ?? null,
      window: num(r, ['window', 'eventLoopLagMaxMs']) ?? null,
      windowWarm: num(r, ['windowWarm', 'eventLoopLagMaxMs']) ?? null,
    },
    rssMiB: { fresh: num(r, ['memory', 'rssMiB']) ?? null, live: num(r, ['memoryLive', 'rssMiB']) ?? null },
  }));
  for (const f of freshStart) ctx.log(`fresh start at ${f.size}: ${JSON.stringify(f)}`);
  const lags = freshStart.flatMap((f) => Object.values(f.eventLoopLagMaxMs));
  const last = results[results.length - 1]!;
  const lastRatio = ratios[ratios.length - 1]!;
  return {
    sizes: results.map((r) => r.size),
    requestedSizes: SIZES,
    skippedSizes: skipped,
    concurrency: CONCURRENCY,
    windowS: WINDOW_MS / 1000,
    perSize: results,
    ratiosVsSize0: ratios,
    freshStart,
    targets: {
      [`rssAt${last.size}Within2xOfSize0`]:
        lastRatio.rss !== null && lastRatio.rss <= 2 && lastRatio.rssLive !== null && lastRatio.rssLive <= 2,
      [`firstCsrAt${last.size}Within2xOfSize0`]: lastRatio.probeCsrApprovedMs !== null && lastRatio.probeCsrApprovedMs <= 2,
      eventLoopLagMaxUnder100MsAtEverySize: lags.every((l) => l !== null && l < 100),
      requestsPerReconcileIndependentOfSize: ratios.every((r) => r.requestsPerReconcile !== null && r.requestsPerReconcile <= 1.5),
      zeroListsInWindows: results.every((r) => num(r, ['window', 'lists']) === 0 && num(r, ['windowWarm', 'lists']) === 0),
    },
    notes: [
      'memory: fresh operator process started at that size, after convergence and a settle; memoryLive: the process that watched the objects arrive.',
      'Nodes are not simulated by KWOK (no heartbeats): kube-controller-manager marks them NotReady/unreachable once, a burst of Node updates the operator watches.',
      "window: requests = the operator's audit events received in the window, leases excluded; reconciles = delta of karpenter_operator_reconcile_total.",
      'requestsPerReconcileIndependentOfSize: ratio vs size 0 at most 1.5 at every size.',
      'window: the first trigger after the fresh process converged; windowWarm: the same trigger again on that process. probeCsrApprovedMs: probe CSR created → admin GET shows it Approved (polled every 200 ms).',
      'eventLoopLagMaxMs: nodejs_eventloop_lag_max_seconds of the operator (perf_hooks.monitorEventLoopDelay while the loop is busy, the active time of the loop as an upper bound while it is quiet: EventLoopLag; reset on every scrape): startup = the fresh process from spawn through convergence and the settle; window = the trigger window of the first kubelet CSR after the start.',
    ],
  };
});
