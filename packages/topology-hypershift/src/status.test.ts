import { describe, expect, it } from 'vitest';
import { Types, type KubeObject } from '@karpenter-operator/core';
import { autoNodeStatus, cpuCores } from './status.js';

const node = (name: string, nodepool?: string): KubeObject => ({
  ...Types.Node,
  metadata: { name, ...(nodepool ? { labels: { 'karpenter.sh/nodepool': nodepool } } : {}) },
});
const claim = (name: string, nodeName?: string, cpu?: unknown): KubeObject => ({
  ...Types.NodeClaim,
  metadata: { name },
  status: { ...(nodeName ? { nodeName } : {}), ...(cpu !== undefined ? { capacity: { cpu, memory: '16Gi' } } : {}) },
});

describe('cpuCores', () => {
  it.each([
    { name: 'integer string', q: '4', want: 4 },
    { name: 'number', q: 8, want: 8 },
    { name: 'millicores round up', q: '3500m', want: 4 },
    { name: 'whole millicores', q: '2000m', want: 2 },
    { name: 'decimal', q: '1.5', want: 2 },
    { name: 'kilo', q: '1k', want: 1000 },
    { name: 'exponent', q: '2e1', want: 20 },
    { name: 'zero', q: '0', want: 0 },
    { name: 'negative', q: '-1', want: undefined },
    { name: 'garbage', q: 'four', want: undefined },
    { name: 'unit typo', q: '4 cores', want: undefined },
    { name: 'not a string', q: { cpu: 4 }, want: undefined },
    { name: 'absent', q: undefined, want: undefined },
  ])('$name: $q → $want', ({ q, want }) => {
    expect(cpuCores(q)).toBe(want);
  });
});

describe('autoNodeStatus', () => {
  it.each([
    { name: 'empty guest', nodes: [], claims: [], want: { nodeCount: 0, nodeClaimCount: 0, vcpus: 0 } },
    {
      name: 'Karpenter nodes and their claims',
      nodes: [node('n1', 'default'), node('n2', 'gpu')],
      claims: [claim('c1', 'n1', '4'), claim('c2', 'n2', '16')],
      want: { nodeCount: 2, nodeClaimCount: 2, vcpus: 20 },
    },
    {
      name: 'nodes without the nodepool label are not counted, but their claims still add CPUs',
      nodes: [node('n1', 'default'), node('static')],
      claims: [claim('c1', 'n1', '4'), claim('c2', 'static', '2')],
      want: { nodeCount: 1, nodeClaimCount: 2, vcpus: 6 },
    },
    {
      name: 'claims whose node does not exist (yet, or any more) add no CPUs',
      nodes: [node('n1', 'default')],
      claims: [claim('c1', 'n1', '4'), claim('launching'), claim('gone', 'n9', '8')],
      want: { nodeCount: 1, nodeClaimCount: 3, vcpus: 4 },
    },
    {
      name: 'a claim without a readable capacity adds nothing',
      nodes: [node('n1', 'default'), node('n2', 'default')],
      claims: [claim('c1', 'n1', 'lots'), claim('c2', 'n2', '3500m')],
      want: { nodeCount: 2, nodeClaimCount: 2, vcpus: 4 },
    },
  ])('$name', ({ nodes, claims, want }) => {
    expect(autoNodeStatus(nodes, claims)).toEqual(want);
  });
});
