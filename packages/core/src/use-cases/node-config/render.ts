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

/** What the operator owns whole on a registration-taint KubeletConfig: the pool selector. */
export const registrationTaintOwnedWhole: readonly OwnedPath[] = wholeSelector('spec.machineConfigPoolSelector');

/**
 * KubeletConfig `set-karpenter-taint-<nc>`: registers the nodes of pool `karpenter-<nc>` with
 * `karpenter.sh/unregistered:NoExecute`, which Karpenter removes once it has matched the Node to its
 * NodeClaim. One per pool, selecting that pool alone by the label MCO's own pools carry, because MCO's
 * kubelet-config controller reacts only to KubeletConfig changes: a pool created after a shared KubeletConfig
 * last synced would be rendered without it, and its nodes would register untainted. It must never select the
 * plain `worker` pool, where it would taint MachineSet nodes forever. Pure.
 */
export function renderRegistrationTaint(nodeClass: string): KubeObject {
  const pool = poolNameFor(nodeClass);
  return {
    ...Types.KubeletConfig,
    metadata: { name: registrationTaintNameFor(nodeClass), labels: { [Names.managedLabel]: 'true' } },
    spec: {
      machineConfigPoolSelector: { matchLabels: { [poolSelectorLabel(pool)]: '' } },
      kubeletConfig: { registerWithTaints: [{ ...RegistrationTaint }] },
    },
  };
}

/** The KubeletConfig that taints the nodes of one NodeClass's pool. */
export const registrationTaintNameFor = (nodeClass: string): string => `${Names.registrationTaintKubeletConfig}-${nodeClass}`;

/** The NodeClass whose registration-taint KubeletConfig this name is, or undefined. Pure. */
export function nodeClassOfRegistrationTaint(name: string): string | undefined {
  const prefix = `${Names.registrationTaintKubeletConfig}-`;
  return name.startsWith(prefix) && name.length > prefix.length ? name.slice(prefix.length) : undefined;
}

/**
 * True once MCO has rendered a configuration for the pool (`status.configuration.name`): only then does
 * the Machine Config Server answer `/config/<pool>`. Pure.
 */
export function isPoolRendered(pool: KubeObject | undefined): boolean {
  const name = (pool?.status as { configuration?: { name?: unknown } } | undefined)?.configuration?.name;
  return typeof name === 'string' && name !== '';
}

/** The MachineConfig annotation MCO's kubelet-config controller sets: the suffix of its generated MachineConfig. */
export const MCNameSuffixAnnotation = 'machineconfiguration.openshift.io/mc-name-suffix';

interface Condition {
  type?: string;
  status?: string;
  reason?: string;
  message?: string;
}
interface PoolShape {
  spec?: { configuration?: { name?: string; source?: Array<{ name?: string }> } };
  status?: {
    updatedMachineCount?: number;
    configuration?: { name?: string; source?: Array<{ name?: string }> };
    conditions?: Condition[];
  };
}
interface KubeletConfigShape {
  metadata: { name: string; generation?: number; annotations?: Record<string, string>; finalizers?: string[]; deletionTimestamp?: string };
  spec?: { machineConfigPoolSelector?: unknown; kubeletConfig?: { registerWithTaints?: unknown } };
  status?: { observedGeneration?: number; conditions?: Condition[] };
}

/**
 * The MachineConfig MCO generated from a KubeletConfig for a pool: `99-<pool>-generated-kubelet`, with
 * `-<suffix>` when the KubeletConfig's `mc-name-suffix` annotation says so; undefined before MCO synced it.
 * Pure.
 */
export function generatedKubeletMachineConfig(pool: string, kc: KubeObject | undefined): string | undefined {
  const suffix = kc?.metadata.annotations?.[MCNameSuffixAnnotation];
  if (suffix === undefined) return undefined;
  return `99-${pool}-generated-kubelet${suffix ? `-${suffix}` : ''}`;
}

/** Where a pool stands for booting nodes that register with the registration taint. */
export type PoolServing =
  | { state: 'Serving'; renderedConfig: string }
  /** Not yet: MCO is still rendering or syncing. Nothing is wrong. */
  | { state: 'Waiting'; message: string }
  /** MCO cannot get there without a change: the reason and MCC's own words. */
  | { state: 'Failed'; reason: string; message: string };

export const PoolServingReasons = {
  RenderDegraded: 'MachineConfigPoolRenderDegraded',
  KubeletConfigFailed: 'RegistrationTaintKubeletConfigFailed',
  Overridden: 'RegistrationTaintOverridden',
} as const;

const hasTaint = (kc: KubeletConfigShape): boolean => {
  const taints = kc.spec?.kubeletConfig?.registerWithTaints;
  return (
    Array.isArray(taints) &&
    taints.some(
      (t: { key?: unknown; value?: unknown; effect?: unknown } | null) =>
        t?.key === RegistrationTaint.key && t.effect === RegistrationTaint.effect,
    )
  );
};

/**
 * MCC's own test that a KubeletConfig's MachineConfigs are generated from its current spec (the kubelet-config
 * controller skips a sync on the same condition): its generation observed, and its latest condition `Success`.
 */
const syncedByMco = (kc: KubeletConfigShape): boolean =>
  (kc.status?.observedGeneration ?? 0) >= (kc.metadata.generation ?? 0) && kc.status?.conditions?.at(-1)?.type === 'Success';

/**
 * Whether the Machine Config Server serves pool `karpenter-<nc>` with the registration taint, proven from
 * MCO's own records, never assumed:
 *
 * 1. the configuration MCS serves for a new node (`spec.configuration` once a node of the pool has updated,
 *    else `status.configuration`) is rendered;
 * 2. it is rendered from the MachineConfig MCO generated from the pool's registration-taint KubeletConfig
 *    (listed in that configuration's `source`);
 * 3. no other generated kubelet MachineConfig of the pool sorts after it, unless the KubeletConfig it comes
 *    from (the one holding its name as a finalizer) registers the taint too and MCO has generated it from
 *    that spec (`syncedByMco`): each such MachineConfig carries a whole kubelet configuration and the last
 *    one by name wins.
 *
 * `Failed` when MCC says it cannot render the pool (`RenderDegraded`) or sync the KubeletConfig (a
 * `Failure` condition for its current generation). Pure.
 */
export function poolServing(nodeClass: string, pool: KubeObject | undefined, kubeletConfigs: readonly KubeObject[]): PoolServing {
  const poolName = poolNameFor(nodeClass);
  const kcName = registrationTaintNameFor(nodeClass);
  if (!pool) return { state: 'Waiting', message: `MachineConfigPool ${poolName} does not exist yet` };
  const p = pool as unknown as PoolShape;
  const renderDegraded = p.status?.conditions?.find((c) => c.type === 'RenderDegraded' && c.status === 'True');
  if (renderDegraded) {
    return {
      state: 'Failed',
      reason: PoolServingReasons.RenderDegraded,
      message:
        `MachineConfigPool ${poolName} cannot be rendered: ${renderDegraded.reason ? `${renderDegraded.reason}: ` : ''}${renderDegraded.message ?? ''}`.trimEnd(),
    };
  }
  const kc = kubeletConfigs.find((k) => k.metadata.name === kcName) as unknown as KubeletConfigShape | undefined;
  const latest = kc?.status?.conditions?.at(-1);
  if (kc && latest?.type === 'Failure' && (kc.status?.observedGeneration ?? 0) >= (kc.metadata.generation ?? 0)) {
    return {
      state: 'Failed',
      reason: PoolServingReasons.KubeletConfigFailed,
      message: `KubeletConfig ${kcName} for MachineConfigPool ${poolName} failed: ${latest.message ?? latest.reason ?? 'no message'}`,
    };
  }
  const served = (p.status?.updatedMachineCount ?? 0) > 0 ? p.spec?.configuration : p.status?.configuration;
  if (!served?.name) return { state: 'Waiting', message: `MachineConfigPool ${poolName} is not rendered yet` };
  const ours = generatedKubeletMachineConfig(poolName, kc as unknown as KubeObject | undefined);
  if (!ours) return { state: 'Waiting', message: `KubeletConfig ${kcName} is not synced by MCO yet` };
  const sources = (served.source ?? []).map((s) => s.name).filter((n): n is string => typeof n === 'string');
  if (!sources.includes(ours)) {
    return { state: 'Waiting', message: `${served.name} of MachineConfigPool ${poolName} is not rendered from ${ours} yet` };
  }
  const generatedPrefix = `99-${poolName}-generated-kubelet`;
  const later = sources.filter((n) => n !== ours && n.startsWith(generatedPrefix) && n > ours).sort();
  for (const other of later) {
    const owner = kubeletConfigs.find((k) => (k.metadata.finalizers ?? []).includes(other)) as unknown as KubeletConfigShape | undefined;
    if (owner && hasTaint(owner)) {
      if (syncedByMco(owner)) continue;
      // Its spec registers the taint, but MachineConfig `other` may still carry the configuration before that edit.
      return {
        state: 'Waiting',
        message: `KubeletConfig ${owner.metadata.name} registers the taint, but MCO has not regenerated ${other} from its generation ${owner.metadata.generation ?? 0} yet`,
      };
    }
    return {
      state: 'Failed',
      reason: PoolServingReasons.Overridden,
      message:
        `MachineConfig ${other}${owner ? ` (KubeletConfig ${owner.metadata.name})` : ''} replaces the kubelet configuration of ${ours} in ` +
        `MachineConfigPool ${poolName} without registerWithTaints ${RegistrationTaint.key}:${RegistrationTaint.effect}; nodes would register untainted`,
    };
  }
  return { state: 'Serving', renderedConfig: served.name };
}
