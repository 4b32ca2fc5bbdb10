export { AzureStubCloudProvider, AZURE_UNSUPPORTED_MESSAGE } from './azure-stub-provider.js';
export { azureStubProviderModule } from './module.js';
