import type { ClusterFacts, KarpenterRequest, OperatorSettings } from '../model/cluster.js';
import type { KubeObject } from '../model/kube.js';
import { Names } from '../model/names.js';
import type { OperandCloudConfig } from '../ports/cloud-provider.js';

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
