import type { DiscoveryNode } from '../../model/cluster.js';
import type { KubeObject } from '../../model/kube.js';
import { Names } from '../../model/names.js';
import { RegistrationTaint } from '../node-config/render.js';

const CONTROL_PLANE_ROLES = ['node-role.kubernetes.io/master', 'node-role.kubernetes.io/control-plane'];
const WORKER_ROLE = 'node-role.kubernetes.io/worker';

/**
 * The cluster's own control-plane and worker nodes, as discovery without MachineSets reads them: by
 * role label, leaving out the nodes Karpenter launched (they carry the NodePool label or the provider's
 * NodeClass label, or — until Karpenter registers them and adds those labels — the registration taint every
 * managed pool's kubelet registers with), which would only echo the NodeClass back. Sorted by name. Pure
 * but for filling `memo`.
 */
export function discoveryNodes(nodes: readonly KubeObject[], nodeClassLabel: string, memo?: DiscoveryNodeMemo): DiscoveryNode[] {
  const out: DiscoveryNode[] = [];
  for (const n of nodes) {
    const d = discoveryNode(n, nodeClassLabel, memo);
    if (d) out.push(d);
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * Projections by Node object (null: left out). A cache replaces an object when it changes, so with a memo
 * a listing of thousands of Nodes (Karpenter's) re-reads only the objects that changed since the last one.
 */
export type DiscoveryNodeMemo = WeakMap<KubeObject, DiscoveryNode | null>;

/** Node `n` as discovery reads it, or undefined when discovery leaves it out (see `discoveryNodes`). */
export function discoveryNode(n: KubeObject, nodeClassLabel: string, memo?: DiscoveryNodeMemo): DiscoveryNode | undefined {
  const hit = memo?.get(n);
  if (hit !== undefined) return hit ?? undefined;
  const d = project(n, nodeClassLabel);
  memo?.set(n, d ?? null);
  return d;
}

function project(n: KubeObject, nodeClassLabel: string): DiscoveryNode | undefined {
  const labels = n.metadata.labels ?? {};
  if (Names.nodePoolLabel in labels || nodeClassLabel in labels) return undefined;
  const taints = (n.spec as { taints?: unknown } | undefined)?.taints;
  if (Array.isArray(taints) && taints.some((t) => (t as { key?: unknown } | null)?.key === RegistrationTaint.key)) return undefined;
  const role = CONTROL_PLANE_ROLES.some((k) => k in labels) ? 'control-plane' : WORKER_ROLE in labels ? 'worker' : undefined;
  if (!role) return undefined;
  const providerID = (n.spec as { providerID?: unknown } | undefined)?.providerID;
  const architecture = labels['kubernetes.io/arch'];
  return {
    name: n.metadata.name,
    role,
    ...(typeof providerID === 'string' && providerID ? { providerID } : {}),
    ...(architecture ? { architecture } : {}),
  };
}
