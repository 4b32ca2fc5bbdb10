import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { InvalidInputError, isInvalidInputError } from '@karpenter-operator/core';
import { decodeHostedControlPlane, HcpAnnotations } from './hcp.js';
import { aHostedControlPlane, HCP_NAMESPACE, INFRA_ID, ROLE_ARN } from './testing/builders.js';

const KARPENTER = 'spec.autoNode.provisionerConfig.karpenter';
const withKarpenter = (karpenter: unknown) => aHostedControlPlane({ spec: { autoNode: { provisionerConfig: { karpenter } } } });

describe('decodeHostedControlPlane', () => {
  it('a resource tag overridePolicy that is not a string is named', () => {
    const obj = aHostedControlPlane({ spec: { platform: { aws: { resourceTags: [{ key: 'a', value: 'b', overridePolicy: 7 }] } } } });
    expect(() => decodeHostedControlPlane(obj)).toThrow(/spec\.platform\.aws\.resourceTags\[0\]\.overridePolicy/);
  });

  it('decodes a HostedControlPlane with AutoNode on', () => {
    const hcp = decodeHostedControlPlane(
      aHostedControlPlane({
        metadata: {
          annotations: {
            [HcpAnnotations.karpenterProviderAwsImage]: 'quay.io/openshift/karpenter-provider-aws@sha256:' + 'a'.repeat(64),
            [HcpAnnotations.karpenterOperatorImage]: 'registry.local:5000/karpenter-operator:v1',
          },
          finalizers: ['hypershift.openshift.io/finalizer'],
        },
      }),
    );
    expect(hcp).toEqual({
      object: `HostedControlPlane ${HCP_NAMESPACE}/demo`,
      ref: {
        apiVersion: 'hypershift.openshift.io/v1beta1',
        kind: 'HostedControlPlane',
        namespace: HCP_NAMESPACE,
        name: 'demo',
        uid: 'hcp-uid-1',
      },
      generation: 3,
      autoNode: { provisioner: 'Karpenter', platform: 'AWS', roleARN: ROLE_ARN },
      infraID: INFRA_ID,
      platformType: 'AWS',
      region: 'us-east-2',
      resourceTags: [{ key: 'red-hat-managed', value: 'true' }],
      resourceTagOverridesAllowed: [],
      images: {
        karpenterProviderAws: 'quay.io/openshift/karpenter-provider-aws@sha256:' + 'a'.repeat(64),
        karpenterOperator: 'registry.local:5000/karpenter-operator:v1',
      },
      podOverrides: {},
      defaultInstanceProfile: 'demo-x7k2p-worker',
      deleting: false,
      finalizers: ['hypershift.openshift.io/finalizer'],
      conditions: [],
    });
  });

  it.each([
    { name: 'no spec.autoNode', obj: aHostedControlPlane({ spec: { autoNode: null } }), enabled: false, ignored: undefined },
    {
      name: 'zeroed autoNode (HyperShift disable)',
      obj: aHostedControlPlane({ spec: { autoNode: { provisionerConfig: { name: '', karpenter: null } } } }),
      enabled: false,
      ignored: undefined,
    },
    {
      name: 'autoNode without provisionerConfig',
      obj: aHostedControlPlane({ spec: { autoNode: { provisionerConfig: null } } }),
      enabled: false,
      ignored: undefined,
    },
    {
      name: 'another provisioner',
      obj: aHostedControlPlane({ spec: { autoNode: { provisionerConfig: { name: 'ClusterAutoscaler' } } } }),
      enabled: false,
      ignored: /not Karpenter/,
    },
    { name: 'Karpenter on Azure', obj: withKarpenter({ platform: 'Azure', aws: null }), enabled: false, ignored: /not AWS/ },
    { name: 'Karpenter on AWS', obj: aHostedControlPlane(), enabled: true, ignored: undefined },
    {
      name: 'GovCloud role',
      obj: withKarpenter({ aws: { roleARN: 'arn:aws-us-gov:iam::123456789012:role/k' } }),
      enabled: true,
      ignored: undefined,
    },
    {
      name: 'China role with a path',
      obj: withKarpenter({ aws: { roleARN: 'arn:aws-cn:iam::123456789012:role/path/k' } }),
      enabled: true,
      ignored: undefined,
    },
  ])('AutoNode: $name', ({ obj, enabled, ignored }) => {
    const hcp = decodeHostedControlPlane(obj);
    expect(hcp.autoNode !== undefined).toBe(enabled);
    if (ignored) expect(hcp.autoNodeIgnored).toMatch(ignored);
    else expect(hcp.autoNodeIgnored).toBeUndefined();
  });

  it('reads deletion state', () => {
    const hcp = decodeHostedControlPlane(
      aHostedControlPlane({ metadata: { deletionTimestamp: '2026-01-01T00:10:00Z', finalizers: ['a', 'b'] } }),
    );
    expect(hcp.deleting).toBe(true);
    expect(hcp.deletionRequestedAtMs).toBe(Date.UTC(2026, 0, 1, 0, 10));
    expect(hcp.finalizers).toEqual(['a', 'b']);
  });

  it.each([
    { name: 'not an object', obj: 'hcp', field: 'metadata' },
    { name: 'metadata not an object', obj: { metadata: [] }, field: 'metadata' },
    { name: 'no namespace', obj: aHostedControlPlane({ metadata: { namespace: null } }), field: 'metadata.namespace' },
    { name: 'no uid', obj: aHostedControlPlane({ metadata: { uid: null } }), field: 'metadata.uid' },
    { name: 'fractional generation', obj: aHostedControlPlane({ metadata: { generation: 1.5 } }), field: 'metadata.generation' },
    { name: 'finalizers not strings', obj: aHostedControlPlane({ metadata: { finalizers: [1] } }), field: 'metadata.finalizers' },
    {
      name: 'annotation not a string',
      obj: aHostedControlPlane({ metadata: { annotations: { x: 1 } } }),
      field: 'metadata.annotations[x]',
    },
    { name: 'spec a list', obj: aHostedControlPlane({ spec: [1] }), field: 'spec' },
    { name: 'infraID a number', obj: aHostedControlPlane({ spec: { infraID: 7 } }), field: 'spec.infraID' },
    {
      name: 'region a number',
      obj: aHostedControlPlane({ spec: { platform: { aws: { region: 1 } } } }),
      field: 'spec.platform.aws.region',
    },
    {
      name: 'resourceTags not a list',
      obj: aHostedControlPlane({ spec: { platform: { aws: { resourceTags: {} } } } }),
      field: 'spec.platform.aws.resourceTags',
    },
    {
      name: 'tag without key',
      obj: aHostedControlPlane({ spec: { platform: { aws: { resourceTags: [{ value: 'x' }] } } } }),
      field: 'spec.platform.aws.resourceTags[0]',
    },
    { name: 'autoNode a string', obj: aHostedControlPlane({ spec: { autoNode: 'on' } }), field: 'spec.autoNode' },
    {
      name: 'provisionerConfig a list',
      obj: aHostedControlPlane({ spec: { autoNode: { provisionerConfig: [] } } }),
      field: 'spec.autoNode.provisionerConfig',
    },
    {
      name: 'provisioner name a number',
      obj: aHostedControlPlane({ spec: { autoNode: { provisionerConfig: { name: 1 } } } }),
      field: 'spec.autoNode.provisionerConfig.name',
    },
    { name: 'Karpenter without karpenter', obj: withKarpenter(null), field: KARPENTER },
    { name: 'Karpenter without platform', obj: withKarpenter({ platform: null }), field: `${KARPENTER}.platform` },
    { name: 'AWS without aws', obj: withKarpenter({ aws: null }), field: `${KARPENTER}.aws` },
    { name: 'no roleARN', obj: withKarpenter({ aws: { roleARN: null } }), field: `${KARPENTER}.aws.roleARN` },
    {
      name: 'roleARN of a user',
      obj: withKarpenter({ aws: { roleARN: 'arn:aws:iam::123456789012:user/k' } }),
      field: `${KARPENTER}.aws.roleARN`,
    },
    {
      name: 'roleARN short account',
      obj: withKarpenter({ aws: { roleARN: 'arn:aws:iam::12345:role/k' } }),
      field: `${KARPENTER}.aws.roleARN`,
    },
    {
      name: 'roleARN unknown partition',
      obj: withKarpenter({ aws: { roleARN: 'arn:aws-eu:iam::123456789012:role/k' } }),
      field: `${KARPENTER}.aws.roleARN`,
    },
    {
      name: 'roleARN without role name',
      obj: withKarpenter({ aws: { roleARN: 'arn:aws:iam::123456789012:role/' } }),
      field: `${KARPENTER}.aws.roleARN`,
    },
    {
      name: 'image override with a space',
      obj: aHostedControlPlane({ metadata: { annotations: { [HcpAnnotations.karpenterProviderAwsImage]: 'quay.io/x y' } } }),
      field: `metadata.annotations[${HcpAnnotations.karpenterProviderAwsImage}]`,
    },
    {
      name: 'instance profile with a slash',
      obj: aHostedControlPlane({ metadata: { annotations: { [HcpAnnotations.defaultInstanceProfile]: 'a/b' } } }),
      field: `metadata.annotations[${HcpAnnotations.defaultInstanceProfile}]`,
    },
    ...[
      { name: 'a request override of a negative quantity', value: 'cpu=-1' },
      { name: 'a request override with a lower-case binary suffix', value: 'memory=64mi' },
      { name: 'a request override without a quantity', value: 'cpu=' },
    ].map(({ name, value }) => ({
      name,
      obj: aHostedControlPlane({
        metadata: { annotations: { [`${HcpAnnotations.resourceRequestOverridePrefix}/karpenter.controller`]: value } },
      }),
      field: `metadata.annotations[${`${HcpAnnotations.resourceRequestOverridePrefix}/karpenter.controller`}]`,
    })),
  ])('rejects $name, naming $field', ({ obj, field }) => {
    let err: unknown;
    try {
      decodeHostedControlPlane(obj);
    } catch (e) {
      err = e;
    }
    expect(isInvalidInputError(err)).toBe(true);
    expect((err as InvalidInputError).field).toBe(field);
    expect((err as InvalidInputError).reason).toBe('InvalidHostedControlPlane');
    expect((err as InvalidInputError).message).toContain(field);
  });

  it('names the HCP in the error', () => {
    expect(() => decodeHostedControlPlane(withKarpenter({ aws: { roleARN: 'nope' } }))).toThrow(
      `HostedControlPlane ${HCP_NAMESPACE}/demo: ${KARPENTER}.aws.roleARN: must match`,
    );
  });

  it('keeps foreign conditions, dropping only entries that are not conditions', () => {
    const hcp = decodeHostedControlPlane(
      aHostedControlPlane({ status: { conditions: [{ type: 'Available', status: 'True' }, null, 'x'] } }),
    );
    expect(hcp.conditions).toEqual([{ type: 'Available', status: 'True' }]);
  });
});

describe('decodeHostedControlPlane, property', () => {
  /** Plausible values most of the time, anything at all some of the time. */
  const or = <T>(plausible: fc.Arbitrary<T>): fc.Arbitrary<unknown> =>
    fc.oneof(
      { arbitrary: plausible, weight: 60 },
      { arbitrary: fc.constant(undefined), weight: 1 },
      { arbitrary: fc.anything(), weight: 1 },
    );
  const mostly = <T>(usual: T, ...rare: T[]): fc.Arbitrary<T> =>
    fc.oneof({ arbitrary: fc.constant(usual), weight: 8 }, { arbitrary: fc.constantFrom(usual, ...rare), weight: 1 });
  const roleARN = fc.oneof(
    { arbitrary: fc.constant(ROLE_ARN), weight: 4 },
    fc.stringMatching(/^arn:(aws|aws-cn|aws-us-gov|aws-x):iam::[0-9]{10,13}:(role|user)\/.{0,5}$/),
    fc.string(),
  );
  const hcpArb = fc.record({
    apiVersion: fc.constant('hypershift.openshift.io/v1beta1'),
    kind: fc.constant('HostedControlPlane'),
    metadata: or(
      fc.record({
        name: or(mostly('demo', '')),
        namespace: or(mostly(HCP_NAMESPACE, '')),
        uid: or(mostly('u-1', '')),
        generation: or(fc.oneof({ arbitrary: fc.nat(), weight: 8 }, fc.double())),
        deletionTimestamp: or(fc.constantFrom('2026-01-01T00:00:00Z', 'not a date', '')),
        finalizers: or(fc.array(fc.string(), { maxLength: 3 })),
        annotations: or(
          fc.record(
            {
              [HcpAnnotations.karpenterProviderAwsImage]: mostly('quay.io/k:v1', 'bad image', ''),
              [HcpAnnotations.karpenterOperatorImage]: mostly('registry:5000/op@sha256:abc', ' '),
              [HcpAnnotations.defaultInstanceProfile]: mostly('profile-1', 'a/b', ''),
              other: fc.string(),
            },
            { requiredKeys: [] },
          ),
        ),
      }),
    ),
    spec: or(
      fc.record({
        infraID: or(fc.string()),
        platform: or(
          fc.record({
            type: or(fc.constantFrom('AWS', 'Azure', '')),
            aws: or(
              fc.record({
                region: or(fc.constantFrom('us-east-1', '')),
                resourceTags: or(
                  fc.array(or(fc.record({ key: or(fc.string({ minLength: 1 })), value: or(fc.string()) })), { maxLength: 3 }),
                ),
              }),
            ),
          }),
        ),
        autoNode: or(
          fc.record({
            provisionerConfig: or(
              fc.record({
                name: or(fc.constantFrom('Karpenter', 'Other', '')),
                karpenter: or(
                  fc.record({ platform: or(fc.constantFrom('AWS', 'Azure', '')), aws: or(fc.record({ roleARN: or(roleARN) })) }),
                ),
              }),
            ),
          }),
        ),
      }),
    ),
    status: or(fc.record({ conditions: or(fc.array(fc.anything(), { maxLength: 3 })) })),
  });

  it('throws nothing but InvalidInputError, every rejection names a field, and every acceptance is consistent', () => {
    let accepted = 0;
    let enabled = 0;
    let rejected = 0;
    fc.assert(
      fc.property(hcpArb, (obj) => {
        try {
          const hcp = decodeHostedControlPlane(obj);
          accepted++;
          if (hcp.autoNode) enabled++;
          expect(hcp.ref.uid).toBeTruthy();
          expect(hcp.ref.namespace).toBeTruthy();
          if (hcp.autoNode) expect(hcp.autoNode.roleARN).toMatch(/^arn:(aws|aws-cn|aws-us-gov):iam::[0-9]{12}:role\/.+$/);
          expect(hcp.autoNode !== undefined && hcp.autoNodeIgnored !== undefined).toBe(false);
        } catch (e) {
          if (!(e instanceof InvalidInputError)) throw e;
          rejected++;
          expect(e.field).toMatch(/^(metadata|spec|status)/);
          expect(e.object).toMatch(/^HostedControlPlane /);
          expect(e.message).toContain(e.field);
        }
      }),
      { numRuns: 10_000 },
    );
    // The generator must exercise both outcomes, or the property says little.
    expect(accepted).toBeGreaterThan(500);
    expect(enabled).toBeGreaterThan(100);
    expect(rejected).toBeGreaterThan(500);
  }, 120_000);
});
