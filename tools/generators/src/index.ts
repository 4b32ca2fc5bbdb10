export { providerGenerator, scaffoldProvider, linkWorkspacePackage, type FileTree } from './provider/generator.js';
export { readPort, CLOUD_PROVIDER_PORT, type PortMember, type PortParameter } from './provider/port.js';
export { providerNames, renderProviderPackage, type ProviderNames, type ProviderOptions } from './provider/render.js';
