import type { KarpenterRequest } from '../model/cluster.js';
import type { KubeObject, ObjectMeta, OwnerReference, TypeRef } from '../model/kube.js';
import { Names } from '../model/names.js';
import { Types } from '../model/kube.js';
import { operandDisruptionBudget } from './karpenter-settings.js';
import { renderDeployment, operandOwnedWhole } from './operand-deployment.js';
import { OperandNames, type OperandInput, type OperandLayout, type ServiceAccountRef } from './operand-layout.js';
import { operandCoreRules, operandDnsRules, operandLeaseRules } from './operand-rbac.js';
import type { PolicyRule } from './rbac.js';
import type { OwnedPath } from './subset.js';

/**
 * The cluster an operand object is applied to: `control` is `Topology.controlStore` (where the operand's
 * pods run), `workload` is `Topology.workloadStore` (the API Karpenter manages). Standalone they are one.
 */
export type OperandCluster = 'control' | 'workload';

/** A rendered operand object and the cluster it belongs to. */
export interface PlacedObject {
  cluster: OperandCluster;
  object: KubeObject;
  /** Fields of `object` the operator owns whole (`ApplyOptions.ownedWhole`); absent: none. */
  ownedWhole?: readonly OwnedPath[];
}
const sameServiceAccount = (a: ServiceAccountRef, b: ServiceAccountRef) => a.namespace === b.namespace && a.name === b.name;

/** A kind, cluster and namespace (all namespaces when absent) that operand objects are applied in. */
export interface OperandScope {
  type: TypeRef;
  cluster: OperandCluster;
  namespace?: string;
}

/**
 * Where `planOperand` puts its ServiceAccounts and RBAC (the Deployment is left to the caller), so the
 * use-case can watch exactly what it writes. A provider's namespaced RBAC is covered only in these
 * namespaces. Pure.
 */
export function operandScopes(layout: OperandLayout): OperandScope[] {
  const serviceAccounts: OperandScope[] = [
    { type: Types.ServiceAccount, cluster: 'control', namespace: layout.podServiceAccount.namespace },
  ];
  if (!sameServiceAccount(layout.podServiceAccount, layout.apiIdentity)) {
    serviceAccounts.push({ type: Types.ServiceAccount, cluster: 'workload', namespace: layout.apiIdentity.namespace });
  }
  const roleNamespaces = layout.leaderElection
    ? [layout.podServiceAccount.namespace, OperandNames.dnsNamespace]
    : [OperandNames.dnsNamespace];
  return [
    ...serviceAccounts,
    ...[Types.Role, Types.RoleBinding].flatMap((type) =>
      roleNamespaces.map((namespace): OperandScope => ({ type, cluster: 'workload', namespace })),
    ),
    { type: Types.ClusterRole, cluster: 'workload' },
    { type: Types.ClusterRoleBinding, cluster: 'workload' },
    // More than one replica needs leader election; they then get a PodDisruptionBudget (`operandDisruptionBudget`).
    ...(layout.leaderElection
      ? [{ type: Types.PodDisruptionBudget, cluster: 'control' as const, namespace: layout.podServiceAccount.namespace }]
      : []),
  ];
}

/**
 * Everything the operand needs, each object with the cluster it is applied to, in apply order:
 * ServiceAccount(s), RBAC (core, provider), then the Deployment. Objects carry only the fields the operator
 * owns, written the way the API server stores them (quantities `"1"`/`1Gi`, string annotation values), so
 * that an applied object is a superset of the desired one and a subset comparison says "unchanged".
 *
 * Placement: the Deployment and the ServiceAccount its pods run as go to the control cluster; what
 * Karpenter uses on the API it manages (its identity when that is another ServiceAccount, its RBAC, the
 * Lease Role) goes to the workload cluster. Ownership: an object is owned by the request's owner (which
 * lives on the control cluster) only where Kubernetes allows it — on the owner's cluster, and there in the
 * owner's namespace or cluster-scoped when the owner is namespaced. Pure.
 */
export function planOperand(input: OperandInput): PlacedObject[] {
  const layout = input.layout;
  const subject = { kind: 'ServiceAccount', name: layout.apiIdentity.name, namespace: layout.apiIdentity.namespace };
  const rbac = (kind: 'Role' | 'ClusterRole', name: string, rules: readonly PolicyRule[], ns?: string): KubeObject => ({
    ...(kind === 'Role' ? Types.Role : Types.ClusterRole),
    metadata: meta(name, ns),
    rules: rules.map((r) => structuredClone(r)),
  });
  const binding = (
    kind: 'RoleBinding' | 'ClusterRoleBinding',
    roleKind: 'Role' | 'ClusterRole',
    name: string,
    ns?: string,
  ): KubeObject => ({
    ...(kind === 'RoleBinding' ? Types.RoleBinding : Types.ClusterRoleBinding),
    metadata: meta(name, ns),
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: roleKind, name },
    subjects: [{ ...subject }],
  });
  const control = (object: KubeObject): PlacedObject => ({ cluster: 'control', object });
  const workload = (object: KubeObject): PlacedObject => ({ cluster: 'workload', object });
  const serviceAccount = (sa: ServiceAccountRef): KubeObject => ({ ...Types.ServiceAccount, metadata: meta(sa.name, sa.namespace) });

  const placed: PlacedObject[] = [control(serviceAccount(layout.podServiceAccount))];
  if (!sameServiceAccount(layout.podServiceAccount, layout.apiIdentity)) placed.push(workload(serviceAccount(layout.apiIdentity)));
  placed.push(
    workload(rbac('ClusterRole', OperandNames.coreClusterRole, operandCoreRules)),
    workload(binding('ClusterRoleBinding', 'ClusterRole', OperandNames.coreClusterRole)),
  );
  if (layout.leaderElection) {
    placed.push(
      workload(rbac('Role', OperandNames.role, operandLeaseRules, input.namespace)),
      workload(binding('RoleBinding', 'Role', OperandNames.role, input.namespace)),
    );
  }
  placed.push(
    workload(rbac('Role', OperandNames.dnsRole, operandDnsRules, OperandNames.dnsNamespace)),
    workload(binding('RoleBinding', 'Role', OperandNames.dnsRole, OperandNames.dnsNamespace)),
    ...input.providerRbac.map((o) => workload(structuredClone(o))),
  );
  const deployment = renderDeployment(input, layout);
  const pdb = operandDisruptionBudget(deployment);
  if (pdb) placed.push(control(pdb));
  placed.push(control(deployment));
  return placed.map(({ cluster, object }) => ({
    cluster,
    object: decorate(object, input.request, layout.singleCluster || cluster === 'control'),
    ...(object.kind === Types.Deployment.kind ? { ownedWhole: operandOwnedWhole(object) } : {}),
  }));
}

/** The objects of `planOperand` without their placement (`render`, install/ checks). Pure. */
export function renderOperand(input: OperandInput): KubeObject[] {
  return planOperand(input).map((p) => p.object);
}

function meta(name: string, namespace?: string): ObjectMeta {
  return namespace ? { name, namespace } : { name };
}

/**
 * Adds the operand labels and, where Kubernetes allows it, the controller owner reference: never across
 * clusters (the garbage collector would delete an object whose owner it cannot find), and from a
 * namespaced owner only within its namespace.
 */
function decorate(obj: KubeObject, request: KarpenterRequest, onOwnersCluster: boolean): KubeObject {
  const out = structuredClone(obj);
  out.metadata.labels = { ...operandLabels(), ...out.metadata.labels };
  const owner = request.owner;
  if (onOwnersCluster && (owner.namespace === undefined || owner.namespace === out.metadata.namespace)) {
    out.metadata.ownerReferences = [ownerReferenceTo(request)];
  }
  return out;
}

export function operandLabels(): Record<string, string> {
  return { app: 'karpenter', [Names.managedLabel]: 'true' };
}

export function ownerReferenceTo(request: KarpenterRequest): OwnerReference {
  const { apiVersion, kind, name, uid } = request.owner;
  return { apiVersion, kind, name, uid, controller: true, blockOwnerDeletion: true };
}
