import { describeCloudProviderContract } from '@karpenter-operator/core/testing';
import { AzureStubCloudProvider } from './azure-stub-provider.js';

describeCloudProviderContract('azure-stub', () => ({
  provider: new AzureStubCloudProvider(),
  facts: {
    platform: 'Azure',
    region: 'eastus',
    infrastructureName: 'demo-az',
    apiServerInternalURL: 'https://api-int.demo:6443',
    resourceTags: [],
  },
  settings: { namespace: 'openshift-karpenter', releaseVersion: '4.22.0', operandImage: '', crdDir: '/nonexistent' },
}));
