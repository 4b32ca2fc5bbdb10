import {
  boundServiceAccountToken,
  InvalidInputError,
  Names,
  OperandNames,
  operandPodServiceAccount,
  restrictedContainerSecurityContext,
  type KubeObject,
  type OperandLayout,
  type OperatorSettings,
  type VolumeAndMount,
} from '@karpenter-operator/core';

/** Names the operand's layout on a hosted control plane uses. */
export const HcpOperandNames = {
  /**
   * The guest kubeconfig Secret in the HCP namespace when `OperatorSettings.guestKubeconfigSecret` is unset:
   * HyperShift keeps the guest's admin kubeconfig for control-plane components (reaching the guest API
   * through the `kube-apiserver` Service) under this name, key `kubeconfig`.
   */
  defaultGuestKubeconfigSecret: 'service-network-admin-kubeconfig',
  /** The guest namespace of the ServiceAccount Karpenter acts as (its web-identity token is minted for it). */
  guestIdentityNamespace: 'kube-system',
  /** HyperShift's priority class for control-plane workloads. */
  priorityClassName: 'hypershift-control-plane',
  /**
   * `FEATURE_GATES` as HyperShift's AutoNode Deployment sets it. Karpenter v1 has Drift always on and
   * ignores gates it does not know, keeping its defaults for the rest.
   */
  featureGates: 'Drift=true',
  /**
   * The Secret HyperShift's control-plane operator writes in the HCP namespace with the operand's AWS
   * profile (web identity for `spec.autoNode.provisioner.karpenter.aws.roleARN`), key `credentials`.
   */
  credentialsSecret: 'karpenter-credentials',
  tokenMinterContainer: 'token-minter',
  /** The volume the token minter writes the guest ServiceAccount's token into and Karpenter reads it from. */
  tokenVolume: 'serviceaccount-token',
  /** The token minter's binary and subcommand in HyperShift's control-plane-operator image. */
  tokenMinterCommand: ['/usr/bin/control-plane-operator', 'token-minter'],
  /** The audience AWS STS expects of the token (the web-identity provider's client ID). */
  tokenAudience: 'openshift',
  /** The component name HyperShift gives Karpenter's pods (`hypershift.openshift.io/control-plane-component`). */
  component: 'karpenter',
  /** Karpenter's requests as HyperShift sizes its own Karpenter: its work is the guest's, its pod is small. */
  controllerRequests: { cpu: '10m', memory: '60Mi' },
  /** The writable `/tmp` every HCP container gets under its read-only root. */
  tmpVolume: 'tmp-dir',
  /**
   * The HyperShift component that manages the operand (`hypershift.openshift.io/managed-by` of its
   * Deployment): this operator's, whose rollout check then covers Karpenter as well.
   */
  managingComponent: 'karpenter-operator',
} as const;

/** Labels, taints and annotations HyperShift schedules and audits hosted-control-plane pods by. */
export const HcpPodConventions = {
  controlPlaneComponentLabel: 'hypershift.openshift.io/control-plane-component',
  /** Pods of one HCP prefer one another's nodes (value: the HCP namespace). */
  colocationLabel: 'hypershift.openshift.io/hosted-control-plane',
  /** Node label and taint of nodes dedicated to control planes (value `true`). */
  controlPlaneNodeKey: 'hypershift.openshift.io/control-plane',
  /** Node label and taint of nodes dedicated to one hosted cluster (value: the HCP namespace). */
  clusterNodeKey: 'hypershift.openshift.io/cluster',
  /** The pod's emptyDir volumes, for the cluster autoscaler to drain its node anyway. */
  safeToEvictLocalVolumesAnnotation: 'cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes',
  /**
   * Deployment label naming the component that manages it: a component's rollout is complete only when the
   * Deployments labelled with its name are ready and annotated with the release version it rolls out.
   */
  managedByLabel: 'hypershift.openshift.io/managed-by',
  /** Deployment annotation: the release version the Deployment was rendered for. */
  releaseVersionAnnotation: 'release.openshift.io/version',
  /**
   * Annotation of the HCP namespace with the UID every HCP pod runs as, written by HyperShift only on
   * management clusters without SecurityContextConstraints (where no SCC assigns one).
   */
  defaultSecurityContextUidAnnotation: 'hypershift.openshift.io/default-security-context-uid',
} as const;

/**
 * The UID HyperShift runs the HCP's pods as, from its namespace's annotation
 * (`HcpPodConventions.defaultSecurityContextUidAnnotation`); undefined when the namespace carries none (an
 * OpenShift management cluster, where the SCC assigns the UID). Throws `InvalidInputError` naming the
 * namespace and the annotation when its value is not a non-negative integer. Pure.
 */
export function hcpRunAsUser(namespace: KubeObject): number | undefined {
  const key = HcpPodConventions.defaultSecurityContextUidAnnotation;
  const value = namespace.metadata.annotations?.[key];
  if (value === undefined) return undefined;
  if (!/^\d{1,10}$/.test(value) || Number(value) > 2 ** 31 - 1) {
    throw new InvalidInputError(
      'InvalidNamespace',
      `Namespace ${namespace.metadata.name}`,
      `metadata.annotations[${key}]`,
      `${JSON.stringify(value)} is not a UID (an integer from 0 to 2147483647)`,
    );
  }
  return Number(value);
}

/**
 * The release version annotation of the operand Deployment for an HCP rolling out `controlPlaneVersion`
 * (`status.controlPlaneVersion.desired.version`): the value HyperShift compares with the version of the
 * release it deploys. None while the HCP reports no version. Pure.
 */
export function hcpDeploymentAnnotations(controlPlaneVersion: string | undefined): Record<string, string> | undefined {
  return controlPlaneVersion ? { [HcpPodConventions.releaseVersionAnnotation]: controlPlaneVersion } : undefined;
}

/**
 * The scheduling HyperShift gives every hosted-control-plane pod of the HCP in `namespace`: tolerate the
 * control-plane and this cluster's dedicated-node taints, prefer such nodes (this cluster's twice as much),
 * and prefer the nodes of this HCP's other pods. Pure.
 */
export function hcpScheduling(namespace: string): {
  tolerations: Array<Record<string, string>>;
  affinity: Record<string, unknown>;
  labels: Record<string, string>;
} {
  const { controlPlaneNodeKey, clusterNodeKey, colocationLabel, controlPlaneComponentLabel } = HcpPodConventions;
  const prefer = (weight: number, key: string, value: string) => ({
    weight,
    preference: { matchExpressions: [{ key, operator: 'In', values: [value] }] },
  });
  return {
    tolerations: [
      { key: controlPlaneNodeKey, operator: 'Equal', value: 'true', effect: 'NoSchedule' },
      { key: clusterNodeKey, operator: 'Equal', value: namespace, effect: 'NoSchedule' },
    ],
    affinity: {
      nodeAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [prefer(50, controlPlaneNodeKey, 'true'), prefer(100, clusterNodeKey, namespace)],
      },
      podAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          {
            weight: 100,
            podAffinityTerm: { labelSelector: { matchLabels: { [colocationLabel]: namespace } }, topologyKey: 'kubernetes.io/hostname' },
          },
        ],
      },
    },
    labels: { [controlPlaneComponentLabel]: HcpOperandNames.component, [colocationLabel]: namespace },
  };
}

/** `/tmp` as an empty pod-lived volume. */
function tmpVolume(): VolumeAndMount {
  return { volume: { name: HcpOperandNames.tmpVolume, emptyDir: {} }, mount: { name: HcpOperandNames.tmpVolume, mountPath: '/tmp' } };
}

/**
 * The token volume (empty, pod-lived) and where it is mounted: the directory the credentials profile's
 * `web_identity_token_file` names.
 */
function tokenVolume(readOnly: boolean): VolumeAndMount {
  return {
    volume: { name: HcpOperandNames.tokenVolume, emptyDir: {} },
    mount: { name: HcpOperandNames.tokenVolume, mountPath: boundServiceAccountToken.dir, ...(readOnly ? { readOnly: true } : {}) },
  };
}

/**
 * The token minter as HyperShift runs it beside its Karpenter: a sidecar that, through the guest
 * kubeconfig, mints a token of the guest ServiceAccount `kube-system/karpenter` for the audience
 * `openshift` and keeps it fresh in the shared token volume. Its startup probe holds the containers after
 * it back until the token file exists. Pure.
 */
export function tokenMinterSidecar(image: string): Record<string, unknown> {
  const { guestKubeconfigVolume, guestKubeconfigDir, guestKubeconfigKey } = OperandNames;
  return {
    name: HcpOperandNames.tokenMinterContainer,
    image,
    imagePullPolicy: 'IfNotPresent',
    command: [...HcpOperandNames.tokenMinterCommand],
    args: [
      `--service-account-namespace=${HcpOperandNames.guestIdentityNamespace}`,
      `--service-account-name=${Names.operandServiceAccount}`,
      `--token-audience=${HcpOperandNames.tokenAudience}`,
      `--token-file=${boundServiceAccountToken.file}`,
      `--kubeconfig=${guestKubeconfigDir}/${guestKubeconfigKey}`,
    ],
    restartPolicy: 'Always',
    startupProbe: { exec: { command: ['cat', boundServiceAccountToken.file] }, failureThreshold: 10 },
    resources: { requests: { cpu: '10m', memory: '30Mi' } },
    securityContext: restrictedContainerSecurityContext(),
    terminationMessagePolicy: 'FallbackToLogsOnError',
    volumeMounts: [
      { name: guestKubeconfigVolume, mountPath: guestKubeconfigDir, readOnly: true },
      tokenVolume(false).mount,
      tmpVolume().mount,
    ],
  };
}

/**
 * The operand on a hosted control plane: pods in the HCP namespace of the management cluster, the guest
 * reached through the guest kubeconfig Secret, identity `kube-system/karpenter` on the guest, one replica
 * without leader election, and a pod as HyperShift gives every hosted-control-plane pod: its priority,
 * tolerations, node and pod affinity, labels, a writable `/tmp` in every container under the read-only
 * root, the emptyDir volumes named for the cluster autoscaler, requests the size of HyperShift's own
 * Karpenter, and `host.runAsUser` (the HCP namespace's UID, `hcpRunAsUser`) where HyperShift assigns one. The
 * Deployment is labelled as managed by component `karpenter-operator`, so that component's rollout check
 * (with the version annotation the request carries, `hcpDeploymentAnnotations`) covers it. No node selector (the HCP's own applies where it sets one). Credentials as HyperShift provides them: its Secret
 * `karpenter-credentials` and, with TOKEN_MINTER_IMAGE, the token minter writing the guest ServiceAccount's
 * web-identity token into a volume Karpenter mounts where that profile looks. Nothing of the management
 * cluster's own tokens is mounted. Pure.
 */
export function hcpOperandLayout(
  namespace: string,
  settings: Pick<OperatorSettings, 'guestKubeconfigSecret' | 'tokenMinterImage'>,
  host: { runAsUser?: number } = {},
): OperandLayout {
  const minter = settings.tokenMinterImage;
  const scheduling = hcpScheduling(namespace);
  const emptyDirs = [...(minter ? [tokenVolume(true)] : []), tmpVolume()].map((v) => v.volume['name'] as string);
  return {
    podServiceAccount: operandPodServiceAccount(namespace),
    apiIdentity: { namespace: HcpOperandNames.guestIdentityNamespace, name: Names.operandServiceAccount },
    singleCluster: false,
    leaderElection: false,
    guestKubeconfigSecret: settings.guestKubeconfigSecret ?? HcpOperandNames.defaultGuestKubeconfigSecret,
    featureGates: HcpOperandNames.featureGates,
    credentialsSecret: HcpOperandNames.credentialsSecret,
    deploymentLabels: { [HcpPodConventions.managedByLabel]: HcpOperandNames.managingComponent },
    pod: {
      priorityClassName: HcpOperandNames.priorityClassName,
      tolerations: scheduling.tolerations,
      affinity: scheduling.affinity,
      labels: scheduling.labels,
      annotations: { [HcpPodConventions.safeToEvictLocalVolumesAnnotation]: emptyDirs.join(',') },
      credentialVolumes: minter ? [tokenVolume(true)] : [],
      sharedVolumes: [tmpVolume()],
      controllerRequests: { ...HcpOperandNames.controllerRequests },
      ...(minter ? { sidecars: [tokenMinterSidecar(minter)] } : {}),
      ...(host.runAsUser !== undefined ? { runAsUser: host.runAsUser } : {}),
    },
  };
}
