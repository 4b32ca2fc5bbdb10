import { UnsupportedPlatformError } from '../errors.js';
import type { KubeObject, TypeRef } from '../model/kube.js';
import type {
  CloudProvider,
  DefaultNodeClass,
  DiscoveredNodeClass,
  InstanceInfo,
  OperandCloudConfig,
  RelatedObject,
  VerificationProblem,
} from './cloud-provider.js';

export interface UnsupportedCloudProviderOptions {
  platform: string;
  /** Why Karpenter cannot run here; the operator reports it as the ClusterOperator's message. */
  message: string;
  /** False for a platform no provider package serves at all (reason `UnknownPlatform`). Default true. */
  known?: boolean;
  nodeClassType: TypeRef;
  nodeClassLabel: string;
  maxInstancesPerLookup?: number;
}

/**
 * A `CloudProvider` for a platform that cannot run Karpenter (yet): `assertSupported` and every cloud member
 * throw `UnsupportedPlatformError` with the message, the object lists are empty. The operator reports it and
 * deploys nothing. A stub provider package (`provider-azure-stub`) extends it with its platform's names; the
 * composition root uses it as is for a platform no package serves.
 */
export class UnsupportedCloudProvider implements CloudProvider {
  readonly platform: string;
  readonly nodeClassType: TypeRef;
  readonly nodeClassLabel: string;
  readonly maxInstancesPerLookup: number;
  private readonly message: string;
  private readonly known: boolean;

  constructor(o: UnsupportedCloudProviderOptions) {
    this.platform = o.platform;
    this.message = o.message;
    this.known = o.known ?? true;
    this.nodeClassType = o.nodeClassType;
    this.nodeClassLabel = o.nodeClassLabel;
    this.maxInstancesPerLookup = o.maxInstancesPerLookup ?? 1;
  }

  private unsupported(): UnsupportedPlatformError {
    return new UnsupportedPlatformError(this.platform, this.message, this.known);
  }

  assertSupported(): void {
    throw this.unsupported();
  }

  crds(): KubeObject[] {
    return [];
  }

  operandCloudConfig(): OperandCloudConfig {
    return { env: [], volumes: [], volumeMounts: [], credentialsSecret: 'karpenter-cloud-credentials' };
  }

  operandRbac(): KubeObject[] {
    return [];
  }

  credentialsRequests(): KubeObject[] {
    return [];
  }

  relatedObjects(): RelatedObject[] {
    return [];
  }

  renderDefaultNodeClass(): DefaultNodeClass {
    throw this.unsupported();
  }

  discoverDefaultNodeClass(): Promise<DiscoveredNodeClass> {
    return Promise.reject(this.unsupported());
  }

  renderNodeClass(): DefaultNodeClass {
    throw this.unsupported();
  }

  launchHold(): Record<string, unknown> {
    throw this.unsupported();
  }

  verifyNodeClass(): Promise<VerificationProblem[]> {
    return Promise.reject(this.unsupported());
  }

  instanceIdFromProviderId(_providerID: string): string | undefined {
    return undefined;
  }

  describeInstances(): Promise<InstanceInfo[]> {
    return Promise.reject(this.unsupported());
  }

  checkCredentials(): Promise<void> {
    return Promise.reject(this.unsupported());
  }

  interruptionQueueExists(): Promise<boolean> {
    return Promise.reject(this.unsupported());
  }
}
