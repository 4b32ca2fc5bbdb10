/**
 * A small structural validator for CRD openAPIV3Schemas, for unit tests: types, enums, patterns,
 * required, min/maxItems, maxProperties, min/max, maxLength, typed maps, and unknown fields (which the API
 * server would prune silently). CEL rules are not evaluated here; `ec2NodeClassCelChecks` mirrors the ones
 * the default NodeClass can trip, and the integration tests apply objects to a real API server.
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';

export interface Schema {
  type?: string;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  items?: Schema;
  required?: string[];
  enum?: unknown[];
  pattern?: string;
  maxItems?: number;
  minItems?: number;
  maxProperties?: number;
  maxLength?: number;
  minLength?: number;
  minimum?: number;
  maximum?: number;
  format?: string;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
}

export const KARPENTER_AWS_CRDS_DIR = join(
  process.env.GOMODCACHE ?? join(homedir(), 'go', 'pkg', 'mod'),
  'github.com/aws/karpenter-provider-aws@v1.14.1/pkg/apis/crds',
);

export function crdSchema(file: string, version = 'v1'): Schema {
  const crd = parse(readFileSync(join(KARPENTER_AWS_CRDS_DIR, file), 'utf8')) as {
    spec: { versions: Array<{ name: string; schema: { openAPIV3Schema: Schema } }> };
  };
  const v = crd.spec.versions.find((x) => x.name === version);
  if (!v) throw new Error(`${file} has no version ${version}`);
  return v.schema.openAPIV3Schema;
}

const typeOf = (v: unknown): string => {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
};

/** Returns `path: problem` strings; empty when `value` conforms. */
export function validateSchema(schema: Schema, value: unknown, path = ''): string[] {
  const errs: string[] = [];
  const at = path || '<root>';
  if (schema['x-kubernetes-int-or-string']) {
    if (typeof value !== 'string' && !Number.isInteger(value)) errs.push(`${at}: expected int-or-string`);
    return errs;
  }
  const t = typeOf(value);
  if (schema.type) {
    const ok = schema.type === t || (schema.type === 'number' && t === 'integer');
    if (!ok) return [`${at}: expected ${schema.type}, got ${t}`];
  }
  if (schema.enum && !schema.enum.includes(value)) errs.push(`${at}: ${JSON.stringify(value)} not in enum ${JSON.stringify(schema.enum)}`);
  if (typeof value === 'string') {
    // Go's RE2 and JavaScript agree on the patterns the Karpenter CRDs use.
    if (schema.pattern && !new RegExp(schema.pattern).test(value))
      errs.push(`${at}: ${JSON.stringify(value)} does not match ${schema.pattern}`);
    if (schema.maxLength !== undefined && value.length > schema.maxLength) errs.push(`${at}: longer than ${schema.maxLength}`);
    if (schema.minLength !== undefined && value.length < schema.minLength) errs.push(`${at}: shorter than ${schema.minLength}`);
  }
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) errs.push(`${at}: below minimum ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) errs.push(`${at}: above maximum ${schema.maximum}`);
    if (schema.format === 'int32' && (value > 2 ** 31 - 1 || value < -(2 ** 31))) errs.push(`${at}: not an int32`);
  }
  if (Array.isArray(value)) {
    if (schema.maxItems !== undefined && value.length > schema.maxItems) errs.push(`${at}: more than ${schema.maxItems} items`);
    if (schema.minItems !== undefined && value.length < schema.minItems) errs.push(`${at}: fewer than ${schema.minItems} items`);
    if (schema.items) value.forEach((v, i) => errs.push(...validateSchema(schema.items!, v, `${path}[${i}]`)));
  }
  if (t === 'object') {
    const obj = value as Record<string, unknown>;
    for (const r of schema.required ?? []) if (!(r in obj)) errs.push(`${at}: missing required ${r}`);
    if (schema.maxProperties !== undefined && Object.keys(obj).length > schema.maxProperties)
      errs.push(`${at}: more than ${schema.maxProperties} properties`);
    for (const [k, v] of Object.entries(obj)) {
      const sub = `${path ? `${path}.` : ''}${k}`;
      const prop = schema.properties?.[k];
      if (prop) errs.push(...validateSchema(prop, v, sub));
      else if (typeof schema.additionalProperties === 'object') errs.push(...validateSchema(schema.additionalProperties, v, sub));
      else if (schema.properties && !schema['x-kubernetes-preserve-unknown-fields'] && path !== 'metadata')
        errs.push(`${sub}: unknown field`);
    }
  }
  return errs;
}

type Spec = Record<string, unknown>;
const terms = (spec: Spec, key: string): Array<Record<string, unknown>> =>
  Array.isArray(spec[key]) ? (spec[key] as Array<Record<string, unknown>>) : [];
const has = (o: Record<string, unknown>, k: string): boolean => o[k] !== undefined;

/**
 * JavaScript equivalents of the EC2NodeClass CEL rules (karpenter-provider-aws v1.14.1) that apply to
 * what the operator renders. Not evaluated here: the alias format/family rules (the operator never
 * writes aliases), capacityReservationSelectorTerms, networkInterfaces, placementGroupSelector,
 * connectionTracking and the kubelet evictionSoft/imageGC pairing rules (the operator sets none of them).
 */
export function ec2NodeClassCelChecks(spec: Spec): string[] {
  const errs: string[] = [];
  // (has(self.role) && !has(self.instanceProfile)) || (!has(self.role) && has(self.instanceProfile))
  if (has(spec, 'role') === has(spec, 'instanceProfile')) errs.push("spec: must specify exactly one of ['role', 'instanceProfile']");
  // instanceProfile / role: self != ''
  if (spec.instanceProfile === '' || spec.role === '') errs.push('spec: instanceProfile/role cannot be empty');
  const ami = terms(spec, 'amiSelectorTerms');
  // self.all(x, has(x.tags) || has(x.id) || has(x.name) || has(x.alias) || has(x.ssmParameter))
  if (!ami.every((x) => ['tags', 'id', 'name', 'alias', 'ssmParameter'].some((k) => has(x, k))))
    errs.push('spec.amiSelectorTerms: empty term');
  // !self.exists(x, has(x.id) && (has(x.alias) || has(x.tags) || has(x.name) || has(x.owner)))
  if (ami.some((x) => has(x, 'id') && ['alias', 'tags', 'name', 'owner'].some((k) => has(x, k))))
    errs.push("spec.amiSelectorTerms: 'id' is mutually exclusive");
  // self.amiSelectorTerms.exists(x, has(x.alias)) ? true : has(self.amiFamily)
  if (!ami.some((x) => has(x, 'alias')) && !has(spec, 'amiFamily'))
    errs.push('spec: must specify amiFamily if amiSelectorTerms does not contain an alias');
  for (const key of ['subnetSelectorTerms', 'securityGroupSelectorTerms']) {
    const ts = terms(spec, key);
    // self.size() != 0
    if (!ts.length) errs.push(`spec.${key}: cannot be empty`);
    // self.all(x, has(x.tags) || has(x.id) [|| has(x.name)])
    if (!ts.every((x) => has(x, 'tags') || has(x, 'id') || (key !== 'subnetSelectorTerms' && has(x, 'name'))))
      errs.push(`spec.${key}: empty term`);
    // '!self.all(x, has(x.id) && has(x.tags))' (sic: upstream uses all, not exists)
    if (ts.length && ts.every((x) => has(x, 'id') && (has(x, 'tags') || has(x, 'name'))))
      errs.push(`spec.${key}: 'id' is mutually exclusive`);
  }
  // tags: self.all(k, k != '' && self[k] != '') on every selector-term tag map
  for (const key of ['amiSelectorTerms', 'subnetSelectorTerms', 'securityGroupSelectorTerms']) {
    for (const t of terms(spec, key)) {
      const tags = (t.tags ?? {}) as Record<string, string>;
      if (Object.entries(tags).some(([k, v]) => k === '' || v === '')) errs.push(`spec.${key}: empty tag keys or values`);
    }
  }
  // spec.tags rules: no '', eks:eks-cluster-name, kubernetes.io/cluster*, karpenter.sh/nodepool|nodeclaim, karpenter.k8s.aws/ec2nodeclass
  for (const k of Object.keys((spec.tags ?? {}) as Record<string, string>)) {
    if (
      k === '' ||
      k === 'eks:eks-cluster-name' ||
      k.startsWith('kubernetes.io/cluster') ||
      k === 'karpenter.sh/nodepool' ||
      k === 'karpenter.sh/nodeclaim' ||
      k === 'karpenter.k8s.aws/ec2nodeclass'
    ) {
      errs.push(`spec.tags: restricted tag ${k}`);
    }
  }
  const bdm = terms(spec, 'blockDeviceMappings');
  // self.filter(x, has(x.rootVolume)?x.rootVolume==true:false).size() <= 1
  if (bdm.filter((x) => x.rootVolume === true).length > 1) errs.push('spec.blockDeviceMappings: more than one root volume');
  for (const b of bdm) {
    const ebs = (b.ebs ?? {}) as Record<string, unknown>;
    // has(self.snapshotID) || has(self.volumeSize)
    if (b.ebs && !has(ebs, 'snapshotID') && !has(ebs, 'volumeSize'))
      errs.push('spec.blockDeviceMappings: snapshotID or volumeSize must be defined');
  }
  return errs;
}
