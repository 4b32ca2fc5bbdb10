import { ContainerModule } from 'inversify';
import { CloudProviderId } from '@karpenter-operator/core';
import { AzureStubCloudProvider } from './azure-stub-provider.js';

/** Binds the Azure stub as the CloudProvider. */
export const azureStubProviderModule = (): ContainerModule =>
  new ContainerModule(({ bind }) => {
    bind(CloudProviderId)
      .toResolvedValue(() => new AzureStubCloudProvider())
      .inSingletonScope();
  });
