import { describe, expect, it } from 'vitest';
import { mergePatch } from '../testing/memory-cluster-store.js';
import { foreignEntries, isApplied, isSubset, replacingPatch, wholeSelector, wholeTree } from './subset.js';

const pool = (nodeSelector: unknown) => ({ spec: { nodeSelector, paused: false } });
const POOL = wholeSelector('spec.nodeSelector');
const want = pool({ matchLabels: { nc: 'default' } });

const deployment = (containers: unknown[], extra: Record<string, unknown> = {}) => ({
  spec: { template: { spec: { containers, ...extra } } },
});
const DEP = ['spec.template.spec.containers', 'spec.template.spec.containers[].env', 'spec.template.spec.volumes'];
const controller = (env: unknown[]) => ({ name: 'controller', image: 'k:1', env });
const wantDep = deployment([controller([{ name: 'A', value: '1' }])]);

describe('foreignEntries / isApplied / replacingPatch', () => {
  it.each([
    { name: 'equal selector', desired: want, current: want, owned: POOL, foreign: [] },
    { name: 'unowned extra field', desired: want, current: { spec: { ...want.spec, maxUnavailable: 2 } }, owned: POOL, foreign: [] },
    {
      name: 'extra matchLabels key',
      desired: want,
      current: pool({ matchLabels: { nc: 'default', team: 'x' } }),
      owned: POOL,
      foreign: ['spec.nodeSelector.matchLabels.team'],
    },
    {
      name: 'extra matchExpressions',
      desired: want,
      current: pool({ matchLabels: { nc: 'default' }, matchExpressions: [{ key: 'a', operator: 'Exists' }] }),
      owned: POOL,
      foreign: ['spec.nodeSelector.matchExpressions'],
    },
    {
      name: 'extra key, path not owned',
      desired: want,
      current: pool({ matchLabels: { nc: 'default', team: 'x' } }),
      owned: [],
      foreign: [],
    },
    {
      name: 'server defaults on an owned container',
      desired: wantDep,
      current: deployment([{ ...controller([{ name: 'A', value: '1' }]), terminationMessagePath: '/dev/termination-log' }]),
      owned: DEP,
      foreign: [],
    },
    {
      name: 'a foreign container',
      desired: wantDep,
      current: deployment([controller([{ name: 'A', value: '1' }]), { name: 'sidecar', image: 'evil' }]),
      owned: DEP,
      foreign: ['spec.template.spec.containers[sidecar]'],
    },
    {
      name: 'a foreign env var in an owned container',
      desired: wantDep,
      current: deployment([
        controller([
          { name: 'A', value: '1' },
          { name: 'HTTPS_PROXY', value: 'http://evil:3128' },
        ]),
      ]),
      owned: DEP,
      foreign: ['spec.template.spec.containers[controller].env[HTTPS_PROXY]'],
    },
    {
      name: 'a foreign volume where none is rendered',
      desired: wantDep,
      current: deployment([controller([{ name: 'A', value: '1' }])], { volumes: [{ name: 'host', hostPath: { path: '/' } }] }),
      owned: DEP,
      foreign: ['spec.template.spec.volumes[host]'],
    },
  ])('$name', ({ desired, current, owned, foreign }) => {
    expect(foreignEntries(desired, current, owned)).toEqual(foreign);
    expect(isApplied(desired, current, owned)).toBe(foreign.length === 0);
    if (foreign.length === 0) return;
    // The patch, applied with merge-patch semantics, leaves desired in place and nothing foreign.
    const patched = mergePatch(current, replacingPatch(desired, current, owned));
    expect(foreignEntries(desired, patched, owned)).toEqual([]);
    expect(isSubset(desired, patched)).toBe(true);
  });

  it('nulls only foreign map keys and keeps fields outside the owned paths', () => {
    const current = {
      metadata: { labels: { user: 'x' } },
      spec: { nodeSelector: { matchLabels: { nc: 'default', team: 'x' } }, paused: true },
    };
    const desired = { metadata: { labels: { managed: 'true' } }, spec: { nodeSelector: { matchLabels: { nc: 'default' } } } };
    expect(replacingPatch(desired, current, POOL)).toEqual({
      metadata: { labels: { managed: 'true' } },
      spec: { nodeSelector: { matchLabels: { nc: 'default', team: null } } },
    });
    expect(mergePatch(current, replacingPatch(desired, current, POOL))).toEqual({
      metadata: { labels: { user: 'x', managed: 'true' } },
      spec: { nodeSelector: { matchLabels: { nc: 'default' } }, paused: true },
    });
  });

  it('removes an owned value the desired object lacks altogether', () => {
    const current = { spec: { template: { spec: { containers: [], initContainers: [{ name: 'evil' }] } } } };
    const desired = { spec: { template: { spec: { containers: [] } } } };
    const owned = ['spec.template.spec.initContainers'];
    expect(foreignEntries(desired, current, owned)).toEqual(['spec.template.spec.initContainers[evil]']);
    expect(replacingPatch(desired, current, owned)).toEqual({ spec: { template: { spec: { containers: [], initContainers: null } } } });
  });

  it('does not change its input', () => {
    const desired = structuredClone(want);
    replacingPatch(desired, pool({ matchLabels: { nc: 'default', team: 'x' } }), POOL);
    expect(desired).toEqual(want);
  });
});

describe('wholeTree', () => {
  const nodeClass = (spec: Record<string, unknown>) => ({ spec });
  const terms = (tags: Record<string, string>) => [{ tags }];
  it('names the path, every map below it and every list with its elements, in either value', () => {
    const desired = nodeClass({ blockDeviceMappings: [{ deviceName: '/dev/xvda', ebs: { volumeSize: '120Gi' } }] });
    const current = nodeClass({ blockDeviceMappings: [{ deviceName: '/dev/xvda', ebs: { volumeSize: '120Gi', iops: 3000 } }] });
    expect(wholeTree('spec.blockDeviceMappings', desired, current)).toEqual([
      'spec.blockDeviceMappings',
      'spec.blockDeviceMappings[]',
      'spec.blockDeviceMappings[].ebs',
    ]);
    expect(wholeTree('spec.detailedMonitoring', {}, nodeClass({ detailedMonitoring: true }))).toEqual(['spec.detailedMonitoring']);
    // Keys with dots are owned by their map (a path cannot name them).
    expect(wholeTree('spec.tags', nodeClass({ tags: { 'karpenter.sh/discovery': 'x' } }))).toEqual(['spec.tags']);
  });

  it.each([
    {
      name: 'a scalar the desired object leaves out',
      desired: nodeClass({ amiFamily: 'Custom' }),
      current: nodeClass({ amiFamily: 'Custom', detailedMonitoring: true }),
      path: 'spec.detailedMonitoring',
      foreign: ['spec.detailedMonitoring'],
    },
    {
      name: 'a key inside a list element',
      desired: nodeClass({ subnetSelectorTerms: terms({ a: '1' }) }),
      current: nodeClass({ subnetSelectorTerms: terms({ a: '1', b: '2' }) }),
      path: 'spec.subnetSelectorTerms',
      foreign: ['spec.subnetSelectorTerms[0].tags.b'],
    },
    {
      name: 'a field of a list element',
      desired: nodeClass({ blockDeviceMappings: [{ deviceName: '/dev/xvda', ebs: { volumeSize: '120Gi' } }] }),
      current: nodeClass({ blockDeviceMappings: [{ deviceName: '/dev/xvda', ebs: { volumeSize: '120Gi', iops: 3000 } }] }),
      path: 'spec.blockDeviceMappings',
      foreign: ['spec.blockDeviceMappings[0].ebs.iops'],
    },
    {
      name: 'a list the desired object leaves out',
      desired: nodeClass({}),
      current: nodeClass({ blockDeviceMappings: [{ deviceName: '/dev/xvda' }] }),
      path: 'spec.blockDeviceMappings',
      foreign: ['spec.blockDeviceMappings[0]'],
    },
    {
      name: 'equal values',
      desired: nodeClass({ subnetSelectorTerms: terms({ a: '1' }), detailedMonitoring: false }),
      current: nodeClass({ subnetSelectorTerms: terms({ a: '1' }), detailedMonitoring: false }),
      path: 'spec.subnetSelectorTerms',
      foreign: [],
    },
  ])('$name: foreign, and gone after the replacing patch', ({ desired, current, path, foreign }) => {
    const owned = wholeTree(path, desired, current);
    expect(foreignEntries(desired, current, owned)).toEqual(foreign);
    const patched = mergePatch(current, replacingPatch(desired, current, owned));
    expect(foreignEntries(desired, patched, owned)).toEqual([]);
    expect(isSubset(desired, patched)).toBe(true);
  });

  it('leaves a field outside the owned paths alone', () => {
    const desired = nodeClass({ amiFamily: 'Custom' });
    const current = nodeClass({ amiFamily: 'Custom', context: 'theirs' });
    const owned = wholeTree('spec.detailedMonitoring', desired, current);
    expect(foreignEntries(desired, current, owned)).toEqual([]);
    expect(mergePatch(current, replacingPatch(desired, current, owned))).toEqual(current);
  });
});
