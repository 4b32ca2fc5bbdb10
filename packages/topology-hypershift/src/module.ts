import { ContainerModule } from 'inversify';
import { ClockId, TopologyId, token, type Clock, type ClusterStore, type Topology } from '@karpenter-operator/core';
import {
  GuestClusterStoreId,
  HyperShiftTopology,
  ManagementClusterStoreId,
  type HyperShiftTopologyOptions,
} from './hypershift-topology.js';

/** The concrete topology, for HyperShift-only controllers (the sidecar adapter) that read the decoded HCP. */
export const HyperShiftTopologyId = token<HyperShiftTopology>('Topology/hypershift');

/** Options read once at start-up; stores and clock not given here are resolved from their tokens. */
export type HyperShiftTopologyModuleOptions = Omit<HyperShiftTopologyOptions, 'management' | 'guest' | 'clock'> &
  Partial<Pick<HyperShiftTopologyOptions, 'management' | 'guest' | 'clock'>>;

/**
 * Binds `TopologyId` (and `HyperShiftTopologyId`, the same singleton) to the HyperShift topology. The
 * management and guest stores come from the options or from `ManagementClusterStoreId` /
 * `GuestClusterStoreId`; the clock from the options or `ClockId`.
 */
export const hypershiftTopologyModule = (options: HyperShiftTopologyModuleOptions): ContainerModule =>
  new ContainerModule(({ bind }) => {
    bind<HyperShiftTopology>(HyperShiftTopologyId)
      .toResolvedValue(
        (management: ClusterStore | undefined, guest: ClusterStore | undefined, clock: Clock | undefined) =>
          new HyperShiftTopology({
            ...options,
            management: required(options.management ?? management, 'ManagementClusterStoreId'),
            guest: required(options.guest ?? guest, 'GuestClusterStoreId'),
            clock: required(options.clock ?? clock, 'ClockId'),
          }),
        [
          { serviceIdentifier: ManagementClusterStoreId, optional: true },
          { serviceIdentifier: GuestClusterStoreId, optional: true },
          { serviceIdentifier: ClockId, optional: true },
        ],
      )
      .inSingletonScope();
    bind<Topology>(TopologyId).toService(HyperShiftTopologyId);
  });

function required<T>(v: T | undefined, what: string): T {
  if (v === undefined) throw new Error(`hypershiftTopologyModule: pass it in the options or bind ${what}`);
  return v;
}
