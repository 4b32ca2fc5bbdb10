import { describe, expect, it } from 'vitest';
import { Container } from 'inversify';
import { ClockId, TopologyId, type Topology } from '@karpenter-operator/core';
import { FakeClock, MemoryClusterStore } from '@karpenter-operator/core/testing';
import { GuestClusterStoreId, HyperShiftTopology, ManagementClusterStoreId } from './hypershift-topology.js';
import { HyperShiftTopologyId, hypershiftTopologyModule } from './module.js';
import { aHostedControlPlane, HCP_NAME, HCP_NAMESPACE, INFRA_ID } from './testing/builders.js';

const env = { clusterName: INFRA_ID, clusterEndpoint: 'https://api.demo:443', region: 'us-east-2', platform: 'AWS' };

describe('hypershiftTopologyModule', () => {
  it('resolves TopologyId from a real container, with stores and clock from the options', async () => {
    const management = new MemoryClusterStore([aHostedControlPlane()]);
    const guest = new MemoryClusterStore();
    const container = new Container();
    container.load(
      hypershiftTopologyModule({ management, guest, clock: new FakeClock(), namespace: HCP_NAMESPACE, hcpName: HCP_NAME, env }),
    );
    const topology = container.get<Topology>(TopologyId);
    expect(topology).toBeInstanceOf(HyperShiftTopology);
    expect(topology.controlStore).toBe(management);
    expect(topology.workloadStore).toBe(guest);
    expect(container.get<Topology>(TopologyId)).toBe(topology);
    expect(container.get(HyperShiftTopologyId)).toBe(topology);
    expect((await topology.readRequest())?.owner.name).toBe(HCP_NAME);
  });

  it('resolves the stores and the clock from their tokens when the options leave them out', () => {
    const management = new MemoryClusterStore();
    const guest = new MemoryClusterStore();
    const container = new Container();
    container.bind(ManagementClusterStoreId).toConstantValue(management);
    container.bind(GuestClusterStoreId).toConstantValue(guest);
    container.bind(ClockId).toConstantValue(new FakeClock());
    container.load(hypershiftTopologyModule({ namespace: HCP_NAMESPACE, hcpName: HCP_NAME, env }));
    const topology = container.get<Topology>(TopologyId);
    expect(topology.controlStore).toBe(management);
    expect(topology.workloadStore).toBe(guest);
    expect(topology.operandNamespace).toBe(HCP_NAMESPACE);
  });

  it('says which binding is missing', () => {
    const container = new Container();
    container.bind(ClockId).toConstantValue(new FakeClock());
    container.load(hypershiftTopologyModule({ namespace: HCP_NAMESPACE, hcpName: HCP_NAME, env, guest: new MemoryClusterStore() }));
    expect(() => container.get<Topology>(TopologyId)).toThrow(/ManagementClusterStoreId/);
  });
});
