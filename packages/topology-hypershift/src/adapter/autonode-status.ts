import { Types, type ClusterStore, type KubeObject, type Reconciler, type Result, type Watch } from '@karpenter-operator/core';
import { decodeHostedControlPlane, HostedControlPlaneType } from '../hcp.js';
import { autoNodeStatus } from '../status.js';

export const AUTONODE_STATUS_CONTROLLER = 'hostedcontrolplane.autonode-status';

export interface AutoNodeStatusDeps {
  /** Management cluster, HCP namespace. */
  management: ClusterStore;
  /** The guest cluster (Nodes, NodeClaims). */
  guest: ClusterStore;
  namespace: string;
  /** Only this HCP; every HCP of the namespace when absent. */
  hcpName?: string;
}

/**
 * `hostedcontrolplane.autonode-status`: writes `status.autoNode` {nodeCount, nodeClaimCount, vcpus} of
 * each AutoNode HCP from the guest's Nodes and NodeClaims. Merge-patches only `status.autoNode`, so other
 * status fields and conditions stay as they are; sends nothing when the counts are unchanged.
 */
export class AutoNodeStatusReconciler implements Reconciler {
  readonly name = AUTONODE_STATUS_CONTROLLER;
  readonly watches: Watch[];

  constructor(private readonly deps: AutoNodeStatusDeps) {
    this.watches = [
      { type: HostedControlPlaneType, cluster: 'control', namespace: deps.namespace },
      { type: Types.Node },
      { type: Types.NodeClaim },
    ];
  }

  keysFor(obj: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }): string[] {
    if (obj.apiVersion === HostedControlPlaneType.apiVersion && obj.kind === HostedControlPlaneType.kind) {
      return this.deps.hcpName && obj.metadata.name !== this.deps.hcpName ? [] : [obj.metadata.name];
    }
    // A guest change concerns every HCP this adapter serves (one in practice).
    return this.deps.hcpName ? [this.deps.hcpName] : ['*'];
  }

  async resyncKeys(): Promise<string[]> {
    return (await this.hcps()).map((h) => h.metadata.name);
  }

  private async hcps(): Promise<KubeObject[]> {
    const all = await this.deps.management.list(HostedControlPlaneType, { namespace: this.deps.namespace });
    return this.deps.hcpName ? all.filter((h) => h.metadata.name === this.deps.hcpName) : all;
  }

  async reconcile(key: string): Promise<Result> {
    const { management, guest, namespace } = this.deps;
    const targets =
      key === '*'
        ? await this.hcps()
        : [await management.get({ ...HostedControlPlaneType, namespace, name: key })].filter((o): o is KubeObject => !!o);
    if (!targets.length) return {};
    let counts: ReturnType<typeof autoNodeStatus> | undefined;
    for (const obj of targets) {
      let hcp;
      try {
        hcp = decodeHostedControlPlane(obj);
      } catch {
        continue; // the operator reports an invalid HCP; nothing to count for it
      }
      if (!hcp.autoNode || hcp.deleting) continue;
      counts ??= autoNodeStatus(await guest.list(Types.Node), await guest.list(Types.NodeClaim));
      const current = (obj.status as { autoNode?: Record<string, unknown> } | undefined)?.autoNode;
      if (
        current &&
        current.nodeCount === counts.nodeCount &&
        current.nodeClaimCount === counts.nodeClaimCount &&
        current.vcpus === counts.vcpus
      )
        continue;
      await management.patchStatus(hcp.ref, { autoNode: { ...counts } });
    }
    return {};
  }
}
