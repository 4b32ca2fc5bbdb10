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
 * managed pool's kubelet registers with), which would only echo the NodeClass back. Sorted by name. Pure.
 */
export function discoveryNodes(nodes: KubeObject[], nodeClassLabel: string): DiscoveryNode[] {
  const out: DiscoveryNode[] = [];
  for (const n of nodes) {
    const labels = n.metadata.labels ?? {};
    if (Names.nodePoolLabel in labels || nodeClassLabel in labels) continue;
    const taints = (n.spec as { taints?: unknown } | undefined)?.taints;
    if (Array.isArray(taints) && taints.some((t) => (t as { key?: unknown } | null)?.key === RegistrationTaint.key)) continue;
    const role = CONTROL_PLANE_ROLES.some((k) => k in labels) ? 'control-plane' : WORKER_ROLE in labels ? 'worker' : undefined;
    if (!role) continue;
    const providerID = (n.spec as { providerID?: unknown } | undefined)?.providerID;
    const architecture = labels['kubernetes.io/arch'];
    out.push({
      name: n.metadata.name,
      role,
      ...(typeof providerID === 'string' && providerID ? { providerID } : {}),
      ...(architecture ? { architecture } : {}),
    });
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
