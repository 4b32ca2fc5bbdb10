import { Names, quantityValue, type KubeObject } from '@karpenter-operator/core';

/** `HostedControlPlane.status.autoNode`, as HyperShift's API defines it. */
export interface AutoNodeStatus {
  /** Nodes labelled `karpenter.sh/nodepool`. */
  nodeCount: number;
  nodeClaimCount: number;
  /** Sum of `status.capacity.cpu` of the NodeClaims whose Node exists, each rounded up to a whole CPU. */
  vcpus: number;
}

/**
 * A CPU quantity (`"4"`, `"3500m"`, `"1.5"`, `2`) in whole CPUs, rounded up like resource.Quantity's
 * `Value()`; undefined when it is not a non-negative quantity. Pure.
 */
export function cpuCores(q: unknown): number | undefined {
  const n = typeof q === 'number' || typeof q === 'string' ? quantityValue(q) : undefined;
  if (n === undefined || n < 0) return undefined;
  // Round away float noise (3500m → 3.5000000000000004) before rounding up.
  return Math.ceil(Math.round(n * 1e6) / 1e6);
}

/** Counts for `status.autoNode` from the guest's Nodes and NodeClaims. A NodeClaim without a valid CPU capacity adds nothing. Pure. */
export function autoNodeStatus(nodes: readonly KubeObject[], nodeClaims: readonly KubeObject[]): AutoNodeStatus {
  const nodeNames = new Set(nodes.map((n) => n.metadata.name));
  const nodeCount = nodes.filter((n) => n.metadata.labels?.[Names.nodePoolLabel] !== undefined).length;
  let vcpus = 0;
  for (const c of nodeClaims) {
    const status = c.status as { nodeName?: unknown; capacity?: { cpu?: unknown } } | undefined;
    if (typeof status?.nodeName !== 'string' || !nodeNames.has(status.nodeName)) continue;
    vcpus += cpuCores(status.capacity?.cpu) ?? 0;
  }
  return { nodeCount, nodeClaimCount: nodeClaims.length, vcpus };
}
