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

/**
 * What a topology decodes for the default NodeClass (standalone: the worker MachineSets; HyperShift: the
 * ignition Secrets and the HostedControlPlane), in the NodeClass's own terms. The provider renders it
 * (`renderNodeClass`): the spec, the kubelet reservations and the protected fields are decided there once.
 */
export interface NodeClassSource {
  /** The node's pointer config, verbatim; protected. */
  userData: string;
  /** Image selector terms in order (AWS: `{ id: 'ami-…' }`); protected. */
  imageSelectorTerms: Array<Record<string, unknown>>;
  instanceProfile: string;
  subnetSelectorTerms: Array<Record<string, unknown>>;
  securityGroupSelectorTerms: Array<Record<string, unknown>>;
  /** Tags for what the NodeClass launches, in order (a later key wins); keys the cloud reserves are dropped. */
  tags: Array<{ key: string; value: string }>;
  /** The root volume in the provider's terms; the provider's default when absent. */
  rootVolume?: Record<string, unknown>;
  /** Instance metadata tokens; `required` when absent. */
  metadataTokens?: 'required' | 'optional';
  associatePublicIp?: boolean;
  /** kubelet `maxPods`; Karpenter's own default when absent. */
  maxPods?: number;
}

/** Where a field of the default NodeClass came from, in the order discovery tries them. */
export type DiscoverySource = 'MachineSets' | 'Conventions' | 'WorkerInstances';

/** A discovered default NodeClass and where each of its fields came from. */
export interface DiscoveredNodeClass extends DefaultNodeClass {
  /** Each field's source, in a stable order (AWS: subnets, securityGroups, instanceProfile, ami, userData, blockDevice). */
  sources: Array<{ field: string; source: DiscoverySource }>;
  /** Values used without being proven in the cloud (offline discovery), one line each. */
  unverified: string[];
}

export interface VerificationProblem {
  /** Spec field at fault, e.g. `spec.subnetSelectorTerms[1]`. */
  field: string;
  message: string;
}

export interface InstanceInfo {
  instanceId: string;
  /**
   * True while the instance is starting or running; false once it is stopping, stopped or gone. The
   * provider decides what its cloud's states mean; core only reads this.
   */
  live: boolean;
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
   * The label Karpenter puts on every node naming the NodeClass it was launched from (AWS:
   * `karpenter.k8s.aws/ec2nodeclass`); a NodeClass's MachineConfigPool selects its nodes by it.
   */
  readonly nodeClassLabel: string;

  /**
   * The most instance IDs one cloud request of `describeInstances` takes (AWS: 200 filter values).
   * Callers batch to this size so that batches run in parallel instead of being split inside one call.
   */
  readonly maxInstancesPerLookup: number;

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
   * Derives the default NodeClass: from the worker MachineSets when there are any (as
   * `renderDefaultNodeClass`), else field by field from the platform's naming conventions, then from the
   * cluster's existing worker instances, each value proven in the cloud before it is used. Nothing is
   * guessed: when a field cannot be proven, or several candidates fit, it throws `InvalidInputError`
   * (reason `DiscoveryIncomplete` or `DiscoveryAmbiguous`) naming every missing or ambiguous piece and
   * what was tried. `offline`: no cloud calls; convention values are returned unproven and listed in
   * `unverified`. Throws `TransientError` / `ForbiddenError` as `verifyNodeClass`.
   */
  discoverDefaultNodeClass(input: DiscoveryInput, options?: { offline?: boolean }): Promise<DiscoveredNodeClass>;

  /**
   * Renders NodeClass `default` from an already decoded source (what a topology other than standalone
   * decodes, e.g. HyperShift's ignition Secrets); `renderDefaultNodeClass` decodes the MachineSets into
   * the same source and renders it here too. Pure.
   */
  renderNodeClass(source: NodeClassSource): DefaultNodeClass;

  /**
   * The protected `spec` fields that keep a NodeClass from launching anything while its MachineConfigPool
   * `pool` does not serve the registration taint yet: a machine booted before that would register untainted,
   * which Karpenter refuses, and would only be replaced after its registration TTL. The values must match
   * nothing in the cloud and say why (AWS: an image selector on tag `Names.launchHoldKey` = `pool`, which
   * no image carries, so Karpenter reports the NodeClass not Ready). `verifyNodeClass` does not count them
   * as problems. Pure.
   */
  launchHold(pool: string): Record<string, unknown>;

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
