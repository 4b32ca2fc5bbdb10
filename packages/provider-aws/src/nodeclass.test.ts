import { describe, expect, it } from 'vitest';
import { Names, type NodeClassSource } from '@karpenter-operator/core';
import {
  ec2LaunchHold,
  isLaunchHoldTerm,
  isRestrictedTagKey,
  OPENSHIFT_KUBE_RESERVED,
  OPENSHIFT_SYSTEM_RESERVED,
  renderEc2NodeClass,
} from './nodeclass.js';

// What a HyperShift hosted control plane decodes: no root volume, tokens, public IP or maxPods of its own.
const hcpSource: NodeClassSource = {
  userData: '{"ignition":{"version":"3.4.0"}}',
  imageSelectorTerms: [{ id: 'ami-0aaa' }, { id: 'ami-0bbb' }],
  instanceProfile: 'demo-worker',
  subnetSelectorTerms: [{ tags: { 'kubernetes.io/role/internal-elb': '1' } }],
  securityGroupSelectorTerms: [{ tags: { 'karpenter.sh/discovery': 'demo' } }],
  tags: [
    { key: 'red-hat-managed', value: 'true' },
    { key: 'kubernetes.io/cluster/demo', value: 'owned' },
  ],
};

describe('renderEc2NodeClass', () => {
  it('renders a source without volume, tokens or maxPods with the defaults and OpenShift kubelet reservations', () => {
    const r = renderEc2NodeClass(hcpSource);
    expect(r.object).toEqual({
      apiVersion: 'karpenter.k8s.aws/v1',
      kind: 'EC2NodeClass',
      metadata: { name: 'default' },
      spec: {
        amiFamily: 'Custom',
        amiSelectorTerms: [{ id: 'ami-0aaa' }, { id: 'ami-0bbb' }],
        subnetSelectorTerms: [{ tags: { 'kubernetes.io/role/internal-elb': '1' } }],
        securityGroupSelectorTerms: [{ tags: { 'karpenter.sh/discovery': 'demo' } }],
        instanceProfile: 'demo-worker',
        blockDeviceMappings: [
          {
            deviceName: '/dev/xvda',
            rootVolume: true,
            ebs: { volumeSize: '120Gi', volumeType: 'gp3', encrypted: true, deleteOnTermination: true },
          },
        ],
        metadataOptions: { httpEndpoint: 'enabled', httpProtocolIPv6: 'disabled', httpPutResponseHopLimit: 1, httpTokens: 'required' },
        tags: { 'red-hat-managed': 'true' },
        userData: hcpSource.userData,
        kubelet: { systemReserved: { ...OPENSHIFT_SYSTEM_RESERVED }, kubeReserved: { ...OPENSHIFT_KUBE_RESERVED } },
      },
    });
    expect(r.protectedSpec).toEqual({
      amiFamily: 'Custom',
      amiSelectorTerms: [{ id: 'ami-0aaa' }, { id: 'ami-0bbb' }],
      userData: hcpSource.userData,
    });
  });

  it('takes what the source sets: root volume, optional tokens, public IP, maxPods; a later tag wins', () => {
    const spec = renderEc2NodeClass({
      ...hcpSource,
      rootVolume: { volumeSize: '200Gi', volumeType: 'io1', encrypted: false, deleteOnTermination: true, iops: 3000 },
      metadataTokens: 'optional',
      associatePublicIp: true,
      maxPods: 110,
      tags: [
        { key: 'team', value: 'a' },
        { key: 'team', value: 'b' },
      ],
    }).object.spec as Record<string, unknown>;
    expect(spec.blockDeviceMappings).toEqual([
      {
        deviceName: '/dev/xvda',
        rootVolume: true,
        ebs: { volumeSize: '200Gi', volumeType: 'io1', encrypted: false, deleteOnTermination: true, iops: 3000 },
      },
    ]);
    expect(spec.metadataOptions).toMatchObject({ httpTokens: 'optional' });
    expect(spec.associatePublicIPAddress).toBe(true);
    expect(spec.kubelet).toMatchObject({ maxPods: 110 });
    expect(spec.tags).toEqual({ team: 'b' });
  });

  it('does not share arrays with the source', () => {
    const source = structuredClone(hcpSource);
    const r = renderEc2NodeClass(source);
    source.imageSelectorTerms.push({ id: 'ami-0ccc' });
    expect((r.object.spec as { amiSelectorTerms: unknown[] }).amiSelectorTerms).toHaveLength(2);
    expect((r.protectedSpec.amiSelectorTerms as unknown[]).length).toBe(2);
  });

  it.each([
    { key: 'kubernetes.io/cluster/x', restricted: true },
    { key: 'karpenter.sh/managed-by', restricted: true },
    { key: 'karpenter.k8s.aws/ec2nodeclass', restricted: true },
    { key: 'eks:eks-cluster-name', restricted: true },
    { key: '', restricted: true },
    { key: 'team', restricted: false },
    { key: 'kubernetes.io/role/internal-elb', restricted: false },
  ])('restricted tag key $key: $restricted', ({ key, restricted }) => {
    expect(isRestrictedTagKey(key)).toBe(restricted);
  });
});

describe('ec2LaunchHold', () => {
  it('selects an AMI by a tag naming the pool, which verification recognises and no other term matches', () => {
    const hold = ec2LaunchHold('karpenter-gpu');
    expect(hold).toEqual({ amiSelectorTerms: [{ tags: { [Names.launchHoldKey]: 'karpenter-gpu' } }] });
    const [term] = hold.amiSelectorTerms as Array<Record<string, unknown>>;
    expect(isLaunchHoldTerm(term!)).toBe(true);
    expect(isLaunchHoldTerm({ id: 'ami-0x86' })).toBe(false);
    expect(isLaunchHoldTerm({ tags: { Name: 'rhcos' } })).toBe(false);
  });
});
