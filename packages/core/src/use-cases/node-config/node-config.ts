import type { KubeObject, ObjectRef, TypeRef } from '../../model/kube.js';
import { Types } from '../../model/kube.js';
import { Names, poolNameFor } from '../../model/names.js';
import type { Clock } from '../../ports/clock.js';
import type { ClusterStore } from '../../ports/cluster-store.js';
import type { EventRecorder } from '../../ports/event-recorder.js';
import type { Logger } from '../../ports/logger.js';
import type { Reconciler, Result, Watch } from '../../runtime/reconciler.js';
import { foreignEntries } from '../../policy/subset.js';
import {
  poolOwnedWhole,
  poolProblem,
  registrationTaintOwnedWhole,
  renderPool,
  renderRegistrationTaint,
  type UpgradePolicy,
} from './render.js';

export const NodeConfigController = 'machineconfigpool.node-config';
export const NODE_CONFIG_KEY = 'node-config';

export interface NodeConfigDeps {
  /** Store of the cluster where NodeClasses and MachineConfigPools live. */
  store: ClusterStore;
  /** The provider's NodeClass kind (EC2NodeClass). */
  nodeClassType: TypeRef;
  /** The label naming a node's NodeClass (`CloudProvider.nodeClassLabel`); pools select their nodes by it. */
  nodeClassLabel: string;
  clock: Clock;
  events: EventRecorder;
  logger: Logger;
  /** The one supported path; see `UpgradePolicy` for why. */
  upgradePolicy: UpgradePolicy;
}

const isManaged = (o: KubeObject | undefined): boolean => o?.metadata.labels?.[Names.managedLabel] === 'true';

/**
 * `machineconfigpool.node-config`: one MachineConfigPool `karpenter-<nc>` per NodeClass and the
 * registration-taint KubeletConfig for those pools. Level-based over the whole set (there are few
 * NodeClasses), one key:
 *
 * 1. every NodeClass (also while it is being deleted: its nodes are still in the pool) gets its pool;
 * 2. managed pools (label `karpenter-operator.openshift.io/managed: "true"`) whose NodeClass is gone are
 *    deleted; their nodes, if any are left, fall back to the worker pool;
 * 3. the KubeletConfig exists while any NodeClass does, and is deleted with the last one.
 *
 * Objects without the managed label are never changed or deleted, even when their name collides with one
 * the operator would use: that is reported as a Warning event on the NodeClass instead.
 */
export class NodeConfigReconciler implements Reconciler {
  readonly name = NodeConfigController;
  readonly watches: Watch[];

  constructor(private readonly deps: NodeConfigDeps) {
    this.watches = [
      { type: deps.nodeClassType },
      { type: Types.MachineConfigPool, labels: { [Names.managedLabel]: 'true' } },
      { type: Types.KubeletConfig, fieldSelector: `metadata.name=${Names.registrationTaintKubeletConfig}` },
    ];
  }

  keysFor(): string[] {
    return [NODE_CONFIG_KEY];
  }

  async resyncKeys(): Promise<string[]> {
    return [NODE_CONFIG_KEY];
  }

  async reconcile(_key: string = NODE_CONFIG_KEY): Promise<Result> {
    const { store, nodeClassType, events, logger } = this.deps;
    const nodeClasses = await store.list(nodeClassType);
    const wanted = new Set<string>();

    for (const nc of nodeClasses) {
      const ncRef = { ...nodeClassType, name: nc.metadata.name, ...(nc.metadata.uid ? { uid: nc.metadata.uid } : {}) };
      const problem = poolProblem(nc.metadata.name);
      if (problem) {
        events.record(
          ncRef,
          'Warning',
          'MachineConfigPoolNotCreated',
          `No MachineConfigPool for NodeClass ${nc.metadata.name}: ${problem}`,
        );
        continue;
      }
      const desired = renderPool(nc.metadata.name, this.deps.nodeClassLabel);
      wanted.add(desired.metadata.name);
      const current = await store.get(refOf(desired));
      if (current && !isManaged(current)) {
        events.record(
          ncRef,
          'Warning',
          'MachineConfigPoolConflict',
          `MachineConfigPool ${desired.metadata.name} exists and is not managed by the operator; leaving it alone`,
        );
        logger.warn('pool name taken by an unmanaged pool', { pool: desired.metadata.name, nodeClass: nc.metadata.name });
        continue;
      }
      const foreign = current ? foreignEntries(desired, current, poolOwnedWhole) : [];
      const r = await store.apply(desired, { ownedWhole: poolOwnedWhole });
      if (r.changed) {
        const verb = current ? 'Updated' : 'Created';
        const removed = foreign.length ? `, removing ${foreign.join(', ')} (the operator owns the pool's selectors)` : '';
        events.record(ncRef, 'Normal', `MachineConfigPool${verb}`, `${verb} MachineConfigPool ${desired.metadata.name}${removed}`);
        logger.info(`${verb.toLowerCase()} MachineConfigPool`, {
          pool: desired.metadata.name,
          nodeClass: nc.metadata.name,
          ...(foreign.length ? { removed: foreign } : {}),
        });
      }
    }

    const pools = await store.list(Types.MachineConfigPool, { labels: { [Names.managedLabel]: 'true' } });
    for (const pool of pools) {
      if (wanted.has(pool.metadata.name) || !pool.metadata.name.startsWith(poolNameFor(''))) continue;
      if (await store.delete(refOf(pool))) {
        events.record(
          refOf(pool),
          'Normal',
          'MachineConfigPoolDeleted',
          `Deleted MachineConfigPool ${pool.metadata.name}: its NodeClass is gone`,
        );
        logger.info('deleted MachineConfigPool', { pool: pool.metadata.name });
      }
    }

    const taint = renderRegistrationTaint();
    const current = await store.get(refOf(taint));
    if (current && !isManaged(current)) {
      logger.warn('KubeletConfig name taken by an unmanaged object', { kubeletConfig: taint.metadata.name });
      return {};
    }
    if (nodeClasses.length) {
      const foreign = current ? foreignEntries(taint, current, registrationTaintOwnedWhole) : [];
      const r = await store.apply(taint, { ownedWhole: registrationTaintOwnedWhole });
      if (r.changed) {
        logger.info(`${current ? 'updated' : 'created'} KubeletConfig`, {
          kubeletConfig: taint.metadata.name,
          ...(foreign.length ? { removed: foreign } : {}),
        });
      }
    } else if (current && (await store.delete(refOf(taint)))) {
      logger.info('deleted KubeletConfig: no NodeClass left', { kubeletConfig: taint.metadata.name });
    }
    return {};
  }
}

function refOf(o: KubeObject): ObjectRef {
  return { apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name };
}
