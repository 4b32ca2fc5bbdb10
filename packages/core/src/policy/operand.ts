import type { ClusterFacts, KarpenterRequest, OperandPodOverrides, OperatorSettings } from '../model/cluster.js';
import type { KubeObject, ObjectMeta, OwnerReference, TypeRef } from '../model/kube.js';
import { Names } from '../model/names.js';
import { Types } from '../model/kube.js';
import type { OperandCloudConfig } from '../ports/cloud-provider.js';
import { operandDisruptionBudget, operandSettings } from './karpenter-settings.js';
import type { PolicyRule } from './rbac.js';
import type { OwnedPath } from './subset.js';

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
  /** Key of the kubeconfig in `OperandLayout.guestKubeconfigSecret`. */
  guestKubeconfigKey: 'kubeconfig',
  guestKubeconfigVolume: 'guest-kubeconfig',
  guestKubeconfigDir: '/etc/karpenter/guest-kubeconfig',
} as const;

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

export interface OperandInput {
  /** Namespace of the operand Deployment (the operator namespace standalone, the HCP namespace on HyperShift). */
  namespace: string;
  facts: ClusterFacts;
  settings: OperatorSettings;
  request: KarpenterRequest;
  cloud: OperandCloudConfig;
  /**
   * The provider's RBAC (`CloudProvider.operandRbac`), given owner and labels here like the rest. Ask the
   * provider for the namespace of `operandLayout(input).apiIdentity`: its bindings name that ServiceAccount.
   */
  providerRbac: KubeObject[];
  /** Hash of the credentials Secret's data; absent until the Secret exists. */
  credentialsHash?: string;
  /** How the topology lays the operand out (`Topology.operandLayout`). */
  layout: OperandLayout;
}

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

const POD = 'spec.template.spec';
const CONTAINER_LISTS = ['env', 'envFrom', 'volumeMounts', 'volumeDevices', 'ports'];

/**
 * What the operator owns whole in the operand Deployment's pod template: the containers and init
 * containers (a foreign one would run beside the AWS credentials), each one's env, env sources, mounts and
 * ports, the volumes, and the placement maps and lists it renders (node selector, tolerations). A foreign
 * entry there is removed. Labels and annotations (of the Deployment and of the pod template) are merged:
 * others' keys stay. Pure.
 */
export function operandOwnedWhole(deployment: KubeObject): OwnedPath[] {
  const pod = ((deployment.spec as { template?: { spec?: Record<string, unknown> } } | undefined)?.template?.spec ?? {}) as Record<
    string,
    unknown
  >;
  return [
    ...['containers', 'initContainers'].flatMap((list) => [`${POD}.${list}`, ...CONTAINER_LISTS.map((f) => `${POD}.${list}[].${f}`)]),
    `${POD}.volumes`,
    // Only where the layout places the pods itself; otherwise the namespace's own scheduling applies.
    ...['nodeSelector', 'tolerations'].filter((f) => pod[f] !== undefined).map((f) => `${POD}.${f}`),
  ];
}

export interface ServiceAccountRef {
  namespace: string;
  name: string;
}

/** How the operand is laid out across the clusters of a topology. */
export interface OperandLayout {
  /** The ServiceAccount the pods run as: control cluster, operand namespace. */
  podServiceAccount: ServiceAccountRef;
  /**
   * The ServiceAccount Karpenter acts as on the workload cluster: the subject of its RBAC. Standalone it is
   * the pod's own; on HyperShift it is the guest's `kube-system/karpenter` (rendered on the guest), because
   * the pods run elsewhere and the web-identity token is minted for that guest ServiceAccount.
   */
  apiIdentity: ServiceAccountRef;
  /** Control and workload are the same cluster, so the owner (on the control cluster) can own anything there. */
  singleCluster: boolean;
  /** Karpenter elects a leader (two replicas, a Lease Role); otherwise one replica and `DISABLE_LEADER_ELECTION`. */
  leaderElection: boolean;
  /** A Secret in the operand namespace (key `kubeconfig`) through which Karpenter reaches a workload API it does not run in. */
  guestKubeconfigSecret?: string;
  /** Karpenter's `FEATURE_GATES`, when set; absent keeps Karpenter's defaults. */
  featureGates?: string;
  /**
   * The Secret holding the operand's cloud credentials when the host writes it under its own name
   * (the provider's credentials volume is pointed at it, and the operand waits for it); absent: the
   * provider's `OperandCloudConfig.credentialsSecret`.
   */
  credentialsSecret?: string;
  /**
   * Labels of the operand Deployment itself beside the operand's own (a host finding the workloads an
   * operator manages, e.g. HyperShift's `hypershift.openshift.io/managed-by`). Merged: others' keys stay.
   */
  deploymentLabels?: Record<string, string>;
  /** Where and how the pods run. */
  pod: OperandPodLayout;
}

/**
 * The provider's cloud config with its credentials Secret replaced by the layout's, where the layout names
 * one: the Secret volumes that mounted the provider's Secret mount the layout's. Pure.
 */
export function withLayoutCredentials(cfg: OperandCloudConfig, layout: Pick<OperandLayout, 'credentialsSecret'>): OperandCloudConfig {
  const name = layout.credentialsSecret;
  if (name === undefined || name === cfg.credentialsSecret) return cfg;
  const volumes = cfg.volumes.map((v) => {
    const secret = v['secret'] as { secretName?: unknown } | undefined;
    return secret?.secretName === cfg.credentialsSecret ? { ...v, secret: { ...secret, secretName: name } } : v;
  });
  return { ...cfg, volumes, credentialsSecret: name };
}

/** The name of the credentials Secret the operand waits for, as far as the layout knows it. Pure. */
export function layoutCredentialsSecret(layout: Pick<OperandLayout, 'credentialsSecret'>): string {
  return layout.credentialsSecret ?? Names.credentialsSecret;
}

/** A volume and where the containers that need it mount it. */
export interface VolumeAndMount {
  volume: Record<string, unknown>;
  mount: Record<string, unknown>;
}

/** The pod-level parts of a layout: placement, priority, and the volumes the credentials need. */
export interface OperandPodLayout {
  priorityClassName: string;
  /** Absent: none rendered (and none owned), so the namespace's own scheduling applies. */
  nodeSelector?: Record<string, string>;
  tolerations?: Array<Record<string, string | number>>;
  /** Pod-template annotations. */
  annotations: Record<string, string>;
  /** Volumes every container that reads the cloud credentials mounts (e.g. a bound ServiceAccount token). */
  credentialVolumes: VolumeAndMount[];
  /**
   * Containers that run for the pod's whole life beside Karpenter (Kubernetes sidecars: init containers
   * with `restartPolicy: Always`), started before the credentials check, e.g. a token minter writing the
   * web-identity token into a credential volume. They may mount the guest kubeconfig
   * (`OperandNames.guestKubeconfigVolume`).
   */
  sidecars?: Array<Record<string, unknown>>;
  /** Pod-template labels beside the selector's (the host's conventions for its workloads). */
  labels?: Record<string, string>;
  /** Node and pod affinity; a spread of leader-electing replicas by hostname is added to it. */
  affinity?: Record<string, unknown>;
  /** Volumes every container the operator renders mounts (e.g. a writable `/tmp` under a read-only root). */
  sharedVolumes?: VolumeAndMount[];
  /** Karpenter's requests; default one CPU and 1 GiB (a cluster-sized scheduler loop). */
  controllerRequests?: { cpu: string; memory: string };
  /**
   * The UID the host runs its pods as (`securityContext.runAsUser` of the pod); absent: none is rendered
   * and the SCC (or the image) decides, as `restricted-v2` requires.
   */
  runAsUser?: number;
}

/** The ServiceAccount the operand's pods run as in `namespace`. Pure. */
export function operandPodServiceAccount(namespace: string): ServiceAccountRef {
  return { namespace, name: Names.operandServiceAccount };
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

/**
 * OpenShift's short-lived cloud credentials (the cloud-credential operator in manual mode with STS, or
 * workload identity): the credentials file in the Secret names
 * `web_identity_token_file = /var/run/secrets/openshift/serviceaccount/token`, a projected token of the
 * pod's ServiceAccount for the audience `openshift`. Every standalone pod that reads such a Secret mounts
 * it (the operator and the operand); with long-lived keys it is simply unused.
 */
const boundTokenDir = '/var/run/secrets/openshift/serviceaccount';
export const boundServiceAccountToken = {
  volumeName: 'bound-sa-token',
  dir: boundTokenDir,
  file: `${boundTokenDir}/token`,
  audience: 'openshift',
  volume: (): Record<string, unknown> => ({
    name: 'bound-sa-token',
    projected: { sources: [{ serviceAccountToken: { audience: 'openshift', expirationSeconds: 3600, path: 'token' } }] },
  }),
  mount: (): Record<string, unknown> => ({ name: 'bound-sa-token', mountPath: boundTokenDir, readOnly: true }),
} as const;

/**
 * The cluster's trusted CA bundle (the cluster Proxy's `trustedCA` plus the system roots), injected by the
 * cluster network operator into a ConfigMap labelled `config.openshift.io/inject-trusted-cabundle`, and
 * mounted where RHEL-based images read the system trust store. Go reads that file itself; Node does with
 * `--use-system-ca` (`nodeSystemCaEnv`). Optional: the pod starts before the bundle is injected.
 */
const trustedCaDir = '/etc/pki/ca-trust/extracted/pem';
export const trustedCaBundle = {
  configMap: Names.trustedCaBundle,
  key: 'ca-bundle.crt',
  file: `${trustedCaDir}/tls-ca-bundle.pem`,
  volume: (): Record<string, unknown> => ({
    name: 'trusted-ca-bundle',
    configMap: { name: Names.trustedCaBundle, items: [{ key: 'ca-bundle.crt', path: 'tls-ca-bundle.pem' }], optional: true },
  }),
  mount: (): Record<string, unknown> => ({ name: 'trusted-ca-bundle', mountPath: trustedCaDir, readOnly: true }),
} as const;

/** Env that makes a Node process (the operator image) trust the system store as well as its built-in roots. */
export const nodeSystemCaEnv: ReadonlyArray<{ name: string; value: string }> = [{ name: 'NODE_OPTIONS', value: '--use-system-ca' }];

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
    // Fail over from a lost control-plane node in 2 minutes, not the 5 the API server defaults to.
    { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 120 },
    { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 120 },
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

/**
 * Replicas: two where Karpenter elects a leader (spread by hostname when possible), one on a single-node
 * control plane and wherever leader election is off (a second replica would act alongside the first).
 */
function replicasFor(facts: ClusterFacts, layout: OperandLayout): number {
  return layout.leaderElection && facts.controlPlaneTopology !== 'SingleReplica' ? 2 : 1;
}

type EnvVar = OperandCloudConfig['env'][number];

/** The guest kubeconfig volume, its mount and the env pointing Karpenter at it; empty when Karpenter runs in its workload cluster. */
function guestKubeconfig(layout: OperandLayout): {
  env: EnvVar[];
  volumes: Array<Record<string, unknown>>;
  volumeMounts: Array<Record<string, unknown>>;
} {
  const secretName = layout.guestKubeconfigSecret;
  if (secretName === undefined) return { env: [], volumes: [], volumeMounts: [] };
  const { guestKubeconfigVolume: name, guestKubeconfigDir: dir, guestKubeconfigKey: key } = OperandNames;
  return {
    env: [{ name: 'KUBECONFIG', value: `${dir}/${key}` }],
    volumes: [{ name, secret: { secretName, items: [{ key, path: key }] } }],
    volumeMounts: [{ name, mountPath: dir, readOnly: true }],
  };
}

/** The labels of the operand's pods and its Deployment's selector (the metrics Service selects them too). */
export function operandPodLabels(): Record<string, string> {
  return { app: 'karpenter' };
}

/**
 * The request's overrides over a rendered pod spec: node selector replaced, tolerations added, priority
 * class replaced, requests merged per container (init containers included).
 */
function applyPodOverrides(podSpec: Record<string, unknown>, o: OperandPodOverrides | undefined): void {
  if (!o) return;
  if (o.nodeSelector && Object.keys(o.nodeSelector).length) podSpec['nodeSelector'] = { ...o.nodeSelector };
  if (o.tolerations?.length)
    podSpec['tolerations'] = [...((podSpec['tolerations'] as unknown[] | undefined) ?? []), ...o.tolerations.map((t) => ({ ...t }))];
  if (o.priorityClassName) podSpec['priorityClassName'] = o.priorityClassName;
  for (const c of [
    ...((podSpec['initContainers'] as Array<Record<string, unknown>> | undefined) ?? []),
    ...(podSpec['containers'] as Array<Record<string, unknown>>),
  ]) {
    const extra = o.requests?.[c['name'] as string];
    if (!extra) continue;
    const resources = (c['resources'] ?? {}) as { requests?: Record<string, string> };
    c['resources'] = { ...resources, requests: { ...resources.requests, ...extra } };
  }
}

function renderDeployment(input: OperandInput, layout: OperandLayout): KubeObject {
  const { facts, settings, request, credentialsHash } = input;
  const cloud = withLayoutCredentials(input.cloud, layout);
  const tuned = operandSettings(request);
  const place = layout.pod;
  // Without leader election a second replica would act alongside the first: the CR's count applies only with it.
  const replicas = layout.leaderElection && tuned.replicas !== undefined ? tuned.replicas : replicasFor(facts, layout);
  const selector = operandPodLabels();
  const guest = guestKubeconfig(layout);

  const clusterEnv: EnvVar[] = [
    { name: 'CLUSTER_NAME', value: settings.clusterNameOverride ?? facts.infrastructureName },
    // Required off EKS: without it Karpenter calls eks:DescribeCluster and exits.
    { name: 'CLUSTER_ENDPOINT', value: settings.clusterEndpointOverride ?? facts.apiServerInternalURL },
  ];
  const env: EnvVar[] = [
    { name: 'SYSTEM_NAMESPACE', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } } },
    ...guest.env,
    ...clusterEnv,
    // Karpenter has no webhooks since v1.1.
    { name: 'DISABLE_WEBHOOK', value: 'true' },
    ...(layout.leaderElection ? [] : [{ name: 'DISABLE_LEADER_ELECTION', value: 'true' }]),
    ...(layout.featureGates === undefined || tuned.env.some((e) => e.name === 'FEATURE_GATES')
      ? []
      : [{ name: 'FEATURE_GATES', value: layout.featureGates }]),
    { name: 'METRICS_PORT', value: String(OperandNames.metricsPort) },
    { name: 'HEALTH_PROBE_PORT', value: String(OperandNames.healthPort) },
    { name: 'LOG_LEVEL', value: request.logLevel },
    ...tuned.env,
    ...cloud.env,
    // The cluster-wide proxy, for the cloud API; Go honours these as they are.
    ...(settings.proxyEnv ?? []),
  ];
  const securityContext = restrictedContainerSecurityContext();

  const controller: Record<string, unknown> = {
    name: OperandNames.container,
    image: request.images?.operand ?? settings.operandImage,
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
    resources: tuned.resources ?? { requests: { ...(place.controllerRequests ?? { cpu: '1', memory: '1Gi' }) } },
    securityContext,
    terminationMessagePolicy: 'FallbackToLogsOnError',
  };
  const shared = place.sharedVolumes ?? [];
  const credentialMounts = [...cloud.volumeMounts, ...place.credentialVolumes.map((c) => c.mount)];
  const mounts = [...credentialMounts, ...guest.volumeMounts, ...shared.map((v) => v.mount)];
  if (mounts.length) controller['volumeMounts'] = mounts.map((m) => structuredClone(m));

  const podSpec: Record<string, unknown> = {
    serviceAccountName: layout.podServiceAccount.name,
    priorityClassName: place.priorityClassName,
    terminationGracePeriodSeconds: 10,
    securityContext: { ...restrictedPodSecurityContext(), ...(place.runAsUser !== undefined ? { runAsUser: place.runAsUser } : {}) },
    containers: [controller],
  };
  const operatorImage = request.images?.operator ?? settings.operatorImage;
  // Where the layout mounts the cluster's trusted CA bundle, the (Node) init container is told to read it.
  const mountsTrustedCa = place.credentialVolumes.some((c) => c.volume['name'] === trustedCaBundle.volume()['name']);
  if (operatorImage) {
    // Karpenter exits at start-up on missing or refused credentials; this init container waits with a
    // clear message instead of a crash loop of the controller.
    const check: Record<string, unknown> = {
      name: OperandNames.initContainer,
      image: operatorImage,
      imagePullPolicy: 'IfNotPresent',
      args: ['check-credentials'],
      env: [...clusterEnv, ...cloud.env, ...(settings.proxyEnv ?? []), ...(mountsTrustedCa ? nodeSystemCaEnv : [])].map((e) =>
        structuredClone(e),
      ),
      resources: { requests: { cpu: '10m', memory: '64Mi' } },
      securityContext: restrictedContainerSecurityContext(),
      terminationMessagePolicy: 'FallbackToLogsOnError',
    };
    const checkMounts = [...credentialMounts, ...shared.map((v) => v.mount)];
    if (checkMounts.length) check['volumeMounts'] = checkMounts.map((m) => structuredClone(m));
    podSpec['initContainers'] = [check];
  }
  if (place.sidecars?.length) {
    // Before the check: it (and Karpenter) need what they provide.
    podSpec['initContainers'] = [
      ...place.sidecars.map((c) => structuredClone(c)),
      ...((podSpec['initContainers'] as unknown[] | undefined) ?? []),
    ];
  }
  if (place.nodeSelector) podSpec['nodeSelector'] = { ...place.nodeSelector };
  if (place.tolerations) podSpec['tolerations'] = place.tolerations.map((t) => ({ ...t }));
  const affinity: Record<string, unknown> = structuredClone(place.affinity ?? {});
  if (replicas > 1) {
    Object.assign(affinity, {
      podAntiAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          { weight: 100, podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { ...selector } } } },
        ],
      },
    });
  }
  if (Object.keys(affinity).length) podSpec['affinity'] = affinity;
  const volumes = [...cloud.volumes, ...place.credentialVolumes.map((c) => c.volume), ...guest.volumes, ...shared.map((v) => v.volume)];
  if (volumes.length) podSpec['volumes'] = volumes.map((v) => structuredClone(v));

  const podAnnotations: Record<string, string> = { ...place.annotations };
  if (credentialsHash !== undefined) podAnnotations[OperandNames.credentialsHashAnnotation] = credentialsHash;
  applyPodOverrides(podSpec, request.podOverrides);
  const template: Record<string, unknown> = {
    metadata: { labels: { ...place.labels, ...request.podOverrides?.labels, ...selector } },
    spec: podSpec,
  };
  if (Object.keys(podAnnotations).length) (template['metadata'] as Record<string, unknown>)['annotations'] = podAnnotations;

  const metadata: ObjectMeta = { name: Names.operandDeployment, namespace: input.namespace };
  if (layout.deploymentLabels && Object.keys(layout.deploymentLabels).length) metadata.labels = { ...layout.deploymentLabels };
  if (request.deploymentAnnotations && Object.keys(request.deploymentAnnotations).length)
    metadata.annotations = { ...request.deploymentAnnotations };
  return {
    ...Types.Deployment,
    metadata,
    spec: {
      replicas,
      selector: { matchLabels: { ...selector } },
      template,
    },
  };
}
