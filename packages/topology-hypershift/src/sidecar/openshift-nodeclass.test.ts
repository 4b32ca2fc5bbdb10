import { Types, type KubeObject, type NodeClassSource } from '@karpenter-operator/core';
import { MemoryClusterStore, RecordingEvents } from '@karpenter-operator/core/testing';
import { describe, expect, it } from 'vitest';
import { decodeHostedControlPlane } from '../hcp.js';
import { aHostedControlPlane, anIgnitionSecret, HCP_NAME, HCP_NAMESPACE, INFRA_ID } from '../testing/builders.js';
import { EC2NODECLASS_CRD } from './names.js';
import {
  mirroredStatus,
  OPENSHIFT_NODECLASS_CRD,
  OPENSHIFT_NODECLASS_FINALIZER,
  OpenshiftEC2NodeClassType,
  OpenshiftNodeClassReconciler,
  renderDefaultOpenshiftNodeClass,
  tagConflictCondition,
  TRANSLATED_SPEC_FIELDS,
  translateOpenshiftNodeClass,
} from './openshift-nodeclass.js';

const EC2NodeClass = { apiVersion: 'karpenter.k8s.aws/v1', kind: 'EC2NodeClass' } as const;
/** The provider's rendering is tested in provider-aws; this one shows what reached it. */
const render = (s: NodeClassSource) => ({
  object: {
    ...EC2NodeClass,
    metadata: { name: 'default' },
    spec: {
      amiFamily: 'Custom',
      amiSelectorTerms: s.imageSelectorTerms,
      userData: s.userData,
      instanceProfile: s.instanceProfile,
      subnetSelectorTerms: s.subnetSelectorTerms,
      securityGroupSelectorTerms: s.securityGroupSelectorTerms,
      ...(s.tags.length ? { tags: Object.fromEntries(s.tags.map((t) => [t.key, t.value])) } : {}),
      blockDeviceMappings: [{ deviceName: '/dev/xvda', rootVolume: true }],
      metadataOptions: { httpTokens: 'required' },
      kubelet: { systemReserved: { cpu: '500m' } },
      ...(s.associatePublicIp ? { associatePublicIPAddress: true } : {}),
    },
  },
  protectedSpec: {},
});
const cloud = { nodeClassType: EC2NodeClass, renderNodeClass: render };
const discovery = [{ tags: { 'karpenter.sh/discovery': INFRA_ID } }];
/** HyperShift's default subnets: its private ones, by role and cluster tag (its e2e checks exactly these). */
const privateSubnets = [{ tags: { 'kubernetes.io/role/internal-elb': '1', [`kubernetes.io/cluster/${INFRA_ID}`]: '*' } }];
const ignition = { userData: '{"ignition":{"version":"3.4.0"}}', amiSelectorTerms: [{ id: 'ami-0abc' }], source: 'Secret x/y' };
const oec2nc = (name: string, spec: Record<string, unknown> = {}, meta: Record<string, unknown> = {}): KubeObject => ({
  ...OpenshiftEC2NodeClassType,
  metadata: { name, uid: `uid-${name}`, ...meta },
  spec,
});
const specOf = (o: KubeObject | undefined) => o?.spec as Record<string, unknown> | undefined;
/** An OpenshiftEC2NodeClass v1 spec with every field HyperShift's v1 API has. */
const everyField = {
  subnetSelectorTerms: [{ tags: { tier: 'private', zone: 'a' } }],
  securityGroupSelectorTerms: [{ id: 'sg-0a' }],
  capacityReservationSelectorTerms: [{ ownerID: '123456789012', instanceMatchCriteria: 'Targeted' }],
  ipAddressAssociation: 'SubnetDefault',
  tags: { team: 'a', cost: 'b' },
  blockDeviceMappings: [{ deviceName: '/dev/xvda', rootVolume: 'RootVolume', ebs: { volumeSizeGiB: 200, volumeType: 'GP3', iops: 4000 } }],
  instanceStorePolicy: 'RAID0',
  monitoring: 'Detailed',
  metadataOptions: { httpPutResponseHopLimit: 2 },
  kubelet: { maxPods: 110 },
  version: '4.20.1',
};
/** `everyField` as the EC2NodeClass carries it. */
const everyFieldTranslated = {
  subnetSelectorTerms: [{ tags: { tier: 'private', zone: 'a' } }],
  securityGroupSelectorTerms: [{ id: 'sg-0a' }],
  capacityReservationSelectorTerms: [{ ownerID: '123456789012', instanceMatchCriteria: 'targeted' }],
  blockDeviceMappings: [{ deviceName: '/dev/xvda', rootVolume: true, ebs: { volumeSize: '200Gi', volumeType: 'gp3', iops: 4000 } }],
  instanceStorePolicy: 'RAID0',
  detailedMonitoring: true,
  metadataOptions: { httpTokens: 'required', httpPutResponseHopLimit: 2 },
  kubelet: { systemReserved: { cpu: '500m' }, maxPods: 110 },
};
const hcpOf = (overrides: Record<string, unknown> = {}) => decodeHostedControlPlane(aHostedControlPlane(overrides));

describe('renderDefaultOpenshiftNodeClass', () => {
  it("is HyperShift's default: private subnets by role and cluster tag, security groups by discovery tag, no public IPs", () => {
    const spec = { subnetSelectorTerms: privateSubnets, securityGroupSelectorTerms: discovery };
    expect(renderDefaultOpenshiftNodeClass(hcpOf())).toEqual({ ...OpenshiftEC2NodeClassType, metadata: { name: 'default' }, spec });
    // The public-IPs annotation is for the HCP's own machines: the default stays private.
    const publicIps = hcpOf({ metadata: { annotations: { 'hypershift.openshift.io/aws-machine-public-ips': 'true' } } });
    expect(renderDefaultOpenshiftNodeClass(publicIps).spec).toEqual(spec);
  });
});

describe('translateOpenshiftNodeClass', () => {
  it("renders EC2NodeClass foo from the ignition input, the instance profile and HyperShift's default selectors, owned by foo", () => {
    const t = translateOpenshiftNodeClass({ hcp: hcpOf(), openshift: oec2nc('foo'), ignition, render });
    expect(t).toEqual({
      ok: true,
      tagConflicts: [],
      object: {
        ...EC2NodeClass,
        metadata: {
          name: 'foo',
          ownerReferences: [{ ...OpenshiftEC2NodeClassType, name: 'foo', uid: 'uid-foo', controller: true, blockOwnerDeletion: true }],
        },
        spec: {
          amiFamily: 'Custom',
          amiSelectorTerms: [{ id: 'ami-0abc' }],
          userData: ignition.userData,
          instanceProfile: 'demo-x7k2p-worker',
          subnetSelectorTerms: privateSubnets,
          securityGroupSelectorTerms: discovery,
          tags: { 'red-hat-managed': 'true' },
          blockDeviceMappings: [{ deviceName: '/dev/xvda', rootVolume: true }],
          metadataOptions: { httpTokens: 'required' },
          kubelet: { systemReserved: { cpu: '500m' } },
        },
      },
    });
  });

  it("carries every v1 field in Karpenter's terms; metadataOptions and kubelet over the provider's defaults", () => {
    const t = translateOpenshiftNodeClass({ hcp: hcpOf(), openshift: oec2nc('foo', everyField), ignition, render });
    if (!t.ok) throw new Error(t.message);
    expect(t.object.spec).toEqual({
      amiFamily: 'Custom',
      amiSelectorTerms: [{ id: 'ami-0abc' }],
      userData: ignition.userData,
      instanceProfile: 'demo-x7k2p-worker',
      tags: { 'red-hat-managed': 'true', team: 'a', cost: 'b' },
      ...everyFieldTranslated,
    });
  });

  it('ipAddressAssociation Public is associatePublicIPAddress true; unset leaves it to the subnet', () => {
    const spec = (s: Record<string, unknown>) => {
      const t = translateOpenshiftNodeClass({ hcp: hcpOf(), openshift: oec2nc('foo', s), ignition, render });
      if (!t.ok) throw new Error(t.message);
      return specOf(t.object)!;
    };
    expect(spec({ ipAddressAssociation: 'Public' }).associatePublicIPAddress).toBe(true);
    expect(spec({ monitoring: 'Basic' })).not.toHaveProperty('associatePublicIPAddress');
    expect(spec({ monitoring: 'Basic' }).detailedMonitoring).toBe(false);
  });

  it('a field it cannot translate is refused, naming the field: nothing is rendered', () => {
    const t = translateOpenshiftNodeClass({
      hcp: hcpOf(),
      openshift: oec2nc('foo', { blockDeviceMappings: [{ ebs: { volumeSizeGiB: 10, volumeType: 'gp3' } }] }),
      ignition,
      render,
    });
    expect(t).toEqual({
      ok: false,
      reason: 'UntranslatableField',
      message:
        'OpenshiftEC2NodeClass foo spec.blockDeviceMappings[0].ebs.volumeType cannot be translated into EC2NodeClass foo: "gp3" is not one of Standard, IO1, IO2, GP2, SC1, ST1, GP3',
    });
    // A v1beta1 field is not v1's: refused, not dropped.
    const old = translateOpenshiftNodeClass({ hcp: hcpOf(), openshift: oec2nc('foo', { detailedMonitoring: true }), ignition, render });
    expect(old).toMatchObject({ ok: false, reason: 'UntranslatableField', message: expect.stringContaining('spec.detailedMonitoring') });
  });

  it('owns every field it renders (what it owns is what it may remove)', () => {
    const t = translateOpenshiftNodeClass({ hcp: hcpOf(), openshift: oec2nc('foo', everyField), ignition, render });
    if (!t.ok) throw new Error(t.message);
    expect(Object.keys(specOf(t.object)!).filter((k) => !(TRANSLATED_SPEC_FIELDS as readonly string[]).includes(k))).toEqual([]);
    expect(Object.keys(specOf(t.object)!)).toEqual(expect.arrayContaining(Object.keys(everyFieldTranslated)));
  });

  it("tags: the HostedCluster's resourceTags win on a conflict, which is named", () => {
    const t = translateOpenshiftNodeClass({
      hcp: hcpOf(),
      openshift: oec2nc('foo', { tags: { 'red-hat-managed': 'no', team: 'a' } }),
      ignition,
      render,
    });
    if (!t.ok) throw new Error(t.message);
    expect(specOf(t.object)!.tags).toEqual({ 'red-hat-managed': 'true', team: 'a' });
    expect(t.tagConflicts).toEqual(['red-hat-managed']);
  });

  it('tags: a HostedCluster tag with overridePolicy Allow yields to the NodeClass, the others do not', () => {
    const hcp = hcpOf({
      spec: {
        platform: {
          aws: {
            resourceTags: [
              { key: 'cost-center', value: 'platform', overridePolicy: 'Allow' },
              { key: 'red-hat-managed', value: 'true', overridePolicy: 'Deny' },
            ],
          },
        },
      },
    });
    expect(hcp.resourceTagOverridesAllowed).toEqual(['cost-center']);
    const t = translateOpenshiftNodeClass({
      hcp,
      openshift: oec2nc('foo', { tags: { 'cost-center': 'team-a', 'red-hat-managed': 'no' } }),
      ignition,
      render,
    });
    if (!t.ok) throw new Error(t.message);
    expect(specOf(t.object)!.tags).toEqual({ 'cost-center': 'team-a', 'red-hat-managed': 'true' });
    expect(t.tagConflicts).toEqual(['red-hat-managed']);
  });

  it("HyperShift's default has no role and no instance profile: without the HCP's annotation nothing is rendered, and the reason names it", () => {
    const bare = hcpOf({ metadata: { annotations: { 'hypershift.openshift.io/aws-karpenter-default-instance-profile': null } } });
    const t = translateOpenshiftNodeClass({ hcp: bare, openshift: oec2nc('default'), ignition, render });
    expect(t.ok).toBe(false);
    expect(t).toMatchObject({ reason: 'InstanceProfileMissing' });
    expect(!t.ok && t.message).toContain('metadata.annotations[hypershift.openshift.io/aws-karpenter-default-instance-profile]');
    expect(translateOpenshiftNodeClass({ hcp: hcpOf(), openshift: oec2nc('foo'), ignition: undefined, render })).toMatchObject({
      ok: false,
      reason: 'IgnitionSecretPending',
    });
  });
});

describe('tagConflictCondition', () => {
  const tagged = hcpOf({
    spec: {
      platform: {
        aws: {
          resourceTags: [
            { key: 'cost-center', value: 'platform', overridePolicy: 'Allow' },
            { key: 'env', value: 'prod' },
          ],
        },
      },
    },
  });
  it('is absent when the HostedCluster or the NodeClass has no tags, or spec.tags is not a map of strings', () => {
    expect(tagConflictCondition(hcpOf({ spec: { platform: { aws: { resourceTags: [] } } } }), { tags: { env: 'dev' } })).toBeUndefined();
    expect(tagConflictCondition(tagged, {})).toBeUndefined();
    expect(tagConflictCondition(tagged, { tags: {} })).toBeUndefined();
    expect(tagConflictCondition(tagged, { tags: { env: 3 } })).toBeUndefined();
  });
  it('False/NoTagConflict when no key has another value; the overrides the HostedCluster allows are named', () => {
    expect(tagConflictCondition(tagged, { tags: { env: 'prod', team: 'a' } })).toMatchObject({ status: 'False', reason: 'NoTagConflict' });
    const allowed = tagConflictCondition(tagged, { tags: { 'cost-center': 'team-a' } });
    expect(allowed).toMatchObject({ status: 'False', reason: 'NoTagConflict' });
    expect(allowed?.message).toContain('cost-center');
  });
  it('True/TagConflictDetected naming each key whose HostedCluster value wins, and the allowed overrides beside', () => {
    const c = tagConflictCondition(tagged, { tags: { env: 'dev', 'cost-center': 'team-a' } });
    expect(c).toMatchObject({ status: 'True', reason: 'TagConflictDetected' });
    expect(c?.message).toMatch(/^spec\.tags env: .*allow no override.*; .*override cost-center/);
  });
});

describe('mirroredStatus', () => {
  const ec2 = (status: Record<string, unknown>): KubeObject => ({ ...EC2NodeClass, metadata: { name: 'foo' }, status });
  const ready = { type: 'Ready', status: 'True', reason: 'Ready', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' };
  it("mirrors the EC2NodeClass's subnets, security groups and conditions, and removes what it no longer has", () => {
    const got = mirroredStatus(
      ec2({
        subnets: [{ id: 'subnet-1', zone: 'us-east-2a', zoneID: 'use2-az1' }],
        securityGroups: [{ id: 'sg-1', name: 'w' }],
        conditions: [ready],
        amis: [{ id: 'ami-1' }],
      }),
      undefined,
      'now',
      undefined,
    );
    expect(got).toEqual({
      subnets: [{ id: 'subnet-1', zone: 'us-east-2a', zoneID: 'use2-az1' }],
      securityGroups: [{ id: 'sg-1', name: 'w' }],
      conditions: [ready],
    });
    expect(mirroredStatus(ec2({ conditions: [ready] }), undefined, 'now', got)).toEqual({
      subnets: null,
      securityGroups: null,
      conditions: [ready],
    });
  });

  it("keeps conditions of other writers (HyperShift's ignition generator) and drops its own that are gone", () => {
    const theirs = { type: 'VersionResolved', status: 'True', reason: 'AsExpected', message: '', lastTransitionTime: 't0' };
    const oldOwn = { type: 'SubnetsReady', status: 'True', reason: 'SubnetsReady', message: '', lastTransitionTime: 't0' };
    const current = { conditions: [oldOwn, theirs] };
    expect(mirroredStatus(ec2({ conditions: [ready] }), undefined, 'now', current)).toEqual({ conditions: [ready, theirs] });
    const problem = { reason: 'InstanceProfileMissing', message: 'm' };
    expect(mirroredStatus(undefined, problem, 't1', current)?.conditions).toEqual([
      { type: 'Ready', status: 'False', reason: 'InstanceProfileMissing', message: 'm', lastTransitionTime: 't1' },
      theirs,
    ]);
  });

  it("Ready is False while HyperShift's VersionResolved is not True, with its reason and message, whatever the EC2NodeClass says", () => {
    const failed = {
      type: 'VersionResolved',
      status: 'False',
      reason: 'ResolutionFailed',
      message: 'Failed to resolve version "4.99.0": not in channel',
      lastTransitionTime: 't0',
    };
    const notReady = {
      type: 'Ready',
      status: 'False',
      reason: 'ResolutionFailed',
      message: 'Version resolution failed: Failed to resolve version "4.99.0": not in channel',
      lastTransitionTime: 't1',
    };
    const subnetsReady = { type: 'SubnetsReady', status: 'True', reason: 'SubnetsReady', message: '', lastTransitionTime: 't0' };
    const first = mirroredStatus(ec2({ conditions: [ready, subnetsReady] }), undefined, 't1', { conditions: [failed] });
    expect(first.conditions).toEqual([subnetsReady, notReady, failed]);
    // Its transition time stays while it lasts; a missing EC2NodeClass does not change the reason.
    expect(mirroredStatus(ec2({ conditions: [ready, subnetsReady] }), undefined, 't2', first)).toEqual(first);
    const pending = { reason: 'IgnitionSecretPending', message: 'waiting' };
    expect(mirroredStatus(undefined, pending, 't2', first).conditions).toEqual([notReady, failed]);
    // Unknown without a reason: HyperShift's fallback reason.
    const unknown = { type: 'VersionResolved', status: 'Unknown', lastTransitionTime: 't0' };
    expect(mirroredStatus(ec2({ conditions: [ready] }), undefined, 't1', { conditions: [unknown] }).conditions).toEqual([
      { ...notReady, message: 'Version resolution failed: VersionResolved is Unknown' },
      unknown,
    ]);
    // Resolved (or not reported at all): the EC2NodeClass's Ready.
    const resolved = { ...failed, status: 'True', reason: 'VersionNotSpecified', message: 'No version specified' };
    expect(mirroredStatus(ec2({ conditions: [ready] }), undefined, 't3', { conditions: [resolved] }).conditions).toEqual([ready, resolved]);
    expect(mirroredStatus(ec2({ conditions: [ready] }), undefined, 't3', undefined).conditions).toEqual([ready]);
    // AWSResourceTagConflict: added with its transition time, kept while status and reason last, gone without.
    const conflict = { status: 'True' as const, reason: 'TagConflictDetected', message: 'spec.tags env: …' };
    const withConflict = mirroredStatus(ec2({ conditions: [ready] }), undefined, 't4', undefined, undefined, conflict);
    expect(withConflict.conditions).toEqual([ready, { type: 'AWSResourceTagConflict', ...conflict, lastTransitionTime: 't4' }]);
    expect(
      mirroredStatus(ec2({ conditions: [ready] }), undefined, 't5', withConflict, undefined, { ...conflict, message: 'm' }).conditions,
    ).toEqual([ready, { type: 'AWSResourceTagConflict', ...conflict, message: 'm', lastTransitionTime: 't4' }]);
    expect(mirroredStatus(ec2({ conditions: [ready] }), undefined, 't5', withConflict).conditions).toEqual([ready]);
  });

  it('a problem is Ready False with its reason, its transition time kept while it lasts', () => {
    const problem = { reason: 'InstanceProfileMissing', message: 'm' };
    const first = mirroredStatus(undefined, problem, 't1', undefined);
    expect(first).toEqual({
      conditions: [{ type: 'Ready', status: 'False', reason: 'InstanceProfileMissing', message: 'm', lastTransitionTime: 't1' }],
    });
    expect(mirroredStatus(undefined, problem, 't2', first)).toEqual(first);
  });

  it("reports the EC2NodeClass's capacity reservations in v1's terms, and removes them once gone", () => {
    const cr = {
      availabilityZone: 'us-east-2a',
      id: 'cr-0a',
      instanceMatchCriteria: 'targeted',
      instanceType: 'm6i.large',
      ownerID: '123456789012',
      reservationType: 'capacity-block',
      state: 'expiring',
      endTime: '2026-12-31T00:00:00Z',
    };
    const got = mirroredStatus(ec2({ capacityReservations: [cr], conditions: [ready] }), undefined, 'now', undefined);
    expect(got.capacityReservations).toEqual([
      { ...cr, instanceMatchCriteria: 'Targeted', reservationType: 'CapacityBlock', state: 'Expiring' },
    ]);
    expect(mirroredStatus(ec2({ conditions: [ready] }), undefined, 'now', got)).toMatchObject({ capacityReservations: null });
  });
});

describe('OpenshiftNodeClassReconciler', () => {
  const established = (name: string): KubeObject => ({
    ...Types.CustomResourceDefinition,
    metadata: { name },
    spec: { group: name.split('.').slice(1).join('.') },
    status: { conditions: [{ type: 'Established', status: 'True' }] },
  });
  const ignitionFor = (nodeClass: string, userData: string, created = '2026-01-01T00:00:00Z') =>
    anIgnitionSecret({ name: `${nodeClass}-ignition-${created}`, nodeClass, userData, createdAt: created });

  function setup(hcp: KubeObject = aHostedControlPlane()) {
    const management = new MemoryClusterStore([hcp, ignitionFor('default', 'default-user-data'), ignitionFor('foo', 'foo-user-data')]);
    const guest = new MemoryClusterStore([established(OPENSHIFT_NODECLASS_CRD), established(EC2NODECLASS_CRD)]);
    const events = new RecordingEvents();
    const r = new OpenshiftNodeClassReconciler({
      management,
      guest,
      namespace: HCP_NAMESPACE,
      hcpName: HCP_NAME,
      events,
      cloud,
      crd: established(OPENSHIFT_NODECLASS_CRD),
      now: () => '2026-02-02T00:00:00Z',
      retryMs: 1_000,
    });
    return { management, guest, events, r };
  }

  it('keeps OpenshiftEC2NodeClass default, translates foo with its finalizer, and writes nothing on a second reconcile', async () => {
    const { management, guest, r } = setup();
    guest.seed(oec2nc('foo'));
    await r.reconcile('*');
    await r.reconcile('*'); // default now exists: translated too
    const def = await guest.get({ ...OpenshiftEC2NodeClassType, name: 'default' });
    expect(def?.spec).toEqual({ subnetSelectorTerms: privateSubnets, securityGroupSelectorTerms: discovery });
    for (const name of ['default', 'foo']) {
      const ec2 = await guest.get({ ...EC2NodeClass, name });
      expect(specOf(ec2)?.userData).toBe(`${name}-user-data`);
      expect(ec2?.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'OpenshiftEC2NodeClass', name, controller: true });
      expect((await guest.get({ ...OpenshiftEC2NodeClassType, name }))?.metadata.finalizers).toEqual([OPENSHIFT_NODECLASS_FINALIZER]);
    }
    guest.clearWrites();
    management.clearWrites();
    await r.reconcile('*');
    await r.reconcile('foo');
    await r.reconcile('default');
    expect(guest.writes).toEqual([]);
    expect(management.writes).toEqual([]);
  });

  it("reports AWSResourceTagConflict on the OpenshiftEC2NodeClass while its tags lose to the HostedCluster's, once per change", async () => {
    const { guest, events, r } = setup();
    guest.seed(oec2nc('foo', { tags: { 'red-hat-managed': 'no', team: 'a' } }));
    await r.reconcile('foo');
    const conditionOf = async () =>
      (
        (await guest.get({ ...OpenshiftEC2NodeClassType, name: 'foo' }))?.status as
          { conditions?: Array<Record<string, unknown>> } | undefined
      )?.conditions?.find((c) => c['type'] === 'AWSResourceTagConflict');
    expect(await conditionOf()).toMatchObject({ status: 'True', reason: 'TagConflictDetected' });
    expect(String((await conditionOf())?.['message'])).toContain('red-hat-managed');
    expect(events.events.filter((e) => e.reason === 'ResourceTagsOverride')).toHaveLength(1);
    guest.clearWrites();
    await r.reconcile('foo');
    expect(guest.writes).toEqual([]);
    guest.seed({ ...(await guest.get({ ...OpenshiftEC2NodeClassType, name: 'foo' }))!, spec: { tags: { team: 'a' } } });
    await r.reconcile('foo');
    expect(await conditionOf()).toMatchObject({ status: 'False', reason: 'NoTagConflict' });
    guest.seed({ ...(await guest.get({ ...OpenshiftEC2NodeClassType, name: 'foo' }))!, spec: {} });
    await r.reconcile('foo');
    expect(await conditionOf()).toBeUndefined();
  });

  it('keeps set-karpenter-taint, and karpenter-subnets from the resolved subnets (gone when there are none)', async () => {
    const { management, guest, r } = setup();
    guest.seed(oec2nc('foo', {}, { uid: 'uid-foo' }));
    await r.reconcile('*');
    const taint = await management.get({ ...Types.ConfigMap, namespace: HCP_NAMESPACE, name: 'set-karpenter-taint' });
    expect((taint?.['data'] as { config: string }).config).toContain('key: "karpenter.sh/unregistered"');
    expect((taint?.['data'] as { config: string }).config).toContain('effect: "NoExecute"');
    const subnetsRef = { ...Types.ConfigMap, namespace: HCP_NAMESPACE, name: 'karpenter-subnets' };
    expect(await management.get(subnetsRef)).toBeUndefined();
    const withSubnets = (name: string, ids: string[]) => ({
      ...oec2nc(name),
      status: { subnets: ids.map((id) => ({ id, zone: 'us-east-2a' })) },
    });
    guest.seed(withSubnets('foo', ['subnet-b', 'subnet-a']));
    guest.seed({ ...withSubnets('gone', ['subnet-z']), metadata: { name: 'gone', uid: 'g', deletionTimestamp: '2026-01-01T00:00:00Z' } });
    const ec2 = (await guest.get({ ...EC2NodeClass, name: 'foo' }))!;
    guest.seed({
      ...ec2,
      status: {
        subnets: [
          { id: 'subnet-b', zone: 'us-east-2a' },
          { id: 'subnet-a', zone: 'us-east-2a' },
        ],
      },
    });
    await r.reconcile('*');
    const cm = await management.get(subnetsRef);
    expect(cm?.['data']).toEqual({ subnetIDs: '["subnet-a","subnet-b"]' });
    expect(cm?.metadata.labels).toEqual({
      'hypershift.openshift.io/managed-by': 'karpenter',
      'hypershift.openshift.io/infra-id': INFRA_ID,
    });
    expect(cm?.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'HostedControlPlane', name: HCP_NAME, controller: true });
    management.clearWrites();
    await r.reconcile('*');
    expect(management.writes).toEqual([]);
    guest.remove({ ...OpenshiftEC2NodeClassType, name: 'foo' });
    await r.reconcile('*');
    expect(await management.get(subnetsRef)).toBeUndefined();
  });

  it('an OpenshiftEC2NodeClass default from an earlier rendering (discovery-tagged subnets, public IPs) becomes the current one', async () => {
    const hcp = aHostedControlPlane({ metadata: { annotations: { 'hypershift.openshift.io/aws-machine-public-ips': 'true' } } });
    const { guest, r } = setup(hcp);
    const earlier = { subnetSelectorTerms: discovery, securityGroupSelectorTerms: discovery, ipAddressAssociation: 'Public' };
    guest.seed(oec2nc('default', earlier));
    await r.reconcile('*');
    expect(specOf(await guest.get({ ...OpenshiftEC2NodeClassType, name: 'default' }))).toEqual({
      subnetSelectorTerms: privateSubnets,
      securityGroupSelectorTerms: discovery,
    });
    await r.reconcile('*');
    const ec2 = specOf(await guest.get({ ...EC2NodeClass, name: 'default' }));
    expect(ec2).toMatchObject({ subnetSelectorTerms: privateSubnets, securityGroupSelectorTerms: discovery });
    expect(ec2).not.toHaveProperty('associatePublicIPAddress');
    guest.clearWrites();
    await r.reconcile('*');
    expect(guest.writes).toEqual([]);
  });

  it("mirrors the EC2NodeClass's status back, once", async () => {
    const { guest, r } = setup();
    guest.seed(oec2nc('foo'));
    await r.reconcile('foo');
    // Nothing to mirror yet: Ready Unknown (v1 refuses an empty status).
    expect((await guest.get({ ...OpenshiftEC2NodeClassType, name: 'foo' }))?.status).toEqual({
      conditions: [
        {
          type: 'Ready',
          status: 'Unknown',
          reason: 'AwaitingEC2NodeClass',
          message: 'its EC2NodeClass has not reported Ready yet',
          lastTransitionTime: expect.any(String),
        },
      ],
    });
    const ec2 = (await guest.get({ ...EC2NodeClass, name: 'foo' }))!;
    const conditions = [{ type: 'Ready', status: 'True', reason: 'Ready', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' }];
    guest.seed({ ...ec2, status: { subnets: [{ id: 'subnet-1', zone: 'us-east-2a' }], conditions } });
    expect(r.keysFor({ ...EC2NodeClass, metadata: { name: 'foo' } })).toEqual(['foo']);
    await r.reconcile('foo');
    expect((await guest.get({ ...OpenshiftEC2NodeClassType, name: 'foo' }))?.status).toEqual({
      subnets: [{ id: 'subnet-1', zone: 'us-east-2a' }],
      conditions,
    });
    guest.clearWrites();
    await r.reconcile('foo');
    expect(guest.writes).toEqual([]);
  });

  it("Ready False while HyperShift's generator reports VersionResolved False; its condition kept; once, with no rewrite", async () => {
    const { guest, r } = setup();
    const failed = {
      type: 'VersionResolved',
      status: 'False',
      reason: 'ResolutionFailed',
      message: 'no such release',
      lastTransitionTime: 't0',
    };
    guest.seed(oec2nc('foo'));
    await r.reconcile('foo');
    const ec2 = (await guest.get({ ...EC2NodeClass, name: 'foo' }))!;
    const ready = { type: 'Ready', status: 'True', reason: 'Ready', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' };
    guest.seed({ ...ec2, status: { conditions: [ready] } });
    const foo = (await guest.get({ ...OpenshiftEC2NodeClassType, name: 'foo' }))!;
    guest.seed({ ...foo, status: { conditions: [failed] } });
    await r.reconcile('foo');
    expect((await guest.get({ ...OpenshiftEC2NodeClassType, name: 'foo' }))?.status).toEqual({
      conditions: [
        {
          type: 'Ready',
          status: 'False',
          reason: 'ResolutionFailed',
          message: 'Version resolution failed: no such release',
          lastTransitionTime: '2026-02-02T00:00:00Z',
        },
        failed,
      ],
    });
    guest.clearWrites();
    await r.reconcile('foo');
    expect(guest.writes).toEqual([]);
  });

  it('a new ignition Secret (new release) changes the userData of its EC2NodeClass only', async () => {
    const { management, guest, r } = setup();
    guest.seed(oec2nc('foo'));
    await r.reconcile('*');
    management.seed(ignitionFor('foo', 'foo-user-data-v2', '2026-03-01T00:00:00Z'));
    await r.reconcile('*');
    expect(specOf(await guest.get({ ...EC2NodeClass, name: 'foo' }))?.userData).toBe('foo-user-data-v2');
    expect(specOf(await guest.get({ ...EC2NodeClass, name: 'default' }))?.userData).toBe('default-user-data');
  });

  it('a deleted OpenshiftEC2NodeClass loses its EC2NodeClass first, then its finalizer', async () => {
    const { guest, r } = setup();
    guest.seed(oec2nc('foo'));
    await r.reconcile('foo');
    const foo = (await guest.get({ ...OpenshiftEC2NodeClassType, name: 'foo' }))!;
    guest.seed({ ...foo, metadata: { ...foo.metadata, deletionTimestamp: '2026-02-02T00:00:00Z' } });
    expect(await r.reconcile('foo')).toEqual({ requeueAfterMs: 1_000 });
    expect(await guest.get({ ...EC2NodeClass, name: 'foo' })).toBeUndefined();
    expect((await guest.get({ ...OpenshiftEC2NodeClassType, name: 'foo' }))?.metadata.finalizers).toContain(OPENSHIFT_NODECLASS_FINALIZER);
    await r.reconcile('foo');
    expect((await guest.get({ ...OpenshiftEC2NodeClassType, name: 'foo' }))?.metadata.finalizers ?? []).toEqual([]);
  });

  it('a tag removed from the OpenshiftEC2NodeClass leaves its EC2NodeClass, and nothing more is written', async () => {
    const { guest, r } = setup();
    guest.seed(oec2nc('foo', { tags: { team: 'a', cost: 'b' } }));
    await r.reconcile('foo');
    expect((specOf(await guest.get({ ...EC2NodeClass, name: 'foo' }))?.tags as Record<string, string>)['cost']).toBe('b');
    const foo = (await guest.get({ ...OpenshiftEC2NodeClassType, name: 'foo' }))!;
    guest.seed({ ...foo, spec: { tags: { team: 'a' } } });
    await r.reconcile('foo');
    const after = specOf(await guest.get({ ...EC2NodeClass, name: 'foo' }))?.tags as Record<string, string>;
    expect(after['team']).toBe('a');
    expect(after).not.toHaveProperty('cost');
    guest.clearWrites();
    await r.reconcile('foo');
    expect(guest.writes).toEqual([]);
  });

  it('with AutoNode off, an OpenshiftEC2NodeClass being deleted still loses its EC2NodeClass and the finalizer', async () => {
    const { management, guest, r } = setup();
    guest.seed(oec2nc('foo'));
    await r.reconcile('foo');
    management.seed(aHostedControlPlane({ spec: { autoNode: null } }));
    const foo = (await guest.get({ ...OpenshiftEC2NodeClassType, name: 'foo' }))!;
    guest.seed({ ...foo, metadata: { ...foo.metadata, deletionTimestamp: '2026-02-02T00:00:00Z' } });
    expect(await r.reconcile('*')).toEqual({ requeueAfterMs: 1_000 });
    expect(await guest.get({ ...EC2NodeClass, name: 'foo' })).toBeUndefined();
    await r.reconcile('*');
    expect((await guest.get({ ...OpenshiftEC2NodeClassType, name: 'foo' }))?.metadata.finalizers ?? []).toEqual([]);
  });

  it('without the instance-profile annotation: no EC2NodeClass, Ready False on the OpenshiftEC2NodeClass, one Warning', async () => {
    const { guest, events, r } = setup(
      aHostedControlPlane({ metadata: { annotations: { 'hypershift.openshift.io/aws-karpenter-default-instance-profile': null } } }),
    );
    guest.seed(oec2nc('foo'));
    await r.reconcile('foo');
    await r.reconcile('foo');
    expect(await guest.get({ ...EC2NodeClass, name: 'foo' })).toBeUndefined();
    expect((await guest.get({ ...OpenshiftEC2NodeClassType, name: 'foo' }))?.status).toMatchObject({
      conditions: [{ type: 'Ready', status: 'False', reason: 'InstanceProfileMissing' }],
    });
    expect(events.events.map((e) => e.reason)).toEqual(['InstanceProfileMissing']);
  });

  it('a field it cannot translate: Ready False naming the field, one Warning, the last good EC2NodeClass stays', async () => {
    const { guest, events, r } = setup();
    guest.seed(oec2nc('foo', { monitoring: 'Detailed' }));
    await r.reconcile('foo');
    const good = specOf(await guest.get({ ...EC2NodeClass, name: 'foo' }));
    expect(good).toMatchObject({ detailedMonitoring: true });
    const foo = (await guest.get({ ...OpenshiftEC2NodeClassType, name: 'foo' }))!;
    guest.seed({ ...foo, spec: { monitoring: 'Detailed', kubelet: { evictionSoftGracePeriod: { 'memory.available': '1.5m' } } } });
    await r.reconcile('foo');
    await r.reconcile('foo');
    expect(specOf(await guest.get({ ...EC2NodeClass, name: 'foo' }))).toEqual(good);
    const status = (await guest.get({ ...OpenshiftEC2NodeClassType, name: 'foo' }))?.status as { conditions: unknown[] };
    expect(status.conditions).toEqual([
      expect.objectContaining({
        type: 'Ready',
        status: 'False',
        reason: 'UntranslatableField',
        message: expect.stringContaining('spec.kubelet.evictionSoftGracePeriod[memory.available]'),
      }),
    ]);
    expect(events.events.map((e) => e.reason)).toEqual(['UntranslatableField']);
  });

  it('waits for the CRDs and does nothing while AutoNode is off', async () => {
    const { guest, r } = setup(aHostedControlPlane({ spec: { autoNode: null } }));
    await r.reconcile('*');
    expect(guest.writes).toEqual([]);
    const waiting = setup();
    waiting.guest.remove({ ...Types.CustomResourceDefinition, name: EC2NODECLASS_CRD });
    expect(await waiting.r.reconcile('*')).toEqual({ requeueAfterMs: 1_000 });
    expect(await waiting.guest.get({ ...OpenshiftEC2NodeClassType, name: 'default' })).toBeUndefined();
  });

  it('a field removed from the OpenshiftEC2NodeClass leaves its EC2NodeClass, at any depth; unmapped fields stay', async () => {
    const { guest, r } = setup();
    guest.seed(oec2nc('foo', everyField));
    await r.reconcile('*');
    await r.reconcile('*');
    const first = (await guest.get({ ...EC2NodeClass, name: 'foo' }))!;
    expect(first.spec).toMatchObject({ ...everyFieldTranslated, tags: { 'red-hat-managed': 'true', team: 'a', cost: 'b' } });
    // Someone else (an exempt admin) sets fields the translation does not map.
    const unmapped = { context: 'launch-template-context', ipPrefixCount: 1 };
    guest.seed({ ...first, spec: { ...specOf(first), ...unmapped } });
    const foo = (await guest.get({ ...OpenshiftEC2NodeClassType, name: 'foo' }))!;
    // Scalars and a list go; inside what stays, a tag of a selector term and a field of a block device go.
    const bdm = [{ deviceName: '/dev/xvda', rootVolume: 'RootVolume', ebs: { volumeSizeGiB: 200, volumeType: 'GP3' } }];
    guest.seed({ ...foo, spec: { subnetSelectorTerms: [{ tags: { tier: 'private' } }], blockDeviceMappings: bdm } });
    await r.reconcile('foo');
    expect(specOf(await guest.get({ ...EC2NodeClass, name: 'foo' }))).toEqual({
      amiFamily: 'Custom',
      amiSelectorTerms: [{ id: 'ami-0123456789abcdef0' }],
      userData: 'foo-user-data',
      instanceProfile: 'demo-x7k2p-worker',
      subnetSelectorTerms: [{ tags: { tier: 'private' } }],
      securityGroupSelectorTerms: discovery,
      tags: { 'red-hat-managed': 'true' },
      blockDeviceMappings: [{ deviceName: '/dev/xvda', rootVolume: true, ebs: { volumeSize: '200Gi', volumeType: 'gp3' } }],
      metadataOptions: { httpTokens: 'required' },
      kubelet: { systemReserved: { cpu: '500m' } },
      ...unmapped,
    });
    guest.clearWrites();
    await r.reconcile('foo');
    await r.reconcile('*');
    expect(guest.writes).toEqual([]);
  });

  describe('during a control-plane upgrade', () => {
    const R1 = 'quay.io/openshift-release-dev/ocp-release:4.22.0-x86_64';
    const R2 = 'quay.io/openshift-release-dev/ocp-release:4.23.0-x86_64';
    const completed = (image: string, version: string) => ({ state: 'Completed', image, version });
    const at = (releaseImage: string, history: unknown[], desired = history[0]) =>
      aHostedControlPlane({ spec: { releaseImage }, status: { versionStatus: { desired, history } } });
    const newRelease = (nodeClass: string) =>
      anIgnitionSecret({
        name: `${nodeClass}-ignition-4-23`,
        nodeClass,
        userData: `${nodeClass}-user-data-4.23`,
        ami: 'ami-0423',
        createdAt: '2026-03-01T00:00:00Z',
      });
    const userDataOf = async (guest: MemoryClusterStore, name: string) => specOf(await guest.get({ ...EC2NodeClass, name }))?.userData;
    const conditionsOf = async (guest: MemoryClusterStore, name: string) =>
      ((await guest.get({ ...OpenshiftEC2NodeClassType, name }))?.status as { conditions?: Array<Record<string, unknown>> } | undefined)
        ?.conditions ?? [];

    it('an EC2NodeClass keeps its userData and AMIs, says why, takes other changes; a new one gets its own; applied once done', async () => {
      const { management, guest, r } = setup(at(R1, [completed(R1, '4.22.0')]));
      guest.seed(oec2nc('foo', { tags: { team: 'a' } }));
      await r.reconcile('*');
      await r.reconcile('*');
      expect(await userDataOf(guest, 'foo')).toBe('foo-user-data');

      // HyperShift rolls out 4.23.0: the HCP asks for it, its ignition generator writes the new release's Secrets.
      management.seed(at(R2, [{ state: 'Partial', image: R2, version: '4.23.0' }, completed(R1, '4.22.0')]));
      for (const nc of ['default', 'foo', 'bar']) management.seed(newRelease(nc));
      const foo = (await guest.get({ ...OpenshiftEC2NodeClassType, name: 'foo' }))!;
      guest.seed({ ...foo, spec: { tags: { team: 'b' } } });
      guest.seed(oec2nc('bar'));
      await r.reconcile('*');
      await r.reconcile('*');
      for (const name of ['default', 'foo']) {
        expect(await userDataOf(guest, name)).toBe(`${name}-user-data`);
        expect(specOf(await guest.get({ ...EC2NodeClass, name }))?.amiSelectorTerms).toEqual([{ id: 'ami-0123456789abcdef0' }]);
        expect(await conditionsOf(guest, name)).toEqual([
          expect.objectContaining({ type: 'Ready', status: 'Unknown', reason: 'AwaitingEC2NodeClass' }),
          {
            type: 'UserDataUpToDate',
            status: 'False',
            reason: 'ControlPlaneUpgrading',
            message: `EC2NodeClass ${name} keeps its userData while the control plane upgrades from 4.22.0 to 4.23.0: the new userData (Secret ${HCP_NAMESPACE}/${name}-ignition-4-23) is applied once the upgrade completes`,
            lastTransitionTime: '2026-02-02T00:00:00Z',
          },
          // foo's own tags meet the HostedCluster's without a conflict.
          ...(name === 'foo'
            ? [expect.objectContaining({ type: 'AWSResourceTagConflict', status: 'False', reason: 'NoTagConflict' })]
            : []),
        ]);
      }
      expect((specOf(await guest.get({ ...EC2NodeClass, name: 'foo' }))?.tags as Record<string, string>)['team']).toBe('b');
      expect(await userDataOf(guest, 'bar')).toBe('bar-user-data-4.23');
      expect(await conditionsOf(guest, 'bar')).toEqual([expect.objectContaining({ type: 'Ready', status: 'Unknown' })]);
      guest.clearWrites();
      await r.reconcile('*');
      expect(guest.writes).toEqual([]);

      // The control plane completed 4.23.0: the new userData and AMIs apply, the condition goes.
      management.seed(at(R2, [completed(R2, '4.23.0'), completed(R1, '4.22.0')]));
      await r.reconcile('*');
      for (const name of ['default', 'foo']) {
        expect(await userDataOf(guest, name)).toBe(`${name}-user-data-4.23`);
        expect(specOf(await guest.get({ ...EC2NodeClass, name }))?.amiSelectorTerms).toEqual([{ id: 'ami-0423' }]);
        expect((await conditionsOf(guest, name)).filter((c) => c['type'] !== 'AWSResourceTagConflict')).toEqual([
          expect.objectContaining({ type: 'Ready', status: 'Unknown' }),
        ]);
      }
      guest.clearWrites();
      await r.reconcile('*');
      expect(guest.writes).toEqual([]);
    });

    it('a release status it cannot read is one Warning naming the field, and nothing is held', async () => {
      const { management, guest, events, r } = setup(at(R1, [completed(R1, '4.22.0')]));
      guest.seed(oec2nc('foo'));
      await r.reconcile('*');
      management.seed(
        aHostedControlPlane({ spec: { releaseImage: R2 }, status: { versionStatus: { history: [{ state: 'Completed' }] } } }),
      );
      management.seed(newRelease('foo'));
      await r.reconcile('*');
      await r.reconcile('*');
      expect(await userDataOf(guest, 'foo')).toBe('foo-user-data-4.23');
      expect(events.events.map((e) => [e.type, e.reason])).toEqual([['Warning', 'InvalidHostedControlPlane']]);
      expect(events.events[0]!.message).toContain('status.versionStatus.history[0].image');
    });
  });
});
