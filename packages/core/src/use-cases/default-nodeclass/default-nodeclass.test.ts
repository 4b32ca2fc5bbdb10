import { beforeEach, describe, expect, it } from 'vitest';
import { ForbiddenError, InvalidInputError, TransientError } from '../../errors.js';
import type { ClusterFacts, DiscoveryInput } from '../../model/cluster.js';
import { Types, type KubeObject } from '../../model/kube.js';
import type { CloudProvider, DefaultNodeClass, DiscoveredNodeClass, VerificationProblem } from '../../ports/cloud-provider.js';
import { silentLogger } from '../../ports/logger.js';
import { FakeClock, MemoryClusterStore, RecordingEvents } from '../../testing/index.js';
import { StatusBoard } from '../status-board.js';
import { DefaultNodeClassReconciler, NODECLASS_VERIFIED_ENTRY } from './default-nodeclass.js';
import { protectedFieldsPatch, sameAsSets } from './protected-fields.js';

const EC2NodeClass = { apiVersion: 'karpenter.k8s.aws/v1', kind: 'EC2NodeClass' } as const;

const NS = 'openshift-machine-api';
const HOLD = 'karpenter-operator.openshift.io/awaiting-machineconfigpool';
const held = (pool: string) => [{ tags: { [HOLD]: pool } }];
const MCS = 'https://api-int.mycluster.example.com:22623/config';
const pointer = (pool: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ ignition: { config: { merge: [{ source: `${MCS}/${pool}` }] }, version: '3.2.0', ...extra } });

const facts: ClusterFacts = {
  platform: 'AWS',
  region: 'us-east-1',
  infrastructureName: 'mycluster-x7k2p',
  apiServerInternalURL: 'https://api-int.mycluster.example.com:6443',
  resourceTags: [],
};

const machineSet = (name: string, ami: string, role = 'worker'): KubeObject => ({
  ...Types.MachineSet,
  metadata: { name, namespace: NS },
  spec: { template: { metadata: { labels: { 'machine.openshift.io/cluster-api-machine-role': role } }, spec: { ami } } },
});
const userDataSecret = (userData = pointer('worker')): KubeObject => ({
  ...Types.Secret,
  metadata: { name: 'worker-user-data', namespace: NS },
  stringData: { userData },
});

/**
 * A stand-in provider: one AMI term per worker MachineSet (`spec.template.spec.ami`), userData from
 * Secret `worker-user-data`, plus user-owned fields (subnets, tags). Verification is scripted.
 */
class FakeCloud implements CloudProvider {
  readonly platform = 'AWS';
  readonly nodeClassType = EC2NodeClass;
  readonly nodeClassLabel = 'karpenter.k8s.aws/ec2nodeclass';
  readonly maxInstancesPerLookup = 200;
  verifyCalls = 0;
  discoverCalls = 0;
  sources: DiscoveredNodeClass['sources'] = [
    { field: 'ami', source: 'MachineSets' },
    { field: 'userData', source: 'MachineSets' },
  ];
  verifyResult: () => Promise<VerificationProblem[]> = async () => [];
  assertSupported(): void {}
  crds(): KubeObject[] {
    return [];
  }
  operandCloudConfig() {
    return { env: [], volumes: [], volumeMounts: [], credentialsSecret: 'x' };
  }
  operandRbac(): KubeObject[] {
    return [];
  }
  credentialsRequests(): KubeObject[] {
    return [];
  }
  relatedObjects() {
    return [];
  }
  renderNodeClass(): DefaultNodeClass {
    throw new Error('the standalone use-case renders from MachineSets only');
  }
  renderDefaultNodeClass(input: DiscoveryInput): DefaultNodeClass {
    const workers = input.machineSets.filter(
      (m) =>
        (m.spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels[
          'machine.openshift.io/cluster-api-machine-role'
        ] === 'worker',
    );
    if (!workers.length)
      throw new InvalidInputError('NoWorkerMachineSet', `MachineSets in ${NS}`, 'spec.template.metadata.labels', 'no worker MachineSet');
    const secret = input.secrets.find((s) => s.metadata.name === 'worker-user-data');
    const userData = (secret?.stringData as { userData?: string } | undefined)?.userData;
    if (!userData) {
      throw new InvalidInputError(
        'UserDataSecretMissing',
        `MachineSet ${NS}/${workers[0]!.metadata.name}`,
        'spec.template.spec.providerSpec.value.userDataSecret.name',
        'Secret not found',
      );
    }
    const amis = [...new Set(workers.map((w) => (w.spec as { template: { spec: { ami: string } } }).template.spec.ami))];
    const amiSelectorTerms = amis.map((id) => ({ id }));
    return {
      object: {
        ...EC2NodeClass,
        metadata: { name: 'default' },
        spec: {
          amiFamily: 'Custom',
          amiSelectorTerms,
          subnetSelectorTerms: [{ tags: { Name: 'private' } }],
          securityGroupSelectorTerms: [{ tags: { Name: 'node' } }],
          instanceProfile: 'worker-profile',
          tags: { team: 'platform' },
          userData,
          kubelet: { maxPods: input.maxPods },
        },
      },
      protectedSpec: { amiFamily: 'Custom', amiSelectorTerms: structuredClone(amiSelectorTerms), userData },
    };
  }
  async discoverDefaultNodeClass(input: DiscoveryInput): Promise<DiscoveredNodeClass> {
    this.discoverCalls++;
    return { ...this.renderDefaultNodeClass(input), sources: structuredClone(this.sources), unverified: [] };
  }
  launchHold(pool: string): Record<string, unknown> {
    return { amiSelectorTerms: [{ tags: { [HOLD]: pool } }] };
  }
  async verifyNodeClass(): Promise<VerificationProblem[]> {
    this.verifyCalls++;
    return this.verifyResult();
  }
  instanceIdFromProviderId(): string | undefined {
    return undefined;
  }
  async describeInstances() {
    return [];
  }
  async checkCredentials(): Promise<void> {}
  async interruptionQueueExists(): Promise<boolean> {
    return true;
  }
}

const ref = (name: string) => ({ ...EC2NodeClass, name });

/**
 * MachineConfigPool `karpenter-<nodeClass>` as MCO leaves it: rendered from the worker MachineConfigs and the
 * one generated from its registration-taint KubeletConfig (`serving`), rendered without that one yet
 * (`untainted`, MCO renders a new pool at once), or not rendered (`none`).
 */
const pool = (nodeClass: string, state: 'serving' | 'untainted' | 'none' = 'serving'): KubeObject => {
  const source = [{ name: '00-worker' }, { name: '01-worker-kubelet' }];
  if (state === 'serving') source.push({ name: `99-karpenter-${nodeClass}-generated-kubelet` });
  const configuration = { name: `rendered-karpenter-${nodeClass}-${state === 'serving' ? '0123' : '4567'}`, source };
  return {
    ...Types.MachineConfigPool,
    metadata: { name: `karpenter-${nodeClass}`, labels: { 'karpenter-operator.openshift.io/managed': 'true' } },
    spec: state === 'none' ? {} : { configuration },
    status: state === 'none' ? {} : { configuration },
  };
};

/** KubeletConfig `set-karpenter-taint-<nodeClass>` as MCO's kubelet-config controller leaves it once synced. */
const taintKubeletConfig = (nodeClass: string): KubeObject => ({
  ...Types.KubeletConfig,
  metadata: {
    name: `set-karpenter-taint-${nodeClass}`,
    labels: { 'karpenter-operator.openshift.io/managed': 'true' },
    annotations: { 'machineconfiguration.openshift.io/mc-name-suffix': '' },
    finalizers: [`99-karpenter-${nodeClass}-generated-kubelet`],
  },
  spec: { kubeletConfig: { registerWithTaints: [{ key: 'karpenter.sh/unregistered', value: 'true', effect: 'NoExecute' }] } },
});

interface World {
  store: MemoryClusterStore;
  cloud: FakeCloud;
  clock: FakeClock;
  events: RecordingEvents;
  board: StatusBoard;
  r: DefaultNodeClassReconciler;
}

function world(objects: KubeObject[] = [machineSet('worker-a', 'ami-0x86'), userDataSecret()]): World {
  const store = new MemoryClusterStore([
    pool('default'),
    pool('gpu'),
    taintKubeletConfig('default'),
    taintKubeletConfig('gpu'),
    ...objects,
  ]);
  const cloud = new FakeCloud();
  const clock = new FakeClock();
  const events = new RecordingEvents();
  const board = new StatusBoard();
  const r = new DefaultNodeClassReconciler({
    store,
    cloud,
    facts: async () => facts,
    clock,
    events,
    logger: silentLogger,
    maxPods: 250,
    board,
  });
  return { store, cloud, clock, events, board, r };
}

/** Reconciles twice; returns the writes of each pass. */
async function twice(w: World, key = 'default') {
  w.store.clearWrites();
  await w.r.reconcile(key);
  const first = [...w.store.writes];
  w.store.clearWrites();
  await w.r.reconcile(key);
  const second = [...w.store.writes];
  return { first, second };
}

const specOf = async (w: World, name: string) => ((await w.store.get(ref(name)))?.spec ?? {}) as Record<string, unknown>;

describe('ec2nodeclass.default', () => {
  let w: World;
  beforeEach(() => {
    w = world();
  });

  it('creates default from the MachineSets, pointed at its own pool, then writes nothing', async () => {
    const { first, second } = await twice(w);
    expect(first.map((x) => [x.verb, x.ref.name])).toEqual([['create', 'default']]);
    expect(second).toEqual([]);
    const spec = await specOf(w, 'default');
    expect(spec).toMatchObject({
      amiFamily: 'Custom',
      amiSelectorTerms: [{ id: 'ami-0x86' }],
      userData: pointer('karpenter-default'),
      kubelet: { maxPods: 250 },
    });
    expect(w.r.conditions().discovered).toEqual({
      type: 'NodeClassDiscovered',
      status: 'True',
      reason: 'AsExpected',
      message: 'DiscoveredFrom: ami=MachineSets, userData=MachineSets',
    });
    expect(w.events.events.map((e) => e.reason)).toEqual(['Created']);
  });

  it("keeps a user's edit of spec.tags on default", async () => {
    await w.r.reconcile('default');
    const cur = (await w.store.get(ref('default')))!;
    w.store.seed({ ...cur, spec: { ...(cur.spec as object), tags: { team: 'apps', env: 'prod' } } });
    const { first, second } = await twice(w);
    expect(first).toEqual([]);
    expect(second).toEqual([]);
    expect((await specOf(w, 'default')).tags).toEqual({ team: 'apps', env: 'prod' });
  });

  it('reverts an edit of userData on default', async () => {
    await w.r.reconcile('default');
    const cur = (await w.store.get(ref('default')))!;
    w.store.seed({ ...cur, spec: { ...(cur.spec as object), userData: pointer('worker', { extra: 'evil' }) } });
    const { first, second } = await twice(w);
    expect(first.map((x) => x.verb)).toEqual(['apply']);
    expect(first[0]!.body).toEqual({
      ...EC2NodeClass,
      metadata: { name: 'default' },
      spec: { amiFamily: 'Custom', amiSelectorTerms: [{ id: 'ami-0x86' }], userData: pointer('karpenter-default') },
    });
    expect(second).toEqual([]);
    expect((await specOf(w, 'default')).userData).toBe(pointer('karpenter-default'));
  });

  it('reverts a changed AMI list but ignores a reordered one', async () => {
    w = world([machineSet('worker-a', 'ami-0x86'), machineSet('worker-b', 'ami-0arm'), userDataSecret()]);
    await w.r.reconcile('default');
    const cur = (await w.store.get(ref('default')))!;
    w.store.seed({ ...cur, spec: { ...(cur.spec as object), amiSelectorTerms: [{ id: 'ami-0arm' }, { id: 'ami-0x86' }] } });
    expect((await twice(w)).first).toEqual([]);
    w.store.seed({ ...cur, spec: { ...(cur.spec as object), amiSelectorTerms: [{ id: 'ami-0mine' }] } });
    const { first, second } = await twice(w);
    expect(first.map((x) => x.verb)).toEqual(['apply']);
    expect(second).toEqual([]);
    expect((await specOf(w, 'default')).amiSelectorTerms).toEqual([{ id: 'ami-0x86' }, { id: 'ami-0arm' }]);
  });

  it('re-creates default after deletion', async () => {
    await w.r.reconcile('default');
    w.store.remove(ref('default'));
    const { first, second } = await twice(w);
    expect(first.map((x) => [x.verb, x.ref.name])).toEqual([['create', 'default']]);
    expect(second).toEqual([]);
  });

  it('leaves default alone while it is being deleted', async () => {
    await w.r.reconcile('default');
    const cur = (await w.store.get(ref('default')))!;
    w.store.seed({
      ...cur,
      metadata: { ...cur.metadata, deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['karpenter.k8s.aws/termination'] },
      spec: { ...(cur.spec as object), userData: 'x' },
    });
    expect(await twice(w)).toEqual({ first: [], second: [] });
  });

  it('puts the protected fields on a user NodeClass, pointed at its own pool, and leaves the rest', async () => {
    w.store.seed({
      ...EC2NodeClass,
      metadata: { name: 'gpu' },
      spec: {
        amiFamily: 'AL2023',
        amiSelectorTerms: [{ alias: 'al2023@latest' }],
        role: 'gpu-role',
        subnetSelectorTerms: [{ id: 'subnet-1' }],
      },
    });
    const { first, second } = await twice(w, 'gpu');
    expect(first.map((x) => [x.verb, x.ref.name])).toEqual([['apply', 'gpu']]);
    expect(second).toEqual([]);
    expect(await specOf(w, 'gpu')).toEqual({
      amiFamily: 'Custom',
      amiSelectorTerms: [{ id: 'ami-0x86' }],
      userData: pointer('karpenter-gpu'),
      role: 'gpu-role',
      subnetSelectorTerms: [{ id: 'subnet-1' }],
    });
  });

  it('never creates a user NodeClass', async () => {
    const { first, second } = await twice(w, 'gone');
    expect(first).toEqual([]);
    expect(second).toEqual([]);
    expect(await w.store.get(ref('gone'))).toBeUndefined();
  });

  it('enforces on every NodeClass when the MachineSets change', async () => {
    w.store.seed({ ...EC2NodeClass, metadata: { name: 'gpu' }, spec: { subnetSelectorTerms: [{ id: 'subnet-1' }] } });
    await w.r.reconcile('default');
    w.store.seed(machineSet('worker-a', 'ami-0new'));
    const { first, second } = await twice(w);
    expect(first.map((x) => [x.verb, x.ref.name])).toEqual([
      ['apply', 'default'],
      ['apply', 'gpu'],
    ]);
    expect(second).toEqual([]);
    expect((await specOf(w, 'default')).amiSelectorTerms).toEqual([{ id: 'ami-0new' }]);
    expect((await specOf(w, 'gpu')).amiSelectorTerms).toEqual([{ id: 'ami-0new' }]);
  });

  it('does not write when the user-data Secret is only re-serialised', async () => {
    await w.r.reconcile('default');
    const reserialised = JSON.stringify({ ignition: { version: '3.2.0', config: { merge: [{ source: `${MCS}/worker` }] } } }, null, 2);
    expect(reserialised).not.toBe(pointer('worker'));
    w.store.seed(userDataSecret(reserialised));
    expect(await twice(w)).toEqual({ first: [], second: [] });
  });

  it.each([
    {
      name: 'no worker MachineSet',
      objects: [machineSet('infra-a', 'ami-0x86', 'infra'), userDataSecret()],
      reason: 'NoWorkerMachineSet',
    },
    { name: 'user-data Secret missing', objects: [machineSet('worker-a', 'ami-0x86')], reason: 'UserDataSecretMissing' },
  ])('reports $name and touches no NodeClass', async ({ objects, reason }) => {
    w = world(objects);
    w.store.seed({ ...EC2NodeClass, metadata: { name: 'default' }, spec: { userData: 'old' } });
    const { first, second } = await twice(w);
    expect(first).toEqual([]);
    expect(second).toEqual([]);
    expect(w.r.conditions().discovered).toMatchObject({ type: 'NodeClassDiscovered', status: 'False', reason });
    expect(w.board.get('ec2nodeclass.default')?.condition).toMatchObject({ status: 'False', reason });
    // One event for the failure, not one per reconcile.
    expect(w.events.events.filter((e) => e.reason === reason)).toHaveLength(1);
  });

  it('maps every watched event to default, NodeClass events also to themselves', () => {
    expect(w.r.keysFor(machineSet('worker-a', 'x'))).toEqual(['default']);
    expect(w.r.keysFor(userDataSecret())).toEqual(['default']);
    expect(w.r.keysFor({ ...EC2NodeClass, metadata: { name: 'gpu' } })).toEqual(['default', 'gpu']);
    expect(w.r.keysFor({ ...EC2NodeClass, metadata: { name: 'default' } })).toEqual(['default']);
    expect(w.r.watches).toEqual([
      { type: Types.MachineSet, namespace: NS },
      { type: Types.Secret, namespace: NS },
      { type: Types.ConfigMap, namespace: 'openshift-machine-config-operator', fieldSelector: 'metadata.name=coreos-bootimages' },
      { type: EC2NodeClass },
      { type: Types.MachineConfigPool, labels: { 'karpenter-operator.openshift.io/managed': 'true' } },
      { type: Types.KubeletConfig },
      { type: Types.Node },
    ]);
    expect(w.r.keysFor(taintKubeletConfig('gpu'))).toEqual(['gpu']);
    expect(w.r.keysFor({ ...Types.KubeletConfig, metadata: { name: 'set-max-pods' } })).toEqual([]);
    expect(w.r.keysFor(pool('gpu'))).toEqual(['gpu']);
    expect(w.r.keysFor(pool('default'))).toEqual(['default']);
    expect(w.r.keysFor({ ...Types.MachineConfigPool, metadata: { name: 'worker' } })).toEqual([]);
  });

  it('holds launches until MCS serves the NodeClass pool with the registration taint, then points at it and stays there', async () => {
    w = world();
    w.store.seed(pool('default', 'none'));
    expect((await twice(w)).second).toEqual([]);
    // Created unlaunchable: a machine booting pool worker would register untainted and never join.
    expect(await specOf(w, 'default')).toMatchObject({ userData: pointer('worker'), amiSelectorTerms: held('karpenter-default') });
    // Rendered at once, before MCO generated the taint's MachineConfig for it: a node booting from it
    // would register untainted, so the hold stays.
    w.store.seed(pool('default', 'untainted'));
    expect(await twice(w)).toEqual({ first: [], second: [] });
    expect(await specOf(w, 'default')).toMatchObject({ userData: pointer('worker'), amiSelectorTerms: held('karpenter-default') });
    w.store.seed(pool('default', 'serving'));
    w.events.events.length = 0;
    const { first, second } = await twice(w);
    // The release's images and the pool pointer arrive in one write.
    expect(first.map((x) => x.verb)).toEqual(['apply']);
    expect(second).toEqual([]);
    expect(await specOf(w, 'default')).toMatchObject({ userData: pointer('karpenter-default'), amiSelectorTerms: [{ id: 'ami-0x86' }] });
    expect(w.events.events.map((e) => e.reason)).toEqual(['ProtectedFieldsEnforced']);
    // A pool that is re-rendering (no configuration for a moment) must not flip userData back, nor hold again.
    w.store.seed(pool('default', 'none'));
    expect(await twice(w)).toEqual({ first: [], second: [] });
  });

  it("holds a user NodeClass whose pool is not served, says why, and releases it with the pool's pointer", async () => {
    w = world([machineSet('worker-a', 'ami-0x86'), userDataSecret(), pool('batch', 'untainted')]);
    w.store.seed({
      ...EC2NodeClass,
      metadata: { name: 'batch' },
      spec: { amiFamily: 'Custom', amiSelectorTerms: [{ id: 'ami-0x86' }], role: 'batch-role', userData: pointer('worker') },
    });
    const { first, second } = await twice(w, 'batch');
    expect(first.map((x) => [x.verb, x.ref.name])).toEqual([['apply', 'batch']]);
    expect(second).toEqual([]);
    expect(await specOf(w, 'batch')).toEqual({
      amiFamily: 'Custom',
      amiSelectorTerms: held('karpenter-batch'),
      userData: pointer('worker'),
      role: 'batch-role',
    });
    const heldEvent = w.events.events.find((e) => e.reason === 'LaunchHeld');
    expect(heldEvent?.regarding.name).toBe('batch');
    expect(heldEvent?.message).toContain(`${HOLD}=karpenter-batch`);
    expect(heldEvent?.message).toContain('MachineConfigPool karpenter-batch');
    // The MachineSets changing while it is held changes nothing on it.
    w.store.seed(machineSet('worker-b', 'ami-0arm'));
    expect((await twice(w, 'batch')).first).toEqual([]);
    w.store.seed(taintKubeletConfig('batch'));
    w.store.seed(pool('batch', 'serving'));
    expect((await twice(w, 'batch')).second).toEqual([]);
    expect(await specOf(w, 'batch')).toMatchObject({
      amiSelectorTerms: [{ id: 'ami-0x86' }, { id: 'ami-0arm' }],
      userData: pointer('karpenter-batch'),
    });
  });

  it('holds a NodeClass whose name can have no pool, and its event names the name problem, not a pool to wait for', async () => {
    const name = `n${'x'.repeat(60)}`; // 61 characters: karpenter-<name> is no label value
    w = world([machineSet('worker-a', 'ami-0x86'), userDataSecret()]);
    w.store.seed({
      ...EC2NodeClass,
      metadata: { name },
      spec: { amiFamily: 'Custom', amiSelectorTerms: [{ id: 'ami-0x86' }], role: 'r', userData: pointer('worker') },
    });
    const { second } = await twice(w, name);
    expect(second).toEqual([]);
    expect(await specOf(w, name)).toMatchObject({ amiSelectorTerms: held(`karpenter-${name}`), userData: pointer('worker') });
    const heldEvent = w.events.events.find((e) => e.reason === 'LaunchHeld');
    expect(heldEvent?.message).toContain('name is 61 characters');
    expect(heldEvent?.message).not.toContain('does not exist yet');
  });

  it('holds nothing with per-NodeClass pools off: the cluster userData and images', async () => {
    const store = new MemoryClusterStore([machineSet('worker-a', 'ami-0x86'), userDataSecret()]);
    const r = new DefaultNodeClassReconciler({
      store,
      cloud: new FakeCloud(),
      facts: async () => facts,
      clock: new FakeClock(),
      events: new RecordingEvents(),
      logger: silentLogger,
      maxPods: 250,
      perNodeClassPools: false,
    });
    await r.reconcile('default');
    expect((await store.get(ref('default')))?.spec).toMatchObject({ amiSelectorTerms: [{ id: 'ami-0x86' }], userData: pointer('worker') });
  });

  it('does not point userData at a pool whose taint KubeletConfig MCO has not synced', async () => {
    w = world();
    w.store.seed({ ...taintKubeletConfig('default'), metadata: { ...taintKubeletConfig('default').metadata, annotations: {} } });
    await twice(w);
    expect(await specOf(w, 'default')).toMatchObject({ userData: pointer('worker'), amiSelectorTerms: held('karpenter-default') });
  });

  it('resyncs default and every NodeClass', async () => {
    w.store.seed({ ...EC2NodeClass, metadata: { name: 'gpu' }, spec: {} });
    expect(await w.r.resyncKeys()).toEqual(['default', 'gpu']);
  });
});

describe('ec2nodeclass.default discovery sources', () => {
  it('a MachineSet taking over from conventions is an event and no write when the NodeClass comes out the same', async () => {
    const w = world();
    w.cloud.sources = [
      { field: 'ami', source: 'Conventions' },
      { field: 'userData', source: 'Conventions' },
    ];
    await w.r.reconcile('default');
    expect(w.r.conditions().discovered?.message).toBe('DiscoveredFrom: ami=Conventions, userData=Conventions');
    w.cloud.sources = [
      { field: 'ami', source: 'MachineSets' },
      { field: 'userData', source: 'Conventions' },
    ];
    // A new MachineSet changes the input (and with it the discovery) but renders the same AMI.
    w.store.seed(machineSet('worker-b', 'ami-0x86'));
    w.store.clearWrites();
    await w.r.reconcile('default');
    expect(w.store.writes).toEqual([]);
    expect(w.r.conditions().discovered?.message).toBe('DiscoveredFrom: ami=MachineSets, userData=Conventions');
    expect(w.events.events.filter((e) => e.reason === 'DiscoverySourceChanged').map((e) => e.message)).toEqual([
      'ami: Conventions → MachineSets',
    ]);
    // Unchanged sources: no second event.
    w.store.seed(machineSet('worker-c', 'ami-0x86'));
    await w.r.reconcile('default');
    expect(w.events.events.filter((e) => e.reason === 'DiscoverySourceChanged')).toHaveLength(1);
  });

  it('discovers once per input within the verification interval, again after it', async () => {
    const w = world();
    await w.r.reconcile('default');
    await w.r.reconcile('default');
    await w.r.reconcile('gpu');
    expect(w.cloud.discoverCalls).toBe(1);
    w.clock.advance(5 * 60 * 1000);
    await w.r.reconcile('default');
    expect(w.cloud.discoverCalls).toBe(2);
    // A deleted default is re-created from a fresh discovery, not a remembered one.
    await w.store.delete(ref('default'));
    await w.r.reconcile('default');
    expect(w.cloud.discoverCalls).toBe(3);
    expect(await w.store.get(ref('default'))).toBeDefined();
  });

  it('retries a discovery the cloud has to fix on a timer, without events to wake it', async () => {
    const w = world([userDataSecret()]);
    const incomplete = new InvalidInputError('DiscoveryIncomplete', 'EC2NodeClass default', 'spec.instanceProfile', 'no instance profile');
    w.cloud.renderDefaultNodeClass = () => {
      throw incomplete;
    };
    const r = await w.r.reconcile('default');
    expect(r.requeueAfterMs).toBe(60_000);
    expect(w.r.conditions().discovered).toMatchObject({ status: 'False', reason: 'DiscoveryIncomplete' });
    await w.r.reconcile('default');
    expect(w.cloud.discoverCalls).toBe(1);
    w.clock.advance(60_000);
    await w.r.reconcile('default');
    expect(w.cloud.discoverCalls).toBe(2);
    expect(await w.store.get(ref('default'))).toBeUndefined();
  });

  it('drops the verification verdict when default is gone and cannot be re-created', async () => {
    const w = world();
    w.cloud.verifyResult = async () => [{ field: 'spec.instanceProfile', message: 'instance profile p not found' }];
    await w.r.reconcile('default');
    expect(w.r.conditions().verified).toMatchObject({ status: 'False', reason: 'InvalidReferences' });
    w.cloud.renderDefaultNodeClass = () => {
      throw new InvalidInputError('DiscoveryIncomplete', 'EC2NodeClass default', 'spec.instanceProfile', 'no instance profile');
    };
    await w.store.delete(ref('default'));
    await w.r.reconcile('default');
    expect(w.r.conditions().verified).toBeUndefined();
    expect(w.board.conditions().map((c) => c.type)).toEqual(['NodeClassDiscovered']);
  });

  it('passes the cluster’s own nodes, without the ones Karpenter launched', async () => {
    const node = (name: string, labels: Record<string, string>): KubeObject => ({
      ...Types.Node,
      metadata: { name, labels: { 'kubernetes.io/arch': 'arm64', ...labels } },
      spec: { providerID: `aws:///us-east-1a/i-${name}` },
    });
    const w = world([
      machineSet('worker-a', 'ami-0x86'),
      userDataSecret(),
      node('m1', { 'node-role.kubernetes.io/master': '' }),
      node('w1', { 'node-role.kubernetes.io/worker': '' }),
      node('k1', { 'node-role.kubernetes.io/worker': '', 'karpenter.sh/nodepool': 'general' }),
      node('x1', {}),
    ]);
    let seen: DiscoveryInput | undefined;
    const render = w.cloud.renderDefaultNodeClass.bind(w.cloud);
    w.cloud.renderDefaultNodeClass = (input) => {
      seen = input;
      return render(input);
    };
    await w.r.reconcile('default');
    expect(seen?.nodes).toEqual([
      { name: 'm1', role: 'control-plane', providerID: 'aws:///us-east-1a/i-m1', architecture: 'arm64' },
      { name: 'w1', role: 'worker', providerID: 'aws:///us-east-1a/i-w1', architecture: 'arm64' },
    ]);
    // A worker or control-plane Node changing wakes `default`; a Node Karpenter launched or one without a role does not.
    const keys = (n: KubeObject) => w.r.keysFor(n);
    expect(keys(node('w2', { 'node-role.kubernetes.io/worker': '' }))).toEqual(['default']);
    expect(keys(node('m2', { 'node-role.kubernetes.io/control-plane': '' }))).toEqual(['default']);
    expect(keys(node('k2', { 'node-role.kubernetes.io/worker': '', 'karpenter.sh/nodepool': 'general' }))).toEqual([]);
    expect(keys(node('x2', {}))).toEqual([]);
    // Launched by Karpenter and not registered yet: a worker by its kubelet's labels, but still tainted.
    const unregistered = node('k3', { 'node-role.kubernetes.io/worker': '' });
    unregistered.spec = {
      ...(unregistered.spec as object),
      taints: [{ key: 'karpenter.sh/unregistered', value: 'true', effect: 'NoExecute' }],
    };
    expect(keys(unregistered)).toEqual([]);
  });
});

describe('ec2nodeclass.default verification', () => {
  let w: World;
  beforeEach(() => {
    w = world();
  });

  it('reports problems naming the field, and re-verifies only on change or after the interval', async () => {
    w.cloud.verifyResult = async () => [{ field: 'spec.subnetSelectorTerms[0]', message: 'subnet subnet-0a not found' }];
    const r1 = await w.r.reconcile('default');
    expect(w.r.conditions().verified).toEqual({
      type: 'NodeClassVerified',
      status: 'False',
      reason: 'InvalidReferences',
      message: 'NodeClass default: spec.subnetSelectorTerms[0]: subnet subnet-0a not found',
    });
    expect(w.board.get(NODECLASS_VERIFIED_ENTRY)?.condition?.status).toBe('False');
    expect(r1.requeueAfterMs).toBe(5 * 60 * 1000);
    w.clock.advance(60_000);
    await w.r.reconcile('default');
    expect(w.cloud.verifyCalls).toBe(1);
    // A user edit of what default references is verified at once.
    const cur = (await w.store.get(ref('default')))!;
    w.store.seed({ ...cur, spec: { ...(cur.spec as object), subnetSelectorTerms: [{ id: 'subnet-0b' }] } });
    w.cloud.verifyResult = async () => [];
    await w.r.reconcile('default');
    expect(w.cloud.verifyCalls).toBe(2);
    expect(w.r.conditions().verified).toMatchObject({ status: 'True', reason: 'AsExpected' });
    w.clock.advance(5 * 60 * 1000);
    await w.r.reconcile('default');
    expect(w.cloud.verifyCalls).toBe(3);
  });

  it('turns False only after repeated transient failures, and never throws for them', async () => {
    w.cloud.verifyResult = async () => {
      throw new TransientError('describing subnets: RequestLimitExceeded: slow down');
    };
    for (let i = 1; i <= 2; i++) {
      await expect(w.r.reconcile('default')).resolves.toMatchObject({ requeueAfterMs: expect.any(Number) });
      expect(w.r.conditions().verified).toBeUndefined();
      w.clock.advance(5 * 60 * 1000);
    }
    await w.r.reconcile('default');
    expect(w.cloud.verifyCalls).toBe(3);
    expect(w.r.conditions().verified).toMatchObject({
      status: 'False',
      reason: 'VerificationFailed',
      message: expect.stringContaining('RequestLimitExceeded'),
    });
  });

  it('backs off between failed verifications', async () => {
    w.cloud.verifyResult = async () => {
      throw new TransientError('unreachable');
    };
    const r = await w.r.reconcile('default');
    expect(r.requeueAfterMs).toBe(15_000);
    w.clock.advance(5_000);
    await w.r.reconcile('default');
    expect(w.cloud.verifyCalls).toBe(1);
    w.clock.advance(10_000);
    await w.r.reconcile('default');
    expect(w.cloud.verifyCalls).toBe(2);
  });

  it('reports refused credentials at once', async () => {
    w.cloud.verifyResult = async () => {
      throw new ForbiddenError('describing subnets: UnauthorizedOperation: no');
    };
    await w.r.reconcile('default');
    expect(w.r.conditions().verified).toMatchObject({ status: 'False', reason: 'CloudAccessDenied' });
  });

  it('does not verify for user NodeClass keys', async () => {
    await w.r.reconcile('gpu');
    expect(w.cloud.verifyCalls).toBe(0);
  });
});

describe('protectedFieldsPatch', () => {
  const nc = (spec: Record<string, unknown>): KubeObject => ({ ...EC2NodeClass, metadata: { name: 'a', uid: 'u' }, spec });
  const prot = { amiFamily: 'Custom', amiSelectorTerms: [{ id: 'ami-1' }, { id: 'ami-2' }], userData: pointer('worker') };
  it.each([
    {
      name: 'all equal',
      spec: { amiFamily: 'Custom', amiSelectorTerms: [{ id: 'ami-1' }, { id: 'ami-2' }], userData: pointer('karpenter-a') },
      want: undefined,
    },
    {
      name: 'terms reordered',
      spec: { amiFamily: 'Custom', amiSelectorTerms: [{ id: 'ami-2' }, { id: 'ami-1' }], userData: pointer('karpenter-a') },
      want: undefined,
    },
    {
      name: 'userData re-serialised',
      spec: {
        amiFamily: 'Custom',
        amiSelectorTerms: prot.amiSelectorTerms,
        userData: JSON.stringify(JSON.parse(pointer('karpenter-a')), null, 1),
      },
      want: undefined,
    },
    {
      name: 'userData on the plain worker pool',
      spec: { amiFamily: 'Custom', amiSelectorTerms: [{ id: 'ami-2' }, { id: 'ami-1' }], userData: pointer('worker') },
      want: { amiFamily: 'Custom', amiSelectorTerms: [{ id: 'ami-2' }, { id: 'ami-1' }], userData: pointer('karpenter-a') },
    },
    {
      name: 'family changed, userData kept byte for byte',
      spec: { amiFamily: 'AL2023', amiSelectorTerms: prot.amiSelectorTerms, userData: ` ${pointer('karpenter-a')}` },
      want: { amiFamily: 'Custom', amiSelectorTerms: prot.amiSelectorTerms, userData: ` ${pointer('karpenter-a')}` },
    },
    { name: 'nothing set', spec: {}, want: { ...prot, userData: pointer('karpenter-a') } },
  ])('$name', ({ spec, want }) => {
    const patch = protectedFieldsPatch(nc(spec), prot, 'karpenter-a');
    expect(patch?.spec).toEqual(want);
    if (patch) expect(patch.metadata).toEqual({ name: 'a' });
  });

  it('compares lists as sets', () => {
    expect(sameAsSets([{ id: 'a' }, { id: 'b' }], [{ id: 'b' }, { id: 'a' }])).toBe(true);
    expect(sameAsSets([{ id: 'a' }], [{ id: 'a' }, { id: 'b' }])).toBe(false);
    expect(sameAsSets(undefined, [])).toBe(false);
  });
});
