import type { KubeObject } from '../../model/kube.js';
import { Types } from '../../model/kube.js';
import { Names, poolNameFor } from '../../model/names.js';
import { wholeSelector, type OwnedPath } from '../../policy/subset.js';

/**
 * Who updates the OS of Karpenter nodes. Only one path exists: `MachineConfigOperator`, in place.
 *
 * Why MCO in place (pools unpaused) and not Karpenter drift (pools paused, nodes replaced):
 * - Karpenter cannot see what MCO changes. Its drift is computed from the NodePool/NodeClass and the AMI;
 *   a cluster upgrade, a new MachineConfig, a pull-secret or registries change, or a kubelet CA rotation
 *   changes the rendered MachineConfig but none of those, so nothing would ever be marked Drifted. The
 *   operator would have to fake drift by touching the NodeClass: fragile, and it replaces every node for
 *   every MachineConfig change.
 * - A paused pool also holds back certificate rotation (kube-apiserver-to-kubelet signer): MCO warns about
 *   paused pools for exactly this reason, and nodes that miss the rotation go NotReady when the old CA
 *   expires. Pausing is an administrator's temporary tool (EUS upgrades), not a steady state.
 * - In place, Karpenter nodes behave like MachineSet workers: the boot image (AMI) is only a starting
 *   point, every node rebases to the cluster's OS image on first boot, and later updates roll through the
 *   pool with MCO's drain, `maxUnavailable` (default 1, the operator does not own it) and PDBs.
 * - Cost accepted: MCO and Karpenter's own disruption (consolidation, expiry) can both drain nodes of the
 *   same pool at the same time; both evict through PDBs, so the worst case is one more node draining.
 *
 * "Never both" follows: the operator never sets `spec.paused` (it leaves the field to administrators),
 * and it keeps the NodeClass's AMI and userData stable across releases so that Karpenter does not replace
 * nodes that MCO is already updating.
 */
export type UpgradePolicy = 'MachineConfigOperator';

export const RoleLabel = 'machineconfiguration.openshift.io/role';
/** The label MCO's own pools carry (`pools.operator.machineconfiguration.openshift.io/worker: ""`). */
export const poolSelectorLabel = (pool: string): string => `pools.operator.machineconfiguration.openshift.io/${pool}`;
export const RegistrationTaint = { key: 'karpenter.sh/unregistered', value: 'true', effect: 'NoExecute' } as const;

/**
 * `machineconfiguration.openshift.io/role: karpenter-<nc>` is a label value (at most 63 characters), so
 * NodeClass names are limited to 63 - `karpenter-`.length.
 */
export const MaxNodeClassNameForPool = 63 - poolNameFor('').length;
const LabelValue = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** Why a NodeClass cannot have a pool, or undefined when it can. Pure. */
export function poolProblem(nodeClass: string): string | undefined {
  if (nodeClass.length > MaxNodeClassNameForPool) {
    return `name is ${nodeClass.length} characters; pool ${poolNameFor(nodeClass)} needs at most ${MaxNodeClassNameForPool}`;
  }
  if (!LabelValue.test(nodeClass)) return 'name is not a valid label value';
  return undefined;
}

/**
 * MachineConfigPool `karpenter-<nc>`: the nodes of one NodeClass, inheriting every worker MachineConfig
 * plus those for role `karpenter-<nc>`. Only the fields the operator owns; `paused` and `maxUnavailable`
 * stay the administrator's (see `UpgradePolicy`). `nodeClassLabel` is the provider's
 * (`CloudProvider.nodeClassLabel`). Pure.
 */
export function renderPool(nodeClass: string, nodeClassLabel: string): KubeObject {
  const pool = poolNameFor(nodeClass);
  return {
    ...Types.MachineConfigPool,
    metadata: {
      name: pool,
      labels: { [Names.managedLabel]: 'true', [poolSelectorLabel(pool)]: '' },
    },
    spec: {
      nodeSelector: { matchLabels: { [nodeClassLabel]: nodeClass } },
      machineConfigSelector: {
        matchExpressions: [{ key: RoleLabel, operator: 'In', values: ['worker', pool] }],
      },
    },
  };
}

/**
 * What the operator owns whole on its pools: both selectors. A key added to `nodeSelector` makes the pool
 * match no Karpenter node (and loses the registration taint); one added to `machineConfigSelector` changes
 * what those nodes run.
 */
export const poolOwnedWhole: readonly OwnedPath[] = [...wholeSelector('spec.nodeSelector'), ...wholeSelector('spec.machineConfigSelector')];

/** What the operator owns whole on the registration-taint KubeletConfig: the pool selector. */
export const registrationTaintOwnedWhole: readonly OwnedPath[] = wholeSelector('spec.machineConfigPoolSelector');

/**
 * KubeletConfig `set-karpenter-taint`: registers the nodes of every managed pool with
 * `karpenter.sh/unregistered:NoExecute`, which Karpenter removes once it has matched the Node to its
 * NodeClaim. It must select only the managed pools: on the plain `worker` pool it would taint MachineSet
 * nodes forever. Pure.
 */
export function renderRegistrationTaint(): KubeObject {
  return {
    ...Types.KubeletConfig,
    metadata: { name: Names.registrationTaintKubeletConfig, labels: { [Names.managedLabel]: 'true' } },
    spec: {
      machineConfigPoolSelector: { matchLabels: { [Names.managedLabel]: 'true' } },
      kubeletConfig: { registerWithTaints: [{ ...RegistrationTaint }] },
    },
  };
}

/**
 * True once MCO has rendered a configuration for the pool (`status.configuration.name`): only then does
 * the Machine Config Server answer `/config/<pool>`, so a NodeClass's userData may point there. Pure.
 */
export function isPoolRendered(pool: KubeObject | undefined): boolean {
  const name = (pool?.status as { configuration?: { name?: unknown } } | undefined)?.configuration?.name;
  return typeof name === 'string' && name !== '';
}
