import { Names, Types, type KubeObject, type PolicyRule } from '@karpenter-operator/core';

/** ClusterRole `karpenter` of karpenter-provider-aws v1.14.1's chart: its NodeClass kind. */
export const awsOperandClusterRules: readonly PolicyRule[] = [
  { apiGroups: ['karpenter.k8s.aws'], resources: ['ec2nodeclasses'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: ['karpenter.k8s.aws'], resources: ['ec2nodeclasses', 'ec2nodeclasses/status'], verbs: ['patch', 'update'] },
];

export const awsOperandClusterRole = 'karpenter';

/**
 * The AWS provider's RBAC for the operand: ClusterRole `karpenter` and its binding to the operand
 * ServiceAccount in `namespace`. Bare objects: `renderOperand` adds labels and the owner. Pure.
 */
export function awsOperandRbac(namespace: string): KubeObject[] {
  return [
    {
      ...Types.ClusterRole,
      metadata: { name: awsOperandClusterRole },
      rules: awsOperandClusterRules.map((r) => structuredClone(r)),
    },
    {
      ...Types.ClusterRoleBinding,
      metadata: { name: awsOperandClusterRole },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: awsOperandClusterRole },
      subjects: [{ kind: 'ServiceAccount', name: Names.operandServiceAccount, namespace }],
    },
  ];
}
