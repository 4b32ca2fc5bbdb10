import type { KubeObject, ObjectRef } from './kube.js';

export interface ResourceTag {
  key: string;
  value: string;
}

/** What the operator needs to know about the cluster it serves (from Infrastructure `cluster` or the HCP). */
export interface ClusterFacts {
  /** `status.platformStatus.type`: `AWS`, `Azure`, ... */
  platform: string;
  region?: string;
  /** The infra ID, e.g. `mycluster-x7k2p`; Karpenter's `CLUSTER_NAME`. */
  infrastructureName: string;
  /** Internal API URL; Karpenter's `CLUSTER_ENDPOINT`. */
  apiServerInternalURL: string;
  /** `HighlyAvailable`, `SingleReplica`, `External`. */
  controlPlaneTopology?: string;
  resourceTags: ResourceTag[];
}

export type LogLevel = 'debug' | 'info' | 'error';

/** `spec.settings` of the Karpenter CR: Karpenter's own settings, by the names of its Helm chart. Unset: Karpenter's default. */
export interface KarpenterSettings {
  batchIdleDuration?: string;
  batchMaxDuration?: string;
  /** Gate name (one Karpenter knows, see `karpenterFeatureGates`) → on or off. */
  featureGates?: Record<string, boolean>;
  /** SQS queue name; empty or unset: interruption handling off. */
  interruptionQueue?: string;
  vmMemoryOverheadPercent?: number;
  reservedENIs?: number;
}

/** Container resources as the CR states them (quantities as written: `1`, `"500m"`, `"1Gi"`). */
export interface OperandResources {
  requests?: Record<string, string | number>;
  limits?: Record<string, string | number>;
}

/** The request to run Karpenter: the `Karpenter` CR (standalone) or `spec.autoNode` (HyperShift). */
export interface KarpenterRequest {
  /** The object that owns the operand and carries status, with its uid. */
  owner: ObjectRef & { uid: string };
  generation: number;
  logLevel: LogLevel;
  /** `spec.replicas`: operand replicas; unset: the topology's default (2, or 1 on a SingleReplica control plane). */
  replicas?: number;
  /** `spec.resources`: the operand container's resources, replacing the default whole. */
  resources?: OperandResources;
  /** `spec.settings`. */
  settings?: KarpenterSettings;
  /** True when the owner is being deleted (teardown runs). */
  deleting: boolean;
  /** When deletion was requested (ms since epoch), while `deleting`. */
  deletionRequestedAtMs?: number;
  /**
   * While `deleting`: the cluster itself is going away, so NodeClaims get Karpenter's termination-timestamp
   * annotation at once instead of after the drain bound (HyperShift: the hosted cluster is being deleted).
   */
  forceTermination?: boolean;
  /**
   * While `deleting`: remove NodePools and NodeClaims only; the operand and the teardown finalizer stay until
   * the owner itself is deleted (HyperShift: the CAPI Cluster goes before the HostedControlPlane does).
   */
  keepOwnerFinalizer?: boolean;
  /**
   * While `deleting`: NodePools and NodeClaims are the user's and stay (with their instances); only the operand
   * is removed, then the teardown finalizer released. The owner stops asking for Karpenter without the
   * cluster going away (HyperShift: AutoNode disabled, which leaves the user's NodePools in the guest).
   */
  keepNodePools?: boolean;
  finalizers: string[];
  /** The owner's `metadata.resourceVersion` as read; finalizer writes carry it (see `finalizersPatch`). */
  resourceVersion?: string;
  /**
   * Image overrides carried by the request itself, winning over the operator's settings (HyperShift: the
   * HCP annotations `hypershift.openshift.io/karpenter-provider-aws-image` and `.../karpenter-operator-image`).
   */
  images?: { operand?: string; operator?: string };
  /** The owner's overrides of how the operand's pod is placed and sized, applied over the topology's layout. */
  podOverrides?: OperandPodOverrides;
  /**
   * Annotations the owner asks of the operand Deployment itself (not its pods), merged over others' keys.
   * HyperShift: `release.openshift.io/version`, the control-plane release the HCP is rolling out, which its
   * rollout check compares with its own.
   */
  deploymentAnnotations?: Record<string, string>;
}

/** Overrides of the operand's pod carried by the request (HyperShift: the HCP's scheduling fields and annotations). */
export interface OperandPodOverrides {
  /** Replaces the layout's node selector. */
  nodeSelector?: Record<string, string>;
  /** Added after the layout's tolerations. */
  tolerations?: Array<Record<string, unknown>>;
  /** Added to the pod template's labels (the Deployment's selector labels win). */
  labels?: Record<string, string>;
  priorityClassName?: string;
  /** Resource requests by container name, each merged over that container's own. */
  requests?: Record<string, Record<string, string>>;
}

/** Typed settings, read once at start-up by the composition root. */
export interface OperatorSettings {
  namespace: string;
  releaseVersion: string;
  /** Operand image (KARPENTER_IMAGE_AWS for AWS). */
  operandImage: string;
  /** The operator's own image, used for the credentials-check init container. */
  operatorImage?: string;
  /**
   * Image of a token minter a topology runs beside the operand to write its web-identity token
   * (TOKEN_MINTER_IMAGE); unused where the pod's own projected token serves.
   */
  tokenMinterImage?: string;
  clusterNameOverride?: string;
  clusterEndpointOverride?: string;
  /**
   * HyperShift only: the Secret in the HCP namespace holding the guest cluster's kubeconfig under key
   * `kubeconfig`, mounted into the operand so Karpenter reaches the guest API. Default
   * `service-network-admin-kubeconfig`, HyperShift's kubeconfig for control-plane components (its own
   * AutoNode operator mints the guest `kube-system/karpenter` token with it). Unused standalone.
   */
  guestKubeconfigSecret?: string;
  /** Directory holding the runtime CRD YAML produced at build time. */
  crdDir: string;
  /**
   * The cluster-wide proxy as the CVO injected it into the operator (from the cluster Proxy's `status`):
   * `HTTP_PROXY`, `HTTPS_PROXY`, `NO_PROXY`, only those set and valid. Handed to the operand's containers.
   */
  proxyEnv?: Array<{ name: string; value: string }>;
}

/** The raw cluster objects default-NodeClass discovery works from. */
export interface DiscoveryInput {
  facts: ClusterFacts;
  /** MachineSets in `openshift-machine-api`, any order. */
  machineSets: KubeObject[];
  /** Secrets in `openshift-machine-api` (user-data Secrets). */
  secrets: KubeObject[];
  /** ConfigMap `openshift-machine-config-operator/coreos-bootimages`, if present. */
  bootImages?: KubeObject;
  /** Kubelet maxPods of the cluster (OpenShift default 250). */
  maxPods: number;
  /**
   * The cluster's own control-plane and worker nodes (not the ones Karpenter launched): where discovery
   * without worker MachineSets finds the VPC, the architectures and instances to copy from.
   */
  nodes?: DiscoveryNode[];
}

/** A node of the cluster as discovery sees it. */
export interface DiscoveryNode {
  name: string;
  role: 'control-plane' | 'worker';
  /** `spec.providerID`, when the cloud's node controller has set it. */
  providerID?: string;
  /** `kubernetes.io/arch` (amd64, arm64). */
  architecture?: string;
}
