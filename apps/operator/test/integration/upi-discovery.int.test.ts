import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EC2Client, RunInstancesCommand, TerminateInstancesCommand } from '@aws-sdk/client-ec2';
import { GetInstanceProfileCommand, IAMClient } from '@aws-sdk/client-iam';
import {
  aNode,
  applyObject,
  aWorkerMachineSet,
  deleteObject,
  getObject,
  iamCall,
  karpenterBinary,
  listObjects,
  loadToolchain,
  startRealOperand,
  waitFor,
  type KubeObj,
  type RealOperand,
} from '@karpenter-operator/testkit';
import { seededWorld, testCluster } from '@karpenter-operator/testkit/vitest';
import { adminRequest, clusterOperator, conditionOf, type Cond } from '../support/k8s.js';
import { installManifests, REPO, resetOperatorWorld, startOperator, type OperatorProcess } from '../support/operator-process.js';
import { applyKarpenterAndCredentials } from '../support/scenario.js';

/**
 * A user-provisioned cluster: no MachineSets, a control-plane instance running in the cluster's VPC, the
 * installer's conventional names in the emulator (subnets tagged for the cluster, `<infraID>-node` and
 * `<infraID>-lb`, `<infraID>-worker-profile`). The real Karpenter runs only until it reports the NodeClass
 * it gets Ready. The seeded MachineSets are put back afterwards.
 */
const cluster = testCluster();
const kc = () => cluster.kubeConfig();
const NC = ['karpenter.k8s.aws/v1', 'EC2NodeClass', 'default'] as const;
const CP_NODE = 'ip-10-0-130-99.ec2.internal';
const INFRA_STATUS = '/apis/config.openshift.io/v1/infrastructures/cluster/status';
/** An infra ID none of the seeded resources is named or tagged for. */
const ABSENT_INFRA_ID = 'nowhere-q9z8x';

let op: OperatorProcess | undefined;
let operand: RealOperand | undefined;
let runnerDir: string | undefined;
let cpInstance = '';
/** `status.infrastructureName` before a test replaced it. */
let savedInfraId: string | undefined;
/** Events already in the cluster when this file started (earlier files' Created events among them). */
const earlierEvents = new Set<string>();

const iam = () => new IAMClient({ ...cluster.ec2Config(), endpoint: cluster.info.ec2Endpoint! });
const ncSpec = async () => (await getObject(kc(), ...NC))?.spec as Record<string, unknown> | undefined;
const degraded = async () => conditionOf(await clusterOperator(cluster), 'Degraded');
const setInfraId = async (infrastructureName: string) => {
  const r = await adminRequest(cluster, 'PATCH', INFRA_STATUS, { status: { infrastructureName } }, 'application/merge-patch+json');
  if (r.status !== 200)
    throw new Error(`setting Infrastructure cluster status.infrastructureName: HTTP ${r.status}: ${JSON.stringify(r.body)}`);
};

/** Stops the real operand and takes Karpenter's finalizers off the NodeClass: nobody would release them now. */
async function stopOperand(): Promise<void> {
  await operand?.stop();
  operand = undefined;
  const nc = await getObject(kc(), ...NC);
  const finalizers = (nc?.metadata.finalizers as string[] | undefined) ?? [];
  const kept = finalizers.filter((f) => !f.startsWith('karpenter.k8s.aws/'));
  if (kept.length !== finalizers.length)
    await adminRequest(
      cluster,
      'PATCH',
      '/apis/karpenter.k8s.aws/v1/ec2nodeclasses/default',
      { metadata: { finalizers: kept.length ? kept : null } },
      'application/merge-patch+json',
    );
  if (runnerDir && process.env.KO_KEEP_CLUSTER !== '1') rmSync(runnerDir, { recursive: true, force: true });
  runnerDir = undefined;
}

async function restoreProfile(): Promise<void> {
  const f = seededWorld().facts;
  const exists = await iam()
    .send(new GetInstanceProfileCommand({ InstanceProfileName: f.instanceProfile }))
    .then(() => true)
    .catch(() => false);
  if (exists) return;
  await iamCall(cluster.info.ec2Endpoint!, 'CreateInstanceProfile', { InstanceProfileName: f.instanceProfile, Path: '/' });
  await iamCall(cluster.info.ec2Endpoint!, 'AddRoleToInstanceProfile', { InstanceProfileName: f.instanceProfile, RoleName: f.workerRole });
}

describe('discovery without worker MachineSets (UPI-shaped cluster)', () => {
  beforeAll(async () => {
    const world = seededWorld();
    for (const e of await listObjects(kc(), 'v1', 'Event')) earlierEvents.add(String(e.metadata.uid ?? e.metadata.name));
    await installManifests(cluster);
    await resetOperatorWorld(cluster);
    await deleteObject(kc(), ...NC).catch(() => false);
    for (const ms of await listObjects(kc(), 'machine.openshift.io/v1beta1', 'MachineSet', 'openshift-machine-api')) {
      await deleteObject(kc(), 'machine.openshift.io/v1beta1', 'MachineSet', ms.metadata.name, 'openshift-machine-api');
    }
    const zone = world.facts.zones[0]!;
    const run = await new EC2Client(cluster.ec2Config()).send(
      new RunInstancesCommand({
        ImageId: world.facts.amis.x86_64,
        InstanceType: 'm6i.xlarge',
        MinCount: 1,
        MaxCount: 1,
        SubnetId: world.ec2!.privateSubnetIds[zone],
        TagSpecifications: [{ ResourceType: 'instance', Tags: [{ Key: world.facts.clusterTagKey, Value: 'shared' }] }],
      }),
    );
    cpInstance = run.Instances![0]!.InstanceId!;
    await applyObject(kc(), aNode({ name: CP_NODE, zone, ip: '10.0.130.99', instanceId: cpInstance, role: 'control-plane' }) as KubeObj);
    op = await startOperator(cluster, { name: 'karpenter-operator-upi' });
    await applyKarpenterAndCredentials(cluster);
  }, 180_000);

  afterAll(async () => {
    await stopOperand();
    await op?.stop();
    if (savedInfraId) await setInfraId(savedInfraId);
    await restoreProfile();
    await deleteObject(kc(), 'v1', 'Node', CP_NODE).catch(() => false);
    if (cpInstance) await new EC2Client(cluster.ec2Config()).send(new TerminateInstancesCommand({ InstanceIds: [cpInstance] }));
    const world = seededWorld();
    for (const z of world.facts.zones) await applyObject(kc(), aWorkerMachineSet(z, world.facts) as KubeObj);
    await resetOperatorWorld(cluster);
  }, 120_000);

  it('moto answers IAM GetInstanceProfile through the SDK client: the seeded profile with its role, NoSuchEntity for none', async () => {
    const f = seededWorld().facts;
    const got = await iam().send(new GetInstanceProfileCommand({ InstanceProfileName: f.instanceProfile }));
    expect(got.InstanceProfile?.Roles?.map((r) => r.RoleName)).toEqual([f.workerRole]);
    await expect(iam().send(new GetInstanceProfileCommand({ InstanceProfileName: 'no-such-profile' }))).rejects.toMatchObject({
      name: 'NoSuchEntityException',
    });
  });

  it('creates EC2NodeClass default from the proven conventions, accepted by the real CRD', async () => {
    const world = seededWorld();
    // Launchable once MCO serves its pool: until then its AMI terms hold launches (docs/node-configuration.md).
    const spec = await waitFor(
      'EC2NodeClass default from conventions, pointing at its pool',
      async () => {
        const sp = await ncSpec();
        return String(sp?.userData).includes('/config/karpenter-default"') ? sp : undefined;
      },
      { timeoutMs: 90_000 },
    );
    expect(spec.instanceProfile).toBe(world.facts.instanceProfile);
    expect(spec.securityGroupSelectorTerms).toEqual([{ id: world.ec2!.securityGroupIds.node }, { id: world.ec2!.securityGroupIds.lb }]);
    expect(spec.subnetSelectorTerms).toEqual(
      Object.values(world.ec2!.privateSubnetIds)
        .sort()
        .map((id) => ({ id })),
    );
    expect(spec.amiSelectorTerms).toEqual([{ id: world.facts.amis.x86_64 }]);
    expect(spec.amiFamily).toBe('Custom');
    expect(String(spec.userData)).toContain('22623/config/');
    const created = await waitFor(
      'the Created event naming the sources',
      async () =>
        (await listObjects(kc(), 'v1', 'Event')).find(
          (e) =>
            !earlierEvents.has(String(e.metadata.uid ?? e.metadata.name)) &&
            (e as { reason?: string }).reason === 'Created' &&
            JSON.stringify(e).includes('DiscoveredFrom'),
        ),
      { timeoutMs: 30_000 },
    );
    expect((created as { message?: string }).message).toBe(
      'created the default NodeClass (DiscoveredFrom: subnets=Conventions, securityGroups=Conventions, instanceProfile=Conventions, ami=Conventions, userData=Conventions, blockDevice=Conventions)',
    );
    await waitFor('verification True (Degraded False)', async () => (await degraded())?.status === 'False', { timeoutMs: 60_000 });
  });

  it('the real Karpenter reports the convention-derived EC2NodeClass default Ready', async () => {
    // Only until its Ready condition: nothing is provisioned here (real-operand.int.test.ts does that).
    const binary = karpenterBinary(loadToolchain());
    const created = await getObject(kc(), ...NC);
    expect(created, 'EC2NodeClass default from the previous test').toBeDefined();
    runnerDir = mkdtempSync(join(tmpdir(), 'ko-upi-operand-'));
    const log: string[] = [];
    operand = startRealOperand({
      cluster,
      karpenterBinary: binary,
      operatorEntry: join(REPO, 'apps/operator/dist/main.js'),
      baseDir: runnerDir,
      log: (line) => log.push(line),
    });
    try {
      type WithConditions = KubeObj & { status?: { conditions?: Cond[] } };
      // Karpenter up and the NodeClass Ready took 110–153 s on a loaded two-core machine (real-operand.int.test.ts).
      const nc = await waitFor(
        'EC2NodeClass default Ready=True (all its conditions True) by the real Karpenter',
        async () => {
          const o = await getObject<WithConditions>(kc(), ...NC);
          const conds = o?.status?.conditions ?? [];
          return conds.length > 0 && conds.every((c) => c.status === 'True') && conditionOf(o, 'Ready')?.status === 'True' ? o : undefined;
        },
        { timeoutMs: 480_000, intervalMs: 1000 },
      ).catch(async (e: Error) => {
        const o = await getObject<WithConditions>(kc(), ...NC);
        throw new Error(
          `${e.message}\nconditions: ${JSON.stringify(o?.status?.conditions ?? [])}\nharness: ${log.slice(-20).join('\n')}\n` +
            `operand logs:\n${operand?.runner.logTails(25) ?? ''}`,
          { cause: e },
        );
      });
      // The object the operator created from the conventions, not a replacement.
      expect(nc.metadata.uid).toBe(created!.metadata.uid);
      expect((nc.status?.conditions ?? []).map((c) => c.type)).toEqual(
        expect.arrayContaining(['Ready', 'AMIsReady', 'SubnetsReady', 'SecurityGroupsReady', 'InstanceProfileReady']),
      );
      expect(operand.runner.crashes()).toEqual([]);
    } finally {
      await stopOperand();
    }
  }, 600_000);

  it('deleting the instance profile in the emulator turns verification False naming it', async () => {
    const f = seededWorld().facts;
    await iamCall(cluster.info.ec2Endpoint!, 'RemoveRoleFromInstanceProfile', {
      InstanceProfileName: f.instanceProfile,
      RoleName: f.workerRole,
    });
    await iamCall(cluster.info.ec2Endpoint!, 'DeleteInstanceProfile', { InstanceProfileName: f.instanceProfile });
    // Verification runs on a change of the NodeClass or every 5 minutes: a user edit is a change.
    await adminRequest(
      cluster,
      'PATCH',
      '/apis/karpenter.k8s.aws/v1/ec2nodeclasses/default',
      { spec: { tags: { rev: '2' } } },
      'application/merge-patch+json',
    );
    const c = await waitFor(
      'Degraded naming the instance profile',
      async () => {
        const d = await degraded();
        // A verification racing the two IAM calls may first see the profile without its role; the one the
        // edit triggers runs after the deletion.
        return d?.status === 'True' && d.message.includes(`instance profile ${f.instanceProfile} not found`) ? d : undefined;
      },
      { timeoutMs: 60_000 },
    );
    expect(c.reason).toBe('InvalidReferences');
    expect(c.message).toContain(
      `spec.instanceProfile: instance profile ${f.instanceProfile} not found (IAM GetInstanceProfile: NoSuchEntity)`,
    );
  });

  it('without the conventional profile and no worker instance to copy from: no NodeClass, and the condition names what is missing', async () => {
    const f = seededWorld().facts;
    await deleteObject(kc(), ...NC);
    const c = await waitFor(
      'Degraded naming the missing piece',
      async () => {
        const d = await degraded();
        // No verdict on the deleted NodeClass lingers beside it.
        return d?.status === 'True' && d.message.includes('NodeClassDiscovered:') && !d.message.includes('NodeClassVerified')
          ? d
          : undefined;
      },
      { timeoutMs: 90_000 },
    );
    expect(c.message).toContain(
      // The seeded worker Nodes name instances the emulator never ran: nothing to copy from, and it says so.
      `instanceProfile: no instance profile named ${f.instanceProfile} (IAM GetInstanceProfile: NoSuchEntity), and none of the worker instances ${f.workerNodes
        .map((n) => n.instanceId)
        .join(', ')} is running`,
    );
    expect(c.message).not.toContain('securityGroups:');
    expect(await getObject(kc(), ...NC)).toBeUndefined();
  });

  it('a cluster whose conventional names do not exist: no NodeClass, and the condition names every missing piece', async () => {
    const world = seededWorld();
    const f = world.facts;
    const vpc = world.ec2!.vpcId;
    const infra = await getObject(kc(), 'config.openshift.io/v1', 'Infrastructure', 'cluster');
    savedInfraId = (infra?.status as { infrastructureName?: string } | undefined)?.infrastructureName;
    expect(savedInfraId).toBe(f.infraId);
    // The seeded subnets, security groups and profile stay; only the names the conventions look for change.
    await setInfraId(ABSENT_INFRA_ID);
    await restoreProfile();
    await deleteObject(kc(), ...NC).catch(() => false);
    const workers = `none of the worker instances ${f.workerNodes.map((n) => n.instanceId).join(', ')} is running`;
    const c = await waitFor(
      'Degraded naming the pieces missing under the new infra ID',
      async () => {
        const d = await degraded();
        return d?.status === 'True' && d.message.includes(`${ABSENT_INFRA_ID}-worker-profile`) ? d : undefined;
      },
      { timeoutMs: 90_000 },
    );
    expect(c.message).toContain(
      `subnets: no private subnet tagged kubernetes.io/cluster/${ABSENT_INFRA_ID} (owned or shared) in ${vpc}; its subnets are tagged for other clusters: `,
    );
    // The seeded subnets are there, tagged for the seeded infra ID, and named as such; no worker to copy from.
    const subnets = c.message.slice(c.message.indexOf('subnets: '), c.message.indexOf('; securityGroups: '));
    for (const id of Object.values(world.ec2!.privateSubnetIds)) expect(subnets).toContain(`${id} (${f.clusterTagKey})`);
    expect(subnets).toMatch(new RegExp(`, and ${workers}$`));
    expect(c.message).toContain(
      `securityGroups: no security group named ${ABSENT_INFRA_ID}-node or ${ABSENT_INFRA_ID}-lb (nor ${ABSENT_INFRA_ID}-worker-sg) in ${vpc}, and ${workers}`,
    );
    expect(c.message).toContain(
      `instanceProfile: no instance profile named ${ABSENT_INFRA_ID}-worker-profile (IAM GetInstanceProfile: NoSuchEntity), and ${workers}`,
    );
    // What does not depend on the infra ID is still proven: the boot image and the user-data Secret.
    expect(c.message).not.toContain('ami:');
    expect(c.message).not.toContain('userData:');
    expect(await getObject(kc(), ...NC)).toBeUndefined();
  }, 180_000);
});
