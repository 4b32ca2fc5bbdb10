import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import {
  aNodePool,
  aPoolWorkload,
  applyObject,
  deleteObject,
  getObject,
  instancesOfPool as instancesOf,
  karpenterBinary,
  listObjects,
  loadToolchain,
  spotInterruptionWarning,
  startOpenShiftAwsCluster,
  startRealOperand,
  type ClusterHandle,
  type DeploymentRunner,
  type ForgedCsr,
  type KubeletSimulator,
  type KubeObj,
  type MachineConfigOperator,
  type RealOperand,
  type SeededWorld,
} from '@karpenter-operator/testkit';
import { eventuallyWith } from '../support/eventually.js';
import { adminRequest, conditionOf, type Cond } from '../support/k8s.js';
import { ensureBuilt, installManifests, OPERATOR_NS, REPO, startOperator, type OperatorProcess } from '../support/operator-process.js';
import { applyKarpenterAndCredentials, KARPENTER } from '../support/scenario.js';

/**
 * The whole point of Karpenter on OpenShift, end to end, with the real karpenter-provider-aws controller
 * (built from its Go module by `npm run setup`) running the Deployment the operator rendered, under the
 * RBAC the operator applied: a pending pod becomes a Ready node, that node goes away when it is no longer
 * needed, a spot interruption warning on the CR's interruption queue replaces it, and deleting the Karpenter
 * CR leaves nothing behind. EC2 and SQS are the emulator; machines are simulated kubelets that boot from what
 * the real machine-config-server serves for their NodeClass's pool (rendered by the real
 * machine-config-controller) and bootstrap through the node-bootstrapper CSR the operator approves. A cluster
 * of its own: MCO's controllers would otherwise act on every other file's pools.
 *
 * Time bounds are several times what a loaded two-core machine needed (load average 14: Karpenter up and the
 * NodeClass Ready in 110–153 s, pod pending → Running 7–14 s, a new log level until a new process leads 139 s,
 * consolidation 41–93 s, CR teardown 23–33 s, interruption message → replacement Ready 13 s).
 *
 * Karpenter's registration deadline is `registrationTimeout = time.Minute * 15`, an unexported constant of
 * sigs.k8s.io/karpenter v1.14.1 (pkg/controllers/nodeclaim/lifecycle/liveness.go): no flag or env shortens it,
 * so the withheld-CSR case asserts what is visible well before it and does what Karpenter does at it.
 */
let cluster: ClusterHandle;
let world: SeededWorld;
let mco: MachineConfigOperator;
const kc = () => cluster.kubeConfig();
const OPERAND_USER = `system:serviceaccount:${OPERATOR_NS}:karpenter`;
const POOL = 'e2e';
const INSTANCE_TYPES = ['m6i.large', 'm6i.xlarge', 'm5.large', 'm5.xlarge'];
/** A pool whose machines never send their client CSR. */
const WITHHELD_POOL = 'e2e-withheld';
/** Karpenter v1.14.1's registration deadline (a constant, see above). */
const REGISTRATION_TIMEOUT_MS = 15 * 60_000;
const WORKLOAD_NS = 'e2e-real-operand';
const NC = ['karpenter.k8s.aws/v1', 'EC2NodeClass'] as const;
const NODECLAIM = ['karpenter.sh/v1', 'NodeClaim'] as const;
/** The CR's `spec.settings.interruptionQueue`: a queue of the emulator's SQS, created before the CR. */
const QUEUE = `e2e-interruption-${Date.now()}`;
const started = new Date();

/** Client CSRs for the first machine's node name that its kubelet would never send, and why the operator leaves each. */
const FORGED: Array<{ csr: ForgedCsr; reason: string }> = [
  { csr: { request: { organizations: ['system:nodes', 'system:masters'] } }, reason: 'InvalidOrganization' },
  { csr: { usages: ['digital signature', 'client auth', 'server auth'] }, reason: 'UnexpectedUsages' },
  { csr: { request: { ipAddresses: ['10.0.250.250'] } }, reason: 'UnexpectedSubjectAltNames' },
  { csr: { requester: 'admin' }, reason: 'UnexpectedRequester' },
];

type WithConditions = KubeObj & { status?: { conditions?: Cond[]; providerID?: string; nodeName?: string } };

let op: OperatorProcess | undefined;
let operand: RealOperand | undefined;
let runner: DeploymentRunner | undefined;
let kubelets: KubeletSimulator | undefined;
let runnerDir: string | undefined;
const forgedFor = new Set<string>();
/** What the runner and the simulated kubelets reported, newest last (for failure messages). */
const harnessLog: string[] = [];
const note = (who: string) => (line: string) => harnessLog.push(`${new Date().toISOString()} ${who}: ${line}`);

/** What a failed wait says besides its own message: the operand's log, NodeClaims, simulated kubelets. */
async function diagnostics(): Promise<string> {
  const claims = await listObjects<WithConditions>(kc(), ...NODECLAIM).catch(() => [] as WithConditions[]);
  const claimLines = claims.map(
    (c) =>
      `  ${c.metadata.name} providerID=${c.status?.providerID ?? '-'} node=${c.status?.nodeName ?? '-'} ` +
      (c.status?.conditions ?? []).map((x) => `${x.type}=${x.status}${x.reason ? `(${x.reason})` : ''}`).join(' '),
  );
  return [
    `NodeClaims:\n${claimLines.join('\n') || '  none'}`,
    `simulated kubelets:\n${(kubelets?.kubelets() ?? []).map((k) => `  ${k.nodeClaim} ${k.phase} ${k.nodeName ?? ''} client=${k.clientCsr ?? '-'} serving=${k.servingCsr ?? '-'} forged=${k.forgedCsrs.join(',') || '-'} ${k.error ?? ''}`).join('\n') || '  none'}`,
    `harness log:\n${harnessLog.slice(-30).join('\n')}`,
    `operand crashes: ${JSON.stringify(runner?.crashes().map((c) => ({ pod: c.pod, container: c.container, exitCode: c.exitCode })) ?? [])}`,
    `operand logs:\n${runner?.logTails(25) ?? '(runner not started)'}`,
    `operator log tail:\n${op?.logs().split('\n').slice(-15).join('\n') ?? ''}`,
  ].join('\n');
}

/** `waitFor` whose failure carries the diagnostics above. */
const eventually = eventuallyWith({ processes: [{ name: 'operator', get: () => op }], diagnostics });

const nodeClaims = () => listObjects<WithConditions>(kc(), ...NODECLAIM);
const condTrue = (o: WithConditions | undefined, type: string) => conditionOf(o, type)?.status === 'True';

const instancesOfPool = (pool = POOL) => instancesOf(cluster, pool);
const ofPool = (c: KubeObj, pool = POOL) => c.metadata.labels?.['karpenter.sh/nodepool'] === pool;

const sqsClient = () => new SQSClient(cluster.ec2Config());
const queueUrl = async (sqs: SQSClient) => (await sqs.send(new GetQueueUrlCommand({ QueueName: QUEUE }))).QueueUrl!;

/** Whether a pod of the workload runs on Node `nodeName`. */
async function workloadRunningOn(nodeName: string): Promise<boolean> {
  const pods = await listObjects<KubeObj & { spec: { nodeName?: string }; status?: { phase?: string } }>(
    kc(),
    'v1',
    'Pod',
    WORKLOAD_NS,
    'app=inflate',
  );
  return pods.some((p) => p.spec.nodeName === nodeName && p.status?.phase === 'Running');
}

const setWorkloadReplicas = (replicas: number) =>
  applyObject(kc(), aPoolWorkload('inflate', WORKLOAD_NS, { pool: POOL, replicas, cpu: '1', memory: '1Gi' }));

/** The reasons of the events about the object `name` (a CSR, a NodeClaim). */
async function eventReasons(name: string): Promise<string[]> {
  const r = await adminRequest(
    cluster,
    'GET',
    `/apis/events.k8s.io/v1/events?fieldSelector=${encodeURIComponent(`regarding.name=${name}`)}`,
  );
  return ((r.body as { items?: Array<{ reason?: string }> }).items ?? []).map((e) => e.reason ?? '');
}

/** The environment and the command line of a running process (what it really runs with). */
function processOf(pid: number): { env: string[]; args: string[] } {
  const split = (f: string) => readFileSync(`/proc/${pid}/${f}`, 'utf8').split('\0').filter(Boolean);
  return { env: split('environ'), args: split('cmdline') };
}

describe('the real Karpenter provisions an OpenShift node through this operator', () => {
  beforeAll(async () => {
    // One line naming the command that builds it when it is missing: never a silent skip.
    const binary = karpenterBinary(loadToolchain());
    ensureBuilt();
    const started = await startOpenShiftAwsCluster({ machineConfig: 'real' });
    ({ cluster, world } = started);
    mco = started.mco!;
    await installManifests(cluster);
    op = await startOperator(cluster, {
      name: 'karpenter-operator-real-operand',
      env: {
        // Renders the check-credentials init container (the operator's image) into the operand Deployment.
        OPERATOR_IMAGE: 'quay.io/openshift/origin-karpenter-operator:test',
        OPERAND_AWS_ENDPOINT_URL_EC2: cluster.info.ec2Endpoint!,
        // The operator's own check of spec.settings.interruptionQueue (the operand reaches SQS through the harness env).
        AWS_ENDPOINT_URL_SQS: cluster.info.ec2Endpoint!,
        LOG_LEVEL: 'info',
      },
    });
    runnerDir = mkdtempSync(join(tmpdir(), 'ko-real-operand-'));
    operand = startRealOperand({
      cluster,
      karpenterBinary: binary,
      operatorEntry: join(REPO, 'apps/operator/dist/main.js'),
      baseDir: runnerDir,
      log: note('harness'),
      kubelets: {
        machineConfigServer: mco.server,
        withholdCsr: (_claim, labels) => labels['karpenter.sh/nodepool'] === WITHHELD_POOL,
        // The first machine also gets forged client CSRs for its instance, each wrong in one way.
        forgeCsr: (claim) => {
          if (forgedFor.size > 0 && !forgedFor.has(claim)) return undefined;
          forgedFor.add(claim);
          return FORGED.map((f) => f.csr);
        },
      },
    });
    ({ runner, kubelets } = operand);
    await applyObject(kc(), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: WORKLOAD_NS } });
    const sqs = sqsClient();
    try {
      await sqs.send(new CreateQueueCommand({ QueueName: QUEUE }));
    } finally {
      sqs.destroy();
    }
  }, 480_000);

  afterAll(async () => {
    await deleteObject(kc(), 'v1', 'Namespace', WORKLOAD_NS).catch(() => false);
    for (const pool of [POOL, WITHHELD_POOL]) await deleteObject(kc(), 'karpenter.sh/v1', 'NodePool', pool).catch(() => false);
    await operand?.stop();
    await op?.stop();
    if (cluster) {
      const sqs = sqsClient();
      await sqs
        .send(new GetQueueUrlCommand({ QueueName: QUEUE }))
        .then((r) => sqs.send(new DeleteQueueCommand({ QueueUrl: r.QueueUrl })))
        .catch(() => undefined)
        .finally(() => sqs.destroy());
      await cluster.stop();
    }
    // The operand's logs stay with the cluster's when it is kept.
    if (runnerDir && process.env.KO_KEEP_CLUSTER !== '1') rmSync(runnerDir, { recursive: true, force: true });
  }, 120_000);

  it('Karpenter CR + credentials: the operand runs the real controller and EC2NodeClass default is Ready', async () => {
    await applyKarpenterAndCredentials(cluster, { settings: { interruptionQueue: QUEUE } });
    await eventually(
      'two operand replicas running the real controller',
      async () => runner!.replicas().filter((r) => r.state === 'running').length === 2,
      360_000,
    );
    const nc = await eventually(
      'EC2NodeClass default Ready=True (all its conditions True)',
      async () => {
        const o = await getObject<WithConditions>(kc(), ...NC, 'default');
        const conds = o?.status?.conditions ?? [];
        return conds.length > 0 && conds.every((c) => c.status === 'True') && condTrue(o, 'Ready') ? o : undefined;
      },
      360_000,
    );
    // The controller's own resources through the downward API, as the kubelet resolves them: 1 CPU requested,
    // no memory limit (so the node's memory).
    for (const r of runner!.replicas().filter((x) => x.pid))
      expect(processOf(r.pid!).env, `env of ${r.pod}`).toEqual(expect.arrayContaining(['CPU_REQUESTS=1000', `MEMORY_LIMIT=${totalmem()}`]));
    expect((nc.status?.conditions ?? []).map((c) => c.type)).toEqual(
      expect.arrayContaining(['Ready', 'AMIsReady', 'SubnetsReady', 'SecurityGroupsReady', 'InstanceProfileReady']),
    );
    // Machines must boot from the NodeClass's own pool; a later rewrite would drift every node launched before it.
    await eventually(
      'the userData of EC2NodeClass default to merge from /config/karpenter-default',
      async () =>
        ((await getObject<KubeObj & { spec?: { userData?: string } }>(kc(), ...NC, 'default'))?.spec?.userData ?? '').includes(
          '/config/karpenter-default"',
        ),
      60_000,
    );
    expect(runner!.crashes()).toEqual([]);
  }, 900_000);

  it('a pod only a new node can host becomes Running on a node Karpenter launched and the operator let join', async () => {
    await applyObject(kc(), aNodePool(POOL, { arch: 'amd64', instanceTypes: INSTANCE_TYPES }));
    await setWorkloadReplicas(1);

    const launched = await eventually(
      'a NodeClaim of the pool Launched with a providerID',
      async () =>
        (await nodeClaims()).find(
          (c) => c.metadata.labels?.['karpenter.sh/nodepool'] === POOL && c.status?.providerID && condTrue(c, 'Launched'),
        ),
      240_000,
    );
    const instanceId = launched.status!.providerID!.split('/').pop()!;
    const [instance] = (await instancesOfPool()).filter((i) => i.InstanceId === instanceId);
    expect(instance, `instance ${instanceId} in the emulator`).toBeDefined();
    expect(instance!.Tags).toContainEqual({ Key: world.facts.clusterTagKey, Value: 'owned' });
    // The groups of the NodeClass, not the VPC default (else Karpenter would see SecurityGroupDrift).
    expect((instance!.SecurityGroups ?? []).map((g) => g.GroupId).sort()).toEqual(
      [world.ec2!.securityGroupIds.node, world.ec2!.securityGroupIds.lb].sort(),
    );

    const ready = await eventually(
      'the NodeClaim Registered, Initialized and Ready',
      async () => {
        const c = await getObject<WithConditions>(kc(), ...NODECLAIM, launched.metadata.name);
        return c && ['Registered', 'Initialized', 'Ready'].every((t) => condTrue(c, t)) ? c : undefined;
      },
      300_000,
    );
    const nodeName = ready.status!.nodeName!;
    const sim = kubelets!.kubelets().find((k) => k.nodeClaim === launched.metadata.name)!;
    expect(sim.nodeName).toBe(nodeName);
    expect(nodeName).toBe(instance!.PrivateDnsName!.toLowerCase());

    // The operator approved both CSRs (the forged ones for the same instance: the next test).
    await eventually(
      'the serving CSR approved',
      async () => kubelets!.kubelets().find((k) => k.nodeClaim === launched.metadata.name)?.phase === 'joined',
      120_000,
    );
    const csr = (name: string) =>
      getObject<KubeObj & { status?: { conditions?: Cond[] } }>(kc(), 'certificates.k8s.io/v1', 'CertificateSigningRequest', name);
    for (const name of [sim.clientCsr!, kubelets!.kubelets().find((k) => k.nodeClaim === launched.metadata.name)!.servingCsr!]) {
      expect(conditionOf(await csr(name), 'Approved')?.status, `CSR ${name}`).toBe('True');
    }

    const node = (await getObject<KubeObj & { spec?: { taints?: Array<{ key: string }>; providerID?: string } }>(
      kc(),
      'v1',
      'Node',
      nodeName,
    ))!;
    expect(node.spec?.providerID).toBe(launched.status!.providerID);
    expect((node.spec?.taints ?? []).map((t) => t.key)).not.toContain('karpenter.sh/unregistered');
    // MachineConfigPool karpenter-default selects it (the MCO would configure it through that pool).
    const pool = await getObject<KubeObj & { spec: { nodeSelector: { matchLabels: Record<string, string> } } }>(
      kc(),
      'machineconfiguration.openshift.io/v1',
      'MachineConfigPool',
      'karpenter-default',
    );
    for (const [k, v] of Object.entries(pool!.spec.nodeSelector.matchLabels)) expect(node.metadata.labels?.[k], `Node label ${k}`).toBe(v);

    await eventually('the workload pod Running on the new node', () => workloadRunningOn(nodeName), 120_000);
  }, 900_000);

  it('forged client CSRs for the launched instance stay pending while its real one was approved, each with the reason', async () => {
    const sim = kubelets!.kubelets().find((k) => forgedFor.has(k.nodeClaim))!;
    expect(sim.phase).toBe('joined');
    expect(sim.forgedCsrs).toHaveLength(FORGED.length);
    // The operator says why on each CSR (a Warning event); the real CSR, submitted after them, is approved.
    for (const [i, name] of sim.forgedCsrs.entries()) {
      await eventually(
        `event ${FORGED[i]!.reason} on forged CSR ${name}`,
        async () => (await eventReasons(name)).includes(FORGED[i]!.reason),
        60_000,
      );
    }
    expect(await eventReasons(sim.clientCsr!)).toContain('ClientCsrVerified');
    for (const name of [...sim.forgedCsrs, sim.clientCsr!]) {
      const o = await getObject<KubeObj & { status?: { conditions?: Cond[]; certificate?: string } }>(
        kc(),
        'certificates.k8s.io/v1',
        'CertificateSigningRequest',
        name,
      );
      if (name === sim.clientCsr) expect(conditionOf(o, 'Approved')?.status, `real CSR ${name}`).toBe('True');
      else
        expect({ name, conditions: o?.status?.conditions ?? [], certificate: o?.status?.certificate }).toEqual({
          name,
          conditions: [],
          certificate: undefined,
        });
    }
  }, 120_000);

  it('a machine whose client CSR is withheld never joins; Karpenter keeps its NodeClaim until the 15-min registration deadline', async () => {
    // Karpenter v1.14.1 deletes an unregistered NodeClaim 15 min after its Registered condition went Unknown
    // (a constant): the test sees the state before that deadline, then deletes the NodeClaim as Karpenter would.
    await applyObject(kc(), aNodePool(WITHHELD_POOL, { arch: 'amd64', instanceTypes: INSTANCE_TYPES }));
    await applyObject(kc(), aPoolWorkload('withheld', WORKLOAD_NS, { pool: WITHHELD_POOL, replicas: 1, cpu: '1', memory: '1Gi' }));
    const launched = await eventually(
      `a NodeClaim of pool ${WITHHELD_POOL} Launched with a providerID`,
      async () => (await nodeClaims()).find((c) => ofPool(c, WITHHELD_POOL) && c.status?.providerID && condTrue(c, 'Launched')),
      240_000,
    );
    const name = launched.metadata.name;
    const instanceId = launched.status!.providerID!.split('/').pop()!;
    await eventually(
      `the machine of ${name} withholding its CSR`,
      async () => kubelets!.kubelets().find((k) => k.nodeClaim === name)?.phase === 'withheld',
      60_000,
    );
    // A bounded window in which a joining machine would long have registered (pod pending → Running took 7 s).
    await new Promise((r) => setTimeout(r, 15_000));

    const claim = await getObject<WithConditions>(kc(), ...NODECLAIM, name);
    expect(claim?.metadata.deletionTimestamp, `NodeClaim ${name} still there`).toBeUndefined();
    const registered = conditionOf(claim, 'Registered') as (Cond & { lastTransitionTime?: string }) | undefined;
    expect({ status: registered?.status, reason: registered?.reason }).toEqual({ status: 'Unknown', reason: 'NodeNotFound' });
    expect(condTrue(claim, 'Initialized')).toBe(false);
    const deadline = Date.parse(registered!.lastTransitionTime!) + REGISTRATION_TIMEOUT_MS;
    console.log(
      `real-operand: NodeClaim ${name} unregistered; Karpenter's registration deadline is ${new Date(deadline).toISOString()} (${Math.round((deadline - Date.now()) / 1000)} s ahead)`,
    );
    expect(deadline).toBeGreaterThan(Date.now());
    const sim = kubelets!.kubelets().find((k) => k.nodeClaim === name)!;
    expect({ phase: sim.phase, clientCsr: sim.clientCsr }).toEqual({ phase: 'withheld', clientCsr: undefined });
    // No Node for its instance (the operator had nothing to approve), and the instance still runs, owned.
    const nodes = await listObjects<KubeObj & { spec?: { providerID?: string } }>(kc(), 'v1', 'Node');
    expect(nodes.filter((n) => n.spec?.providerID === launched.status!.providerID).map((n) => n.metadata.name)).toEqual([]);
    const [instance] = (await instancesOfPool(WITHHELD_POOL)).filter((i) => i.InstanceId === instanceId);
    expect(instance?.State?.Name, `instance ${instanceId}`).toMatch(/^(pending|running)$/);
    expect(instance!.Tags).toContainEqual({ Key: world.facts.clusterTagKey, Value: 'owned' });

    // What Karpenter does at the deadline: delete the NodeClaim; its termination then terminates the instance.
    await deleteObject(kc(), 'apps/v1', 'Deployment', 'withheld', WORKLOAD_NS);
    await deleteObject(kc(), ...NODECLAIM, name);
    await eventually(`NodeClaim ${name} gone`, async () => (await getObject(kc(), ...NODECLAIM, name)) === undefined, 180_000);
    await eventually(
      `instance ${instanceId} terminated in the emulator`,
      async () => !(await instancesOfPool(WITHHELD_POOL)).some((i) => i.InstanceId === instanceId),
      120_000,
    );
    await deleteObject(kc(), 'karpenter.sh/v1', 'NodePool', WITHHELD_POOL);
    expect(runner!.crashes()).toEqual([]);
  }, 600_000);

  it('the node stays: no drift, no replacement, no second NodeClaim over 60 s', async () => {
    const before = (await nodeClaims()).filter((c) => ofPool(c));
    expect(before).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 60_000));
    const after = (await nodeClaims()).filter((c) => ofPool(c));
    expect(after.map((c) => c.metadata.uid)).toEqual(before.map((c) => c.metadata.uid));
    expect(after[0]!.metadata.deletionTimestamp, await diagnostics()).toBeUndefined();
    expect(conditionOf(after[0], 'Drifted')?.status ?? 'False', JSON.stringify(conditionOf(after[0], 'Drifted'))).not.toBe('True');
    expect(runner!.crashes()).toEqual([]);
  }, 180_000);

  it('a spot interruption warning on the interruption queue: Karpenter taints the node, deletes its NodeClaim and replaces it', async () => {
    const cr = await getObject<WithConditions>(kc(), KARPENTER.apiVersion, KARPENTER.kind, 'default');
    expect(conditionOf(cr, 'InterruptionQueueVerified')).toMatchObject({ status: 'True', message: `SQS queue ${QUEUE} exists` });
    for (const r of runner!.replicas()) expect(processOf(r.pid!).env, `env of ${r.pod}`).toContain(`INTERRUPTION_QUEUE=${QUEUE}`);
    const [victim] = (await nodeClaims()).filter((c) => ofPool(c) && condTrue(c, 'Ready'));
    expect(victim, 'the Ready NodeClaim of the pool').toBeDefined();
    const instanceId = victim!.status!.providerID!.split('/').pop()!;
    const nodeName = victim!.status!.nodeName!;

    // The disrupted taint lives only while the node drains: sample the Node until it is gone.
    const seenTaints = new Set<string>();
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const n = await getObject<KubeObj & { spec?: { taints?: Array<{ key: string; effect: string }> } }>(
          kc(),
          'v1',
          'Node',
          nodeName,
        ).catch(() => undefined);
        for (const t of n?.spec?.taints ?? []) seenTaints.add(`${t.key}:${t.effect}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    const sqs = sqsClient();
    try {
      const url = await queueUrl(sqs);
      await sqs.send(
        new SendMessageCommand({ QueueUrl: url, MessageBody: spotInterruptionWarning({ instanceId, region: cluster.info.region }) }),
      );
      await eventually(
        `NodeClaim ${victim!.metadata.name} (instance ${instanceId}) gone after the interruption warning`,
        async () => (await getObject(kc(), ...NODECLAIM, victim!.metadata.name)) === undefined,
        240_000,
      );
      await eventually(`Node ${nodeName} gone`, async () => (await getObject(kc(), 'v1', 'Node', nodeName)) === undefined, 120_000);
      sampling = false;
      await sampler;
      expect([...seenTaints], `taints seen on Node ${nodeName} while it drained`).toContain('karpenter.sh/disrupted:NoSchedule');
      await eventually(
        `instance ${instanceId} terminated in the emulator`,
        async () => !(await instancesOfPool()).some((i) => i.InstanceId === instanceId),
        120_000,
      );
      // Karpenter says why, and took the message off the queue once handled.
      const reasons = await eventReasons(victim!.metadata.name);
      expect(reasons).toEqual(expect.arrayContaining(['SpotInterrupted', 'TerminatingOnInterruption']));
      const attrs = await sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: url,
          AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
        }),
      );
      expect(attrs.Attributes).toMatchObject({ ApproximateNumberOfMessages: '0', ApproximateNumberOfMessagesNotVisible: '0' });
    } finally {
      sampling = false;
      await sampler;
      sqs.destroy();
    }

    // The pending workload gets a new machine: another NodeClaim, another instance, the pod Running there.
    const replacement = await eventually(
      'a new NodeClaim of the pool Ready',
      async () => (await nodeClaims()).find((c) => ofPool(c) && c.metadata.uid !== victim!.metadata.uid && condTrue(c, 'Ready')),
      360_000,
    );
    expect(replacement.status!.providerID).not.toContain(instanceId);
    await eventually('the workload pod Running on the replacement node', () => workloadRunningOn(replacement.status!.nodeName!), 120_000);
    expect(runner!.crashes()).toEqual([]);
  }, 900_000);

  it('spec.logLevel debug: the operand restarts on the new pod template and the new processes run with it', async () => {
    const old = runner!.replicas();
    expect(old.map((r) => r.state)).toEqual(['running', 'running']);
    await adminRequest(
      cluster,
      'PATCH',
      `/apis/autoscaling.openshift.io/v1alpha1/karpenters/default`,
      { spec: { logLevel: 'debug' } },
      'application/merge-patch+json',
    );
    const oldHashes = new Set(old.map((r) => r.templateHash));
    const fresh = await eventually(
      'two operand processes on a new pod-template hash, none on the old',
      async () => {
        const rs = runner!.replicas();
        return rs.length === 2 && rs.every((r) => r.state === 'running' && r.pid && !oldHashes.has(r.templateHash)) ? rs : undefined;
      },
      300_000,
    );
    for (const r of fresh) {
      const p = processOf(r.pid!);
      expect(p.env, `env of ${r.pod}`).toContain('LOG_LEVEL=debug');
      expect(p.args, `args of ${r.pod}`).toContain('--log-level=debug');
    }
    await eventually(
      'a DEBUG line in the new operand log',
      async () => fresh.some((r) => /"level":"DEBUG"/.test(readFileSync(r.logFile, 'utf8'))),
      120_000,
    );
    // A new process takes the lead (the controller starts in ~90 s here, then waits for the lease).
    await eventually(
      'a new operand process holding the leader lease',
      async () => fresh.some((r) => /"message":"Successfully acquired lease"/.test(readFileSync(r.logFile, 'utf8'))),
      400_000,
    );
    // Still provisioning-ready: the NodeClass stays Ready and the node stays.
    expect(condTrue(await getObject<WithConditions>(kc(), ...NC, 'default'), 'Ready')).toBe(true);
    expect((await nodeClaims()).filter((c) => ofPool(c) && condTrue(c, 'Ready'))).toHaveLength(1);
    expect(runner!.crashes()).toEqual([]);
  }, 900_000);

  it('scaled to zero: Karpenter consolidates the empty node and the instance is terminated', async () => {
    await setWorkloadReplicas(0);
    await eventually(
      'the NodeClaims of the pool gone',
      async () => (await nodeClaims()).every((c) => c.metadata.labels?.['karpenter.sh/nodepool'] !== POOL),
      420_000,
    );
    await eventually('no instance of the pool left running in the emulator', async () => (await instancesOfPool()).length === 0, 120_000);
    const joined = kubelets!.kubelets().filter((k) => k.nodeName);
    for (const k of joined) expect(await getObject(kc(), 'v1', 'Node', k.nodeName!), `Node ${k.nodeName}`).toBeUndefined();
  }, 600_000);

  it('deleting the Karpenter CR: NodePools, NodeClaims, instances and the operand go, nothing is orphaned', async () => {
    // A node in flight when the CR goes: it must be cleaned up too.
    await setWorkloadReplicas(1);
    await eventually(
      'a NodeClaim of the pool registered again',
      async () => (await nodeClaims()).some((c) => c.metadata.labels?.['karpenter.sh/nodepool'] === POOL && condTrue(c, 'Registered')),
      300_000,
    );

    await deleteObject(kc(), KARPENTER.apiVersion, KARPENTER.kind, 'default');
    await eventually(
      'the Karpenter CR gone',
      async () => (await getObject(kc(), KARPENTER.apiVersion, KARPENTER.kind, 'default')) === undefined,
      300_000,
    );
    expect(await listObjects(kc(), 'karpenter.sh/v1', 'NodePool')).toEqual([]);
    expect(await nodeClaims()).toEqual([]);
    await eventually('no instance of the pool left in the emulator', async () => (await instancesOfPool()).length === 0, 120_000);
    await eventually(
      'the operand Deployment gone and its processes stopped',
      async () => !(await getObject(kc(), 'apps/v1', 'Deployment', 'karpenter', OPERATOR_NS)) && runner!.replicas().length === 0,
      120_000,
    );
    const logs = runner!.logTails(400);
    expect(logs).not.toMatch(/leader election lost/i);
    expect(runner!.crashes()).toEqual([]);
  }, 900_000);

  it('the operand never got a 403 (it ran under exactly the RBAC the operator applied)', () => {
    const requests = cluster.auditEvents({ user: OPERAND_USER, since: started });
    expect(requests.length).toBeGreaterThan(0);
    const denied = cluster.auditEvents({ user: OPERAND_USER, codes: [403], since: started });
    expect(denied.map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
  });
});
