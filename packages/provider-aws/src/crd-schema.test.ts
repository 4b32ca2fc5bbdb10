import { describe, expect, it } from 'vitest';
import type { DiscoveryInput } from '@karpenter-operator/core';
import { renderDefaultNodeClass } from './discovery.js';
import { aBootImagesConfigMap, aDiscoveryInput, aFacts, aMachineSet } from './testing/builders.js';
import { crdSchema, ec2NodeClassCelChecks, validateSchema } from './testing/crd-schema.js';

const schema = crdSchema('karpenter.k8s.aws_ec2nodeclasses.yaml');
const check = (obj: unknown): string[] => [
  ...validateSchema(schema, obj),
  ...ec2NodeClassCelChecks(((obj as { spec?: unknown }).spec ?? {}) as Record<string, unknown>),
];

const inputs: Array<{ name: string; input: DiscoveryInput }> = [
  { name: 'installer default', input: aDiscoveryInput() },
  {
    name: 'everything set: arm64+amd64, ids, KMS, io2, IMDS Optional, public IP, tags',
    input: aDiscoveryInput({
      facts: aFacts({
        resourceTags: [
          { key: 'team', value: 'x' },
          { key: 'kubernetes.io/cluster/foo', value: 'owned' },
        ],
      }),
      machineSets: [
        aMachineSet({
          providerSpec: {
            subnet: { id: 'subnet-0a', filters: null },
            securityGroups: [{ id: 'sg-01' }, { filters: [{ name: 'tag:Name', values: ['a', 'b'] }] }],
            blockDevices: [{ ebs: { volumeSize: 59000, volumeType: 'io2', iops: 64000, kmsKey: { id: 'alias/ebs' } } }],
            metadataServiceOptions: { authentication: 'Optional' },
            publicIp: true,
            tags: [
              { name: 'env', value: '' },
              { name: 'eks:cluster', value: 'x' },
            ],
          },
        }),
        aMachineSet({ name: 'arm', providerSpec: { ami: { id: 'ami-0arm' }, instanceType: 'm7g.large' } }),
      ],
    }),
  },
  {
    name: 'AMIs from boot images',
    input: aDiscoveryInput({
      machineSets: [aMachineSet({ providerSpec: { ami: null } })],
      bootImages: aBootImagesConfigMap({ x86_64: { 'us-east-1': 'ami-0rhcos' } }),
    }),
  },
];

describe('rendered EC2NodeClass against the real CRD schema (karpenter-provider-aws v1.14.1)', () => {
  it.each(inputs)('$name', ({ input }) => {
    expect(check(renderDefaultNodeClass(input).object)).toEqual([]);
  });

  // Negative controls: the validator must be able to say no, or the checks above prove nothing.
  it.each([
    {
      name: 'volumeSize outside the pattern',
      patch: (s: Record<string, unknown>) =>
        ((s.blockDeviceMappings as Array<{ ebs: Record<string, unknown> }>)[0]!.ebs.volumeSize = '70000Gi'),
      expect: /does not match/,
    },
    { name: 'unknown spec field', patch: (s: Record<string, unknown>) => (s.instanceType = 'm5.large'), expect: /unknown field/ },
    {
      name: 'volume type outside the enum',
      patch: (s: Record<string, unknown>) =>
        ((s.blockDeviceMappings as Array<{ ebs: Record<string, unknown> }>)[0]!.ebs.volumeType = 'ssd'),
      expect: /not in enum/,
    },
    {
      name: 'missing subnetSelectorTerms',
      patch: (s: Record<string, unknown>) => delete s.subnetSelectorTerms,
      expect: /missing required subnetSelectorTerms/,
    },
    { name: 'role and instanceProfile', patch: (s: Record<string, unknown>) => (s.role = 'worker-role'), expect: /exactly one of/ },
    {
      name: 'id with tags in an AMI term',
      patch: (s: Record<string, unknown>) => (s.amiSelectorTerms = [{ id: 'ami-1', tags: { a: 'b' } }]),
      expect: /mutually exclusive/,
    },
    {
      name: 'restricted tag',
      patch: (s: Record<string, unknown>) => (s.tags = { 'kubernetes.io/cluster/x': 'owned' }),
      expect: /restricted tag/,
    },
    {
      name: 'hop limit above maximum',
      patch: (s: Record<string, unknown>) => ((s.metadataOptions as Record<string, unknown>).httpPutResponseHopLimit = 65),
      expect: /above maximum/,
    },
    {
      name: 'too many subnet terms',
      patch: (s: Record<string, unknown>) => (s.subnetSelectorTerms = Array.from({ length: 31 }, (_, i) => ({ id: `subnet-${i}` }))),
      expect: /more than 30 items/,
    },
  ])('rejects $name', ({ patch, expect: want }) => {
    const obj = structuredClone(renderDefaultNodeClass(aDiscoveryInput()).object);
    patch(obj.spec as Record<string, unknown>);
    const errors = check(obj);
    expect(errors.join('\n')).toMatch(want);
  });
});
