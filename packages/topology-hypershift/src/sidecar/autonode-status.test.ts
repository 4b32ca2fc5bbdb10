import { Types, type KubeObject } from '@karpenter-operator/core';
import { MemoryClusterStore } from '@karpenter-operator/core/testing';
import { describe, expect, it } from 'vitest';
import { aSidecarHostedControlPlane } from '../testing/builders.js';
import { AutoNodeStatusReconciler } from './autonode-status.js';

const NS = 'clusters-demo';

const hcp = aSidecarHostedControlPlane;

const node = (name: string, pool = true): KubeObject => ({
  ...Types.Node,
  metadata: { name, ...(pool ? { labels: { 'karpenter.sh/nodepool': 'default' } } : {}) },
});
const claim = (name: string, nodeName: string, cpu: string): KubeObject => ({
  ...Types.NodeClaim,
  metadata: { name },
  status: { nodeName, capacity: { cpu } },
});

describe('AutoNodeStatusReconciler', () => {
  it('writes status.autoNode, keeps conditions, and writes nothing on a second reconcile', async () => {
    const conditions = [
      { type: 'Available', status: 'True', reason: 'AsExpected', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' },
    ];
    const management = new MemoryClusterStore([hcp({ status: { conditions, version: '4.20' } })]);
    const guest = new MemoryClusterStore([
      node('n1'),
      node('n2'),
      node('other', false),
      claim('c1', 'n1', '4'),
      claim('c2', 'n2', '3500m'),
      claim('c3', 'gone', '8'),
    ]);
    const r = new AutoNodeStatusReconciler({ management, guest, namespace: NS });
    expect(await r.resyncKeys()).toEqual(['demo']);
    await r.reconcile('demo');
    const got = await management.get({
      apiVersion: 'hypershift.openshift.io/v1beta1',
      kind: 'HostedControlPlane',
      namespace: NS,
      name: 'demo',
    });
    expect(got?.status).toEqual({ conditions, version: '4.20', autoNode: { nodeCount: 2, nodeClaimCount: 3, vcpus: 8 } });
    management.clearWrites();
    await r.reconcile('demo');
    await r.reconcile('*');
    expect(management.writes).toEqual([]);
    guest.remove({ ...Types.NodeClaim, name: 'c2' });
    expect(r.keysFor({ ...Types.NodeClaim, metadata: { name: 'c2' } })).toEqual(['*']);
    await r.reconcile('*');
    expect(management.writes.map((w) => w.body)).toEqual([{ autoNode: { nodeCount: 2, nodeClaimCount: 2, vcpus: 4 } }]);
  });

  it('leaves an HCP without AutoNode alone', async () => {
    const management = new MemoryClusterStore([hcp({ autoNode: false })]);
    const r = new AutoNodeStatusReconciler({ management, guest: new MemoryClusterStore([node('n1')]), namespace: NS });
    await r.reconcile('demo');
    expect(management.writes).toEqual([]);
  });
});
