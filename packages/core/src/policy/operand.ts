import type { ClusterFacts, KarpenterRequest, OperatorSettings } from '../model/cluster.js';
import type { KubeObject, ObjectMeta, OwnerReference, TypeRef } from '../model/kube.js';
import { Names } from '../model/names.js';
import { Types } from '../model/kube.js';
import type { OperandCloudConfig } from '../ports/cloud-provider.js';
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
  /**
   * HyperShift: the guest kubeconfig Secret in the HCP namespace when `OperatorSettings.guestKubeconfigSecret`
   * is unset. HyperShift keeps the guest's admin kubeconfig for control-plane components (reaching the
   * guest API through the `kube-apiserver` Service) under this name, key `kubeconfig`.
   */
  defaultGuestKubeconfigSecret: 'service-network-admin-kubeconfig',
  guestKubeconfigKey: 'kubeconfig',
  guestKubeconfigVolume: 'guest-kubeconfig',
  guestKubeconfigDir: '/etc/karpenter/guest-kubeconfig',
  /** HyperShift: the guest namespace of the ServiceAccount Karpenter acts as (its web-identity token is minted for it). */
  guestIdentityNamespace: 'kube-system',
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
  /**
   * The provider's RBAC (`CloudProvider.operandRbac`), given owner and labels here like the rest. Ask the
   * provider for the namespace of `operandLayout(input).apiIdentity`: its bindings name that ServiceAccount.
   */
  providerRbac: KubeObject[];
  /** Hash of the credentials Secret's data; absent until the Secret exists. */
  credentialsHash?: string;
  topology: 'standalone' | 'hypershift';
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
  const pod = ((deployment.spec as { template?: { spec?: Record<string, unknown> } } | undefined)?.template?.spec ?? {}) as Record<string, unknown>;
  return [
    ...['containers', 'initContainers'].flatMap((list) => [`${POD}.${list}`, ...CONTAINER_LISTS.map((f) => `${POD}.${list}[].${f}`)]),
    `${POD}.volumes`,
    // Only where the operator places the pods itself: on HyperShift the HCP namespace's scheduling applies.
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
}

/**
 * The layout for a topology. Standalone: one cluster, the operand's ServiceAccount is its identity, leader
 * election on. HyperShift: pods in the HCP namespace of the management cluster, the guest reached through
 * the guest kubeconfig Secret (`OperatorSettings.guestKubeconfigSecret`), identity `kube-system/karpenter`
 * on the guest, one replica without leader election. Pure.
 */
export function operandLayout(input: Pick<OperandInput, 'namespace' | 'settings' | 'topology'>): OperandLayout {
  const podServiceAccount = { namespace: input.namespace, name: Names.operandServiceAccount };
  if (input.topology === 'hypershift') {
    return {
      podServiceAccount,
      apiIdentity: { namespace: OperandNames.guestIdentityNamespace, name: Names.operandServiceAccount },
      singleCluster: false,
      leaderElection: false,
      guestKubeconfigSecret: input.settings.guestKubeconfigSecret ?? OperandNames.defaultGuestKubeconfigSecret,
      // As HyperShift's AutoNode deployment sets it. Karpenter v1 has Drift always on and ignores gates it
      // does not know, keeping its defaults for the rest.
      featureGates: 'Drift=true',
    };
  }
  return { podServiceAccount, apiIdentity: { ...podServiceAccount }, singleCluster: true, leaderElection: true };
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
  const serviceAccounts: OperandScope[] = [{ type: Types.ServiceAccount, cluster: 'control', namespace: layout.podServiceAccount.namespace }];
  if (!sameServiceAccount(layout.podServiceAccount, layout.apiIdentity)) {
    serviceAccounts.push({ type: Types.ServiceAccount, cluster: 'workload', namespace: layout.apiIdentity.namespace });
  }
  const roleNamespaces = layout.leaderElection ? [layout.podServiceAccount.namespace, OperandNames.dnsNamespace] : [OperandNames.dnsNamespace];
  return [
    ...serviceAccounts,
    ...[Types.Role, Types.RoleBinding].flatMap((type) => roleNamespaces.map((namespace): OperandScope => ({ type, cluster: 'workload', namespace }))),
    { type: Types.ClusterRole, cluster: 'workload' },
    { type: Types.ClusterRoleBinding, cluster: 'workload' },
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
  const layout = operandLayout(input);
  const subject = { kind: 'ServiceAccount', name: layout.apiIdentity.name, namespace: layout.apiIdentity.namespace };
  const rbac = (kind: 'Role' | 'ClusterRole', name: string, rules: readonly PolicyRule[], ns?: string): KubeObject => ({
    ...(kind === 'Role' ? Types.Role : Types.ClusterRole),
    metadata: meta(name, ns),
    rules: rules.map((r) => structuredClone(r)),
  });
  const binding = (kind: 'RoleBinding' | 'ClusterRoleBinding', roleKind: 'Role' | 'ClusterRole', name: string, ns?: string): KubeObject => ({
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
    control(renderDeployment(input, layout)),
  );
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

interface Placement {
  replicas: number;
  priorityClassName: string;
  nodeSelector?: Record<string, string>;
  tolerations?: Array<Record<string, string | number>>;
  annotations: Record<string, string>;
  /** Volumes every container that reads the cloud credentials mounts (the bound ServiceAccount token, the trusted CA bundle). */
  credentialVolumes: Array<{ volume: Record<string, unknown>; mount: Record<string, unknown> }>;
}

/**
 * Where the pods run. Standalone: on control-plane nodes, two replicas (Karpenter elects a leader) spread
 * by hostname when possible, one on a single-node control plane. HyperShift: one replica (no leader
 * election), HyperShift's control-plane priority, no control-plane node selector or tolerations (the HCP
 * namespace's own scheduling applies).
 */
function placement(topology: OperandInput['topology'], facts: ClusterFacts, layout: OperandLayout): Placement {
  // Without leader election a second replica would act alongside the first.
  const replicas = layout.leaderElection && facts.controlPlaneTopology !== 'SingleReplica' ? 2 : 1;
  if (topology === 'hypershift') {
    // HyperShift's token minter provides the guest's token there; nothing of the management cluster's.
    return { replicas, priorityClassName: 'hypershift-control-plane', annotations: {}, credentialVolumes: [] };
  }
  return {
    replicas,
    priorityClassName: 'system-node-critical',
    nodeSelector: { ...controlPlanePlacement.nodeSelector },
    tolerations: controlPlanePlacement.tolerations.map((t) => ({ ...t })),
    annotations: { ...controlPlanePlacement.podAnnotations },
    credentialVolumes: [
      { volume: boundServiceAccountToken.volume(), mount: boundServiceAccountToken.mount() },
      { volume: trustedCaBundle.volume(), mount: trustedCaBundle.mount() },
    ],
  };
}

type EnvVar = OperandCloudConfig['env'][number];

/** The guest kubeconfig volume, its mount and the env pointing Karpenter at it; empty when Karpenter runs in its workload cluster. */
function guestKubeconfig(layout: OperandLayout): { env: EnvVar[]; volumes: Array<Record<string, unknown>>; volumeMounts: Array<Record<string, unknown>> } {
  const secretName = layout.guestKubeconfigSecret;
  if (secretName === undefined) return { env: [], volumes: [], volumeMounts: [] };
  const { guestKubeconfigVolume: name, guestKubeconfigDir: dir, guestKubeconfigKey: key } = OperandNames;
  return {
    env: [{ name: 'KUBECONFIG', value: `${dir}/${key}` }],
    volumes: [{ name, secret: { secretName, items: [{ key, path: key }] } }],
    volumeMounts: [{ name, mountPath: dir, readOnly: true }],
  };
}

function renderDeployment(input: OperandInput, layout: OperandLayout): KubeObject {
  const { facts, settings, request, cloud, credentialsHash } = input;
  const place = placement(input.topology, facts, layout);
  const selector = { app: 'karpenter' };
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
    ...(layout.featureGates === undefined ? [] : [{ name: 'FEATURE_GATES', value: layout.featureGates }]),
    { name: 'METRICS_PORT', value: String(OperandNames.metricsPort) },
    { name: 'HEALTH_PROBE_PORT', value: String(OperandNames.healthPort) },
    { name: 'LOG_LEVEL', value: request.logLevel },
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
    resources: { requests: { cpu: '1', memory: '1Gi' } },
    securityContext,
    terminationMessagePolicy: 'FallbackToLogsOnError',
  };
  const credentialMounts = [...cloud.volumeMounts, ...place.credentialVolumes.map((c) => c.mount)];
  const mounts = [...credentialMounts, ...guest.volumeMounts];
  if (mounts.length) controller['volumeMounts'] = mounts.map((m) => structuredClone(m));

  const podSpec: Record<string, unknown> = {
    serviceAccountName: layout.podServiceAccount.name,
    priorityClassName: place.priorityClassName,
    terminationGracePeriodSeconds: 10,
    securityContext: restrictedPodSecurityContext(),
    containers: [controller],
  };
  const operatorImage = request.images?.operator ?? settings.operatorImage;
  if (operatorImage) {
    // Karpenter exits at start-up on missing or refused credentials; this init container waits with a
    // clear message instead of a crash loop of the controller.
    const check: Record<string, unknown> = {
      name: OperandNames.initContainer,
      image: operatorImage,
      imagePullPolicy: 'IfNotPresent',
      args: ['check-credentials'],
      env: [...clusterEnv, ...cloud.env, ...(settings.proxyEnv ?? []), ...(input.topology === 'standalone' ? nodeSystemCaEnv : [])].map((e) => structuredClone(e)),
      resources: { requests: { cpu: '10m', memory: '64Mi' } },
      securityContext: restrictedContainerSecurityContext(),
      terminationMessagePolicy: 'FallbackToLogsOnError',
    };
    if (credentialMounts.length) check['volumeMounts'] = credentialMounts.map((m) => structuredClone(m));
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
  const volumes = [...cloud.volumes, ...place.credentialVolumes.map((c) => c.volume), ...guest.volumes];
  if (volumes.length) podSpec['volumes'] = volumes.map((v) => structuredClone(v));

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
