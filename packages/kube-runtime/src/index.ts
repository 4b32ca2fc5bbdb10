export * from './kube/index.js';
export * from './runtime/index.js';
