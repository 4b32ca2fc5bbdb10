import { describe, expect, it } from 'vitest';
import { InvalidInputError, Names, NotFoundError, type Condition, type StatusReport } from '@karpenter-operator/core';
import { describeTopologyContract, FakeClock, MemoryClusterStore } from '@karpenter-operator/core/testing';
import { decodeHostedControlPlane, HCP_KARPENTER_FINALIZER, HostedControlPlaneType } from './hcp.js';
import {
  AUTONODE_CONDITION,
  autoNodeCondition,
  autoNodeLifecycle,
  CapiClusterType,
  hostedClusterDeletion,
  HyperShiftTopology,
  soleHostedControlPlaneName,
  type HyperShiftTopologyOptions,
} from './hypershift-topology.js';
import { aHostedControlPlane, HCP_NAME, HCP_NAMESPACE, INFRA_ID } from './testing/builders.js';

const ENV = { clusterName: INFRA_ID, clusterEndpoint: 'https://api.demo.example.com:443', region: 'us-west-1', platform: 'AWS' };
const HCP_REF = { ...HostedControlPlaneType, namespace: HCP_NAMESPACE, name: HCP_NAME };

function setup(overrides: Partial<HyperShiftTopologyOptions> = {}) {
  const clock = new FakeClock();
  const now = () => new Date(clock.now()).toISOString();
  const management = new MemoryClusterStore([], now);
  const guest = new MemoryClusterStore([], now);
  const topology = new HyperShiftTopology({
    management,
    guest,
    namespace: HCP_NAMESPACE,
    hcpName: HCP_NAME,
    clock,
    env: ENV,
    ...overrides,
  });
  return { clock, management, guest, topology };
}

describeTopologyContract('hypershift', () => {
  const { management, guest, topology } = setup();
  // Request and facts both come from the HCP: each seed merges its part into the one object.
  let hcp: Record<string, unknown> = { spec: { autoNode: null, infraID: null, platform: null } };
  const seed = (patch: Record<string, unknown>) => {
    hcp = { ...hcp, spec: { ...(hcp.spec as object), ...(patch.spec as object) } };
    management.seed(aHostedControlPlane(hcp));
  };
  const full = aHostedControlPlane().spec as Record<string, unknown>;
  return {
    topology,
    control: management,
    workload: guest,
    seedRequest: () => seed({ spec: { autoNode: full.autoNode } }),
    seedFacts: () => seed({ spec: { infraID: INFRA_ID, platform: full.platform } }),
    seedBrokenFacts: () => seed({ spec: { infraID: null } }),
  };
});

const report = (
  available: 'True' | 'False',
  progressing: 'True' | 'False',
  degraded: 'True' | 'False' = 'False',
  message = '',
): StatusReport => ({
  conditions: [
    { type: 'Available', status: available, reason: available === 'True' ? 'AsExpected' : 'OperandUnavailable', message },
    {
      type: 'Progressing',
      status: progressing,
      reason: progressing === 'True' ? 'Deploying' : 'AsExpected',
      message: progressing === 'True' ? 'rolling out' : '',
    },
    {
      type: 'Degraded',
      status: degraded,
      reason: degraded === 'True' ? 'CredentialsMissing' : 'AsExpected',
      message: degraded === 'True' ? 'no credentials Secret' : '',
    },
  ],
  relatedObjects: [],
});

const req = (deleting = false) => ({
  owner: { ...HCP_REF, uid: 'u' },
  generation: 3,
  logLevel: 'info' as const,
  deleting,
  finalizers: [],
});

describe('autoNodeCondition', () => {
  it.each([
    {
      name: 'AutoNode turned off',
      extra: { keepNodePools: true },
      want: /^Disabling AutoNode: removing Karpenter; NodePools and NodeClaims stay/,
    },
    {
      name: 'the HCP deleted',
      extra: { forceTermination: true },
      want: /hosted cluster is being deleted.*without draining, then Karpenter$/,
    },
    {
      name: 'the CAPI Cluster deleted first',
      extra: { forceTermination: true, keepOwnerFinalizer: true },
      want: /hosted cluster is being deleted.*Karpenter stays until the HostedControlPlane is deleted$/,
    },
  ])('teardown message: $name', ({ extra, want }) => {
    const c = autoNodeCondition(report('True', 'False'), { ...req(true), ...extra }, 1);
    expect([c.status, c.reason]).toEqual(['False', 'AutoNodeProgressing']);
    expect(c.message).toMatch(want);
  });

  it.each([
    { name: 'rolled out', report: report('True', 'False'), request: req(), want: ['True', 'AsExpected'] },
    { name: 'enabling', report: report('False', 'True'), request: req(), want: ['False', 'AutoNodeProgressing'] },
    { name: 'available but upgrading', report: report('True', 'True'), request: req(), want: ['False', 'AutoNodeProgressing'] },
    { name: 'disabling', report: report('True', 'False'), request: req(true), want: ['False', 'AutoNodeProgressing'] },
    { name: 'degraded', report: report('False', 'False', 'True'), request: req(), want: ['False', 'AutoNodeDegraded'] },
    {
      name: 'degraded while disabling reads as disabling',
      report: report('False', 'False', 'True'),
      request: req(true),
      want: ['False', 'AutoNodeProgressing'],
    },
    { name: 'not configured', report: report('False', 'False'), request: undefined, want: ['False', 'AutoNodeNotConfigured'] },
    {
      name: 'invalid spec (degraded, no request)',
      report: report('False', 'False', 'True'),
      request: undefined,
      want: ['False', 'AutoNodeDegraded'],
    },
  ])('$name → $want', ({ report: r, request, want }) => {
    const c = autoNodeCondition(r, request, 7);
    expect([c.status, c.reason]).toEqual(want);
    expect(c.type).toBe(AUTONODE_CONDITION);
    expect(c.observedGeneration).toBe(7);
    expect(c.message).toBeTruthy();
  });
});

describe('HyperShiftTopology', () => {
  it('wires the management cluster as control and the guest as workload', () => {
    const { topology, management, guest } = setup();
    expect(topology.name).toBe('hypershift');
    expect(topology.controlStore).toBe(management);
    expect(topology.workloadStore).toBe(guest);
    expect(topology.operandNamespace).toBe(HCP_NAMESPACE);
    expect(topology.statusObject).toEqual(HCP_REF);
    expect(topology.watches).toEqual([
      { type: HostedControlPlaneType, cluster: 'control', namespace: HCP_NAMESPACE, fieldSelector: `metadata.name=${HCP_NAME}` },
    ]);
  });

  it('reads the request from spec.autoNode, owned by the HCP with its uid', async () => {
    const { topology, management } = setup({ logLevel: 'debug' });
    management.seed(aHostedControlPlane({ metadata: { finalizers: ['x'] } }));
    const seeded = await management.get(HCP_REF);
    expect(await topology.readRequest()).toEqual({
      owner: { ...HCP_REF, uid: 'hcp-uid-1' },
      generation: 3,
      logLevel: 'debug',
      deleting: false,
      finalizers: ['x'],
      resourceVersion: seeded!.metadata.resourceVersion,
    });
  });

  it.each([
    { name: 'no HCP', hcp: undefined, want: undefined },
    { name: 'AutoNode off', hcp: aHostedControlPlane({ spec: { autoNode: null } }), want: undefined },
    {
      name: 'another platform',
      hcp: aHostedControlPlane({ spec: { autoNode: { provisionerConfig: { karpenter: { platform: 'Azure' } } } } }),
      want: undefined,
    },
    { name: 'AutoNode on', hcp: aHostedControlPlane(), want: { deleting: false } },
    {
      name: 'HCP deleting',
      hcp: aHostedControlPlane({ metadata: { deletionTimestamp: '2026-01-01T00:05:00Z', finalizers: ['f'] } }),
      want: { deleting: true, deletionRequestedAtMs: Date.UTC(2026, 0, 1, 0, 5) },
    },
    {
      name: 'image overrides from the HCP annotations',
      hcp: aHostedControlPlane({
        metadata: {
          annotations: {
            'hypershift.openshift.io/karpenter-provider-aws-image': 'quay.io/hs/karpenter@sha256:1',
            'hypershift.openshift.io/karpenter-operator-image': 'quay.io/hs/op:2',
          },
        },
      }),
      want: { images: { operand: 'quay.io/hs/karpenter@sha256:1', operator: 'quay.io/hs/op:2' } },
    },
    {
      name: 'AutoNode turned off, HyperShift finalizer still there',
      hcp: aHostedControlPlane({ spec: { autoNode: null }, metadata: { finalizers: [HCP_KARPENTER_FINALIZER] } }),
      want: { deleting: true, keepNodePools: true },
    },
    {
      name: 'AutoNode turned off, then the HCP deleted',
      hcp: aHostedControlPlane({
        spec: { autoNode: null },
        metadata: { finalizers: [HCP_KARPENTER_FINALIZER], deletionTimestamp: '2026-01-01T00:05:00Z' },
      }),
      want: { deleting: true, forceTermination: true },
    },
    {
      name: "AutoNode turned off, only the standalone teardown finalizer (not this topology's)",
      hcp: aHostedControlPlane({ spec: { autoNode: null }, metadata: { finalizers: [Names.karpenterFinalizer] } }),
      want: undefined,
    },
  ])('request: $name', async ({ hcp, want }) => {
    const { topology, management } = setup();
    if (hcp) management.seed(hcp);
    const r = await topology.readRequest();
    if (want === undefined) expect(r).toBeUndefined();
    else expect(r).toMatchObject(want);
  });

  const ON = { autoNode: { provisioner: 'Karpenter', platform: 'AWS', roleARN: 'arn:aws:iam::123456789012:role/k' } } as const;
  const OFF = { autoNode: undefined };
  it.each([
    { name: 'AutoNode on', hcp: { ...ON, finalizers: [] }, deletion: undefined, want: { deleting: false } },
    {
      name: 'AutoNode on, finalizer added',
      hcp: { ...ON, finalizers: [HCP_KARPENTER_FINALIZER] },
      deletion: undefined,
      want: { deleting: false },
    },
    {
      name: 'AutoNode off with the finalizer: the operand goes, NodePools and NodeClaims stay',
      hcp: { ...OFF, finalizers: [HCP_KARPENTER_FINALIZER] },
      deletion: undefined,
      want: { deleting: true, keepNodePools: true },
    },
    { name: 'AutoNode off, finalizer released', hcp: { ...OFF, finalizers: [] }, deletion: undefined, want: undefined },
    { name: 'AutoNode off, another finalizer only', hcp: { ...OFF, finalizers: ['other'] }, deletion: undefined, want: undefined },
    {
      name: 'the HCP deleted: forced teardown of NodePools and NodeClaims',
      hcp: { ...ON, finalizers: [HCP_KARPENTER_FINALIZER] },
      deletion: 'HostedControlPlane' as const,
      want: { deleting: true, forceTermination: true },
    },
    {
      name: 'AutoNode off, then the HCP deleted: NodePools and NodeClaims go with the cluster',
      hcp: { ...OFF, finalizers: [HCP_KARPENTER_FINALIZER] },
      deletion: 'HostedControlPlane' as const,
      want: { deleting: true, forceTermination: true },
    },
    {
      name: 'the CAPI Cluster deleted first: NodePools and NodeClaims go, the finalizer stays',
      hcp: { ...ON, finalizers: [HCP_KARPENTER_FINALIZER] },
      deletion: 'Cluster' as const,
      want: { deleting: true, forceTermination: true, keepOwnerFinalizer: true },
    },
    {
      name: 'AutoNode off, then the CAPI Cluster deleted',
      hcp: { ...OFF, finalizers: [HCP_KARPENTER_FINALIZER] },
      deletion: 'Cluster' as const,
      want: { deleting: true, forceTermination: true, keepOwnerFinalizer: true },
    },
    {
      name: 'AutoNode off and released, the HCP deleted: nothing left to do',
      hcp: { ...OFF, finalizers: [] },
      deletion: 'HostedControlPlane' as const,
      want: undefined,
    },
  ])('autoNodeLifecycle: $name', ({ hcp, deletion, want }) => {
    expect(autoNodeLifecycle(hcp, deletion)).toStrictEqual(want);
  });

  const capiCluster = (o: { name?: string; namespace?: string; deleting?: boolean } = {}) => ({
    ...CapiClusterType,
    metadata: {
      name: o.name ?? INFRA_ID,
      namespace: o.namespace ?? HCP_NAMESPACE,
      uid: 'capi-uid',
      ...(o.deleting ? { deletionTimestamp: '2026-01-01T00:01:00Z', finalizers: ['cluster.cluster.x-k8s.io'] } : {}),
    },
  });

  it.each([
    { name: 'no CAPI Cluster', hcp: aHostedControlPlane(), cluster: undefined, want: undefined },
    { name: 'the CAPI Cluster, not deleting', hcp: aHostedControlPlane(), cluster: capiCluster(), want: undefined },
    { name: 'the CAPI Cluster (infra ID) deleting', hcp: aHostedControlPlane(), cluster: capiCluster({ deleting: true }), want: 'Cluster' },
    {
      name: 'a Cluster of another name deleting',
      hcp: aHostedControlPlane(),
      cluster: capiCluster({ name: 'other', deleting: true }),
      want: undefined,
    },
    {
      name: 'a Cluster in another namespace deleting',
      hcp: aHostedControlPlane(),
      cluster: capiCluster({ namespace: 'clusters-other', deleting: true }),
      want: undefined,
    },
    {
      name: 'an HCP without infra ID',
      hcp: aHostedControlPlane({ spec: { infraID: null } }),
      cluster: capiCluster({ deleting: true }),
      want: undefined,
    },
    {
      name: 'the HCP deleting (whatever the Cluster)',
      hcp: aHostedControlPlane({ metadata: { deletionTimestamp: '2026-01-01T00:05:00Z', finalizers: ['f'] } }),
      cluster: capiCluster(),
      want: 'HostedControlPlane',
    },
  ])('hostedClusterDeletion: $name', ({ hcp, cluster, want }) => {
    expect(hostedClusterDeletion(decodeHostedControlPlane(hcp), cluster)).toBe(want);
  });

  it('the CAPI Cluster deleting: a forced teardown that keeps the finalizer; HCP deletion then releases it; nothing read when the kind is not served', async () => {
    const served = setup({ capiClusterServed: true });
    served.management.seed(aHostedControlPlane({ metadata: { finalizers: [HCP_KARPENTER_FINALIZER] } }));
    served.management.seed(capiCluster());
    expect(await served.topology.readRequest()).toMatchObject({ deleting: false });
    expect(await served.topology.readRequest()).not.toHaveProperty('forceTermination');
    served.management.seed(capiCluster({ deleting: true }));
    expect(await served.topology.readRequest()).toMatchObject({ deleting: true, forceTermination: true, keepOwnerFinalizer: true });
    served.management.seed(
      aHostedControlPlane({ metadata: { finalizers: [HCP_KARPENTER_FINALIZER], deletionTimestamp: '2026-01-01T00:05:00Z' } }),
    );
    const r = await served.topology.readRequest();
    expect(r).toMatchObject({ deleting: true, forceTermination: true });
    expect(r).not.toHaveProperty('keepOwnerFinalizer');
    expect(served.topology.watches).toContainEqual({ type: CapiClusterType, cluster: 'control', namespace: HCP_NAMESPACE });

    const unserved = setup();
    unserved.management.seed(aHostedControlPlane());
    unserved.management.seed(capiCluster({ deleting: true }));
    expect(await unserved.topology.readRequest()).toMatchObject({ deleting: false });
    expect(unserved.topology.watches.map((w) => w.type.kind)).toEqual(['HostedControlPlane']);
  });

  it.each([
    {
      name: "the HCP's control-plane version annotates the operand Deployment",
      status: { controlPlaneVersion: { desired: { version: '4.22.3', image: 'quay.io/example/release@sha256:1' } } },
      want: { 'release.openshift.io/version': '4.22.3' },
    },
    { name: 'no version reported yet: no annotation', status: { controlPlaneVersion: { desired: {} } }, want: undefined },
    { name: 'a HyperShift without controlPlaneVersion: no annotation', status: {}, want: undefined },
  ])('request: $name', async ({ status, want }) => {
    const { topology, management } = setup();
    management.seed(aHostedControlPlane({ status }));
    expect((await topology.readRequest())?.deploymentAnnotations).toEqual(want);
  });

  it('a version that is not a string is an InvalidInputError naming the field', async () => {
    const { topology, management } = setup();
    management.seed(aHostedControlPlane({ status: { controlPlaneVersion: { desired: { version: 4.22 } } } }));
    await expect(topology.readRequest()).rejects.toMatchObject({ field: 'status.controlPlaneVersion.desired.version' });
  });

  it('an invalid spec.autoNode is an InvalidInputError naming the field', async () => {
    const { topology, management } = setup();
    management.seed(
      aHostedControlPlane({ spec: { autoNode: { provisionerConfig: { karpenter: { aws: { roleARN: 'arn:aws:iam::1:role/x' } } } } } }),
    );
    await expect(topology.readRequest()).rejects.toThrow(InvalidInputError);
    await expect(topology.readRequest()).rejects.toMatchObject({ field: 'spec.autoNode.provisionerConfig.karpenter.aws.roleARN' });
  });

  it('soleHostedControlPlaneName: the one HCP of the namespace; none or two is an InvalidInputError naming metadata.name', () => {
    const real = aHostedControlPlane({ metadata: { name: 'real' } });
    const elsewhere = aHostedControlPlane({ metadata: { name: 'elsewhere', namespace: 'other-ns' } });
    expect(soleHostedControlPlaneName([real, elsewhere], HCP_NAMESPACE)).toBe('real');
    const second = aHostedControlPlane({ metadata: { name: 'second' } });
    expect(() => soleHostedControlPlaneName([real, second], HCP_NAMESPACE)).toThrow(/2 found \(real, second\); expected one, or HCP_NAME/);
    expect(() => soleHostedControlPlaneName([elsewhere], HCP_NAMESPACE)).toThrow(InvalidInputError);
    try {
      soleHostedControlPlaneName([], HCP_NAMESPACE);
    } catch (e) {
      expect(e).toMatchObject({ field: 'metadata.name', object: `HostedControlPlanes in ${HCP_NAMESPACE}` });
    }
  });

  it('cluster facts come from the HCP, the endpoint from the environment', async () => {
    const { topology, management } = setup();
    management.seed(aHostedControlPlane());
    expect(await topology.clusterFacts()).toEqual({
      platform: 'AWS',
      region: 'us-east-2',
      infrastructureName: INFRA_ID,
      apiServerInternalURL: ENV.clusterEndpoint,
      controlPlaneTopology: 'External',
      resourceTags: [{ key: 'red-hat-managed', value: 'true' }],
    });
  });

  it.each([
    { name: 'no HCP', hcp: undefined, env: ENV, field: 'metadata.name' },
    { name: 'no infraID', hcp: aHostedControlPlane({ spec: { infraID: null } }), env: ENV, field: 'spec.infraID' },
    { name: 'platform mismatch', hcp: aHostedControlPlane(), env: { ...ENV, platform: 'Azure' }, field: 'spec.platform.type' },
    {
      name: 'CLUSTER_NAME is the HCP name, not its infra ID',
      hcp: aHostedControlPlane(),
      env: { ...ENV, clusterName: HCP_NAME },
      field: 'spec.infraID',
    },
    {
      name: 'no platform anywhere',
      hcp: aHostedControlPlane({ spec: { platform: { type: null } } }),
      env: { ...ENV, platform: '' },
      field: 'spec.platform.type',
    },
    { name: 'http endpoint', hcp: aHostedControlPlane(), env: { ...ENV, clusterEndpoint: 'http://api:6443' }, field: 'CLUSTER_ENDPOINT' },
  ])('facts: $name names $field', async ({ hcp, env, field }) => {
    const { topology, management } = setup({ env });
    if (hcp) management.seed(hcp);
    await expect(topology.clusterFacts()).rejects.toMatchObject({ field });
  });

  it('falls back to REGION and PLATFORM from the environment', async () => {
    const { topology, management } = setup();
    management.seed(aHostedControlPlane({ spec: { platform: { type: null, aws: { region: null } } } }));
    expect(await topology.clusterFacts()).toMatchObject({ platform: 'AWS', region: 'us-west-1' });
  });

  it('reports only the AutoNode condition, keeps foreign conditions and lastTransitionTime, and writes once', async () => {
    const { topology, management, clock } = setup();
    const foreign: Condition = {
      type: 'Available',
      status: 'True',
      reason: 'AsExpected',
      message: '',
      lastTransitionTime: '2025-12-01T00:00:00Z',
    };
    management.seed(aHostedControlPlane({ status: { conditions: [foreign], autoNode: { nodeCount: 2 } } }));
    const request = await topology.readRequest();

    await topology.reportStatus(report('False', 'True'), request);
    const cond = async () => ((await management.get(HCP_REF))?.status as { conditions: Condition[] }).conditions;
    expect(await cond()).toEqual([
      foreign,
      {
        type: AUTONODE_CONDITION,
        status: 'False',
        reason: 'AutoNodeProgressing',
        message: 'rolling out',
        observedGeneration: 3,
        lastTransitionTime: '2026-01-01T00:00:00Z',
      },
    ]);

    clock.advance(60_000);
    management.clearWrites();
    await topology.reportStatus(report('False', 'True'), request);
    expect(management.writes).toEqual([]);

    await topology.reportStatus(report('True', 'False'), request);
    expect((await cond())[1]).toMatchObject({ status: 'True', reason: 'AsExpected', lastTransitionTime: '2026-01-01T00:01:00Z' });
    expect(management.writes.map((w) => w.verb)).toEqual(['patchStatus']);
    expect(((await management.get(HCP_REF))?.status as { autoNode: unknown }).autoNode).toEqual({ nodeCount: 2 });
  });

  it('never drops a condition another writer added after its read: the write carries the resourceVersion read', async () => {
    const { topology, management } = setup();
    management.seed(aHostedControlPlane({ status: { conditions: [] } }));
    const request = await topology.readRequest();
    const stale = (await management.get(HCP_REF))!;
    const theirs: Condition = {
      type: 'ValidConfiguration',
      status: 'True',
      reason: 'AsExpected',
      message: '',
      lastTransitionTime: '2025-12-01T00:00:00Z',
    };
    await management.patchStatus(HCP_REF, { conditions: [theirs] });
    const get = management.get.bind(management);
    management.get = (async () => structuredClone(stale)) as typeof management.get;
    management.clearWrites();
    await expect(topology.reportStatus(report('True', 'False'), request)).resolves.toBeUndefined();
    management.get = get;
    const types = async () => ((await management.get(HCP_REF))?.status as { conditions: Condition[] }).conditions.map((c) => c.type);
    expect(await types()).toEqual(['ValidConfiguration']);
    // The next reconcile reads the newer HCP and adds its condition beside theirs.
    await topology.reportStatus(report('True', 'False'), request);
    expect(await types()).toEqual(['ValidConfiguration', AUTONODE_CONDITION]);
  });

  it('reports nothing when the HCP is gone, and tolerates it vanishing mid-write', async () => {
    const { topology, management } = setup();
    await topology.reportStatus(report('True', 'False'), undefined);
    expect(management.writes).toEqual([]);
    management.seed(aHostedControlPlane());
    management.failNext(new NotFoundError('gone'), 'patchStatus');
    await expect(topology.reportStatus(report('True', 'False'), await topology.readRequest())).resolves.toBeUndefined();
  });

  it('still reports on an HCP whose spec.autoNode is invalid', async () => {
    const { topology, management } = setup();
    management.seed(aHostedControlPlane({ spec: { autoNode: { provisionerConfig: { karpenter: { aws: null } } } } }));
    await topology.reportStatus(report('False', 'False', 'True'), undefined);
    const c = ((await management.get(HCP_REF))?.status as { conditions: Condition[] }).conditions[0];
    expect(c).toMatchObject({ type: AUTONODE_CONDITION, status: 'False', reason: 'AutoNodeDegraded' });
  });
});
