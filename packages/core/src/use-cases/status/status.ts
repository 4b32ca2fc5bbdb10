import { describeError, isInvalidInputError, isUnsupportedPlatformError } from '../../errors.js';
import type { KarpenterRequest, OperatorSettings } from '../../model/cluster.js';
import type { KubeObject, ObjectRef } from '../../model/kube.js';
import { Types } from '../../model/kube.js';
import { Names } from '../../model/names.js';
import { layoutCredentialsSecret } from '../../policy/operand-layout.js';
import type { PlacedObject } from '../../policy/operand.js';
import { isSubset } from '../../policy/subset.js';
import { foldStatus, Reasons, rolledOut, type OperandState, type StatusInputs } from '../../policy/status-fold.js';
import type { CloudProvider, RelatedObject } from '../../ports/cloud-provider.js';
import type { OperandReport, Topology } from '../../ports/topology.js';
import type { Reconciler, Result, Watch } from '../../runtime/reconciler.js';
import { ManagedCrdsWatch } from '../crds/crds.js';
import { pendingCrds } from '../gate.js';
import { operandCloudConfigFor, planOperandFor } from '../operand/operand.js';
import type { StatusBoard } from '../status-board.js';

export const STATUS_KEY = 'status';

export interface StatusDeps {
  topology: Topology;
  cloud: CloudProvider;
  settings: OperatorSettings;
  board: StatusBoard;
  /** Consecutive failures of a use-case before Degraded=True (the reference used 3). */
  degradedAfter?: number;
}

/**
 * The live operand Deployment `d` as the status fold sees it. `desired` is the Deployment this release
 * renders (absent when it cannot be rendered yet): `d` is at this release when its pod template carries
 * everything `desired`'s does, the same test the apply makes before skipping a write.
 */
export function operandState(d: KubeObject | undefined, desired: KubeObject | undefined): OperandState | undefined {
  if (!d) return undefined;
  const spec = (d.spec ?? {}) as { replicas?: number; template?: unknown };
  const st = (d.status ?? {}) as { observedGeneration?: number; replicas?: number; updatedReplicas?: number; availableReplicas?: number };
  const template = (desired?.spec as { template?: unknown } | undefined)?.template;
  return {
    generation: d.metadata.generation ?? 1,
    observedGeneration: st.observedGeneration ?? 0,
    replicas: spec.replicas ?? 1,
    currentReplicas: st.replicas ?? 0,
    updatedReplicas: st.updatedReplicas ?? 0,
    availableReplicas: st.availableReplicas ?? 0,
    atRelease: template !== undefined && isSubset(template, spec.template),
  };
}

/**
 * ClusterOperator `relatedObjects`: what must-gather collects (an empty name: every object of the
 * resource). One list, used at run time and in the ClusterOperator manifest, from which the CVO copies it
 * before the operator first runs. `providerObjects` is the cloud provider's own (`relatedObjects()`).
 */
export function relatedObjects(namespace: string, providerObjects: readonly RelatedObject[]): RelatedObject[] {
  return [
    { group: '', resource: 'namespaces', name: namespace },
    { group: 'apps', resource: 'deployments', name: Names.operatorDeployment, namespace },
    { group: 'apps', resource: 'deployments', name: Names.operandDeployment, namespace },
    { group: 'rbac.authorization.k8s.io', resource: 'clusterroles', name: Names.operatorServiceAccount },
    { group: 'rbac.authorization.k8s.io', resource: 'clusterrolebindings', name: Names.operatorServiceAccount },
    { group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions', name: Names.karpenterCrd },
    { group: 'autoscaling.openshift.io', resource: 'karpenters', name: '' },
    { group: 'karpenter.sh', resource: 'nodepools', name: '' },
    { group: 'karpenter.sh', resource: 'nodeclaims', name: '' },
    { group: 'karpenter.sh', resource: 'nodeoverlays', name: '' },
    { group: 'certificates.k8s.io', resource: 'certificatesigningrequests', name: '' },
    { group: 'machineconfiguration.openshift.io', resource: 'machineconfigpools', name: '' },
    { group: 'machineconfiguration.openshift.io', resource: 'kubeletconfigs', name: '' },
    ...providerObjects,
  ];
}

/**
 * `clusteroperator.status`: folds every use-case's outcome and the operand's rollout into the topology's
 * status (ClusterOperator + Karpenter CR standalone). Writes only differences.
 */
export class StatusReconciler implements Reconciler {
  readonly name = 'clusteroperator.status';
  readonly watches: Watch[];

  constructor(private readonly deps: StatusDeps) {
    const ns = deps.topology.operandNamespace;
    this.watches = [
      ...deps.topology.watches,
      { type: Types.Deployment, cluster: 'control', namespace: ns, fieldSelector: `metadata.name=${Names.operandDeployment}` },
      {
        type: Types.Secret,
        cluster: 'control',
        namespace: ns,
        fieldSelector: `metadata.name=${layoutCredentialsSecret(deps.topology.operandLayout(deps.settings))}`,
      },
      ManagedCrdsWatch,
      statusObjectWatch(deps.topology.statusObject),
      ...(deps.topology.statusWatches ?? []),
    ];
  }

  keysFor(): string[] {
    return [STATUS_KEY];
  }

  async resyncKeys(): Promise<string[]> {
    return [STATUS_KEY];
  }

  async reconcile(): Promise<Result> {
    const { topology, cloud, settings, board } = this.deps;
    const ns = topology.operandNamespace;
    const input: StatusInputs = {
      request: 'absent',
      crdsPending: [],
      useCaseConditions: board.conditions(),
      failures: board.entries().map(([useCase, o]) => ({
        useCase,
        consecutiveFailures: o.consecutiveFailures,
        ...(o.lastError ? { lastError: o.lastError } : {}),
      })),
      degradedAfter: this.deps.degradedAfter ?? 3,
      releaseVersion: settings.releaseVersion,
    };
    let request: KarpenterRequest | undefined;
    let operand: OperandReport | undefined;
    try {
      request = await topology.readRequest();
    } catch (e) {
      if (!isInvalidInputError(e)) throw e;
      input.request = 'present';
      input.failures.push({ useCase: Reasons.KarpenterCheckFailed, consecutiveFailures: input.degradedAfter, lastError: describeError(e) });
    }
    if (request) {
      input.request = request.deleting ? 'deleting' : 'present';
      input.generation = request.generation;
    }
    try {
      cloud.assertSupported();
    } catch (e) {
      if (!isUnsupportedPlatformError(e)) throw e;
      input.unsupported = e.message;
      if (!e.known) input.unknownPlatform = true;
      if (await topology.controlStore.get({ ...Types.Deployment, namespace: ns, name: Names.operandDeployment })) {
        input.strandedOperand = `${ns}/${Names.operandDeployment}`;
      }
    }
    if (input.request === 'present' && !input.unsupported) {
      // What this release would apply; without it the live Deployment cannot count as this release's.
      let desired: KubeObject | undefined;
      let placedHere: PlacedObject[] = [];
      try {
        const facts = await topology.clusterFacts();
        input.crdsPending = await pendingCrds(topology, cloud);
        const cfg = operandCloudConfigFor(this.deps, facts);
        const secret = await topology.controlStore.get({ ...Types.Secret, namespace: ns, name: cfg.credentialsSecret });
        if (!secret) input.missingCredentials = `${ns}/${cfg.credentialsSecret}`;
        else if (request) {
          const plan = planOperandFor(this.deps, { request, facts, credentials: secret });
          placedHere = plan.filter((p) => p.cluster === 'control' && p.object.metadata.namespace === ns);
          desired = plan.find((p) => p.object.kind === Types.Deployment.kind)?.object;
        }
      } catch (e) {
        if (!isInvalidInputError(e)) throw e;
        input.factsError = describeError(e);
      }
      const dep = await topology.controlStore.get({ ...Types.Deployment, namespace: ns, name: Names.operandDeployment });
      const op = operandState(dep, desired);
      if (op) input.operand = op;
      operand = {
        rolledOut: op !== undefined && rolledOut(op),
        objects: (desired ? placedHere : []).map(({ object: o }) => ({
          group: o.apiVersion.includes('/') ? o.apiVersion.split('/')[0]! : '',
          kind: o.kind,
          name: o.metadata.name,
        })),
        ...(dep ? { deployment: dep } : {}),
      };
    }
    const reported = (
      (await topology.controlStore.get(topology.statusObject))?.status as
        { conditions?: Array<{ type?: unknown; status?: unknown }> } | undefined
    )?.conditions;
    const progressing = Array.isArray(reported) ? reported.find((c) => c.type === 'Progressing')?.status : undefined;
    if (progressing === 'True' || progressing === 'False' || progressing === 'Unknown') input.progressing = progressing;
    const folded = foldStatus(input);
    const report = {
      conditions: folded.conditions,
      relatedObjects: relatedObjects(ns, cloud.relatedObjects()),
      useCaseConditions: input.useCaseConditions,
      ...(folded.version ? { version: folded.version } : {}),
      ...(operand ? { operand } : {}),
    };
    await topology.reportStatus(report, request);
    return {};
  }
}

/** The status object's watch, in its namespace when it has one (a HostedControlPlane; the ClusterOperator has none). */
function statusObjectWatch(ref: ObjectRef): Watch {
  const { apiVersion, kind, name, namespace } = ref;
  return { type: { apiVersion, kind }, cluster: 'control', fieldSelector: `metadata.name=${name}`, ...(namespace ? { namespace } : {}) };
}
