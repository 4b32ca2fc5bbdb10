import { Names, OperandNames, Types, operandCoreRules, operandDnsRules, type KubeObject, type PolicyRule } from '@karpenter-operator/core';
import { AWS_CRD_FILES, awsOperandRbac } from '@karpenter-operator/provider-aws';

/** A rule and why the operator holds it; `why` becomes a comment in install/ and is not part of the object. */
export interface DocumentedRule extends PolicyRule {
  why: string;
}

const ro = ['get', 'list', 'watch'];
const karpenterGroup = Types.Karpenter.apiVersion.split('/')[0]!;
const ns = Names.operatorNamespace;
const operatorSubject = { kind: 'ServiceAccount', name: Names.operatorServiceAccount, namespace: ns };

/** Names of the operator's own Roles and ClusterRoles. */
export const OperatorRbacNames = {
  clusterRole: 'karpenter-operator',
  /** Holds exactly what the operator grants the operand (RBAC escalation prevention). */
  operandGrantsClusterRole: 'karpenter-operator-operand',
  role: 'karpenter-operator',
} as const;

/** The runtime CRDs the operator applies, named from the provider's CRD files (`<group>_<plural>.yaml`). */
export const runtimeCrdNames: string[] = AWS_CRD_FILES.map((file) => {
  const [crdGroup, plural] = file.replace(/\.yaml$/, '').split('_') as [string, string];
  return `${plural}.${crdGroup}`;
});

const operandClusterRoles = [
  OperandNames.coreClusterRole,
  ...awsOperandRbac(ns)
    .filter((o) => o.kind === 'ClusterRole')
    .map((o) => o.metadata.name),
];

/** Cluster-wide rules for what the operator itself reads and writes. Writes are server-side apply (create + patch), merge patches and deletes. */
export const operatorClusterRules: DocumentedRule[] = [
  {
    why: 'Runtime CRDs: watched to re-create on deletion and to wait for Established; created by server-side apply.',
    apiGroups: ['apiextensions.k8s.io'],
    resources: ['customresourcedefinitions'],
    verbs: [...ro, 'create'],
  },
  {
    why: 'Runtime CRDs: server-side apply of the upstream schemas, only the ones the operator ships.',
    apiGroups: ['apiextensions.k8s.io'],
    resources: ['customresourcedefinitions'],
    verbs: ['patch'],
    resourceNames: runtimeCrdNames,
  },
  {
    why: 'The Karpenter CR: the request to run Karpenter.',
    apiGroups: [karpenterGroup],
    resources: ['karpenters'],
    verbs: ro,
  },
  {
    why: 'The teardown finalizer (patch) and status conditions of the singleton.',
    apiGroups: [karpenterGroup],
    resources: ['karpenters', 'karpenters/status'],
    verbs: ['patch'],
    resourceNames: [Names.karpenterCr],
  },
  {
    why: 'OwnerReferencesPermissionEnforcement: the operand objects carry blockOwnerDeletion owner references to the CR.',
    apiGroups: [karpenterGroup],
    resources: ['karpenters/finalizers'],
    verbs: ['update'],
    resourceNames: [Names.karpenterCr],
  },
  {
    why: 'ClusterOperator karpenter: read, and created if the CVO has not yet.',
    apiGroups: ['config.openshift.io'],
    resources: ['clusteroperators'],
    verbs: [...ro, 'create'],
  },
  {
    why: 'ClusterOperator karpenter: conditions, versions and relatedObjects.',
    apiGroups: ['config.openshift.io'],
    resources: ['clusteroperators/status'],
    verbs: ['patch'],
    resourceNames: [Names.clusterOperator],
  },
  {
    why: 'Cluster facts (platform, region, infra ID, API URL); the informer selects metadata.name=cluster.',
    apiGroups: ['config.openshift.io'],
    resources: ['infrastructures'],
    verbs: ro,
    resourceNames: [Names.infrastructure],
  },
  {
    why: 'The cluster release (desired and history) for the status versions; the informer selects metadata.name=version.',
    apiGroups: ['config.openshift.io'],
    resources: ['clusterversions'],
    verbs: ro,
    resourceNames: ['version'],
  },
  {
    why: 'Node OS configuration: MachineConfigPool karpenter-<nodeclass> and the registration-taint KubeletConfig.',
    apiGroups: ['machineconfiguration.openshift.io'],
    resources: ['machineconfigpools', 'kubeletconfigs'],
    verbs: [...ro, 'create', 'patch', 'delete'],
  },
  {
    why: 'NodeClasses: the default EC2NodeClass (created, protected fields enforced), verified, removed at teardown.',
    apiGroups: ['karpenter.k8s.aws'],
    resources: ['ec2nodeclasses'],
    verbs: [...ro, 'create', 'patch', 'delete'],
  },
  {
    why: 'Teardown deletes NodePools and NodeClaims, forcing stuck claims with the termination annotation; node identity reads NodeClaims.',
    apiGroups: ['karpenter.sh'],
    resources: ['nodepools', 'nodeclaims'],
    verbs: [...ro, 'patch', 'delete'],
  },
  {
    why: 'Node identity: a CSR is approved only for a node of a Karpenter NodeClaim.',
    apiGroups: [''],
    resources: ['nodes'],
    verbs: ro,
  },
  {
    why: 'Node identity: kubelet client and serving CSRs.',
    apiGroups: ['certificates.k8s.io'],
    resources: ['certificatesigningrequests'],
    verbs: ro,
  },
  {
    why: 'Node identity: approval goes through the approval subresource.',
    apiGroups: ['certificates.k8s.io'],
    resources: ['certificatesigningrequests/approval'],
    verbs: ['update'],
  },
  {
    why: 'Node identity: approving needs the signer permission, for the two kubelet signers only.',
    apiGroups: ['certificates.k8s.io'],
    resources: ['signers'],
    verbs: ['approve'],
    resourceNames: ['kubernetes.io/kube-apiserver-client-kubelet', 'kubernetes.io/kubelet-serving'],
  },
  {
    why: 'Events on the Karpenter CR, ClusterOperator, CSRs and NodeClasses (cluster-scoped objects record into default).',
    apiGroups: ['events.k8s.io'],
    resources: ['events'],
    verbs: ['create', 'patch'],
  },
  {
    why: 'The operand ClusterRoles and bindings: read and created by server-side apply.',
    apiGroups: ['rbac.authorization.k8s.io'],
    resources: ['clusterroles', 'clusterrolebindings'],
    verbs: [...ro, 'create'],
  },
  {
    why: 'The operand ClusterRoles and bindings: kept in shape, removed at teardown.',
    apiGroups: ['rbac.authorization.k8s.io'],
    resources: ['clusterroles', 'clusterrolebindings'],
    verbs: ['patch', 'delete'],
    resourceNames: operandClusterRoles,
  },
];

/**
 * The operand's cluster-wide rules (core and provider), held only so the operator may create ClusterRoles
 * that grant them: the API server refuses a role granting more than its creator holds.
 */
export function operandGrantRules(): PolicyRule[] {
  const provider = awsOperandRbac(ns).flatMap((o) => (o.kind === 'ClusterRole' ? ((o['rules'] as PolicyRule[] | undefined) ?? []) : []));
  return [...operandCoreRules, ...provider].map((r) => structuredClone(r));
}

interface NamespacedRole {
  namespace: string;
  rules: DocumentedRule[];
}

/** Rules in the namespaces the operator works in, one Role `karpenter-operator` each. */
export const operatorNamespacedRules: NamespacedRole[] = [
  {
    namespace: ns,
    rules: [
      {
        why: `Leader election: Lease ${Names.leaderLease}.`,
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        verbs: [...ro, 'create'],
      },
      {
        why: `Renewing its own Lease; ${Names.operandLeaderLease} is held to grant it to the operand.`,
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        verbs: ['update', 'patch'],
        resourceNames: [Names.leaderLease, Names.operandLeaderLease],
      },
      {
        why: 'The operand Deployment: read and created by server-side apply.',
        apiGroups: ['apps'],
        resources: ['deployments'],
        verbs: [...ro, 'create'],
      },
      {
        why: 'The operand Deployment: drift reverted, removed at teardown; never the operator itself.',
        apiGroups: ['apps'],
        resources: ['deployments'],
        verbs: ['patch', 'delete'],
        resourceNames: [Names.operandDeployment],
      },
      {
        why: 'The operand PodDisruptionBudget (more than one replica): read and created by server-side apply.',
        apiGroups: ['policy'],
        resources: ['poddisruptionbudgets'],
        verbs: [...ro, 'create'],
      },
      {
        why: 'The operand PodDisruptionBudget: kept in shape, removed when the operand is down to one replica.',
        apiGroups: ['policy'],
        resources: ['poddisruptionbudgets'],
        verbs: ['patch', 'delete'],
        resourceNames: [Names.operandDeployment],
      },
      {
        why: 'The operand ServiceAccount: read and created by server-side apply.',
        apiGroups: [''],
        resources: ['serviceaccounts'],
        verbs: [...ro, 'create'],
      },
      {
        why: 'The operand ServiceAccount: kept in shape, removed at teardown.',
        apiGroups: [''],
        resources: ['serviceaccounts'],
        verbs: ['patch', 'delete'],
        resourceNames: [Names.operandServiceAccount],
      },
      {
        why: 'The operand Role (its Lease) and binding: read and created by server-side apply.',
        apiGroups: ['rbac.authorization.k8s.io'],
        resources: ['roles', 'rolebindings'],
        verbs: [...ro, 'create'],
      },
      {
        why: 'The operand Role and binding: kept in shape, removed at teardown.',
        apiGroups: ['rbac.authorization.k8s.io'],
        resources: ['roles', 'rolebindings'],
        verbs: ['patch', 'delete'],
        resourceNames: [OperandNames.role],
      },
      {
        why: 'Credential gating and rotation: the operand starts once this Secret exists and rolls when it changes; the informer selects it by name.',
        apiGroups: [''],
        resources: ['secrets'],
        verbs: ro,
        resourceNames: [Names.credentialsSecret],
      },
    ],
  },
  {
    namespace: OperandNames.dnsNamespace,
    rules: [
      {
        why: 'The operand Role karpenter-dns and binding: read and created by server-side apply.',
        apiGroups: ['rbac.authorization.k8s.io'],
        resources: ['roles', 'rolebindings'],
        verbs: [...ro, 'create'],
      },
      {
        why: 'The operand Role karpenter-dns and binding: kept in shape, removed at teardown.',
        apiGroups: ['rbac.authorization.k8s.io'],
        resources: ['roles', 'rolebindings'],
        verbs: ['patch', 'delete'],
        resourceNames: [OperandNames.dnsRole],
      },
      ...operandDnsRules.map((r) => ({ why: 'Held to grant it to the operand (Role karpenter-dns).', ...structuredClone(r) })),
    ],
  },
  {
    namespace: Names.machineApiNamespace,
    rules: [
      {
        why: 'Default NodeClass discovery: worker MachineSets (subnets, security groups, AMI, tags).',
        apiGroups: ['machine.openshift.io'],
        resources: ['machinesets'],
        verbs: ['list', 'watch'],
      },
      {
        why: 'Default NodeClass discovery: the user-data Secrets the MachineSets name (their names are not fixed).',
        apiGroups: [''],
        resources: ['secrets'],
        verbs: ['list', 'watch'],
      },
    ],
  },
  {
    namespace: Names.mcoNamespace,
    rules: [
      {
        why: 'RHCOS boot images per region; the informer selects metadata.name=coreos-bootimages.',
        apiGroups: [''],
        resources: ['configmaps'],
        verbs: ro,
        resourceNames: [Names.bootImagesConfigMap],
      },
    ],
  },
];

const binding = (
  kind: 'ClusterRoleBinding' | 'RoleBinding',
  roleKind: 'ClusterRole' | 'Role',
  name: string,
  namespace?: string,
): KubeObject => ({
  ...(kind === 'RoleBinding' ? Types.RoleBinding : Types.ClusterRoleBinding),
  metadata: namespace ? { name, namespace } : { name },
  roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: roleKind, name },
  subjects: [{ ...operatorSubject }],
});

/** ServiceAccount, ClusterRoles and bindings of the operator (rules still carry `why`). */
export function operatorClusterRbac(): KubeObject[] {
  return [
    { ...Types.ServiceAccount, metadata: { name: Names.operatorServiceAccount, namespace: ns } },
    { ...Types.ClusterRole, metadata: { name: OperatorRbacNames.clusterRole }, rules: structuredClone(operatorClusterRules) },
    binding('ClusterRoleBinding', 'ClusterRole', OperatorRbacNames.clusterRole),
  ];
}

export function operandGrantsRbac(): KubeObject[] {
  return [
    {
      ...Types.ClusterRole,
      metadata: {
        name: OperatorRbacNames.operandGrantsClusterRole,
        annotations: {
          'kubernetes.io/description':
            'What karpenter-operator grants the Karpenter operand: to create a role, its creator must hold every rule in it.',
        },
      },
      rules: operandGrantRules(),
    },
    binding('ClusterRoleBinding', 'ClusterRole', OperatorRbacNames.operandGrantsClusterRole),
  ];
}

export function operatorNamespacedRbac(): KubeObject[] {
  return operatorNamespacedRules.flatMap(({ namespace, rules }) => [
    { ...Types.Role, metadata: { name: OperatorRbacNames.role, namespace }, rules: structuredClone(rules) },
    binding('RoleBinding', 'Role', OperatorRbacNames.role, namespace),
  ]);
}
