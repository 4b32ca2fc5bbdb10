/** Minimal Kubernetes object shapes the domain works with. Adapters convert to and from client types. */

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

/** Identifies a kind: apiVersion ("group/version" or "v1") and kind. */
export interface TypeRef {
  apiVersion: string;
  kind: string;
}

/** Identifies one object. `namespace` is absent for cluster-scoped kinds. */
export interface ObjectRef extends TypeRef {
  name: string;
  namespace?: string;
}

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

export function refOf(obj: KubeObject): ObjectRef {
  const ref: ObjectRef = { apiVersion: obj.apiVersion, kind: obj.kind, name: obj.metadata.name };
  if (obj.metadata.namespace) ref.namespace = obj.metadata.namespace;
  return ref;
}

/** True when the CRD reports `Established=True`. */
export function crdEstablished(crd: KubeObject | undefined): boolean {
  const conds = (crd?.status as { conditions?: Array<{ type: string; status: string }> } | undefined)?.conditions;
  return Boolean(conds?.some((c) => c.type === 'Established' && c.status === 'True'));
}

export function describeRef(ref: ObjectRef): string {
  return ref.namespace ? `${ref.kind} ${ref.namespace}/${ref.name}` : `${ref.kind} ${ref.name}`;
}

export const Types = {
  Namespace: { apiVersion: 'v1', kind: 'Namespace' },
  Secret: { apiVersion: 'v1', kind: 'Secret' },
  ConfigMap: { apiVersion: 'v1', kind: 'ConfigMap' },
  ServiceAccount: { apiVersion: 'v1', kind: 'ServiceAccount' },
  Node: { apiVersion: 'v1', kind: 'Node' },
  Pod: { apiVersion: 'v1', kind: 'Pod' },
  Deployment: { apiVersion: 'apps/v1', kind: 'Deployment' },
  PodDisruptionBudget: { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget' },
  ClusterRole: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole' },
  ClusterRoleBinding: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding' },
  Role: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role' },
  RoleBinding: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding' },
  CustomResourceDefinition: { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' },
  CertificateSigningRequest: { apiVersion: 'certificates.k8s.io/v1', kind: 'CertificateSigningRequest' },
  Lease: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' },
  Infrastructure: { apiVersion: 'config.openshift.io/v1', kind: 'Infrastructure' },
  ClusterOperator: { apiVersion: 'config.openshift.io/v1', kind: 'ClusterOperator' },
  ClusterVersion: { apiVersion: 'config.openshift.io/v1', kind: 'ClusterVersion' },
  MachineSet: { apiVersion: 'machine.openshift.io/v1beta1', kind: 'MachineSet' },
  MachineConfigPool: { apiVersion: 'machineconfiguration.openshift.io/v1', kind: 'MachineConfigPool' },
  KubeletConfig: { apiVersion: 'machineconfiguration.openshift.io/v1', kind: 'KubeletConfig' },
  Karpenter: { apiVersion: 'autoscaling.openshift.io/v1alpha1', kind: 'Karpenter' },
  NodePool: { apiVersion: 'karpenter.sh/v1', kind: 'NodePool' },
  NodeClaim: { apiVersion: 'karpenter.sh/v1', kind: 'NodeClaim' },
  NodeOverlay: { apiVersion: 'karpenter.sh/v1alpha1', kind: 'NodeOverlay' },
  CredentialsRequest: { apiVersion: 'cloudcredential.openshift.io/v1', kind: 'CredentialsRequest' },
} as const satisfies Record<string, TypeRef>;
