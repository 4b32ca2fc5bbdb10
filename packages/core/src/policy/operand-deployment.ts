import type { ClusterFacts, OperandPodOverrides } from '../model/cluster.js';
import type { KubeObject, ObjectMeta } from '../model/kube.js';
import { Names } from '../model/names.js';
import { Types } from '../model/kube.js';
import type { OperandCloudConfig } from '../ports/cloud-provider.js';
import { operandSettings } from './karpenter-settings.js';
import { OperandNames, withLayoutCredentials, type OperandInput, type OperandLayout } from './operand-layout.js';
import { nodeSystemCaEnv, restrictedContainerSecurityContext, restrictedPodSecurityContext, trustedCaBundle } from './openshift-pod.js';
import type { OwnedPath } from './subset.js';

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
/**
 * Replicas: two where Karpenter elects a leader (spread by hostname when possible), one on a single-node
 * control plane and wherever leader election is off (a second replica would act alongside the first).
 */
function replicasFor(facts: ClusterFacts, layout: OperandLayout): number {
  return layout.leaderElection && facts.controlPlaneTopology !== 'SingleReplica' ? 2 : 1;
}

type EnvVar = OperandCloudConfig['env'][number];

/**
 * The controller's own resources through the downward API, as karpenter-provider-aws v1.14.1's chart passes
 * them: `CPU_REQUESTS` in millicores (Karpenter runs as many scheduling simulations at once as it has whole
 * CPUs requested) and `MEMORY_LIMIT` in bytes (it sets Go's soft memory limit to 90 % of it). Without a
 * memory limit in `spec.resources` the kubelet gives the node's allocatable memory, as with the chart.
 */
function ownResourcesEnv(resources: ContainerResources): EnvVar[] {
  const ref = (resource: string, divisor: string) => ({
    resourceFieldRef: { containerName: OperandNames.container, resource, divisor },
  });
  // Without a CPU request (or a limit, which the API server copies into it) the kubelet would give "0",
  // less than Karpenter's own default of 1000: leave the variable out then.
  const cpu = resources.requests?.['cpu'] ?? resources.limits?.['cpu'];
  return [
    ...(cpu !== undefined ? [{ name: 'CPU_REQUESTS', valueFrom: ref('requests.cpu', '1m') }] : []),
    { name: 'MEMORY_LIMIT', valueFrom: ref('limits.memory', '1') },
  ];
}

type ContainerResources = { requests?: Record<string, string>; limits?: Record<string, string> };

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

export function renderDeployment(input: OperandInput, layout: OperandLayout): KubeObject {
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
  // Requests only: a CPU limit throttles the scheduler loop and a memory limit OOM-kills it under load.
  const resources: ContainerResources = (tuned.resources as ContainerResources | undefined) ?? {
    requests: { ...(place.controllerRequests ?? { cpu: '1', memory: '1Gi' }) },
  };
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
    ...ownResourcesEnv(resources),
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
    resources,
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
