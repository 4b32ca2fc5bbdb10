import { createHash } from 'node:crypto';
import { isInvalidInputError } from '../../errors.js';
import type { OperatorSettings } from '../../model/cluster.js';
import type { KubeObject } from '../../model/kube.js';
import { Types } from '../../model/kube.js';
import { Names } from '../../model/names.js';
import { OperandNames, renderOperand } from '../../policy/operand.js';

const OperandDnsNamespace = OperandNames.dnsNamespace;
import type { CloudProvider } from '../../ports/cloud-provider.js';
import type { EventRecorder } from '../../ports/event-recorder.js';
import type { Logger } from '../../ports/logger.js';
import type { Topology } from '../../ports/topology.js';
import type { Reconciler, Result, Watch } from '../../runtime/reconciler.js';
import { activeRequest, pendingCrds } from '../crds/crds.js';

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
  const data = { ...((secret.data as Record<string, string> | undefined) ?? {}), ...((secret.stringData as Record<string, string> | undefined) ?? {}) };
  const h = createHash('sha256');
  for (const k of Object.keys(data).sort()) h.update(`${k}\0${data[k]}\0`);
  return h.digest('hex').slice(0, 16);
}

/**
 * `deployment.operand`: keeps the operand's ServiceAccount, RBAC and Deployment as rendered, reverting
 * drift of the fields it owns (deletion, replicas, env, image) and leaving other fields alone. The operand
 * is not created before the runtime CRDs are Established and its credentials Secret exists (Karpenter
 * exits at start-up without working credentials, which would be a crash loop).
 */
export class OperandReconciler implements Reconciler {
  readonly name = 'deployment.operand';
  readonly watches: Watch[];

  constructor(private readonly deps: OperandDeps) {
    const ns = deps.topology.operandNamespace;
    this.watches = [
      ...deps.topology.watches,
      { type: Types.Deployment, cluster: 'control', namespace: ns, fieldSelector: `metadata.name=${Names.operandDeployment}` },
      { type: Types.Secret, cluster: 'control', namespace: ns, fieldSelector: `metadata.name=${Names.credentialsSecret}` },
      { type: Types.CustomResourceDefinition, labels: { [Names.managedLabel]: 'true' } },
      // Everything the use-case applies is watched (by the managed label every rendered object carries), so
      // writes compare against a cache and a deleted Role or binding is restored at once.
      { type: Types.ServiceAccount, cluster: 'control', namespace: ns, labels: { [Names.managedLabel]: 'true' } },
      ...[Types.Role, Types.RoleBinding].flatMap((type) =>
        [ns, OperandDnsNamespace].map((namespace) => ({ type, namespace, labels: { [Names.managedLabel]: 'true' } })),
      ),
      { type: Types.ClusterRole, labels: { [Names.managedLabel]: 'true' } },
      { type: Types.ClusterRoleBinding, labels: { [Names.managedLabel]: 'true' } },
    ];
  }

  keysFor(): string[] {
    return [OPERAND_KEY];
  }

  async resyncKeys(): Promise<string[]> {
    return [OPERAND_KEY];
  }

  async reconcile(): Promise<Result> {
    const { topology, cloud, settings } = this.deps;
    // Removal is the teardown use-case's job, in order; the ownerRef lets GC finish it.
    const request = await activeRequest(topology, cloud);
    if (!request) return {};
    let facts;
    try {
      facts = await topology.clusterFacts();
    } catch (e) {
      // Reported by the status use-case; a change of Infrastructure re-triggers us.
      if (isInvalidInputError(e)) return {};
      throw e;
    }
    if ((await pendingCrds(topology, cloud)).length) return { requeueAfterMs: 2000 };

    const cloudConfig = cloud.operandCloudConfig(facts, settings);
    const ns = topology.operandNamespace;
    const secret = await topology.controlStore.get({ ...Types.Secret, namespace: ns, name: cloudConfig.credentialsSecret });
    if (!secret) return {};

    const objects = renderOperand({
      namespace: ns,
      facts,
      settings,
      request,
      cloud: cloudConfig,
      providerRbac: cloud.operandRbac(ns),
      credentialsHash: secretDigest(secret),
      topology: topology.name,
    });
    for (const obj of objects) {
      const store = obj.kind === 'Deployment' ? topology.controlStore : topology.workloadStore;
      const r = await store.apply(obj);
      if (r.changed && obj.kind === 'Deployment') {
        this.deps.events.record(request.owner, 'Normal', 'OperandApplied', `Applied Deployment ${ns}/${obj.metadata.name}`);
        this.deps.logger.info('applied operand', { kind: obj.kind, name: obj.metadata.name, namespace: ns });
      }
    }
    return {};
  }
}
