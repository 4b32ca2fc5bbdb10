import type { KubeObject } from '@karpenter-operator/core';
import { MemoryClusterStore } from '@karpenter-operator/core/testing';
import { describe, expect, it } from 'vitest';
import { aHostedControlPlane, HCP_NAMESPACE } from '../testing/builders.js';
import { HcpScope } from './hcp-scope.js';

const named = (name: string, extra: Record<string, unknown> = {}): KubeObject =>
  aHostedControlPlane({ metadata: { name, uid: `uid-${name}` }, ...extra }) as KubeObject;

describe('HcpScope', () => {
  const hcps = [named('a'), named('b'), named('bad', { spec: { infraID: 7 } })];

  it('maps HCPs of the scope to their names and other objects as asked', () => {
    const one = new HcpScope({ management: new MemoryClusterStore(), namespace: HCP_NAMESPACE, hcpName: 'a' });
    const all = new HcpScope({ management: new MemoryClusterStore(), namespace: HCP_NAMESPACE });
    const hcp = (name: string) => ({ apiVersion: 'hypershift.openshift.io/v1beta1', kind: 'HostedControlPlane', metadata: { name } });
    const node = { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' } };
    expect([one.keysFor(hcp('a'), 'none'), one.keysFor(hcp('b'), 'none'), all.keysFor(hcp('b'), 'none')]).toEqual([['a'], [], ['b']]);
    expect([one.keysFor(node, 'every-hcp'), all.keysFor(node, 'every-hcp'), all.keysFor(node, 'none')]).toEqual([['a'], ['*'], []]);
  });

  it('hands on each HCP that exists and decodes, skipping an invalid one, with the soonest requeue', async () => {
    const management = new MemoryClusterStore(hcps);
    const scope = new HcpScope({ management, namespace: HCP_NAMESPACE });
    expect((await scope.names()).sort()).toEqual(['a', 'b', 'bad']);
    const seen: string[] = [];
    const r = await scope.each('*', async (hcp) => {
      seen.push(hcp.ref.name);
      return hcp.ref.name === 'a' ? { requeueAfterMs: 500 } : { requeueAfterMs: 100 };
    });
    expect(seen.sort()).toEqual(['a', 'b']);
    expect(r).toEqual({ requeueAfterMs: 100 });
    expect(await scope.each('gone', async () => ({ requeueAfterMs: 1 }))).toEqual({});
    expect(await scope.each('bad', async () => ({ requeueAfterMs: 1 }))).toEqual({});
    expect(await scope.each('a', async () => ({}))).toEqual({});
  });

  it('with hcpName, `*` is that HCP only', async () => {
    const scope = new HcpScope({ management: new MemoryClusterStore(hcps), namespace: HCP_NAMESPACE, hcpName: 'b' });
    const seen: string[] = [];
    await scope.each('*', async (hcp) => (seen.push(hcp.ref.name), {}));
    expect(seen).toEqual(['b']);
    expect(await scope.names()).toEqual(['b']);
  });
});
