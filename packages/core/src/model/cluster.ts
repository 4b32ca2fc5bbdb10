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

/** The request to run Karpenter: the `Karpenter` CR (standalone) or `spec.autoNode` (HyperShift). */
export interface KarpenterRequest {
  /** The object that owns the operand and carries status, with its uid. */
  owner: ObjectRef & { uid: string };
  generation: number;
  logLevel: LogLevel;
  /** True when the owner is being deleted (teardown runs). */
  deleting: boolean;
  /** When deletion was requested (ms since epoch), while `deleting`. */
  deletionRequestedAtMs?: number;
  finalizers: string[];
  /** The owner's `metadata.resourceVersion` as read; finalizer writes carry it (see `finalizersPatch`). */
  resourceVersion?: string;
  /**
   * Image overrides carried by the request itself, winning over the operator's settings (HyperShift: the
   * HCP annotations `hypershift.openshift.io/karpenter-provider-aws-image` and `.../karpenter-operator-image`).
   */
  images?: { operand?: string; operator?: string };
}

/** Typed settings, read once at start-up by the composition root. */
export interface OperatorSettings {
  namespace: string;
  releaseVersion: string;
  /** Operand image (KARPENTER_IMAGE_AWS for AWS). */
  operandImage: string;
  /** The operator's own image, used for the credentials-check init container. */
  operatorImage?: string;
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
}
