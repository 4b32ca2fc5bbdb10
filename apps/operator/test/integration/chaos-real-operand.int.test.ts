import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Instance } from '@aws-sdk/client-ec2';
import {
  aNodePool,
  aPoolWorkload,
  applyObject,
  deleteObject,
  getObject,
  instancesOfPool,
  karpenterBinary,
  listObjects,
  loadToolchain,
  startOpenShiftAwsCluster,
  startRealOperand,
  type ClusterHandle,
  type DeploymentRunner,
  type KubeletSimulator,
  type KubeObj,
  type MachineConfigOperator,
  type RealOperand,
  type SeededWorld,
} from '@karpenter-operator/testkit';
import { eventuallyWith } from '../support/eventually.js';
import {
  CLIENT_SIGNER,
  clusterInstances as instancesTagged,
  expectFleetConsistent,
  karpenterNodes as allKarpenterNodes,
  listCsrs,
  nodeClaimsOf,
  idOf,
  NODECLAIM,
  SERVING_SIGNER,
  type Csr,
  type WithConditions,
  forgeOnFirstMachine,
  nodeClassServesItsPool,
} from '../support/fleet.js';
import { clusterOperator, conditionOf } from '../support/k8s.js';
import {
  ensureBuilt,
  installManifests,
  OPERATOR_NS,
  RELEASE,
  REPO,
  startOperator,
  type OperatorProcess,
} from '../support/operator-process.js';
import { applyKarpenterAndCredentials, KARPENTER } from '../support/scenario.js';

/**
 * Chaos on the real-operand harness: two operator replicas (leader election) under install/'s RBAC, the real
 * Karpenter controller running the Deployment the operator rendered, the real machine-config-controller/-server,
 * the EC2 emulator and simulated kubelets. A workload of 10 pods, one per node (hostname anti-affinity), scales
 * up (later rounds: down to 5 and up again) while the harness SIGKILLs, at a seeded random moment, the operator
 * leader, a Karpenter process, both at once, or stops the kube-apiserver for 10–30 s. A killed process comes
 * back as its Pod would (the runner restarts Karpenter; a supervisor here starts a new operator replica).
 *
 * After every round: wait (bounded) for the world to settle, then check each invariant once — pods Running,
 * instance ↔ NodeClaim ↔ Node one-to-one, one approval per node's client CSR, no forged CSR approved, the operand
 * Deployment and EC2NodeClass default as the operator renders them, ClusterOperator Available and not Degraded.
 *
 * `CHAOS_ROUNDS` (default 4: every kill kind once) and `CHAOS_SEED` (default: the clock, printed) choose the run.
 */
const ROUNDS = Math.max(1, Math.min(40, Number(process.env.CHAOS_ROUNDS ?? 4)));
const SEED = Number(process.env.CHAOS_SEED ?? Date.now() % 2 ** 31) >>> 0;
const KINDS = ['operator-leader', 'karpenter', 'both', 'apiserver'] as const;
type KillKind = (typeof KINDS)[number];

const POOL = 'chaos';
const WORKLOAD_NS = 'chaos-real-operand';
const REPLICAS = 10;
const INSTANCE_TYPES = ['m6i.large', 'm5.large'];
const NC = ['karpenter.k8s.aws/v1', 'EC2NodeClass'] as const;
/** What the operator replicas run with besides the harness defaults (also what `render` is given). */
const OPERATOR_ENV = {
  OPERATOR_IMAGE: 'quay.io/openshift/origin-karpenter-operator:test',
  LOG_LEVEL: 'info',
};
/**
 * Bounds: several times what a loaded two-core machine needed (see the figures this file prints and
 * docs/testing.md): a round settles in 60–200 s, teardown in 30–90 s.
 */
const SETTLE_MS = 720_000;
const ROUND_TIMEOUT_MS = 1_200_000;

/** mulberry32: a small seeded generator, so a failing run can be replayed with its seed. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rnd = seeded(SEED);
const between = (lo: number, hi: number) => Math.round(lo + rnd() * (hi - lo));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let cluster: ClusterHandle;
let world: SeededWorld;
let mco: MachineConfigOperator;
let operand: RealOperand | undefined;
let runner: DeploymentRunner | undefined;
let kubelets: KubeletSimulator | undefined;
let runnerDir: string | undefined;
const kc = () => cluster.kubeConfig();

/** The two operator replicas, as a ReplicaSet keeps them: a slot whose process exited gets a new one. */
const slots: Array<OperatorProcess | undefined> = [undefined, undefined];
const allOps: OperatorProcess[] = [];
let supervising = true;
let supervisor: Promise<void> | undefined;
let replicaSeq = 0;
const harnessLog: string[] = [];
const note = (line: string) => harnessLog.push(`${new Date().toISOString()} ${line}`);

const figures = {
  seed: SEED,
  rounds: ROUNDS,
  kills: { 'operator-leader': 0, karpenter: 0, 'apiserver-outages': 0 } as Record<string, number>,
  operatorExitsUnplanned: 0,
  recoveryMsPerRound: [] as number[],
  apiserverDownMs: [] as number[],
  instancesLaunched: 0,
  clientCsrsApproved: 0,
  servingCsrsApproved: 0,
  wallMs: 0,
};
const t0 = Date.now();
/** Processes SIGKILLed on purpose (their exit is not "unplanned"). */
const killedOnPurpose = new WeakSet<OperatorProcess>();
/** Every instance id a NodeClaim ever named (for "instances launched"). */
const launched = new Set<string>();
/** Instances tagged for this cluster before Karpenter ran (none expected; named in the figures if any). */
let preexisting = new Set<string>();

function startSupervisor(): void {
  supervisor = (async () => {
    while (supervising) {
      for (let i = 0; i < slots.length; i++) {
        const p = slots[i];
        if (p && !p.exited()) continue;
        if (p && !killedOnPurpose.has(p)) {
          figures.operatorExitsUnplanned++;
          note(`operator ${i} exited unplanned: ${p.logs().split('\n').slice(-4).join(' | ')}`);
        }
        slots[i] = undefined;
        const name = `chaos-operator-${i}-${replicaSeq++}`;
        try {
          const np = await startOperator(cluster, {
            name,
            env: { ...OPERATOR_ENV, OPERAND_AWS_ENDPOINT_URL_EC2: cluster.info.ec2Endpoint! },
          });
          allOps.push(np);
          slots[i] = np;
          note(`operator ${name} started`);
        } catch (e) {
          // The API server may be down (a round's outage): the ReplicaSet would retry too.
          note(`operator ${name} did not start: ${(e as Error).message.split('\n')[0]}`);
        }
      }
      await sleep(1000);
    }
  })();
}

const alive = () => slots.filter((p): p is OperatorProcess => !!p && !p.exited());
const operatorLeader = () => alive().find((p) => p.logs().includes('"became leader"'));

type Pod = KubeObj & { spec: { nodeName?: string }; status?: { phase?: string } };
const nodeClaims = () => nodeClaimsOf(cluster, POOL);
const karpenterNodes = () => allKarpenterNodes(cluster);
const workloadPods = () => listObjects<Pod>(kc(), 'v1', 'Pod', WORKLOAD_NS, 'app=inflate');
const setReplicas = (replicas: number) =>
  applyObject(kc(), aPoolWorkload('inflate', WORKLOAD_NS, { pool: POOL, replicas, cpu: '1', memory: '1Gi', oneNodeEach: true }));

/** The emulator's pending/running instances tagged for this cluster, not counting those there before Karpenter ran. */
const clusterInstances = () => instancesTagged(cluster, world.facts.clusterTagKey, preexisting);

async function diagnostics(): Promise<string> {
  const claims = await nodeClaims().catch(() => [] as WithConditions[]);
  const instances = await clusterInstances().catch(() => [] as Instance[]);
  return [
    `NodeClaims:\n${
      claims
        .map(
          (c) =>
            `  ${c.metadata.name} providerID=${c.status?.providerID ?? '-'} node=${c.status?.nodeName ?? '-'}${c.metadata.deletionTimestamp ? ' deleting' : ''} ` +
            (c.status?.conditions ?? []).map((x) => `${x.type}=${x.status}${x.reason ? `(${x.reason})` : ''}`).join(' '),
        )
        .join('\n') || '  none'
    }`,
    `instances: ${instances.map((i) => `${i.InstanceId}(${i.State?.Name})`).join(' ') || 'none'}`,
    `simulated kubelets:\n${(kubelets?.kubelets() ?? []).map((k) => `  ${k.nodeClaim} ${k.phase} ${k.nodeName ?? ''} client=${k.clientCsr ?? '-'} ${k.error ?? ''}`).join('\n') || '  none'}`,
    `operators: ${slots.map((p) => (p ? (p.exited() ? 'exited' : operatorLeader() === p ? 'leader' : 'standby') : 'none')).join(', ')}`,
    `harness log:\n${harnessLog.slice(-30).join('\n')}`,
    `operand replicas: ${JSON.stringify(runner?.replicas().map((r) => ({ pod: r.pod, state: r.state, restarts: r.restarts })) ?? [])}`,
    `operand logs:\n${runner?.logTails(15) ?? '(runner not started)'}`,
    `operator log tail:\n${operatorLeader()?.logs().split('\n').slice(-15).join('\n') ?? '(no leader)'}`,
  ].join('\n');
}

const eventually = eventuallyWith({ processes: [], diagnostics, intervalMs: 2000 });

/** What the operator renders for this cluster: `karpenter-operator render` over the live inputs, as the replicas run. */
function renderedNow(inputs: KubeObj[]): KubeObj[] {
  const dir = mkdtempSync(join(tmpdir(), 'ko-chaos-render-'));
  try {
    writeFileSync(join(dir, 'cluster.json'), JSON.stringify({ apiVersion: 'v1', kind: 'List', items: inputs }));
    const r = spawnSync(process.execPath, [join(REPO, 'apps/operator/dist/main.js'), 'render', '--from', dir, '--output', 'json'], {
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
      timeout: 120_000,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        RELEASE_VERSION: RELEASE,
        KARPENTER_IMAGE_AWS: 'quay.io/openshift/origin-aws-karpenter-provider-aws:test',
        OPERAND_AWS_ENDPOINT_URL_EC2: cluster.info.ec2Endpoint!,
        ...OPERATOR_ENV,
      },
    });
    if (r.status !== 0) throw new Error(`render exited ${r.status}: ${r.stderr}`);
    return (JSON.parse(r.stdout) as { items: KubeObj[] }).items;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function renderInputs(): Promise<KubeObj[]> {
  const strip = (o: KubeObj): KubeObj => ({ ...o, metadata: { ...o.metadata, managedFields: undefined } as KubeObj['metadata'] });
  const withKind = (apiVersion: string, kind: string) => (o: KubeObj) => strip({ ...o, apiVersion, kind });
  const infra = await getObject(kc(), 'config.openshift.io/v1', 'Infrastructure', 'cluster');
  const cr = await getObject(kc(), KARPENTER.apiVersion, KARPENTER.kind, 'default');
  const machineSets = (await listObjects(kc(), 'machine.openshift.io/v1beta1', 'MachineSet', 'openshift-machine-api')).map(
    withKind('machine.openshift.io/v1beta1', 'MachineSet'),
  );
  const secrets = (await listObjects(kc(), 'v1', 'Secret', 'openshift-machine-api')).map(withKind('v1', 'Secret'));
  const boot = await getObject(kc(), 'v1', 'ConfigMap', 'coreos-bootimages', 'openshift-machine-config-operator');
  const nodes = (await listObjects(kc(), 'v1', 'Node')).map(withKind('v1', 'Node'));
  const { spec, metadata } = cr!;
  return [
    strip(infra!),
    strip({
      apiVersion: KARPENTER.apiVersion,
      kind: KARPENTER.kind,
      metadata: { name: metadata.name, uid: metadata.uid },
      spec,
    } as KubeObj),
    ...machineSets,
    ...secrets,
    ...(boot ? [strip(boot)] : []),
    ...nodes,
  ];
}

/** The fields of the operand Deployment the operator owns and a chaos run could leave wrong. */
function deploymentView(d: KubeObj | undefined) {
  const spec = d?.spec as
    { replicas?: number; template?: { spec?: { serviceAccountName?: string; containers?: Array<Record<string, unknown>> } } } | undefined;
  return {
    replicas: spec?.replicas,
    serviceAccountName: spec?.template?.spec?.serviceAccountName,
    containers: (spec?.template?.spec?.containers ?? []).map((c) => ({ name: c.name, image: c.image, args: c.args, env: c.env })),
  };
}
/** EC2NodeClass default's spec; userData is checked on its own (it follows the MCO's pool state). */
function nodeClassView(n: KubeObj | undefined) {
  const { userData, ...rest } = (n?.spec ?? {}) as { userData?: string };
  return { spec: rest, userDataMergesPool: (userData ?? '').includes('/config/karpenter-default"') };
}

let rendered: { deployment: ReturnType<typeof deploymentView>; nodeClass: ReturnType<typeof nodeClassView> } | undefined;

/** Bounded wait until the round settled; it never decides pass or fail of an invariant. */
async function settle(what: string): Promise<void> {
  await eventually(
    `${what}: ${REPLICAS} pods Running, NodeClaims = instances = Nodes, Karpenter and both operators up, ClusterOperator Available`,
    async () => {
      const pods = await workloadPods();
      if (pods.length !== REPLICAS || !pods.every((p) => p.status?.phase === 'Running' && !p.metadata.deletionTimestamp)) return false;
      const claims = await nodeClaims();
      for (const c of claims) if (idOf(c.status?.providerID)) launched.add(idOf(c.status?.providerID)!);
      if (claims.some((c) => c.metadata.deletionTimestamp || conditionOf(c, 'Ready')?.status !== 'True')) return false;
      if ((await clusterInstances()).length !== claims.length || (await karpenterNodes()).length !== claims.length) return false;
      if (runner!.replicas().filter((r) => r.state === 'running').length !== 2) return false;
      if (alive().length !== 2 || !operatorLeader()) return false;
      const co = await clusterOperator(cluster);
      return conditionOf(co, 'Available')?.status === 'True' && conditionOf(co, 'Degraded')?.status === 'False';
    },
    SETTLE_MS,
  );
}

/** Every invariant, checked once; each failure names the object. */
async function checkInvariants(when: string): Promise<void> {
  const pods = await workloadPods();
  for (const p of pods) expect(p.status?.phase, `${when}: Pod ${p.metadata.name}`).toBe('Running');
  expect(pods, `${when}: pods of the workload`).toHaveLength(REPLICAS);

  await expectFleetConsistent(
    {
      cluster,
      clusterTagKey: world.facts.clusterTagKey,
      pool: POOL,
      preexisting,
      forged: (kubelets?.kubelets() ?? []).flatMap((k) => k.forgedCsrs),
    },
    when,
  );

  const dep = await getObject(kc(), 'apps/v1', 'Deployment', 'karpenter', OPERATOR_NS);
  expect(deploymentView(dep), `${when}: Deployment ${OPERATOR_NS}/karpenter as rendered`).toEqual(rendered!.deployment);
  const nc = await getObject(kc(), ...NC, 'default');
  expect(nodeClassView(nc), `${when}: EC2NodeClass default as rendered`).toEqual(rendered!.nodeClass);
  expect(nc?.metadata.deletionTimestamp, `${when}: EC2NodeClass default deleting`).toBeUndefined();

  const co = await clusterOperator(cluster);
  expect(
    { available: conditionOf(co, 'Available')?.status, degraded: conditionOf(co, 'Degraded')?.status },
    `${when}: ClusterOperator karpenter ${JSON.stringify((co?.status as { conditions?: unknown })?.conditions)}`,
  ).toEqual({ available: 'True', degraded: 'False' });
}

/** SIGKILL the Karpenter process holding its lease (another running one when none does yet). */
function killKarpenter(): string {
  const running = runner!.replicas().filter((r) => r.state === 'running' && r.pid);
  const leading = running.find((r) => /"message":"Successfully acquired lease"/.test(readFileSync(r.logFile, 'utf8')));
  const victim = leading ?? running[between(0, running.length - 1)];
  if (!victim) return 'no Karpenter process running';
  process.kill(victim.pid!, 'SIGKILL');
  figures.kills.karpenter!++;
  return `Karpenter ${victim.pod} (pid ${victim.pid}${leading ? ', lease holder' : ''})`;
}

async function killOperatorLeader(): Promise<string> {
  const leader = operatorLeader();
  const victim = leader ?? alive()[0];
  if (!victim) return 'no operator running';
  killedOnPurpose.add(victim);
  const slot = slots.indexOf(victim);
  await victim.kill();
  figures.kills['operator-leader']!++;
  return `operator ${slot}${leader ? ' (leader)' : ' (no leader yet)'}`;
}

async function chaos(kind: KillKind): Promise<void> {
  if (kind === 'apiserver') {
    const downMs = between(10_000, 30_000);
    const at = Date.now();
    await cluster.stopApiServer();
    await sleep(downMs);
    await cluster.startApiServer();
    figures.kills['apiserver-outages']!++;
    figures.apiserverDownMs.push(Date.now() - at);
    note(`kube-apiserver down ${Date.now() - at} ms (${downMs} ms after its stop)`);
    return;
  }
  const what: string[] = [];
  if (kind === 'operator-leader' || kind === 'both') what.push(await killOperatorLeader());
  if (kind === 'karpenter' || kind === 'both') what.push(killKarpenter());
  note(`SIGKILL ${what.join(' + ')}`);
}

describe(`chaos on the real operand: ${ROUNDS} rounds of kills while 10 nodes provision`, () => {
  beforeAll(async () => {
    console.log(`chaos-real-operand: seed ${SEED} (CHAOS_SEED=${SEED} replays it), ${ROUNDS} rounds`);
    const binary = karpenterBinary(loadToolchain());
    ensureBuilt();
    const started = await startOpenShiftAwsCluster({ machineConfig: 'real' });
    ({ cluster, world } = started);
    mco = started.mco!;
    await installManifests(cluster);
    preexisting = new Set((await clusterInstances()).map((i) => i.InstanceId!));
    startSupervisor();
    runnerDir = mkdtempSync(join(tmpdir(), 'ko-chaos-real-operand-'));
    operand = startRealOperand({
      cluster,
      karpenterBinary: binary,
      operatorEntry: join(REPO, 'apps/operator/dist/main.js'),
      baseDir: runnerDir,
      log: note,
      kubelets: {
        machineConfigServer: mco.server,
        forgeCsr: forgeOnFirstMachine(),
      },
    });
    ({ runner, kubelets } = operand);
    await applyObject(kc(), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: WORKLOAD_NS } });
    await applyKarpenterAndCredentials(cluster, {});
    await eventually(
      'two operand replicas running the real controller',
      async () => runner!.replicas().filter((r) => r.state === 'running').length === 2,
      480_000,
    );
    await eventually(
      'EC2NodeClass default Ready and merging /config/karpenter-default',
      () => nodeClassServesItsPool(cluster, 'default'),
      480_000,
    );
    const out = renderedNow(await renderInputs());
    const pick = (kind: string, name: string) => out.find((o) => o.kind === kind && o.metadata.name === name);
    rendered = { deployment: deploymentView(pick('Deployment', 'karpenter')), nodeClass: nodeClassView(pick('EC2NodeClass', 'default')) };
    // Offline render merges /config/worker until it sees the pool served; the live object has moved on (checked above).
    rendered.nodeClass.userDataMergesPool = true;
    expect(rendered.deployment.containers.length, 'the rendered operand has containers').toBeGreaterThan(0);
    await applyObject(kc(), aNodePool(POOL, { arch: 'amd64', instanceTypes: INSTANCE_TYPES }));
    await setReplicas(0);
  }, 900_000);

  afterAll(async () => {
    supervising = false;
    await supervisor;
    await deleteObject(kc(), 'v1', 'Namespace', WORKLOAD_NS).catch(() => false);
    await deleteObject(kc(), 'karpenter.sh/v1', 'NodePool', POOL).catch(() => false);
    await operand?.stop();
    for (const p of allOps) await p.stop();
    await cluster?.stop();
    if (runnerDir && process.env.KO_KEEP_CLUSTER !== '1') rmSync(runnerDir, { recursive: true, force: true });
    figures.wallMs = Date.now() - t0;
    console.log(`chaos-real-operand: ${JSON.stringify(figures)}`);
  }, 180_000);

  for (let round = 0; round < ROUNDS; round++) {
    it(
      `round ${round + 1}: ${KINDS[round % KINDS.length]} at a random moment while scaling; every invariant holds once settled`,
      async () => {
        const kind = KINDS[round % KINDS.length]!;
        const from = Date.now();
        if (round > 0) {
          // Down to half, then up again after a random pause: the kill lands during consolidation or provisioning.
          await setReplicas(REPLICAS / 2);
          const pause = between(0, 40_000);
          const killAt = between(0, pause + 20_000);
          const k = (async () => {
            await sleep(killAt);
            await chaos(kind);
          })();
          await sleep(pause);
          await setReplicas(REPLICAS).catch(async () => {
            // The API server may be down right now: apply once it is back.
            await eventually('the workload scaled up again', () => setReplicas(REPLICAS).then(() => true), 120_000);
          });
          await k;
        } else {
          await setReplicas(REPLICAS);
          await sleep(between(0, 20_000));
          await chaos(kind);
        }
        const chaosDone = Date.now();
        await settle(`round ${round + 1} (${kind})`);
        figures.recoveryMsPerRound.push(Date.now() - chaosDone);
        note(`round ${round + 1}: ${kind}, settled ${Date.now() - chaosDone} ms after the chaos (${Date.now() - from} ms in all)`);
        await checkInvariants(`round ${round + 1} (${kind})`);
      },
      ROUND_TIMEOUT_MS,
    );
  }

  it('scaled to 0 and the Karpenter CR deleted: no NodeClaim, Karpenter Node, NodePool, operand or instance left', async () => {
    const csrs = await listCsrs(cluster);
    const approved = (c: Csr) => conditionOf(c, 'Approved')?.status === 'True';
    figures.clientCsrsApproved = csrs.filter((c) => c.spec.signerName === CLIENT_SIGNER && approved(c)).length;
    figures.servingCsrsApproved = csrs.filter((c) => c.spec.signerName === SERVING_SIGNER && approved(c)).length;
    figures.instancesLaunched = new Set([...launched, ...(kubelets?.kubelets() ?? []).map((k) => k.instanceId)]).size;

    await setReplicas(0);
    await eventually('the NodeClaims of the pool gone', async () => (await nodeClaims()).length === 0, 600_000);
    await eventually(
      'no instance of the pool left running in the emulator',
      async () => (await instancesOfPool(cluster, POOL)).length === 0,
      180_000,
    );

    await deleteObject(kc(), KARPENTER.apiVersion, KARPENTER.kind, 'default');
    await eventually(
      'the Karpenter CR gone',
      async () => (await getObject(kc(), KARPENTER.apiVersion, KARPENTER.kind, 'default')) === undefined,
      400_000,
    );
    expect(await listObjects(kc(), 'karpenter.sh/v1', 'NodePool')).toEqual([]);
    expect((await listObjects(kc(), ...NODECLAIM)).map((c) => c.metadata.name)).toEqual([]);
    expect((await karpenterNodes()).map((n) => n.metadata.name)).toEqual([]);
    await eventually('no instance of this cluster left in the emulator', async () => (await clusterInstances()).length === 0, 180_000);
    await eventually(
      'the operand Deployment gone and its processes stopped',
      async () => !(await getObject(kc(), 'apps/v1', 'Deployment', 'karpenter', OPERATOR_NS)) && runner!.replicas().length === 0,
      180_000,
    );
  }, 1_200_000);
});
