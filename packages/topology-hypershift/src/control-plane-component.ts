import { Names, type ConditionInput, type KubeObject, type OperandReport, type TypeRef } from '@karpenter-operator/core';
import { HcpPodConventions } from './operand-layout.js';

/**
 * ControlPlaneComponent (hypershift.openshift.io/v1beta1): the rollout status of one hosted-control-plane
 * component, named after it, in the HCP namespace. Status only (its spec is empty): `version` (the
 * control-plane release the component runs, set once it rolled out at it), `conditions` Available and
 * RolloutComplete, and `resources` (what the component manages). HyperShift reads them: its hosted-cluster
 * controller reports AutoNodeEnabled True only when `karpenter-operator` (written by HyperShift's
 * control-plane operator for this operator's Deployment) and `karpenter` (written by this operator for the
 * operand) both exist with RolloutComplete True; the control-plane version completes once every component
 * reports it with RolloutComplete True; the HCP is Available once every component is.
 */
export const ControlPlaneComponentType = {
  apiVersion: 'hypershift.openshift.io/v1beta1',
  kind: 'ControlPlaneComponent',
} as const satisfies TypeRef;

/** The component of the operand: named after its Deployment, as HyperShift names components. */
export const OPERAND_COMPONENT = Names.operandDeployment;
/** The component HyperShift's control-plane operator reports for this operator's own Deployment. */
export const OPERATOR_COMPONENT = 'karpenter-operator';

export const ComponentConditions = { Available: 'Available', RolloutComplete: 'RolloutComplete' } as const;

/** The reasons HyperShift gives these conditions for a Deployment. */
export const ComponentReasons = {
  AsExpected: 'AsExpected',
  /** The Deployment, or its Available condition, does not exist. */
  NotFound: 'NotFound',
  WaitingForAvailable: 'WaitingForAvailable',
  WaitingForRolloutComplete: 'WaitingForRolloutComplete',
} as const;

/** `status.resources[]`: a resource the component manages. */
export interface ComponentResource {
  group: string;
  kind: string;
  name: string;
}

export interface ComponentStatus {
  conditions: ConditionInput[];
  /** Only once RolloutComplete is True: until then the version last reported stays (HyperShift keeps it too). */
  version?: string;
  resources: ComponentResource[];
}

type DeploymentCondition = { type?: unknown; status?: unknown; message?: unknown };

/**
 * The status of ControlPlaneComponent `karpenter` from the operand as the status fold saw it, and the
 * control-plane release the HCP rolls out (`status.controlPlaneVersion.desired.version`; absent when the HCP
 * reports none). Pure.
 *
 * - Available: the operand Deployment's own Available condition, as HyperShift reads a Deployment's.
 * - RolloutComplete True only when the fold found the operand rolled out (this release's template, every
 *   replica updated and available, the latest generation observed) and the Deployment carries the release
 *   version annotation of `releaseVersion`: a control-plane upgrade is not complete for the operand before
 *   it has been applied to it.
 * - `version`: `releaseVersion`, only with RolloutComplete True.
 * - `resources`: what this release applies for the operand in the HCP namespace, or the Deployment alone
 *   while that is not known.
 */
export function operandComponentStatus(operand: OperandReport, releaseVersion: string | undefined): ComponentStatus {
  const name = OPERAND_COMPONENT;
  const resources: ComponentResource[] = operand.objects.length
    ? operand.objects.map(({ group, kind, name: n }) => ({ group, kind, name: n }))
    : [{ group: 'apps', kind: 'Deployment', name }];
  const dep = operand.deployment;
  if (!dep) {
    // HyperShift's message for a Deployment it cannot get: the API server's NotFound.
    const missing = `deployments.apps "${name}" not found`;
    return {
      conditions: [
        { type: ComponentConditions.Available, status: 'False', reason: ComponentReasons.NotFound, message: missing },
        { type: ComponentConditions.RolloutComplete, status: 'False', reason: ComponentReasons.NotFound, message: missing },
      ],
      resources,
    };
  }
  return {
    conditions: [availableCondition(dep), rolloutCondition(dep, operand.rolledOut, releaseVersion)],
    ...(rolloutComplete(dep, operand.rolledOut, releaseVersion) && releaseVersion ? { version: releaseVersion } : {}),
    resources,
  };
}

function availableCondition(dep: KubeObject): ConditionInput {
  const type = ComponentConditions.Available;
  const conditions = (dep.status as { conditions?: unknown } | undefined)?.conditions;
  const available = Array.isArray(conditions)
    ? (conditions as DeploymentCondition[]).find((c) => typeof c === 'object' && c !== null && c.type === 'Available')
    : undefined;
  const name = dep.metadata.name;
  if (!available) {
    return { type, status: 'False', reason: ComponentReasons.NotFound, message: `${name} Deployment Available condition not found` };
  }
  if (available.status === 'True')
    return { type, status: 'True', reason: ComponentReasons.AsExpected, message: `Deployment ${name} is available` };
  const why = typeof available.message === 'string' ? available.message : '';
  return { type, status: 'False', reason: ComponentReasons.WaitingForAvailable, message: `Deployment ${name} is not available: ${why}` };
}

/** The release version the Deployment carries (its `release.openshift.io/version` annotation). */
const carriedVersion = (dep: KubeObject): string | undefined => dep.metadata.annotations?.[HcpPodConventions.releaseVersionAnnotation];

function rolloutComplete(dep: KubeObject, rolledOut: boolean, releaseVersion: string | undefined): boolean {
  return rolledOut && (releaseVersion === undefined || carriedVersion(dep) === releaseVersion);
}

function rolloutCondition(dep: KubeObject, rolledOut: boolean, releaseVersion: string | undefined): ConditionInput {
  const type = ComponentConditions.RolloutComplete;
  const name = dep.metadata.name;
  if (rolloutComplete(dep, rolledOut, releaseVersion)) {
    return { type, status: 'True', reason: ComponentReasons.AsExpected, message: `Deployment ${name} successfully rolled out` };
  }
  const waiting = `Waiting for deployment ${name} rollout to finish`;
  if (rolledOut) {
    const carried = carriedVersion(dep);
    return {
      type,
      status: 'False',
      reason: ComponentReasons.WaitingForRolloutComplete,
      message: `${waiting}: release ${releaseVersion} is not applied yet (it carries ${carried ? `release ${carried}` : 'no release version'})`,
    };
  }
  const spec = (dep.spec ?? {}) as { replicas?: unknown };
  const st = (dep.status ?? {}) as { updatedReplicas?: unknown };
  const desired = typeof spec.replicas === 'number' ? spec.replicas : 1;
  const updated = typeof st.updatedReplicas === 'number' ? st.updatedReplicas : 0;
  return {
    type,
    status: 'False',
    reason: ComponentReasons.WaitingForRolloutComplete,
    message: `${waiting}: ${updated} out of ${desired} new replicas have been updated`,
  };
}

/**
 * HyperShift's AutoNodeEnabled rule while AutoNode is on, over the ControlPlaneComponents of the HCP namespace:
 * undefined when both `karpenter-operator` and `karpenter` exist with RolloutComplete True, else what
 * HyperShift's hosted-cluster controller would report as still enabling. Pure; for tests and diagnostics.
 */
export function autoNodeComponentsPending(components: readonly KubeObject[]): string | undefined {
  const ours = components.filter((c) => c.metadata.name === OPERATOR_COMPONENT || c.metadata.name === OPERAND_COMPONENT);
  if (ours.length < 2) return 'waiting for components to be created';
  const notReady = ours.flatMap((c) => {
    const list = (c.status as { conditions?: unknown } | undefined)?.conditions;
    const rollout = Array.isArray(list)
      ? (list as Array<{ type?: unknown; status?: unknown; message?: unknown }>).find(
          (x) => x?.type === ComponentConditions.RolloutComplete,
        )
      : undefined;
    if (rollout?.status === 'True') return [];
    return [`${c.metadata.name}: ${rollout ? String(rollout.message ?? '') : 'not rolled out'}`];
  });
  return notReady.length ? notReady.join('; ') : undefined;
}
