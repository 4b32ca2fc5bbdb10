import { describe, expect, it } from 'vitest';
import { InvalidInputError, type KubeObject } from '@karpenter-operator/core';
import { IgnitionAnnotations, mergeNodeClassTags, nodeClassInputsFromSecrets, type NodeClassInput } from './ignition.js';
import { anIgnitionSecret, HCP_NAMESPACE } from './testing/builders.js';

const POINTER =
  '{"ignition":{"version":"3.4.0","config":{"merge":[{"source":"https://ignition.demo:443/ignition","httpHeaders":[{"name":"TargetConfigVersionHash","value":"abc"}]}]}}}';

const withAnnotations = (s: KubeObject, annotations: Record<string, string | null>): KubeObject => {
  const a = { ...s.metadata.annotations } as Record<string, string>;
  for (const [k, v] of Object.entries(annotations)) {
    if (v === null) delete a[k];
    else a[k] = v;
  }
  return { ...s, metadata: { ...s.metadata, annotations: a } };
};

const summary = (m: Map<string, NodeClassInput>) =>
  Object.fromEntries([...m].map(([k, v]) => [k, { source: v.source, amis: v.amiSelectorTerms.map((t) => t.id), userData: v.userData }]));

describe('nodeClassInputsFromSecrets', () => {
  it.each([
    {
      name: 'one Secret binds default; userData verbatim, amd64 AMI',
      secrets: [anIgnitionSecret({ name: 'anything', userData: POINTER })],
      want: { default: { source: `Secret ${HCP_NAMESPACE}/anything`, amis: ['ami-0123456789abcdef0'], userData: POINTER } },
    },
    {
      name: 'both architectures, amd64 first',
      secrets: [anIgnitionSecret({ name: 's', ami: 'ami-0aaa', arm64Ami: 'ami-0bbb', userData: 'x' })],
      want: { default: { source: `Secret ${HCP_NAMESPACE}/s`, amis: ['ami-0aaa', 'ami-0bbb'], userData: 'x' } },
    },
    {
      name: 'arm64 only',
      secrets: [anIgnitionSecret({ name: 's', arm64Ami: 'ami-0bbb', userData: 'x' })],
      want: { default: { source: `Secret ${HCP_NAMESPACE}/s`, amis: ['ami-0bbb'], userData: 'x' } },
    },
    {
      name: 'the annotation binds, not the Secret name',
      secrets: [anIgnitionSecret({ name: 'user-data-default-zz', nodeClass: 'gpu', userData: 'g' })],
      want: { gpu: { source: `Secret ${HCP_NAMESPACE}/user-data-default-zz`, amis: ['ami-0123456789abcdef0'], userData: 'g' } },
    },
    {
      name: 'token Secrets are skipped, even when they look valid',
      secrets: [anIgnitionSecret({ name: 'token-default', token: true, userData: 't' }), anIgnitionSecret({ name: 'ud', userData: 'u' })],
      want: { default: { source: `Secret ${HCP_NAMESPACE}/ud`, amis: ['ami-0123456789abcdef0'], userData: 'u' } },
    },
    {
      name: 'Secrets without the managed-by label are not ours',
      secrets: [
        {
          ...anIgnitionSecret({ userData: 'u' }),
          metadata: { ...anIgnitionSecret().metadata, labels: { 'hypershift.openshift.io/ami': 'ami-01' } },
        },
      ],
      want: {},
    },
    {
      name: 'Secrets in another namespace are not ours',
      secrets: [anIgnitionSecret({ namespace: 'clusters-other' })],
      want: {},
    },
    {
      name: 'rotation: the newest Secret of a NodeClass wins',
      secrets: [
        anIgnitionSecret({ name: 'old', userData: 'old', createdAt: '2026-01-01T00:00:00Z' }),
        anIgnitionSecret({ name: 'new', userData: 'new', createdAt: '2026-01-01T05:30:00Z' }),
        anIgnitionSecret({ name: 'older', userData: 'older', createdAt: '2025-12-31T00:00:00Z' }),
      ],
      want: { default: { source: `Secret ${HCP_NAMESPACE}/new`, amis: ['ami-0123456789abcdef0'], userData: 'new' } },
    },
    {
      name: 'several NodeClasses',
      secrets: [
        anIgnitionSecret({ name: 'a', nodeClass: 'a', userData: 'A' }),
        anIgnitionSecret({ name: 'b', nodeClass: 'b.x', userData: 'B' }),
      ],
      want: {
        a: { source: `Secret ${HCP_NAMESPACE}/a`, amis: ['ami-0123456789abcdef0'], userData: 'A' },
        'b.x': { source: `Secret ${HCP_NAMESPACE}/b`, amis: ['ami-0123456789abcdef0'], userData: 'B' },
      },
    },
  ])('$name', ({ secrets, want }) => {
    expect(summary(nodeClassInputsFromSecrets(secrets, HCP_NAMESPACE))).toEqual(want);
  });

  const bad = (patch: (s: KubeObject) => KubeObject) => patch(anIgnitionSecret({ name: 'bad' }));
  const NP = `metadata.annotations[${IgnitionAnnotations.nodePool}]`;
  it.each([
    { name: 'no nodePool annotation', secret: bad((s) => withAnnotations(s, { [IgnitionAnnotations.nodePool]: null })), field: NP },
    {
      name: 'annotation without namespace',
      secret: bad((s) => withAnnotations(s, { [IgnitionAnnotations.nodePool]: 'default-karpenter' })),
      field: NP,
    },
    {
      name: 'annotation without the -karpenter suffix',
      secret: bad((s) => withAnnotations(s, { [IgnitionAnnotations.nodePool]: `${HCP_NAMESPACE}/default` })),
      field: NP,
    },
    {
      name: 'annotation of another namespace',
      secret: bad((s) => withAnnotations(s, { [IgnitionAnnotations.nodePool]: `clusters/default-karpenter` })),
      field: NP,
    },
    {
      name: 'empty NodeClass name',
      secret: bad((s) => withAnnotations(s, { [IgnitionAnnotations.nodePool]: `${HCP_NAMESPACE}/-karpenter` })),
      field: NP,
    },
    {
      name: 'upper-case NodeClass name',
      secret: bad((s) => withAnnotations(s, { [IgnitionAnnotations.nodePool]: `${HCP_NAMESPACE}/Gpu-karpenter` })),
      field: NP,
    },
    { name: 'no data.value', secret: bad((s) => ({ ...s, data: { userData: 'eA==' } })), field: 'data.value' },
    { name: 'data.value not base64', secret: bad((s) => ({ ...s, data: { value: '{"ignition":{}}' } })), field: 'data.value' },
    { name: 'no AMI label', secret: anIgnitionSecret({ name: 'bad', noAmi: true }), field: 'metadata.labels[hypershift.openshift.io/ami]' },
    {
      name: 'bad AMI id',
      secret: anIgnitionSecret({ name: 'bad', ami: 'rhcos-418' }),
      field: 'metadata.labels[hypershift.openshift.io/ami]',
    },
    {
      name: 'bad arm64 AMI id',
      secret: anIgnitionSecret({ name: 'bad', arm64Ami: 'ami-' }),
      field: 'metadata.labels[hypershift.openshift.io/ami-arm64]',
    },
  ])('rejects $name, naming $field', ({ secret, field }) => {
    let err: unknown;
    try {
      nodeClassInputsFromSecrets([secret], HCP_NAMESPACE);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InvalidInputError);
    expect((err as InvalidInputError).field).toBe(field);
    expect((err as InvalidInputError).object).toBe(`Secret ${HCP_NAMESPACE}/bad`);
  });

  it('with onInvalid, skips a broken Secret, reports it, and falls back to an older good one', () => {
    const errors: InvalidInputError[] = [];
    const broken = { ...anIgnitionSecret({ name: 'newest', createdAt: '2026-01-02T00:00:00Z' }), data: {} };
    const good = anIgnitionSecret({ name: 'good', userData: 'ok' });
    const got = nodeClassInputsFromSecrets([broken, good], HCP_NAMESPACE, { onInvalid: (e) => errors.push(e) });
    expect(got.get('default')?.userData).toBe('ok');
    expect(errors.map((e) => [e.object, e.field])).toEqual([[`Secret ${HCP_NAMESPACE}/newest`, 'data.value']]);
  });

  it('binds by a configured nodePool namespace (e.g. the HostedCluster namespace)', () => {
    const s = withAnnotations(anIgnitionSecret({ userData: 'x' }), { [IgnitionAnnotations.nodePool]: 'clusters/default-karpenter' });
    expect([...nodeClassInputsFromSecrets([s], HCP_NAMESPACE, { nodePoolNamespace: 'clusters' }).keys()]).toEqual(['default']);
  });
});

describe('mergeNodeClassTags', () => {
  it.each([
    { name: 'cluster tags only', cluster: [{ key: 'a', value: '1' }], own: {}, allow: false, tags: { a: '1' }, conflicts: [] },
    {
      name: 'NodeClass adds a key',
      cluster: [{ key: 'a', value: '1' }],
      own: { b: '2' },
      allow: false,
      tags: { a: '1', b: '2' },
      conflicts: [],
    },
    {
      name: 'cluster wins a conflict',
      cluster: [{ key: 'a', value: '1' }],
      own: { a: '9' },
      allow: false,
      tags: { a: '1' },
      conflicts: ['a'],
    },
    {
      name: 'override policy lets the NodeClass win',
      cluster: [{ key: 'a', value: '1' }],
      own: { a: '9' },
      allow: true,
      tags: { a: '9' },
      conflicts: ['a'],
    },
    {
      name: 'same value is no conflict',
      cluster: [{ key: 'a', value: '1' }],
      own: { a: '1' },
      allow: false,
      tags: { a: '1' },
      conflicts: [],
    },
  ])('$name', ({ cluster, own, allow, tags, conflicts }) => {
    expect(mergeNodeClassTags(cluster, own as Record<string, string>, allow)).toEqual({ tags, conflicts });
  });
});
