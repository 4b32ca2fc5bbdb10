import { ContainerModule } from 'inversify';
import { CloudProviderId, type CloudProvider } from '@karpenter-operator/core';
import { AwsCloudProvider, type AwsCloudProviderOptions } from './aws-cloud-provider.js';

/** Binds the AWS `CloudProvider`; the composition root passes typed options read once at start-up. */
export const awsProviderModule = (options: AwsCloudProviderOptions): ContainerModule =>
  new ContainerModule(({ bind }) => {
    bind<CloudProvider>(CloudProviderId)
      .toResolvedValue(() => new AwsCloudProvider(options))
      .inSingletonScope();
  });
