import { AwsCloudProvider } from '@karpenter-operator/provider-aws';
import { AzureStubCloudProvider } from '@karpenter-operator/provider-azure-stub';
// generator:provider-imports (npx nx g @karpenter-operator/tools:provider <name> adds imports above)
import type { CloudProvider } from '@karpenter-operator/core';

export interface OfflineProviderOptions {
  crdDir: string;
  sharedCredentialsFile?: string;
  endpoint?: string;
  proxyEnv?: Record<string, string>;
}

/** A provider for the offline commands (render, check-credentials), which have no DI container. */
export function providerFor(platform: string, o: OfflineProviderOptions): CloudProvider {
  if (platform === 'AWS') {
    return new AwsCloudProvider({
      crdDir: o.crdDir,
      ec2: {
        credentials: o.sharedCredentialsFile ? { type: 'sharedCredentialsFile', path: o.sharedCredentialsFile } : { type: 'default' },
        ...(o.endpoint ? { endpoint: o.endpoint } : {}),
        ...(o.proxyEnv ? { proxyEnv: o.proxyEnv } : {}),
      },
    });
  }
  if (platform === 'Azure') return new AzureStubCloudProvider();
  // generator:provider-for (one line per platform is added above)
  throw new Error(`platform ${JSON.stringify(platform)} is not supported: no provider package serves it`);
}
