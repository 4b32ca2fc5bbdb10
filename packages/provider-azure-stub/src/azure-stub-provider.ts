import { UnsupportedCloudProvider } from '@karpenter-operator/core';

export const AZURE_UNSUPPORTED_MESSAGE = 'Azure is not supported by Karpenter on OpenShift yet, nothing else on the cluster is affected';

/**
 * The Azure provider as a stub: it passes the CloudProvider contract and says, through
 * `UnsupportedPlatformError`, that Azure is not supported yet, so the operator reports it and deploys
 * nothing. Copy this package to start a new provider (see CONTRIBUTING.md).
 */
export class AzureStubCloudProvider extends UnsupportedCloudProvider {
  constructor() {
    super({
      platform: 'Azure',
      message: AZURE_UNSUPPORTED_MESSAGE,
      nodeClassType: { apiVersion: 'karpenter.azure.com/v1beta1', kind: 'AKSNodeClass' },
      nodeClassLabel: 'karpenter.azure.com/aksnodeclass',
      maxInstancesPerLookup: 100,
    });
  }

  override instanceIdFromProviderId(providerID: string): string | undefined {
    // azure:///subscriptions/<sub>/resourceGroups/<rg>/providers/Microsoft.Compute/virtualMachines/<name>
    const m = /^azure:\/\/\/subscriptions\/[^/]+\/resourceGroups\/[^/]+\/providers\/Microsoft\.Compute\/virtualMachines\/([^/]+)$/i.exec(
      providerID,
    );
    return m?.[1];
  }
}
