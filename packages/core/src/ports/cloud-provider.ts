import type { ClusterFacts, DiscoveryInput, OperatorSettings } from '../model/cluster.js';
import type { KubeObject, TypeRef } from '../model/kube.js';
import { token } from './token.js';

export interface RelatedObject {
  group: string;
  resource: string;
  name: string;
  namespace?: string;
}

/** Cloud-specific parts of the operand's pod. */
export interface OperandCloudConfig {
  env: Array<{ name: string; value?: string; valueFrom?: Record<string, unknown> }>;
  volumes: Array<Record<string, unknown>>;
  volumeMounts: Array<Record<string, unknown>>;
  /** Secret the operand must not start without (credential gating), in the operator namespace. */
  credentialsSecret: string;
}

/** A rendered default NodeClass. */
export interface DefaultNodeClass {
  /** The whole object as the operator creates it when absent. */
  object: KubeObject;
  /**
   * `spec` fields that belong to the release and are enforced on every NodeClass (amiFamily,
   * amiSelectorTerms, userData). userData is the cluster's pointer config before any pool rewrite.
   */
  protectedSpec: Record<string, unknown>;
}

export interface VerificationProblem {
  /** Spec field at fault, e.g. `spec.subnetSelectorTerms[1]`. */
  field: string;
  message: string;
}

export interface InstanceInfo {
  instanceId: string;
  /** `pending`, `running`, `stopping`, ... */
  state: string;
  privateDnsName?: string;
  publicDnsName?: string;
  privateIpAddresses: string[];
  publicIpAddresses: string[];
  /**
   * True when the instance carries this cluster's ownership tag with the value that marks it as this
   * cluster's alone (AWS: `kubernetes.io/cluster/<infraID>=owned`; `shared` is not ownership).
   */
  ownedByCluster: boolean;
}

/**
 * Everything cloud-specific. One implementation per package (`provider-aws`, `provider-azure-stub`, ...),
 * selected by the composition root from the cluster's platform. Cross-cutting concerns (metrics, caching)
 * wrap this port instead of living in adapters.
 */
export interface CloudProvider {
  /** The platform this provider serves, as Infrastructure reports it (`AWS`). */
  readonly platform: string;

  /**
   * Throws `UnsupportedPlatformError` when this provider cannot run Karpenter (the stub); the operator
   * then reports it through conditions and deploys nothing. Pure; idempotent.
   */
  assertSupported(): void;

  /** The provider's NodeClass kind (e.g. EC2NodeClass). */
  readonly nodeClassType: TypeRef;

  /**
   * The runtime CRDs (NodePool, NodeClaim, NodeOverlay and the NodeClass kind), unmodified upstream
   * schemas. Throws `InvalidInputError` when the build-time CRD files are missing or unreadable.
   */
  crds(): KubeObject[];

  /** Env, volumes and the credentials Secret for the operand. Pure. */
  operandCloudConfig(facts: ClusterFacts, settings: OperatorSettings): OperandCloudConfig;

  /** Provider RBAC for the operand (e.g. ClusterRole `karpenter` for ec2nodeclasses). Pure. */
  operandRbac(namespace: string): KubeObject[];

  /** CredentialsRequests for the operand and the narrow node-identity credential. Pure. */
  credentialsRequests(namespace: string): KubeObject[];

  /** Provider objects for ClusterOperator `relatedObjects` (the NodeClass resource). Pure. */
  relatedObjects(): RelatedObject[];

  /**
   * Derives the default NodeClass from the cluster's worker MachineSets. Pure: no cloud calls.
   * Throws `InvalidInputError` with reason `NoWorkerMachineSet`, `InvalidProviderSpec` or
   * `UserDataSecretMissing`, naming the object and field.
   */
  renderDefaultNodeClass(input: DiscoveryInput): DefaultNodeClass;

  /**
   * Checks against the cloud that what a NodeClass references exists and belongs to the cluster.
   * Returns the problems found (empty when good). Throws `TransientError` when the cloud API is
   * unreachable or throttling, `ForbiddenError` when the credentials are refused.
   */
  verifyNodeClass(nodeClass: KubeObject, facts: ClusterFacts): Promise<VerificationProblem[]>;

  /** The instance ID in a NodeClaim `status.providerID`, or undefined when it is not this cloud's. Pure. */
  instanceIdFromProviderId(providerID: string): string | undefined;

  /**
   * Looks up instances by ID in one batched call; IDs that do not exist are absent from the result.
   * Throws `TransientError` / `ForbiddenError` as `verifyNodeClass`.
   */
  describeInstances(instanceIds: string[], facts: ClusterFacts): Promise<InstanceInfo[]>;

  /**
   * A cheap read call proving the operand's credentials work (`check-credentials`, the operand's init
   * container). Resolves when they do; throws `ForbiddenError` (refused), `TransientError` (unreachable)
   * or `InvalidInputError` (credentials file missing or malformed), each naming what failed.
   */
  checkCredentials(facts: ClusterFacts): Promise<void>;

  /**
   * Whether the queue Karpenter reads interruption events from (the Karpenter CR's
   * `spec.settings.interruptionQueue`) exists in the cluster's region: true when it does, false when the
   * cloud says it does not. Throws `TransientError` / `ForbiddenError` as `verifyNodeClass`.
   */
  interruptionQueueExists(queueName: string, facts: ClusterFacts): Promise<boolean>;
}

export const CloudProviderId = token<CloudProvider>('CloudProvider');
