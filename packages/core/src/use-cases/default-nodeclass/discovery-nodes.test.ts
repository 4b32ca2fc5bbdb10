import { describe, expect, it } from 'vitest';
import { Types, type KubeObject } from '../../model/kube.js';
import { discoveryNodes, type DiscoveryNodeMemo } from './discovery-nodes.js';

const label = 'karpenter.k8s.aws/ec2nodeclass';
const node = (name: string, labels: Record<string, string>, providerID?: string): KubeObject => ({
  ...Types.Node,
  metadata: { name, labels },
  ...(providerID ? { spec: { providerID } } : {}),
});

describe('discoveryNodes', () => {
  it('keeps the cluster own nodes by role, sorted, and leaves out what Karpenter launched', () => {
    const nodes = [
      node('w-2', { 'node-role.kubernetes.io/worker': '', 'kubernetes.io/arch': 'arm64' }, 'aws:///a/i-2'),
      node('cp-1', { 'node-role.kubernetes.io/master': '' }),
      node('k-1', { 'node-role.kubernetes.io/worker': '', 'karpenter.sh/nodepool': 'default' }),
      node('k-2', { 'node-role.kubernetes.io/worker': '', [label]: 'default' }),
      node('none', {}),
    ];
    expect(discoveryNodes(nodes, label)).toEqual([
      { name: 'cp-1', role: 'control-plane' },
      { name: 'w-2', role: 'worker', providerID: 'aws:///a/i-2', architecture: 'arm64' },
    ]);
  });

  it('with a memo, projects each Node object once; a changed (replaced) object is projected anew', () => {
    const memo: DiscoveryNodeMemo = new WeakMap();
    const worker = node('w-1', { 'node-role.kubernetes.io/worker': '' });
    const launched = node('k-1', { 'node-role.kubernetes.io/worker': '', 'karpenter.sh/nodepool': 'default' });
    const first = discoveryNodes([worker, launched], label, memo);
    expect(first).toEqual([{ name: 'w-1', role: 'worker' }]);
    expect(memo.get(launched)).toBeNull();
    // The same objects again: the very projections of the first call.
    expect(discoveryNodes([worker, launched], label, memo)[0]).toBe(first[0]);
    // The cache replaces an object that changed: a new object, read anew.
    const relabelled = { ...worker, metadata: { ...worker.metadata, labels: { 'node-role.kubernetes.io/master': '' } } };
    expect(discoveryNodes([relabelled, launched], label, memo)).toEqual([{ name: 'w-1', role: 'control-plane' }]);
  });
});
