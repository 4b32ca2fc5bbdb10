export * from './builders.js';
export { crdSchema, validateSchema, ec2NodeClassCelChecks, KARPENTER_AWS_CRDS_DIR, type Schema } from './crd-schema.js';
export * from './upi.js';
