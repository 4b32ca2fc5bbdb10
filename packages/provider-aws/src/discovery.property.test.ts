import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { InvalidInputError } from '@karpenter-operator/core';
import { renderDefaultNodeClass } from './discovery.js';
import { aDiscoveryInput, aMachineSet, aProviderSpec, aBootImagesConfigMap } from './testing/builders.js';
import { crdSchema, ec2NodeClassCelChecks, validateSchema } from './testing/crd-schema.js';

const schema = crdSchema('karpenter.k8s.aws_ec2nodeclasses.yaml');

/**
 * A providerSpec arbitrary. With `noisy`, any field may also be anything at all (wrong types, nulls,
 * nested junk); without, fields are plausible but still often wrong (bad ids, empty strings, huge sizes).
 */
function providerSpecArb(noisy: boolean): fc.Arbitrary<Record<string, unknown>> {
  const or = <T>(plausible: fc.Arbitrary<T>): fc.Arbitrary<unknown> =>
    noisy ? fc.oneof({ arbitrary: plausible, weight: 4 }, { arbitrary: fc.anything(), weight: 1 }) : plausible;
  const id = (prefix: string) =>
    or(fc.oneof({ arbitrary: fc.stringMatching(new RegExp(`^${prefix}-[0-9a-f]{1,17}$`)), weight: 3 }, fc.string(), fc.constant('')));
  const arnKind: Record<string, string> = { ami: 'image', sg: 'security-group', subnet: 'subnet', kms: 'key' };
  const filter = or(
    fc.record({
      name: fc.oneof(
        fc.constantFrom('tag:Name', 'tag:tier', 'tag:', 'subnet-id', 'group-id', 'group-name', 'image-id', 'name', 'vpc-id'),
        fc.string(),
      ),
      values: fc.array(fc.oneof(fc.string(), fc.stringMatching(/^(subnet|sg|ami)-[0-9a-f]{4}$/)), { maxLength: 4 }),
    }),
  );
  const ref = (prefix: string) =>
    or(
      fc.record(
        {
          id: id(prefix),
          arn: or(fc.oneof(fc.constant(`arn:aws:ec2:us-east-1:123456789012:${arnKind[prefix]}/${prefix}-0abc`), fc.string())),
          filters: or(fc.array(filter, { maxLength: 4 })),
        },
        { requiredKeys: [] },
      ),
    );
  const ebs = or(
    fc.record(
      {
        encrypted: or(fc.boolean()),
        iops: or(fc.integer({ min: -5, max: 70000 })),
        volumeSize: or(fc.oneof(fc.integer({ min: -1, max: 80000 }), fc.integer({ min: 1, max: 2000 }))),
        volumeType: or(fc.constantFrom('gp2', 'gp3', 'io1', 'io2', 'st1', 'sc1', 'standard', 'ssd', '')),
        throughputMib: or(fc.integer({ min: 0, max: 3000 })),
        kmsKey: ref('kms'),
      },
      { requiredKeys: [] },
    ),
  );
  const tag = or(
    fc.record(
      {
        name: or(
          fc.oneof(
            fc.string(),
            fc.constantFrom('kubernetes.io/cluster/x', 'karpenter.sh/nodepool', 'karpenter.k8s.aws/ec2nodeclass', 'eks:x', 'team'),
          ),
        ),
        value: or(fc.string()),
      },
      { requiredKeys: [] },
    ),
  );
  return fc.record(
    {
      kind: or(fc.constantFrom('AWSMachineProviderConfig', 'AzureMachineProviderSpec')),
      ami: ref('ami'),
      subnet: ref('subnet'),
      securityGroups: or(fc.array(ref('sg'), { maxLength: 4 })),
      iamInstanceProfile: or(
        fc.record({ id: or(fc.string()), arn: or(fc.constant('arn:aws:iam::123456789012:instance-profile/p')) }, { requiredKeys: [] }),
      ),
      blockDevices: or(fc.array(or(fc.record({ deviceName: or(fc.string()), ebs }, { requiredKeys: [] })), { maxLength: 3 })),
      metadataServiceOptions: or(
        fc.record({ authentication: or(fc.constantFrom('Required', 'Optional', '', 'Sometimes')) }, { requiredKeys: [] }),
      ),
      publicIp: or(fc.boolean()),
      tags: or(fc.array(tag, { maxLength: 5 })),
      userDataSecret: or(fc.record({ name: or(fc.constantFrom('worker-user-data', 'absent-secret')) })),
      instanceType: or(fc.constantFrom('m6i.xlarge', 'm6g.large', 'a1.medium', 'g4dn.xlarge')),
      placement: or(fc.record({ region: or(fc.string()), availabilityZone: or(fc.string()) }, { requiredKeys: [] })),
      spotMarketOptions: or(fc.record({ maxPrice: or(fc.string()) }, { requiredKeys: [] })),
    },
    { requiredKeys: [] },
  );
}

/**
 * Three populations: noisy specs, installer specs with a few plausible fields overwritten (most of these
 * render), and arbitrary JSON in place of the providerSpec.
 */
const overrides = providerSpecArb(false).chain((p) =>
  fc.subarray(Object.keys(p), { maxLength: 3 }).map((keys) => Object.fromEntries(keys.map((k) => [k, p[k]]))),
);
const value = fc.oneof(
  providerSpecArb(true),
  overrides.map((o) => ({ ...aProviderSpec(), ...o })),
  overrides.map((o) => ({ ...aProviderSpec(), ...o })),
  fc.anything(),
);

describe('discovery: decode + map of random providerSpecs', () => {
  it('throws nothing but InvalidInputError naming a field, and renders only CRD-valid NodeClasses', () => {
    let rendered = 0;
    let rejected = 0;
    fc.assert(
      fc.property(fc.array(value, { minLength: 1, maxLength: 2 }), (values) => {
        const machineSets = values.map((v, i) => aMachineSet({ name: `worker-${i}`, rawProviderSpec: v }));
        const input = aDiscoveryInput({
          machineSets,
          bootImages: aBootImagesConfigMap({ x86_64: { 'us-east-1': 'ami-0rhcosx86' }, aarch64: { 'us-east-1': 'ami-0rhcosarm' } }),
        });
        let out;
        try {
          out = renderDefaultNodeClass(input);
        } catch (e) {
          rejected++;
          if (!(e instanceof InvalidInputError)) throw e;
          expect(e.field).not.toBe('');
          expect(e.object).not.toBe('');
          expect(e.message).toContain(e.field);
          return;
        }
        rendered++;
        const errors = [...validateSchema(schema, out.object), ...ec2NodeClassCelChecks(out.object.spec as Record<string, unknown>)];
        expect(errors).toEqual([]);
      }),
      { numRuns: 10_000, seed: 20260101 },
    );
    // Both branches must actually be exercised, or the property says little.
    expect(rendered).toBeGreaterThan(100);
    expect(rejected).toBeGreaterThan(100);
    console.log(`property: ${rendered} rendered, ${rejected} rejected`);
  }, 180_000); // ~2.5 s on a quiet machine: an explicit budget for a loaded one
});
