import { Container, ContainerModule } from 'inversify';
import { CloudProviderId, UnsupportedCloudProvider, type CloudProvider } from '@karpenter-operator/core';
import { awsProviderModule } from '@karpenter-operator/provider-aws';
import { azureStubProviderModule } from '@karpenter-operator/provider-azure-stub';
// generator:provider-imports (npx nx g @karpenter-operator/tools:provider <name> adds imports above)
import type { OperatorConfig } from './config.js';

/**
 * What a provider is configured with, read once by whoever starts it: the operator from `OperatorConfig`
 * (`providerOptions`), the offline commands and the sidecar adapter from their own flags.
 */
export interface ProviderOptions {
  /** The runtime CRDs beside the bundle (`dist/crds`). */
  crdDir: string;
  region?: string;
  /** The cloud API endpoint of the operator's own calls (emulators, private endpoints). */
  endpoint?: string;
  /** The usable cluster-wide proxy variables. */
  proxyEnv?: Record<string, string>;
  /** The shared credentials file of the operator's own calls; default: the SDK's default chain. */
  credentialsFile?: string;
  /** The EC2 endpoint handed to the operand. */
  operandEndpoint?: string;
  /** The endpoint of the interruption-queue check. */
  queueEndpoint?: string;
  /** The IAM endpoint of the instance-profile look-ups. */
  iamEndpoint?: string;
}

/**
 * Platforms with a provider package: the one place a provider is chosen, for the operator's container and
 * for every offline command. Adding a provider adds one line here (see CONTRIBUTING.md).
 */
export const providerModules: Record<string, (o: ProviderOptions) => ContainerModule> = {
  AWS: (o) =>
    awsProviderModule({
      crdDir: o.crdDir,
      ec2: {
        ...(o.region ? { region: o.region } : {}),
        ...(o.endpoint ? { endpoint: o.endpoint } : {}),
        ...(o.proxyEnv ? { proxyEnv: o.proxyEnv } : {}),
        credentials: o.credentialsFile ? { type: 'sharedCredentialsFile', path: o.credentialsFile } : { type: 'default' },
      },
      ...(o.operandEndpoint ? { operandEc2Endpoint: o.operandEndpoint } : {}),
      ...(o.queueEndpoint ? { sqsEndpoint: o.queueEndpoint } : {}),
      ...(o.iamEndpoint ? { iamEndpoint: o.iamEndpoint } : {}),
    }),
  Azure: () => azureStubProviderModule(),
  // generator:provider-modules (one line per platform is added above)
};

/** A platform no package serves: nothing is deployed and the operator reports the platform as unknown. */
function unknownPlatformModule(platform: string): ContainerModule {
  const provider = new UnsupportedCloudProvider({
    platform: platform.replace(/[^A-Za-z]/g, '') || 'Unknown',
    message: `Platform ${JSON.stringify(platform)} is not supported by Karpenter on OpenShift: no provider package serves it`,
    known: false,
    nodeClassType: { apiVersion: 'karpenter.sh/v1', kind: 'UnknownNodeClass' },
    nodeClassLabel: 'karpenter.sh/unknown-nodeclass',
  });
  return new ContainerModule(({ bind }) => {
    bind(CloudProviderId).toConstantValue(provider);
  });
}

/** The module binding `CloudProviderId` for a platform. */
export function providerModule(platform: string, options: ProviderOptions): ContainerModule {
  return providerModules[platform]?.(options) ?? unknownPlatformModule(platform);
}

/**
 * The provider of a platform outside the operator's container (the offline commands, the sidecar adapter):
 * resolved from the same module, so it is configured and chosen exactly as the operator's.
 */
export function providerFor(platform: string, options: ProviderOptions): CloudProvider {
  const c = new Container();
  c.load(providerModule(platform, options));
  return c.get<CloudProvider>(CloudProviderId);
}

/** The operator's provider options, from its configuration. */
export function providerOptions(config: OperatorConfig): ProviderOptions {
  // The operator's own lookups use the narrow node-identity credential when mounted.
  const credentialsFile = config.nodeIdentityCredentialsFile ?? config.awsSharedCredentialsFile;
  return {
    crdDir: config.crdDir,
    ...(config.region ? { region: config.region } : {}),
    ...(config.awsEndpoint ? { endpoint: config.awsEndpoint } : {}),
    ...(config.proxyEnv ? { proxyEnv: config.proxyEnv } : {}),
    ...(credentialsFile ? { credentialsFile } : {}),
    ...(config.operandEc2Endpoint ? { operandEndpoint: config.operandEc2Endpoint } : {}),
    ...(config.awsSqsEndpoint ? { queueEndpoint: config.awsSqsEndpoint } : {}),
    ...(config.awsIamEndpoint ? { iamEndpoint: config.awsIamEndpoint } : {}),
  };
}
