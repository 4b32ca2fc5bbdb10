import { Names } from '../model/names.js';
import type { PolicyRule } from './rbac.js';

const ro = ['get', 'list', 'watch'];

/**
 * ClusterRole `karpenter-core`: the chart's `clusterrole-core.yaml` of karpenter-provider-aws v1.14.1, plus
 * `update` on `nodeclaims/finalizers` and `nodepools/finalizers` — OpenShift enables
 * OwnerReferencesPermissionEnforcement, and Karpenter sets blockOwnerDeletion owner references to them.
 */
export const operandCoreRules: readonly PolicyRule[] = [
  // Read
  {
    apiGroups: ['karpenter.sh'],
    resources: ['nodepools', 'nodepools/status', 'nodeclaims', 'nodeclaims/status', 'nodeoverlays', 'nodeoverlays/status'],
    verbs: ro,
  },
  { apiGroups: ['autoscaling.x-k8s.io'], resources: ['capacitybuffers', 'capacitybuffers/status'], verbs: ro },
  { apiGroups: [''], resources: ['podtemplates'], verbs: ro },
  {
    apiGroups: [''],
    resources: ['pods', 'nodes', 'persistentvolumes', 'persistentvolumeclaims', 'replicationcontrollers', 'namespaces'],
    verbs: ro,
  },
  { apiGroups: ['storage.k8s.io'], resources: ['storageclasses', 'csinodes', 'volumeattachments'], verbs: ro },
  { apiGroups: ['apps'], resources: ['daemonsets', 'deployments', 'replicasets', 'statefulsets'], verbs: ro },
  { apiGroups: ['policy'], resources: ['poddisruptionbudgets'], verbs: ro },
  { apiGroups: [''], resources: ['events'], verbs: ro },
  // Write
  { apiGroups: ['karpenter.sh'], resources: ['nodeclaims', 'nodeclaims/status'], verbs: ['create', 'delete', 'update', 'patch'] },
  { apiGroups: ['karpenter.sh'], resources: ['nodepools', 'nodepools/status', 'nodeoverlays/status'], verbs: ['update', 'patch'] },
  { apiGroups: ['karpenter.sh'], resources: ['nodeclaims/finalizers', 'nodepools/finalizers'], verbs: ['update'] },
  { apiGroups: ['autoscaling.x-k8s.io'], resources: ['capacitybuffers/status'], verbs: ['update', 'patch'] },
  { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
  { apiGroups: [''], resources: ['nodes'], verbs: ['patch', 'delete', 'update'] },
  { apiGroups: [''], resources: ['pods/eviction'], verbs: ['create'] },
  { apiGroups: [''], resources: ['pods'], verbs: ['delete'] },
];

/** Role `karpenter` in the operand namespace: its leader-election Lease. */
export const operandLeaseRules: readonly PolicyRule[] = [
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'watch'] },
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['patch', 'update'], resourceNames: [Names.operandLeaderLease] },
  // RBAC cannot restrict create by name.
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
];

/** Role `karpenter-dns` in kube-system: Karpenter reads the cluster DNS Service's IP. */
export const operandDnsRules: readonly PolicyRule[] = [
  { apiGroups: [''], resources: ['services'], verbs: ['get'], resourceNames: ['kube-dns'] },
];
