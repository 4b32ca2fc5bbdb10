/**
 * Karpenter CR specs the CRD refuses, with the field each error must name and a piece of the message. The
 * integration test sends them to the real API server (dry-run); `render`'s unit test validates them offline:
 * both must refuse each one, naming the same field.
 */
export const invalidKarpenterSpecs: Array<{ name: string; spec: Record<string, unknown>; field: string; says: RegExp }> = [
  {
    name: 'unknown feature gate',
    spec: { settings: { featureGates: { NodeRepair: true, Drift: true } } },
    field: 'spec.settings.featureGates.Drift',
    says: /unknown field/,
  },
  {
    name: 'feature gate not a boolean',
    spec: { settings: { featureGates: { NodeRepair: 'yes' } } },
    field: 'spec.settings.featureGates.NodeRepair',
    says: /boolean/,
  },
  {
    name: 'batchIdleDuration without a unit',
    spec: { settings: { batchIdleDuration: '10' } },
    field: 'spec.settings.batchIdleDuration',
    says: /positive duration/,
  },
  {
    name: 'batchMaxDuration zero',
    spec: { settings: { batchMaxDuration: '0s' } },
    field: 'spec.settings.batchMaxDuration',
    says: /positive duration/,
  },
  {
    name: 'vmMemoryOverheadPercent as a percentage',
    spec: { settings: { vmMemoryOverheadPercent: 7.5 } },
    field: 'spec.settings.vmMemoryOverheadPercent',
    says: /fraction/,
  },
  {
    name: 'vmMemoryOverheadPercent negative',
    spec: { settings: { vmMemoryOverheadPercent: -0.1 } },
    field: 'spec.settings.vmMemoryOverheadPercent',
    says: /fraction/,
  },
  { name: 'reservedENIs negative', spec: { settings: { reservedENIs: -1 } }, field: 'spec.settings.reservedENIs', says: /negative/ },
  {
    name: 'interruptionQueue as a URL',
    spec: { settings: { interruptionQueue: 'https://sqs.us-east-1.amazonaws.com/123456789012/q' } },
    field: 'spec.settings.interruptionQueue',
    says: /SQS queue name/,
  },
  { name: 'replicas zero', spec: { replicas: 0 }, field: 'spec.replicas', says: /at least 1/ },
  {
    name: 'resource quantity',
    spec: { resources: { requests: { memory: 'lots' } } },
    field: 'spec.resources.requests.memory',
    says: /should match/,
  },
  { name: 'unknown setting', spec: { settings: { clusterName: 'x' } }, field: 'spec.settings.clusterName', says: /unknown field/ },
];

/** A spec with every setting, valid. */
export const fullKarpenterSpec = {
  logLevel: 'info',
  replicas: 2,
  resources: { requests: { cpu: '500m', memory: '1Gi' }, limits: { memory: '2Gi' } },
  settings: {
    batchIdleDuration: '2s',
    batchMaxDuration: '20s',
    featureGates: { NodeRepair: true, SpotToSpotConsolidation: false },
    interruptionQueue: 'demo-karpenter',
    vmMemoryOverheadPercent: 0.08,
    reservedENIs: 1,
  },
};
