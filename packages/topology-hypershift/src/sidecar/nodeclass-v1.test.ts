import { describe, expect, it } from 'vitest';
import { capacityReservationsStatus, translateV1Spec, V1_SPEC_FIELDS } from './nodeclass-v1.js';

const ok = (spec: Record<string, unknown>) => {
  const t = translateV1Spec(spec);
  if (!t.ok) throw new Error(`${t.field}: ${t.message}`);
  return t.spec;
};
const refused = (spec: Record<string, unknown>) => {
  const t = translateV1Spec(spec);
  if (t.ok) throw new Error(`translated: ${JSON.stringify(t.spec)}`);
  return { field: t.field, message: t.message };
};

describe('translateV1Spec: each v1 field in Karpenter terms', () => {
  it('an empty spec sets nothing', () => {
    expect(ok({})).toEqual({});
  });

  it('subnet and security-group selector terms as given', () => {
    const subnets = [{ tags: { tier: 'private' } }, { id: 'subnet-0a' }];
    const groups = [{ name: 'workers' }, { id: 'sg-0a' }, { tags: { a: '*' } }];
    expect(ok({ subnetSelectorTerms: subnets, securityGroupSelectorTerms: groups })).toEqual({
      subnetSelectorTerms: subnets,
      securityGroupSelectorTerms: groups,
    });
  });

  it('capacityReservationSelectorTerms: instanceMatchCriteria Open/Targeted lowercased, the rest as given', () => {
    expect(
      ok({
        capacityReservationSelectorTerms: [
          { id: 'cr-0a' },
          { tags: { team: 'a' }, ownerID: '123456789012', instanceMatchCriteria: 'Open' },
          { instanceMatchCriteria: 'Targeted' },
        ],
      }),
    ).toEqual({
      capacityReservationSelectorTerms: [
        { id: 'cr-0a' },
        { tags: { team: 'a' }, ownerID: '123456789012', instanceMatchCriteria: 'open' },
        { instanceMatchCriteria: 'targeted' },
      ],
    });
  });

  it('ipAddressAssociation: Public → associatePublicIPAddress true, SubnetDefault → unset (the subnet decides)', () => {
    expect(ok({ ipAddressAssociation: 'Public' })).toEqual({ associatePublicIPAddress: true });
    expect(ok({ ipAddressAssociation: 'SubnetDefault' })).toEqual({});
    expect(ok({ ipAddressAssociation: 'SubnetDefault', monitoring: 'Basic' })).toEqual({ detailedMonitoring: false });
  });

  it('tags as given', () => {
    expect(ok({ tags: { team: 'a' } })).toEqual({ tags: { team: 'a' } });
  });

  it('blockDeviceMappings: volumeSizeGiB → volumeSize NGi, PascalCase enums → Karpenter values and booleans', () => {
    const ebs = {
      deleteOnTermination: 'Retain',
      encrypted: 'Encrypted',
      iops: 4000,
      kmsKeyID: 'arn:aws:kms:us-east-2:123456789012:key/k',
      snapshotID: 'snap-0a',
      throughput: 250,
      volumeSizeGiB: 200,
      volumeType: 'GP3',
    };
    expect(
      ok({
        blockDeviceMappings: [
          { deviceName: '/dev/xvda', rootVolume: 'RootVolume', ebs },
          {
            deviceName: '/dev/xvdb',
            rootVolume: 'NotRootVolume',
            ebs: { volumeSizeGiB: 50, deleteOnTermination: 'Delete', encrypted: 'Unencrypted' },
          },
        ],
      }),
    ).toEqual({
      blockDeviceMappings: [
        {
          deviceName: '/dev/xvda',
          rootVolume: true,
          ebs: {
            deleteOnTermination: false,
            encrypted: true,
            iops: 4000,
            kmsKeyID: 'arn:aws:kms:us-east-2:123456789012:key/k',
            snapshotID: 'snap-0a',
            throughput: 250,
            volumeSize: '200Gi',
            volumeType: 'gp3',
          },
        },
        { deviceName: '/dev/xvdb', rootVolume: false, ebs: { volumeSize: '50Gi', deleteOnTermination: true, encrypted: false } },
      ],
    });
    const types = { Standard: 'standard', IO1: 'io1', IO2: 'io2', GP2: 'gp2', SC1: 'sc1', ST1: 'st1', GP3: 'gp3' };
    for (const [v1, karpenter] of Object.entries(types))
      expect(ok({ blockDeviceMappings: [{ ebs: { volumeSizeGiB: 10, volumeType: v1 } }] })).toEqual({
        blockDeviceMappings: [{ ebs: { volumeSize: '10Gi', volumeType: karpenter } }],
      });
  });

  it('instanceStorePolicy RAID0 as given', () => {
    expect(ok({ instanceStorePolicy: 'RAID0' })).toEqual({ instanceStorePolicy: 'RAID0' });
  });

  it('monitoring: Detailed → detailedMonitoring true, Basic → false', () => {
    expect(ok({ monitoring: 'Detailed' })).toEqual({ detailedMonitoring: true });
    expect(ok({ monitoring: 'Basic' })).toEqual({ detailedMonitoring: false });
  });

  it('metadataOptions: access → httpEndpoint, httpIPProtocol → httpProtocolIPv6, hop limit, httpTokens lowercased', () => {
    expect(
      ok({ metadataOptions: { access: 'HTTPEndpoint', httpIPProtocol: 'IPv6', httpPutResponseHopLimit: 2, httpTokens: 'Optional' } }),
    ).toEqual({
      metadataOptions: { httpEndpoint: 'enabled', httpProtocolIPv6: 'enabled', httpPutResponseHopLimit: 2, httpTokens: 'optional' },
    });
    expect(ok({ metadataOptions: { access: 'None', httpIPProtocol: 'IPv4', httpTokens: 'Required' } })).toEqual({
      metadataOptions: { httpEndpoint: 'disabled', httpProtocolIPv6: 'disabled', httpTokens: 'required' },
    });
  });

  it("kubelet: v1's typed settings as Karpenter has them; other kubelet keys are the ignition generator's, not the EC2NodeClass's", () => {
    const kubelet = {
      maxPods: 110,
      podsPerCore: 10,
      systemReserved: { cpu: '500m', memory: '1Gi' },
      kubeReserved: { cpu: '200m' },
      evictionHard: { 'memory.available': '100Mi' },
      evictionSoft: { 'memory.available': '500Mi' },
      evictionSoftGracePeriod: { 'memory.available': '1m30s' },
      evictionMaxPodGracePeriod: 60,
      imageGCHighThresholdPercent: 85,
      imageGCLowThresholdPercent: 80,
      cpuCFSQuota: false,
    };
    expect(ok({ kubelet: { ...kubelet, containerLogMaxSize: '50Mi' } })).toEqual({ kubelet });
  });

  it('version is not an EC2NodeClass field (HyperShift resolves it into the ignition Secret)', () => {
    expect(ok({ version: '4.20.1' })).toEqual({});
  });

  it('knows every v1 spec field', () => {
    expect([...V1_SPEC_FIELDS].sort()).toEqual(
      [
        'blockDeviceMappings',
        'capacityReservationSelectorTerms',
        'instanceStorePolicy',
        'ipAddressAssociation',
        'kubelet',
        'metadataOptions',
        'monitoring',
        'securityGroupSelectorTerms',
        'subnetSelectorTerms',
        'tags',
        'version',
      ].sort(),
    );
  });
});

describe('translateV1Spec: refusals name the field', () => {
  it.each([
    [{ associatePublicIPAddress: true }, 'spec.associatePublicIPAddress', 'not a field of OpenshiftEC2NodeClass v1'],
    [{ detailedMonitoring: true }, 'spec.detailedMonitoring', 'not a field of OpenshiftEC2NodeClass v1'],
    [{ ipAddressAssociation: 'Private' }, 'spec.ipAddressAssociation', '"Private" is not one of Public, SubnetDefault'],
    [{ monitoring: 'detailed' }, 'spec.monitoring', '"detailed" is not one of Detailed, Basic'],
    [{ instanceStorePolicy: 'RAID1' }, 'spec.instanceStorePolicy', '"RAID1" is not one of RAID0'],
    [
      { capacityReservationSelectorTerms: [{ instanceMatchCriteria: 'open' }] },
      'spec.capacityReservationSelectorTerms[0].instanceMatchCriteria',
      '"open" is not one of Open, Targeted',
    ],
    [
      { capacityReservationSelectorTerms: [{ ownerID: '123456789012' }] },
      'spec.capacityReservationSelectorTerms[0]',
      'Karpenter needs tags, id or instanceMatchCriteria in a term (ownerID alone selects nothing there)',
    ],
    [{ subnetSelectorTerms: [{ name: 'x' }] }, 'spec.subnetSelectorTerms[0].name', 'not a field of OpenshiftEC2NodeClass v1'],
    [
      { blockDeviceMappings: [{ ebs: { volumeSize: '10Gi' } }] },
      'spec.blockDeviceMappings[0].ebs.volumeSize',
      'not a field of OpenshiftEC2NodeClass v1',
    ],
    [
      { blockDeviceMappings: [{ ebs: { volumeSizeGiB: 1.5 } }] },
      'spec.blockDeviceMappings[0].ebs.volumeSizeGiB',
      'expected an integer, got 1.5',
    ],
    [
      { blockDeviceMappings: [{ rootVolume: true }] },
      'spec.blockDeviceMappings[0].rootVolume',
      'true is not one of RootVolume, NotRootVolume',
    ],
    [
      { blockDeviceMappings: [{ ebs: { volumeSizeGiB: 1, deleteOnTermination: true } }] },
      'spec.blockDeviceMappings[0].ebs.deleteOnTermination',
      'true is not one of Delete, Retain',
    ],
    [
      { blockDeviceMappings: [{ ebs: { volumeSizeGiB: 1, encrypted: false } }] },
      'spec.blockDeviceMappings[0].ebs.encrypted',
      'false is not one of Encrypted, Unencrypted',
    ],
    [{ metadataOptions: { httpTokens: 'required' } }, 'spec.metadataOptions.httpTokens', '"required" is not one of Required, Optional'],
    [{ metadataOptions: { access: 'enabled' } }, 'spec.metadataOptions.access', '"enabled" is not one of HTTPEndpoint, None'],
    [{ metadataOptions: { httpIPProtocol: 'ipv6' } }, 'spec.metadataOptions.httpIPProtocol', '"ipv6" is not one of IPv4, IPv6'],
    [{ metadataOptions: { httpEndpoint: 'enabled' } }, 'spec.metadataOptions.httpEndpoint', 'not a field of OpenshiftEC2NodeClass v1'],
    [
      { kubelet: { evictionSoft: { 'memory.available': '1Gi' }, evictionSoftGracePeriod: { 'memory.available': '500ms' } } },
      'spec.kubelet.evictionSoftGracePeriod[memory.available]',
      '"500ms" is not a duration Karpenter accepts (hours, minutes, seconds: e.g. 1m30s)',
    ],
    [{ kubelet: { maxPods: '110' } }, 'spec.kubelet.maxPods', 'expected an integer, got "110"'],
    [{ kubelet: { cpuCFSQuota: 'false' } }, 'spec.kubelet.cpuCFSQuota', 'expected a boolean, got "false"'],
    [{ tags: { a: 1 } }, 'spec.tags[a]', 'expected a string, got 1'],
    [{ version: 4.2 }, 'spec.version', 'expected a string, got 4.2'],
  ])('%j → %s', (spec, field, message) => {
    expect(refused(spec)).toEqual({ field, message });
  });
});

describe('capacityReservationsStatus', () => {
  const cr = {
    availabilityZone: 'us-east-2a',
    id: 'cr-0a',
    instanceMatchCriteria: 'open',
    instanceType: 'm6i.large',
    ownerID: '123456789012',
  };
  it("Karpenter's lowercase values → v1's PascalCase ones", () => {
    expect(capacityReservationsStatus([{ ...cr, reservationType: 'default', state: 'active' }])).toEqual([
      { ...cr, instanceMatchCriteria: 'Open', reservationType: 'Default', state: 'Active' },
    ]);
  });
  it('leaves out an entry v1 cannot hold, and an unknown optional value', () => {
    expect(
      capacityReservationsStatus([
        { ...cr, instanceMatchCriteria: 'other' },
        { ...cr, id: '' },
      ]),
    ).toEqual([]);
    expect(capacityReservationsStatus([{ ...cr, state: 'new-state' }])).toEqual([{ ...cr, instanceMatchCriteria: 'Open' }]);
    expect(capacityReservationsStatus(undefined)).toEqual([]);
  });
});
