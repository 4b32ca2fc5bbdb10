import {
  UnsupportedPlatformError,
  type CloudProvider,
  type DefaultNodeClass,
  type DiscoveredNodeClass,
  type InstanceInfo,
  type KubeObject,
  type OperandCloudConfig,
  type RelatedObject,
  type VerificationProblem,
} from '@karpenter-operator/core';

export const AZURE_UNSUPPORTED_MESSAGE = 'Azure is not supported by Karpenter on OpenShift yet, nothing else on the cluster is affected';

/**
 * The Azure provider as a stub: it passes the CloudProvider contract and says, through
 * `UnsupportedPlatformError`, that Azure is not supported yet, so the operator reports it and deploys
 * nothing. Copy this package to start a new provider (see CONTRIBUTING.md).
 */
export class AzureStubCloudProvider implements CloudProvider {
  readonly platform = 'Azure';
  readonly nodeClassType = { apiVersion: 'karpenter.azure.com/v1beta1', kind: 'AKSNodeClass' };
  readonly nodeClassLabel = 'karpenter.azure.com/aksnodeclass';
  readonly maxInstancesPerLookup = 100;

  assertSupported(): void {
    throw new UnsupportedPlatformError(this.platform, AZURE_UNSUPPORTED_MESSAGE);
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
    throw new UnsupportedPlatformError(this.platform, AZURE_UNSUPPORTED_MESSAGE);
  }

  async discoverDefaultNodeClass(): Promise<DiscoveredNodeClass> {
    throw new UnsupportedPlatformError(this.platform, AZURE_UNSUPPORTED_MESSAGE);
  }

  renderNodeClass(): DefaultNodeClass {
    throw new UnsupportedPlatformError(this.platform, AZURE_UNSUPPORTED_MESSAGE);
  }

  async verifyNodeClass(): Promise<VerificationProblem[]> {
    throw new UnsupportedPlatformError(this.platform, AZURE_UNSUPPORTED_MESSAGE);
  }

  instanceIdFromProviderId(providerID: string): string | undefined {
    // azure:///subscriptions/<sub>/resourceGroups/<rg>/providers/Microsoft.Compute/virtualMachines/<name>
    const m = /^azure:\/\/\/subscriptions\/[^/]+\/resourceGroups\/[^/]+\/providers\/Microsoft\.Compute\/virtualMachines\/([^/]+)$/i.exec(
      providerID,
    );
    return m?.[1];
  }

  async describeInstances(): Promise<InstanceInfo[]> {
    throw new UnsupportedPlatformError(this.platform, AZURE_UNSUPPORTED_MESSAGE);
  }

  async checkCredentials(): Promise<void> {
    throw new UnsupportedPlatformError(this.platform, AZURE_UNSUPPORTED_MESSAGE);
  }

  async interruptionQueueExists(): Promise<boolean> {
    throw new UnsupportedPlatformError(this.platform, AZURE_UNSUPPORTED_MESSAGE);
  }
}
