import { schemaRuleFor } from '@karpenter-operator/core';

/** The parts of a CRD's structural schema this validator reads. */
interface Schema {
  type?: string;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  items?: Schema;
  enum?: unknown[];
  maxLength?: number;
  maxProperties?: number;
  maxItems?: number;
  minimum?: number;
  pattern?: string;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-validations'?: Array<{ rule: string; message?: string }>;
}

/**
 * Validates `value` against a CRD's structural schema offline, as the API server would with strict field
 * validation: unknown fields, types, enums, lengths, patterns, minimums, and the CEL rules whose
 * TypeScript twin `schemaRuleFor` knows (a rule without one is the API server's alone). Returns the
 * problems as `<field>: <detail>`, empty when valid. `metadata` is left to the API server. Pure.
 */
export function validateAgainstSchema(value: unknown, schema: Schema, path = ''): string[] {
  const at = (p: string) => p || '<root>';
  const out: string[] = [];
  const kind = schema['x-kubernetes-int-or-string'] ? 'int-or-string' : schema.type;
  const typeOk =
    kind === undefined ||
    (kind === 'object' && typeof value === 'object' && value !== null && !Array.isArray(value)) ||
    (kind === 'array' && Array.isArray(value)) ||
    (kind === 'string' && typeof value === 'string') ||
    (kind === 'integer' && Number.isInteger(value)) ||
    (kind === 'number' && typeof value === 'number') ||
    (kind === 'boolean' && typeof value === 'boolean') ||
    (kind === 'int-or-string' && (Number.isInteger(value) || typeof value === 'string'));
  if (!typeOk) return [`${at(path)}: must be of type ${kind}, got ${JSON.stringify(value)}`];
  if (schema.enum && !schema.enum.includes(value))
    out.push(`${at(path)}: must be one of ${schema.enum.map((v) => JSON.stringify(v)).join(', ')}, got ${JSON.stringify(value)}`);
  if (typeof value === 'string') {
    if (schema.maxLength !== undefined && value.length > schema.maxLength)
      out.push(`${at(path)}: may not be longer than ${schema.maxLength}`);
    if (schema.pattern !== undefined && !new RegExp(schema.pattern).test(value))
      out.push(`${at(path)}: should match '${schema.pattern}', got ${JSON.stringify(value)}`);
  }
  if (typeof value === 'number' && schema.minimum !== undefined && value < schema.minimum)
    out.push(`${at(path)}: should be greater than or equal to ${schema.minimum}`);
  if (Array.isArray(value)) {
    if (schema.maxItems !== undefined && value.length > schema.maxItems)
      out.push(`${at(path)}: must have at most ${schema.maxItems} items`);
    if (schema.items) value.forEach((v, i) => out.push(...validateAgainstSchema(v, schema.items!, `${path}[${i}]`)));
  }
  if (kind === 'object' && path !== 'metadata') {
    const obj = value as Record<string, unknown>;
    if (schema.maxProperties !== undefined && Object.keys(obj).length > schema.maxProperties)
      out.push(`${at(path)}: must have at most ${schema.maxProperties} items`);
    const open = schema.properties === undefined && schema.additionalProperties === undefined;
    for (const [k, v] of Object.entries(obj)) {
      const child = path ? `${path}.${k}` : k;
      const sub = schema.properties?.[k] ?? (typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined);
      if (sub) out.push(...validateAgainstSchema(v, sub, child));
      else if (!open && schema.additionalProperties !== true) out.push(`${child}: unknown field`);
    }
  }
  // CEL runs only on values that passed the schema, as on the API server.
  if (out.length) return out;
  for (const v of schema['x-kubernetes-validations'] ?? []) {
    const twin = schemaRuleFor(v);
    if (twin && !twin.holds(value)) out.push(`${at(path)}: Invalid value: ${JSON.stringify(value)}: ${twin.message}`);
  }
  return out;
}
