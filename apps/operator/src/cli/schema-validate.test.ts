import { describe, expect, it } from 'vitest';
import { Types } from '@karpenter-operator/core';
import { karpenterCrd } from '../manifests/karpenter-crd.js';
import { fullKarpenterSpec, invalidKarpenterSpecs } from '../../test/support/settings-cases.js';
import { validateAgainstSchema } from './schema-validate.js';

const schema = (karpenterCrd().spec as { versions: Array<{ schema: { openAPIV3Schema: object } }> }).versions[0]!.schema.openAPIV3Schema;
const cr = (spec: unknown) => ({ ...Types.Karpenter, metadata: { name: 'default' }, spec });

describe('validateAgainstSchema with the Karpenter CRD (the cases the API server refuses in settings.int.test)', () => {
  it.each(invalidKarpenterSpecs)('refuses $name, naming $field', ({ spec, field }) => {
    const problems = validateAgainstSchema(cr(spec), schema);
    expect(problems.length, JSON.stringify(problems)).toBeGreaterThan(0);
    expect(problems.join('; ')).toContain(field);
  });

  it('accepts every setting at once, and an empty spec', () => {
    expect(validateAgainstSchema(cr(fullKarpenterSpec), schema)).toEqual([]);
    expect(validateAgainstSchema(cr({}), schema)).toEqual([]);
  });

  it('refuses an unknown top-level spec field and a wrong log level', () => {
    expect(validateAgainstSchema(cr({ replica: 2, logLevel: 'warn' }), schema).sort()).toEqual([
      'spec.logLevel: must be one of "debug", "info", "error", got "warn"',
      'spec.replica: unknown field',
    ]);
  });

  it('every CEL rule under spec has a TypeScript twin (else render could not check it)', async () => {
    const { schemaRuleFor } = await import('@karpenter-operator/core');
    const rules: Array<{ rule: string; message?: string }> = [];
    const walk = (s: Record<string, unknown>) => {
      rules.push(...((s['x-kubernetes-validations'] as typeof rules | undefined) ?? []));
      for (const sub of Object.values((s['properties'] as Record<string, Record<string, unknown>> | undefined) ?? {})) walk(sub);
      if (typeof s['additionalProperties'] === 'object') walk(s['additionalProperties'] as Record<string, unknown>);
    };
    walk((schema as { properties: { spec: Record<string, unknown> } }).properties.spec);
    expect(rules.length).toBeGreaterThan(5);
    for (const r of rules) expect(schemaRuleFor(r), r.rule).toBeDefined();
  });
});
