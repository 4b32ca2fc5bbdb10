import { createHash } from 'node:crypto';
import { isInvalidInputError } from '../../errors.js';
import type { ClusterFacts, KarpenterRequest, OperatorSettings } from '../../model/cluster.js';
import { refOf, Types, type KubeObject } from '../../model/kube.js';
import { Names } from '../../model/names.js';
import { layoutCredentialsSecret, withLayoutCredentials } from '../../policy/operand-layout.js';
import { operandScopes, planOperand, type PlacedObject } from '../../policy/operand.js';
import { foreignEntries } from '../../policy/subset.js';
import type { CloudProvider, OperandCloudConfig } from '../../ports/cloud-provider.js';
import type { EventRecorder } from '../../ports/event-recorder.js';
import type { Logger } from '../../ports/logger.js';
import type { Topology } from '../../ports/topology.js';
import type { Reconciler, Result, Watch } from '../../runtime/reconciler.js';
import { ManagedCrdsWatch } from '../crds/crds.js';
import { closedResult, KarpenterGate } from '../gate.js';

export const OPERAND_KEY = 'operand';

export interface OperandDeps {
  topology: Topology;
  cloud: CloudProvider;
  settings: OperatorSettings;
  events: EventRecorder;
  logger: Logger;
}

/** A stable digest of a Secret's data, so rotating the credentials rolls the operand's pods. */
export function secretDigest(secret: KubeObject): string {
  const data = {
    ...((secret.data as Record<string, string> | undefined) ?? {}),
    ...((secret.stringData as Record<string, string> | undefined) ?? {}),
  };
  const h = createHash('sha256');
  for (const k of Object.keys(data).sort()) h.update(`${k}\0${data[k]}\0`);
  return h.digest('hex').slice(0, 16);
}

/** The provider's cloud config for the operand, with the credentials Secret the topology's layout names. */
export function operandCloudConfigFor(deps: Pick<OperandDeps, 'topology' | 'cloud' | 'settings'>, facts: ClusterFacts): OperandCloudConfig {
  return withLayoutCredentials(deps.cloud.operandCloudConfig(facts, deps.settings), deps.topology.operandLayout(deps.settings));
}

/**
 * What this release renders for the operand, from the same inputs whoever asks: the operand use-case
 * applies it, the status use-case compares the live Deployment with it (the CVO's version moves only once
 * the Deployment carries this release's pod template). Pure.
 */
export function planOperandFor(
  deps: Pick<OperandDeps, 'topology' | 'cloud' | 'settings'>,
  inputs: { request: KarpenterRequest; facts: ClusterFacts; credentials: KubeObject },
): PlacedObject[] {
  const { topology, cloud, settings } = deps;
  const layout = topology.operandLayout(settings);
  return planOperand({
    namespace: topology.operandNamespace,
    settings,
    layout,
    facts: inputs.facts,
    request: inputs.request,
    cloud: operandCloudConfigFor(deps, inputs.facts),
    // The provider binds its roles to the ServiceAccount Karpenter acts as, which need not be the pod's.
    providerRbac: cloud.operandRbac(layout.apiIdentity.namespace),
    credentialsHash: secretDigest(inputs.credentials),
  });
}

const BINDING_KINDS = new Set(['RoleBinding', 'ClusterRoleBinding']);

/** The operand's objects in the order they can be applied: everything else, then bindings, then Deployments. */
export function applyWaves(placed: PlacedObject[]): PlacedObject[][] {
  const wave = (p: PlacedObject) => (p.object.kind === 'Deployment' ? 2 : BINDING_KINDS.has(p.object.kind) ? 1 : 0);
  return [0, 1, 2].map((w) => placed.filter((p) => wave(p) === w)).filter((w) => w.length > 0);
}

/**
 * `deployment.operand`: keeps the operand's ServiceAccounts, RBAC and Deployment as rendered, reverting
 * drift of the fields it owns (deletion, replicas, env, image) and leaving other fields alone. The pod
 * template's containers, env, mounts and volumes are owned whole (`operandOwnedWhole`): a container or env
 * var someone else added is removed, with a Warning event naming it. The operand
 * is not created before the runtime CRDs are Established and its credentials Secret exists (Karpenter
 * exits at start-up without working credentials, which would be a crash loop). Each object goes to the
 * store of the cluster `planOperand` places it on; the topology decides nothing here beyond its stores.
 */
export class OperandReconciler implements Reconciler {
  readonly name = 'deployment.operand';
  readonly watches: Watch[];

  private readonly gate: KarpenterGate;
  /** Whether this topology's operand can have a PodDisruptionBudget (only with leader election: `operandScopes`). */
  private readonly mayHaveDisruptionBudget: boolean;

  constructor(private readonly deps: OperandDeps) {
    this.gate = new KarpenterGate(deps);
    const ns = deps.topology.operandNamespace;
    const layout = deps.topology.operandLayout(deps.settings);
    this.mayHaveDisruptionBudget = layout.leaderElection;
    this.watches = [
      ...deps.topology.watches,
      { type: Types.Deployment, cluster: 'control', namespace: ns, fieldSelector: `metadata.name=${Names.operandDeployment}` },
      { type: Types.Secret, cluster: 'control', namespace: ns, fieldSelector: `metadata.name=${layoutCredentialsSecret(layout)}` },
      ManagedCrdsWatch,
      // Everything the use-case applies is watched (by the managed label every rendered object carries), on
      // the cluster it is applied to, so writes compare against a cache and a deleted Role or binding is
      // restored at once.
      ...operandScopes(layout).map(({ type, cluster, namespace }): Watch => ({
        type,
        ...(cluster === 'control' ? { cluster } : {}),
        ...(namespace === undefined ? {} : { namespace }),
        labels: { [Names.managedLabel]: 'true' },
      })),
    ];
  }

  keysFor(): string[] {
    return [OPERAND_KEY];
  }

  async resyncKeys(): Promise<string[]> {
    return [OPERAND_KEY];
  }

  async reconcile(): Promise<Result> {
    const { topology } = this.deps;
    // Removal is the teardown use-case's job, in order; the ownerRef lets GC finish it.
    const gate = await this.gate.check();
    if (!gate.open) return closedResult(gate);
    const { request } = gate;
    let facts;
    try {
      facts = await topology.clusterFacts();
    } catch (e) {
      // Reported by the status use-case; a change of Infrastructure re-triggers us.
      if (isInvalidInputError(e)) return {};
      throw e;
    }

    const cloudConfig = operandCloudConfigFor(this.deps, facts);
    const ns = topology.operandNamespace;
    const secret = await topology.controlStore.get({ ...Types.Secret, namespace: ns, name: cloudConfig.credentialsSecret });
    if (!secret) return {};

    const placed = planOperandFor(this.deps, { request, facts, credentials: secret });
    // In waves, each all at once (one round trip instead of one per object), so that the operand's pods
    // start with their permissions in place: identity and roles, then the bindings (the API server refuses
    // a binding to a role that does not exist yet unless the binder may bind anything, so a binding sent
    // with its role fails the whole pass and the pass is retried), then the workloads.
    for (const wave of applyWaves(placed)) await Promise.all(wave.map((p) => this.applyOne(p, request.owner, ns)));
    await this.removeStaleDisruptionBudget(placed);
    return {};
  }

  private async applyOne(
    { cluster, object: obj, ownedWhole = [] }: PlacedObject,
    owner: KarpenterRequest['owner'],
    ns: string,
  ): Promise<void> {
    const { topology } = this.deps;
    const store = cluster === 'control' ? topology.controlStore : topology.workloadStore;
    const current = ownedWhole.length ? await store.get(refOf(obj)) : undefined;
    const foreign = current ? foreignEntries(obj, current, ownedWhole) : [];
    const r = await store.apply(obj, { ownedWhole });
    if (r.changed && foreign.length) {
      const what = `${obj.kind} ${ns}/${obj.metadata.name}`;
      this.deps.events.record(
        owner,
        'Warning',
        'ForeignEntriesRemoved',
        `Removed from ${what} what the operator does not render: ${foreign.join(', ')}`,
      );
      this.deps.logger.warn('removed foreign entries from the operand', {
        kind: obj.kind,
        name: obj.metadata.name,
        namespace: ns,
        removed: foreign,
      });
    }
    if (r.changed && obj.kind === 'Deployment') {
      this.deps.events.record(owner, 'Normal', 'OperandApplied', `Applied Deployment ${ns}/${obj.metadata.name}`);
      this.deps.logger.info('applied operand', { kind: obj.kind, name: obj.metadata.name, namespace: ns });
    }
  }

  /** Down to one replica: the PodDisruptionBudget rendered for more would only block drains, so it goes. */
  private async removeStaleDisruptionBudget(placed: PlacedObject[]): Promise<void> {
    const deployment = placed.find((p) => p.object.kind === Types.Deployment.kind)?.object;
    if (!this.mayHaveDisruptionBudget || !deployment || placed.some((p) => p.object.kind === Types.PodDisruptionBudget.kind)) return;
    const ref = { ...Types.PodDisruptionBudget, namespace: deployment.metadata.namespace ?? '', name: deployment.metadata.name };
    const current = await this.deps.topology.controlStore.get(ref);
    if (current?.metadata.labels?.[Names.managedLabel] !== 'true') return;
    if (await this.deps.topology.controlStore.delete(ref))
      this.deps.logger.info('removed the operand PodDisruptionBudget: one replica', { namespace: ref.namespace, name: ref.name });
  }
}
