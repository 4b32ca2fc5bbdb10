import type { ClusterFacts, KarpenterRequest, OperatorSettings } from '../model/cluster.js';
import type { KubeObject, ObjectMeta, OwnerReference } from '../model/kube.js';
import { Names } from '../model/names.js';
import { Types } from '../model/kube.js';
import type { OperandCloudConfig } from '../ports/cloud-provider.js';
import type { PolicyRule } from './rbac.js';

/** Names of the operand's objects beyond those in `Names` (they appear only here and in tests). */
export const OperandNames = {
  coreClusterRole: 'karpenter-core',
  role: 'karpenter',
  dnsRole: 'karpenter-dns',
  dnsNamespace: 'kube-system',
  container: 'controller',
  initContainer: 'check-credentials',
  /** Pod-template annotation carrying the credentials Secret's hash: a rotation rolls the pods. */
  credentialsHashAnnotation: 'karpenter-operator.openshift.io/credentials-hash',
  metricsPort: 8080,
  healthPort: 8081,
} as const;

const ro = ['get', 'list', 'watch'];

/**
 * ClusterRole `karpenter-core`: the chart's `clusterrole-core.yaml` of karpenter-provider-aws v1.14.1, plus
 * `update` on `nodeclaims/finalizers` and `nodepools/finalizers` — OpenShift enables
 * OwnerReferencesPermissionEnforcement, and Karpenter sets blockOwnerDeletion owner references to them.
 */
export const operandCoreRules: readonly PolicyRule[] = [
  // Read
  { apiGroups: ['karpenter.sh'], resources: ['nodepools', 'nodepools/status', 'nodeclaims', 'nodeclaims/status', 'nodeoverlays', 'nodeoverlays/status'], verbs: ro },
  { apiGroups: ['autoscaling.x-k8s.io'], resources: ['capacitybuffers', 'capacitybuffers/status'], verbs: ro },
  { apiGroups: [''], resources: ['podtemplates'], verbs: ro },
  { apiGroups: [''], resources: ['pods', 'nodes', 'persistentvolumes', 'persistentvolumeclaims', 'replicationcontrollers', 'namespaces'], verbs: ro },
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

export interface OperandInput {
  /** Namespace of the operand Deployment (the operator namespace standalone, the HCP namespace on HyperShift). */
  namespace: string;
  facts: ClusterFacts;
  settings: OperatorSettings;
  request: KarpenterRequest;
  cloud: OperandCloudConfig;
  /** The provider's RBAC (`CloudProvider.operandRbac`), given owner and labels here like the rest. */
  providerRbac: KubeObject[];
  /** Hash of the credentials Secret's data; absent until the Secret exists. */
  credentialsHash?: string;
  topology: 'standalone' | 'hypershift';
}

/**
 * Everything the operand needs on the control cluster, in apply order: ServiceAccount, RBAC (core,
 * provider), then the Deployment. Objects carry only the fields the operator owns, written the way the
 * API server stores them (quantities `"1"`/`1Gi`, string annotation values), so that an applied object is
 * a superset of the desired one and a subset comparison says "unchanged". Every object is owned by the
 * request's owner where Kubernetes allows it (cluster-scoped owner, or the same namespace). Pure.
 */
export function renderOperand(input: OperandInput): KubeObject[] {
  const { namespace } = input;
  const sa = { kind: 'ServiceAccount', name: Names.operandServiceAccount, namespace };
  const rbac = (kind: 'Role' | 'ClusterRole', name: string, rules: readonly PolicyRule[], ns?: string): KubeObject => ({
    ...(kind === 'Role' ? Types.Role : Types.ClusterRole),
    metadata: meta(name, ns),
    rules: rules.map((r) => structuredClone(r)),
  });
  const binding = (kind: 'RoleBinding' | 'ClusterRoleBinding', roleKind: 'Role' | 'ClusterRole', name: string, ns?: string): KubeObject => ({
    ...(kind === 'RoleBinding' ? Types.RoleBinding : Types.ClusterRoleBinding),
    metadata: meta(name, ns),
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: roleKind, name },
    subjects: [{ ...sa }],
  });

  const objects: KubeObject[] = [
    { ...Types.ServiceAccount, metadata: meta(Names.operandServiceAccount, namespace) },
    rbac('ClusterRole', OperandNames.coreClusterRole, operandCoreRules),
    binding('ClusterRoleBinding', 'ClusterRole', OperandNames.coreClusterRole),
    rbac('Role', OperandNames.role, operandLeaseRules, namespace),
    binding('RoleBinding', 'Role', OperandNames.role, namespace),
    rbac('Role', OperandNames.dnsRole, operandDnsRules, OperandNames.dnsNamespace),
    binding('RoleBinding', 'Role', OperandNames.dnsRole, OperandNames.dnsNamespace),
    ...input.providerRbac.map((o) => structuredClone(o)),
    renderDeployment(input),
  ];
  return objects.map((o) => decorate(o, input.request));
}

function meta(name: string, namespace?: string): ObjectMeta {
  return namespace ? { name, namespace } : { name };
}

/** Adds the operand labels and, where Kubernetes allows it, the controller owner reference. */
function decorate(obj: KubeObject, request: KarpenterRequest): KubeObject {
  const out = structuredClone(obj);
  out.metadata.labels = { ...operandLabels(), ...out.metadata.labels };
  const owner = request.owner;
  if (owner.namespace === undefined || owner.namespace === out.metadata.namespace) {
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

/**
 * Placement of a platform component on OpenShift control-plane nodes (the operand, and the operator's own
 * Deployment in install/): node selector, the NoSchedule taints of both role names, management-workload
 * partitioning, and the SCC the pod is written for.
 */
export const controlPlanePlacement = {
  nodeSelector: { 'node-role.kubernetes.io/control-plane': '' },
  tolerations: [
    { key: 'node-role.kubernetes.io/master', operator: 'Exists', effect: 'NoSchedule' },
    { key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' },
  ],
  podAnnotations: {
    'target.workload.openshift.io/management': '{"effect": "PreferredDuringScheduling"}',
    'openshift.io/required-scc': 'restricted-v2',
  },
} as const;

/**
 * Pod security context accepted by the `restricted-v2` SCC and the `restricted` pod security level. No
 * runAsUser/runAsGroup/fsGroup: the SCC assigns them from the namespace's range and rejects fixed ones.
 */
export function restrictedPodSecurityContext(): Record<string, unknown> {
  return { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } };
}

/** Container security context for `restricted-v2`: no privilege escalation, no capabilities, read-only root. */
export function restrictedContainerSecurityContext(): Record<string, unknown> {
  return { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, readOnlyRootFilesystem: true, runAsNonRoot: true };
}

interface Placement {
  replicas: number;
  priorityClassName: string;
  nodeSelector?: Record<string, string>;
  tolerations?: Array<Record<string, string>>;
  annotations: Record<string, string>;
}

/**
 * Where the pods run. Standalone: on control-plane nodes, two replicas (Karpenter elects a leader) spread
 * by hostname when possible, one on a single-node control plane. HyperShift: the hook for the
 * management-cluster placement (HCP node selectors and priority) that topology-hypershift fills in.
 */
function placement(topology: OperandInput['topology'], facts: ClusterFacts): Placement {
  if (topology === 'hypershift') {
    return { replicas: 1, priorityClassName: 'hypershift-control-plane', annotations: {} };
  }
  return {
    replicas: facts.controlPlaneTopology === 'SingleReplica' ? 1 : 2,
    priorityClassName: 'system-node-critical',
    nodeSelector: { ...controlPlanePlacement.nodeSelector },
    tolerations: controlPlanePlacement.tolerations.map((t) => ({ ...t })),
    annotations: { ...controlPlanePlacement.podAnnotations },
  };
}

type EnvVar = OperandCloudConfig['env'][number];

function renderDeployment(input: OperandInput): KubeObject {
  const { facts, settings, request, cloud, credentialsHash } = input;
  const place = placement(input.topology, facts);
  const selector = { app: 'karpenter' };

  const clusterEnv: EnvVar[] = [
    { name: 'CLUSTER_NAME', value: settings.clusterNameOverride ?? facts.infrastructureName },
    // Required off EKS: without it Karpenter calls eks:DescribeCluster and exits.
    { name: 'CLUSTER_ENDPOINT', value: settings.clusterEndpointOverride ?? facts.apiServerInternalURL },
  ];
  const env: EnvVar[] = [
    { name: 'SYSTEM_NAMESPACE', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } } },
    ...clusterEnv,
    // Karpenter has no webhooks since v1.1.
    { name: 'DISABLE_WEBHOOK', value: 'true' },
    { name: 'METRICS_PORT', value: String(OperandNames.metricsPort) },
    { name: 'HEALTH_PROBE_PORT', value: String(OperandNames.healthPort) },
    { name: 'LOG_LEVEL', value: request.logLevel },
    ...cloud.env,
  ];
  const securityContext = restrictedContainerSecurityContext();

  const controller: Record<string, unknown> = {
    name: OperandNames.container,
    image: settings.operandImage,
    imagePullPolicy: 'IfNotPresent',
    args: [`--log-level=${request.logLevel}`],
    env: env.map((e) => structuredClone(e)),
    ports: [
      { name: 'metrics', containerPort: OperandNames.metricsPort, protocol: 'TCP' },
      { name: 'http', containerPort: OperandNames.healthPort, protocol: 'TCP' },
    ],
    livenessProbe: { httpGet: { path: '/healthz', port: 'http' }, initialDelaySeconds: 30, timeoutSeconds: 30 },
    readinessProbe: { httpGet: { path: '/readyz', port: 'http' }, initialDelaySeconds: 5, timeoutSeconds: 30 },
    // Requests only: a CPU limit throttles the scheduler loop and a memory limit OOM-kills it under load.
    resources: { requests: { cpu: '1', memory: '1Gi' } },
    securityContext,
    terminationMessagePolicy: 'FallbackToLogsOnError',
  };
  if (cloud.volumeMounts.length) controller['volumeMounts'] = cloud.volumeMounts.map((m) => structuredClone(m));

  const podSpec: Record<string, unknown> = {
    serviceAccountName: Names.operandServiceAccount,
    priorityClassName: place.priorityClassName,
    terminationGracePeriodSeconds: 10,
    securityContext: restrictedPodSecurityContext(),
    containers: [controller],
  };
  if (settings.operatorImage) {
    // Karpenter exits at start-up on missing or refused credentials; this init container waits with a
    // clear message instead of a crash loop of the controller.
    const check: Record<string, unknown> = {
      name: OperandNames.initContainer,
      image: settings.operatorImage,
      imagePullPolicy: 'IfNotPresent',
      args: ['check-credentials'],
      env: [...clusterEnv, ...cloud.env].map((e) => structuredClone(e)),
      resources: { requests: { cpu: '10m', memory: '64Mi' } },
      securityContext: restrictedContainerSecurityContext(),
      terminationMessagePolicy: 'FallbackToLogsOnError',
    };
    if (cloud.volumeMounts.length) check['volumeMounts'] = cloud.volumeMounts.map((m) => structuredClone(m));
    podSpec['initContainers'] = [check];
  }
  if (place.nodeSelector) podSpec['nodeSelector'] = place.nodeSelector;
  if (place.tolerations) podSpec['tolerations'] = place.tolerations;
  if (place.replicas > 1) {
    podSpec['affinity'] = {
      podAntiAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          { weight: 100, podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { ...selector } } } },
        ],
      },
    };
  }
  if (cloud.volumes.length) podSpec['volumes'] = cloud.volumes.map((v) => structuredClone(v));

  const podAnnotations: Record<string, string> = { ...place.annotations };
  if (credentialsHash !== undefined) podAnnotations[OperandNames.credentialsHashAnnotation] = credentialsHash;
  const template: Record<string, unknown> = { metadata: { labels: { ...selector } }, spec: podSpec };
  if (Object.keys(podAnnotations).length) (template['metadata'] as Record<string, unknown>)['annotations'] = podAnnotations;

  return {
    ...Types.Deployment,
    metadata: { name: Names.operandDeployment, namespace: input.namespace },
    spec: {
      replicas: place.replicas,
      selector: { matchLabels: { ...selector } },
      template,
    },
  };
}
