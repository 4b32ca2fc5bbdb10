import type { KubeObject, ObjectRef, TypeRef } from '../../model/kube.js';
import { Types } from '../../model/kube.js';
import { Names, poolNameFor } from '../../model/names.js';
import type { Clock } from '../../ports/clock.js';
import type { ClusterStore } from '../../ports/cluster-store.js';
import type { EventRecorder } from '../../ports/event-recorder.js';
import type { Logger } from '../../ports/logger.js';
import type { Reconciler, Result, Watch } from '../../runtime/reconciler.js';
import { foreignEntries } from '../../policy/subset.js';
import type { StatusBoard } from '../status-board.js';
import {
  MCNameSuffixAnnotation,
  nodeClassOfRegistrationTaint,
  poolOwnedWhole,
  poolProblem,
  poolServing,
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
  /** When given, `MachineConfigPoolsReady` is posted here for the status use-case to fold. */
  board?: StatusBoard;
}

export const NodeConfigConditions = { PoolsReady: 'MachineConfigPoolsReady' } as const;

const isManaged = (o: KubeObject | undefined): boolean => o?.metadata.labels?.[Names.managedLabel] === 'true';

/**
 * `machineconfigpool.node-config`: one MachineConfigPool `karpenter-<nc>` per NodeClass and, for each, the
 * registration-taint KubeletConfig `set-karpenter-taint-<nc>`. Level-based over the whole set (there are
 * few NodeClasses), one key:
 *
 * 1. every NodeClass (also while it is being deleted: its nodes are still in the pool) gets its pool;
 * 2. once MCO has configured the pool (`spec.configuration.name`), the pool gets its KubeletConfig. MCO's
 *    kubelet-config controller acts only on KubeletConfig events and refuses a pool it has not configured
 *    yet, so a KubeletConfig created earlier could be left unsynced for that pool for good;
 * 3. managed pools and KubeletConfigs whose NodeClass is gone are deleted; their nodes, if any are left,
 *    fall back to the worker pool. The shared KubeletConfig `set-karpenter-taint` of earlier releases is
 *    deleted once every pool's own KubeletConfig is synced;
 * 4. `MachineConfigPoolsReady` says False, naming the pool and MCC's reason, when a pool cannot be served
 *    with the taint (see `poolServing`); the NodeClass keeps pointing where it pointed.
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
      { type: Types.KubeletConfig },
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
    const wantedPools = new Set<string>();
    const wantedTaints = new Set<string>();
    const problems: string[] = [];
    let firstReason: string | undefined;
    let allSynced = true;
    const allKubeletConfigs = await store.list(Types.KubeletConfig);

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
      wantedPools.add(desired.metadata.name);
      const taint = renderRegistrationTaint(nc.metadata.name);
      wantedTaints.add(taint.metadata.name);
      const current = await store.get(refOf(desired));
      if (current && !isManaged(current)) {
        events.record(
          ncRef,
          'Warning',
          'MachineConfigPoolConflict',
          `MachineConfigPool ${desired.metadata.name} exists and is not managed by the operator; leaving it alone`,
        );
        logger.warn('pool name taken by an unmanaged pool', { pool: desired.metadata.name, nodeClass: nc.metadata.name });
        allSynced = false;
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
      const pool = r.object ?? current;
      const kc = await this.applyRegistrationTaint(taint, pool, ncRef);
      const others = allKubeletConfigs.filter((k) => k.metadata.name !== taint.metadata.name);
      const serving = poolServing(nc.metadata.name, pool, kc ? [kc, ...others] : others);
      if (serving.state === 'Failed') {
        problems.push(serving.message);
        firstReason ??= serving.reason;
      }
      if (kc?.metadata.annotations?.[MCNameSuffixAnnotation] === undefined) allSynced = false;
    }

    const pools = await store.list(Types.MachineConfigPool, { labels: { [Names.managedLabel]: 'true' } });
    for (const pool of pools) {
      if (wantedPools.has(pool.metadata.name) || !pool.metadata.name.startsWith(poolNameFor(''))) continue;
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

    for (const kc of await store.list(Types.KubeletConfig, { labels: { [Names.managedLabel]: 'true' } })) {
      const name = kc.metadata.name;
      const legacy = name === Names.registrationTaintKubeletConfig;
      if (wantedTaints.has(name) || (!legacy && nodeClassOfRegistrationTaint(name) === undefined)) continue;
      // The shared KubeletConfig of earlier releases goes only once each pool's own one is synced: its
      // generated MachineConfigs then keep every pool tainted while MCO re-renders.
      if (legacy && nodeClasses.length && !allSynced) continue;
      if (await store.delete(refOf(kc))) {
        logger.info(legacy ? 'deleted the shared KubeletConfig of an earlier release' : 'deleted KubeletConfig: its NodeClass is gone', {
          kubeletConfig: name,
        });
      }
    }

    this.deps.board?.setCondition(
      NodeConfigController,
      problems.length
        ? { type: NodeConfigConditions.PoolsReady, status: 'False', reason: firstReason!, message: problems.join('; ') }
        : nodeClasses.length
          ? { type: NodeConfigConditions.PoolsReady, status: 'True', reason: 'AsExpected', message: '' }
          : undefined,
    );
    return {};
  }

  /**
   * Applies the pool's registration-taint KubeletConfig once MCO has configured the pool. Returns the
   * KubeletConfig as it stands (also when the name is taken by an unmanaged one, which is left alone).
   */
  private async applyRegistrationTaint(taint: KubeObject, pool: KubeObject | undefined, ncRef: ObjectRef): Promise<KubeObject | undefined> {
    const { store, events, logger } = this.deps;
    const current = await store.get(refOf(taint));
    if (current && !isManaged(current)) {
      events.record(
        ncRef,
        'Warning',
        'KubeletConfigConflict',
        `KubeletConfig ${taint.metadata.name} exists and is not managed by the operator; leaving it alone`,
      );
      return undefined;
    }
    const configured = (pool?.spec as { configuration?: { name?: unknown } } | undefined)?.configuration?.name;
    if (!current && !(typeof configured === 'string' && configured)) return undefined;
    const foreign = current ? foreignEntries(taint, current, registrationTaintOwnedWhole) : [];
    const r = await store.apply(taint, { ownedWhole: registrationTaintOwnedWhole });
    if (r.changed) {
      logger.info(`${current ? 'updated' : 'created'} KubeletConfig`, {
        kubeletConfig: taint.metadata.name,
        ...(foreign.length ? { removed: foreign } : {}),
      });
    }
    return r.object ?? current;
  }
}

function refOf(o: KubeObject): ObjectRef {
  return { apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name };
}
