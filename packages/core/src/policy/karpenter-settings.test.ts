import { describe, expect, it } from 'vitest';
import {
  canonicalQuantity,
  featureGatesValue,
  karpenterFeatureGates,
  karpenterSpecRules,
  NON_NEGATIVE_QUANTITY_PATTERN,
  operandSettings,
  parseDurationNs,
  quantityValue,
  schemaRuleFor,
  unknownFeatureGates,
} from './karpenter-settings.js';
import { decodeKarpenter } from '../topology/karpenter-cr.js';
import { Types } from '../model/kube.js';

describe('canonicalQuantity: as the API server stores a quantity', () => {
  it.each([
    ['1', '1'],
    [1, '1'],
    ['1000m', '1'],
    ['1500m', '1500m'],
    ['1.5', '1500m'],
    ['0.1', '100m'],
    ['100m', '100m'],
    ['1000', '1k'],
    ['1500000', '1500k'],
    ['1Gi', '1Gi'],
    ['1024Mi', '1Gi'],
    ['1536Mi', '1536Mi'],
    ['1.5Gi', '1536Mi'],
    ['0.5Gi', '512Mi'],
    ['512Mi', '512Mi'],
    ['1Ki', '1Ki'],
    ['512', '512'],
    ['0', '0'],
    ['1e3', '1e3'],
    ['2147483648', '2147483648'],
    ['1G', '1G'],
    ['1000M', '1G'],
    ['0.0000000001', '1n'],
  ])('%s → %s', (q, want) => {
    expect(canonicalQuantity(q)).toBe(want);
  });
  it('refuses what is not a quantity', () => {
    expect(() => canonicalQuantity('1 GB')).toThrow(/not a quantity/);
  });
});

describe('quantityValue: a quantity as a number', () => {
  it.each([
    { name: 'whole', q: '4', want: 4 },
    { name: 'a number', q: 8, want: 8 },
    { name: 'milli', q: '3500m', want: 3.5 },
    { name: 'nano', q: '5n', want: 5e-9 },
    { name: 'decimal kilo', q: '1.5k', want: 1500 },
    { name: 'binary', q: '1Gi', want: 2 ** 30 },
    { name: 'binary fraction', q: '0.5Ki', want: 512 },
    { name: 'exponent', q: '2e1', want: 20 },
    { name: 'negative', q: '-1', want: -1 },
    { name: 'surrounding spaces', q: ' 2 ', want: 2 },
    { name: 'not a quantity', q: '4 cores', want: undefined },
    { name: 'a lower-case binary suffix', q: '1mi', want: undefined },
    { name: 'empty', q: '', want: undefined },
    { name: 'NaN', q: Number.NaN, want: undefined },
  ])('$name: $q → $want', ({ q, want }) => {
    const got = quantityValue(q);
    if (want === undefined) expect(got).toBeUndefined();
    else expect(got).toBeCloseTo(want, 12);
  });
});

describe('parseDurationNs: Go durations as Karpenter reads them', () => {
  it.each([
    ['1s', 1e9],
    ['500ms', 5e8],
    ['1m30s', 90e9],
    ['1.5h', 5400e9],
    ['10us', 1e4],
    ['2µs', 2e3],
    ['10', undefined],
    ['-1s', undefined],
    ['1 s', undefined],
    ['', undefined],
    ['1d', undefined],
  ])('%s → %s', (s, want) => {
    expect(parseDurationNs(s)).toBe(want);
  });
});

describe('karpenterSpecRules: the TypeScript side of each CEL rule', () => {
  it.each([
    { rule: 'replicas', ok: [1, 2, 5], bad: [0, -1, 1.5] },
    { rule: 'batchIdleDuration', ok: ['1s', '100ms', '1m30s'], bad: ['0s', '1', 'soon', '-1s'] },
    { rule: 'batchMaxDuration', ok: ['10s'], bad: ['0ms', '10 s'] },
    {
      rule: 'interruptionQueue',
      ok: ['', 'mycluster-karpenter', 'a_b-1'],
      bad: ['https://sqs.us-east-1.amazonaws.com/1/q', 'x'.repeat(81), 'a.fifo', 'has space'],
    },
    { rule: 'vmMemoryOverheadPercent', ok: [0, 0.075, 0.99], bad: [-0.1, 1, 7.5] },
    { rule: 'reservedENIs', ok: [0, 3], bad: [-1, 0.5] },
  ] as const)('$rule', ({ rule, ok, bad }) => {
    const r = karpenterSpecRules[rule];
    for (const v of ok) expect(r.holds(v), JSON.stringify(v)).toBe(true);
    for (const v of bad) expect(r.holds(v), JSON.stringify(v)).toBe(false);
    expect(schemaRuleFor(r)).toBe(r);
  });

  it('unknownFeatureGates names what the pinned Karpenter does not know', () => {
    expect(unknownFeatureGates({ NodeRepair: true, Drift: true, nodeRepair: false })).toEqual(['Drift', 'nodeRepair']);
    expect(unknownFeatureGates(Object.fromEntries(karpenterFeatureGates.map((g) => [g, true])))).toEqual([]);
  });

  it.each([
    ['500m', true],
    ['1Gi', true],
    ['2', true],
    ['1e3', true],
    ['.5', true],
    ['-1', false],
    ['lots', false],
    ['1 GB', false],
    ['1gi', false],
  ])('quantity pattern: %s → %s', (q, ok) => {
    expect(new RegExp(NON_NEGATIVE_QUANTITY_PATTERN).test(q)).toBe(ok);
  });

  it('each message names its field', () => {
    for (const [name, r] of Object.entries(karpenterSpecRules))
      expect(r.message, name).toMatch(/^spec\.(replicas|resources|settings\.\w+)/);
  });
});

describe('operandSettings', () => {
  it('sets env only for what is set, feature gates in Karpenter order', () => {
    expect(operandSettings({ settings: { featureGates: { CapacityBuffer: true, NodeRepair: false } } }).env).toEqual([
      { name: 'FEATURE_GATES', value: 'NodeRepair=false,CapacityBuffer=true' },
    ]);
    expect(operandSettings({}).env).toEqual([]);
    expect(featureGatesValue({})).toBeUndefined();
  });
});

describe('decodeKarpenter: settings', () => {
  const cr = (spec: Record<string, unknown>) => ({ ...Types.Karpenter, metadata: { name: 'default', uid: 'u', generation: 2 }, spec });
  it('decodes every setting', () => {
    const spec = {
      logLevel: 'info',
      replicas: 3,
      resources: { requests: { cpu: '500m' }, limits: { memory: '2Gi' } },
      settings: {
        batchIdleDuration: '1s',
        batchMaxDuration: '10s',
        featureGates: { NodeRepair: true },
        interruptionQueue: 'q',
        vmMemoryOverheadPercent: 0.075,
        reservedENIs: 1,
      },
    };
    const r = decodeKarpenter(cr(spec));
    expect({ replicas: r.replicas, resources: r.resources, settings: r.settings }).toEqual({
      replicas: 3,
      resources: spec.resources,
      settings: spec.settings,
    });
  });
  it.each([
    { spec: { replicas: 0 }, field: 'spec.replicas' },
    { spec: { resources: { requests: { cpu: 'lots' } } }, field: 'spec.resources.requests.cpu' },
    { spec: { resources: { claims: [] } }, field: 'spec.resources.claims' },
    { spec: { settings: { batchIdleDuration: '1' } }, field: 'spec.settings.batchIdleDuration' },
    { spec: { settings: { featureGates: { Drift: true } } }, field: 'spec.settings.featureGates' },
    { spec: { settings: { featureGates: { NodeRepair: 'yes' } } }, field: 'spec.settings.featureGates' },
    { spec: { settings: { interruptionQueue: 'https://sqs/q' } }, field: 'spec.settings.interruptionQueue' },
    { spec: { settings: { vmMemoryOverheadPercent: 2 } }, field: 'spec.settings.vmMemoryOverheadPercent' },
    { spec: { settings: { reservedENIs: -1 } }, field: 'spec.settings.reservedENIs' },
    { spec: { settings: { clusterName: 'x' } }, field: 'spec.settings.clusterName' },
  ])('refuses $field', ({ spec, field }) => {
    expect(() => decodeKarpenter(cr(spec))).toThrow(new RegExp(`^Karpenter default: ${field.replace(/\./g, '\\.')}: `));
  });
});
