import { Types, type ClusterStore, type Reconciler, type Result, type Watch } from '@karpenter-operator/core';
import { HostedControlPlaneType } from '../hcp.js';
import { HcpScope, type HcpScopeDeps } from './hcp-scope.js';
import { autoNodeStatus } from '../status.js';

export const AUTONODE_STATUS_CONTROLLER = 'hostedcontrolplane.autonode-status';

export interface AutoNodeStatusDeps extends HcpScopeDeps {
  /** The guest cluster (Nodes, NodeClaims). */
  guest: ClusterStore;
}

/**
 * `hostedcontrolplane.autonode-status`: writes `status.autoNode` {nodeCount, nodeClaimCount, vcpus} of
 * each AutoNode HCP from the guest's Nodes and NodeClaims. Merge-patches only `status.autoNode`, so other
 * status fields and conditions stay as they are; sends nothing when the counts are unchanged.
 */
export class AutoNodeStatusReconciler implements Reconciler {
  readonly name = AUTONODE_STATUS_CONTROLLER;
  readonly watches: Watch[];
  private readonly scope: HcpScope;

  constructor(private readonly deps: AutoNodeStatusDeps) {
    this.scope = new HcpScope(deps);
    this.watches = [
      { type: HostedControlPlaneType, cluster: 'control', namespace: deps.namespace },
      { type: Types.Node },
      { type: Types.NodeClaim },
    ];
  }

  keysFor(obj: { apiVersion: string; kind: string; metadata: { name: string } }): string[] {
    // A guest change concerns every HCP this adapter serves (one in practice).
    return this.scope.keysFor(obj, 'every-hcp');
  }

  resyncKeys(): Promise<string[]> {
    return this.scope.names();
  }

  async reconcile(key: string): Promise<Result> {
    const { management, guest } = this.deps;
    let counts: ReturnType<typeof autoNodeStatus> | undefined;
    return this.scope.each(key, async (hcp, obj) => {
      if (!hcp.autoNode || hcp.deleting) return {};
      counts ??= autoNodeStatus(await guest.list(Types.Node), await guest.list(Types.NodeClaim));
      const current = (obj.status as { autoNode?: Record<string, unknown> } | undefined)?.autoNode;
      if (
        current &&
        current.nodeCount === counts.nodeCount &&
        current.nodeClaimCount === counts.nodeClaimCount &&
        current.vcpus === counts.vcpus
      )
        return {};
      await management.patchStatus(hcp.ref, { autoNode: { ...counts } });
      return {};
    });
  }
}
