import { OperandNames, Types, operandDnsRules, type KubeObject, type PolicyRule } from '@karpenter-operator/core';
import { NODECLASS_POLICY_NAME, OPENSHIFT_NODECLASS_CRD } from '@karpenter-operator/topology-hypershift/sidecar';
import { operandGrantRules, operatorClusterRules, OperatorRbacNames, type DocumentedRule } from './operator-rbac.js';

/**
 * What HyperShift must grant the operator (and the sidecar adapter, when it runs the hosted controllers
 * instead of the operator) in management-cluster mode. Not part of
 * `install/` (the CVO never applies it): HyperShift's control-plane operator creates these objects when it
 * deploys the operator into an HCP namespace. The integration test applies exactly these, so a rule the
 * operator needs and this file lacks fails there as a 403.
 */
const ro = ['get', 'list', 'watch'];
const hcpGroup = 'hypershift.openshift.io';

/** The identity the operator (and adapter) use in the guest: the guest kubeconfig HyperShift mounts authenticates as this. */
export const GUEST_OPERATOR_SUBJECT = { kind: 'ServiceAccount', name: 'karpenter-operator', namespace: 'kube-system' } as const;

/** Which process of the pod needs a management rule; `leaderElection`: only with `--leader-elect`. */
interface ManagementRule extends DocumentedRule {
  by: ReadonlyArray<'operator' | 'adapter'>;
  leaderElection?: true;
}

const MANAGEMENT_RULES: ManagementRule[] = [
  {
    by: ['operator', 'adapter'],
    why: 'Configuration (spec.autoNode), facts, the AutoNode condition and the finalizers.',
    apiGroups: [hcpGroup],
    resources: ['hostedcontrolplanes'],
    verbs: [...ro, 'patch'],
  },
  {
    by: ['operator', 'adapter'],
    why: 'The AutoNode condition and status.autoNode.',
    apiGroups: [hcpGroup],
    resources: ['hostedcontrolplanes/status'],
    verbs: ['patch'],
  },
  {
    by: ['operator'],
    why: 'The operand Deployment is owned by the HCP (blockOwnerDeletion).',
    apiGroups: [hcpGroup],
    resources: ['hostedcontrolplanes/finalizers'],
    verbs: ['update'],
  },
  {
    by: ['operator'],
    leaderElection: true,
    why: 'Leader election of the operator (only with --leader-elect; HyperShift runs one replica without it).',
    apiGroups: ['coordination.k8s.io'],
    resources: ['leases'],
    verbs: [...ro, 'create', 'update', 'patch'],
  },
  {
    by: ['operator'],
    why: 'The operand Deployment and the ServiceAccount it runs as.',
    apiGroups: ['apps'],
    resources: ['deployments'],
    verbs: [...ro, 'create', 'patch', 'delete'],
  },
  {
    by: ['operator'],
    why: 'The operand ServiceAccount.',
    apiGroups: [''],
    resources: ['serviceaccounts'],
    verbs: [...ro, 'create', 'patch', 'delete'],
  },
  {
    by: ['operator'],
    why: 'Namespaced operand RBAC, when the provider renders any for the operand namespace.',
    apiGroups: ['rbac.authorization.k8s.io'],
    resources: ['roles', 'rolebindings'],
    verbs: [...ro, 'create', 'patch', 'delete'],
  },
  {
    by: ['operator', 'adapter'],
    why: "HyperShift's credentials Secret karpenter-credentials (gating, rotation) and the ignition Secrets (labelled) of the HCP namespace; neither writes a Secret.",
    apiGroups: [''],
    resources: ['secrets'],
    verbs: ro,
  },
  {
    by: ['operator', 'adapter'],
    why: "HyperShift's ConfigMaps set-karpenter-taint (read by its ignition generator) and karpenter-subnets (resolved subnets).",
    apiGroups: [''],
    resources: ['configmaps'],
    verbs: [...ro, 'create', 'patch', 'delete'],
  },
  {
    by: ['operator'],
    why: "The HCP namespace's UID annotation (hypershift.openshift.io/default-security-context-uid), read once at start-up; a Role grants only its own namespace.",
    apiGroups: [''],
    resources: ['namespaces'],
    verbs: ['get'],
  },
  {
    by: ['operator'],
    why: "PodMonitor karpenter: HyperShift's scrape of the operand's metrics, as it renders one for its own Karpenter.",
    apiGroups: ['monitoring.coreos.com'],
    resources: ['podmonitors'],
    verbs: [...ro, 'create', 'patch', 'delete'],
  },
  {
    by: ['operator'],
    why: "ControlPlaneComponent karpenter: the operand's rollout, which HyperShift reads for AutoNodeEnabled; created, and deleted with the operand.",
    apiGroups: [hcpGroup],
    resources: ['controlplanecomponents'],
    verbs: [...ro, 'create', 'delete'],
  },
  {
    by: ['operator'],
    why: 'The status of ControlPlaneComponent karpenter (version, Available, RolloutComplete, resources).',
    apiGroups: [hcpGroup],
    resources: ['controlplanecomponents/status'],
    verbs: ['patch'],
  },
  {
    by: ['operator'],
    why: "CAPI's Cluster <HCP namespace>/<infra ID>: its deletion (before the HCP's) starts the teardown.",
    apiGroups: ['cluster.x-k8s.io'],
    resources: ['clusters'],
    verbs: ro,
  },
  {
    by: ['operator', 'adapter'],
    why: 'Events on the HCP and the operand Deployment.',
    apiGroups: ['events.k8s.io'],
    resources: ['events'],
    verbs: ['create', 'patch'],
  },
];

const documented = ({ by: _by, leaderElection: _le, ...rule }: ManagementRule): DocumentedRule => structuredClone(rule);

/** Role `karpenter-operator` in the HCP namespace of the management cluster: what the operator and the adapter need there. */
export function managementRules(): DocumentedRule[] {
  return MANAGEMENT_RULES.map(documented);
}

/** What the operator process alone needs on the management cluster (with `--leader-elect` or, as HyperShift starts it, without). */
export function operatorManagementRules(options: { leaderElect: boolean }): DocumentedRule[] {
  return MANAGEMENT_RULES.filter((r) => r.by.includes('operator') && (options.leaderElect || !r.leaderElection)).map(documented);
}

/** Cluster rules of the standalone operator that mean nothing in a hosted guest (no Karpenter CR, ClusterOperator, Infrastructure, MCO). */
const STANDALONE_ONLY = new Set([
  'karpenters',
  'karpenters/status',
  'karpenters/finalizers',
  'clusteroperators',
  'clusteroperators/status',
  'infrastructures',
  'clusterversions',
  'machineconfigpools',
]);

/** ClusterRole `karpenter-operator` in the guest: the standalone cluster rules that apply there, and what it grants the operand. */
export function guestClusterRules(): PolicyRule[] {
  const own = operatorClusterRules
    .filter((r) => !(r.resources ?? []).some((res) => STANDALONE_ONLY.has(res)))
    .map(({ why: _why, ...rule }) => structuredClone(rule));
  const policy: PolicyRule[] = [
    // The adapter's guard of EC2NodeClass default; created by server-side apply, only that name changed or deleted.
    {
      apiGroups: ['admissionregistration.k8s.io'],
      resources: ['validatingadmissionpolicies', 'validatingadmissionpolicybindings'],
      verbs: [...ro, 'create'],
    },
    {
      apiGroups: ['admissionregistration.k8s.io'],
      resources: ['validatingadmissionpolicies', 'validatingadmissionpolicybindings'],
      verbs: ['patch', 'delete'],
      resourceNames: [NODECLASS_POLICY_NAME],
    },
  ];
  const openshiftNodeClasses: PolicyRule[] = [
    // The adapter serves HyperShift's OpenshiftEC2NodeClass CRD, v1 (server-side apply of that one name) ...
    {
      apiGroups: ['apiextensions.k8s.io'],
      resources: ['customresourcedefinitions'],
      verbs: ['patch'],
      resourceNames: [OPENSHIFT_NODECLASS_CRD],
    },
    // ... keeps OpenshiftEC2NodeClass default, holds each with its finalizer and mirrors its EC2NodeClass's status.
    {
      apiGroups: ['karpenter.hypershift.openshift.io'],
      resources: ['openshiftec2nodeclasses'],
      verbs: [...ro, 'create', 'patch', 'update'],
    },
    {
      apiGroups: ['karpenter.hypershift.openshift.io'],
      resources: ['openshiftec2nodeclasses/status', 'openshiftec2nodeclasses/finalizers'],
      verbs: ['patch', 'update'],
    },
  ];
  return [...own, ...policy, ...openshiftNodeClasses, ...operandGrantRules()];
}

/** Role in the guest's kube-system: the operand's identity there (ServiceAccount) and its DNS Role. */
export function guestKubeSystemRules(): PolicyRule[] {
  return [
    { apiGroups: [''], resources: ['serviceaccounts'], verbs: [...ro, 'create', 'patch', 'delete'] },
    { apiGroups: ['rbac.authorization.k8s.io'], resources: ['roles', 'rolebindings'], verbs: [...ro, 'create', 'patch', 'delete'] },
    ...operandDnsRules.map((r) => structuredClone(r)),
  ];
}

const stripWhy = (rules: DocumentedRule[]): PolicyRule[] => rules.map(({ why: _why, ...rule }) => structuredClone(rule));

/** The management-cluster objects for an HCP namespace; `subject` is the ServiceAccount the operator pod runs as there. */
export function hostedManagementRbac(namespace: string, serviceAccount: string = OperatorRbacNames.role): KubeObject[] {
  const subject = { kind: 'ServiceAccount', name: serviceAccount, namespace };
  return [
    { ...Types.ServiceAccount, metadata: { name: serviceAccount, namespace } },
    { ...Types.Role, metadata: { name: OperatorRbacNames.role, namespace }, rules: stripWhy(managementRules()) },
    {
      ...Types.RoleBinding,
      metadata: { name: OperatorRbacNames.role, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: OperatorRbacNames.role },
      subjects: [subject],
    },
  ];
}

/** The guest-cluster objects for the operator's guest identity. */
export function hostedGuestRbac(): KubeObject[] {
  const subject = { ...GUEST_OPERATOR_SUBJECT };
  const ns = OperandNames.dnsNamespace;
  return [
    { ...Types.ServiceAccount, metadata: { name: subject.name, namespace: subject.namespace } },
    { ...Types.ClusterRole, metadata: { name: OperatorRbacNames.clusterRole }, rules: guestClusterRules() },
    {
      ...Types.ClusterRoleBinding,
      metadata: { name: OperatorRbacNames.clusterRole },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: OperatorRbacNames.clusterRole },
      subjects: [subject],
    },
    { ...Types.Role, metadata: { name: OperatorRbacNames.role, namespace: ns }, rules: guestKubeSystemRules() },
    {
      ...Types.RoleBinding,
      metadata: { name: OperatorRbacNames.role, namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: OperatorRbacNames.role },
      subjects: [subject],
    },
  ];
}
