import { InvalidInputError } from '../errors.js';
import type { KarpenterRequest, KarpenterSettings, LogLevel, OperandResources } from '../model/cluster.js';
import type { KubeObject } from '../model/kube.js';
import { Types } from '../model/kube.js';
import {
  karpenterFeatureGates,
  karpenterSpecRules,
  NON_NEGATIVE_QUANTITY_PATTERN,
  unknownFeatureGates,
  type SchemaRule,
} from '../policy/karpenter-settings.js';

const LEVELS: readonly LogLevel[] = ['debug', 'info', 'error'];

/** Decodes the `Karpenter` CR. The CRD validates too; this guards against an older or hand-edited schema. Pure. */
export function decodeKarpenter(obj: KubeObject): KarpenterRequest {
  const where = `Karpenter ${obj.metadata.name}`;
  if (!obj.metadata.uid) throw new InvalidInputError('KarpenterCheckFailed', where, 'metadata.uid', 'missing');
  const spec = obj.spec;
  if (spec !== undefined && (typeof spec !== 'object' || spec === null || Array.isArray(spec))) {
    throw new InvalidInputError('KarpenterCheckFailed', where, 'spec', 'must be an object');
  }
  const raw = (spec as Record<string, unknown> | undefined)?.logLevel ?? 'info';
  if (typeof raw !== 'string' || !LEVELS.includes(raw as LogLevel)) {
    throw new InvalidInputError(
      'KarpenterCheckFailed',
      where,
      'spec.logLevel',
      `must be one of ${LEVELS.join(', ')}, got ${JSON.stringify(raw)}`,
    );
  }
  const req: KarpenterRequest = {
    owner: { ...Types.Karpenter, name: obj.metadata.name, uid: obj.metadata.uid },
    generation: obj.metadata.generation ?? 1,
    logLevel: raw as LogLevel,
    ...decodeSettings(spec as Record<string, unknown> | undefined, where),
    deleting: Boolean(obj.metadata.deletionTimestamp),
    finalizers: obj.metadata.finalizers ?? [],
  };
  if (obj.metadata.resourceVersion) req.resourceVersion = obj.metadata.resourceVersion;
  if (obj.metadata.deletionTimestamp) {
    const t = Date.parse(obj.metadata.deletionTimestamp);
    if (!Number.isNaN(t)) req.deletionRequestedAtMs = t;
  }
  return req;
}

type Spec = Record<string, unknown>;
const isMap = (v: unknown): v is Spec => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * `spec.replicas`, `spec.resources` and `spec.settings`, checked with the same rules the CRD carries
 * (an older CRD or a hand-edited schema may have let something through). Throws `InvalidInputError`
 * naming the field. Pure.
 */
function decodeSettings(spec: Spec | undefined, where: string): Pick<KarpenterRequest, 'replicas' | 'resources' | 'settings'> {
  const out: Pick<KarpenterRequest, 'replicas' | 'resources' | 'settings'> = {};
  const bad = (field: string, detail: string) => new InvalidInputError('KarpenterCheckFailed', where, field, detail);
  const check = (field: string, value: unknown, rule: SchemaRule) => {
    if (!rule.holds(value)) throw bad(field, `${rule.message}, got ${JSON.stringify(value)}`);
  };
  if (!spec) return out;
  if (spec.replicas !== undefined) {
    check('spec.replicas', spec.replicas, karpenterSpecRules.replicas);
    out.replicas = spec.replicas as number;
  }
  if (spec.resources !== undefined) {
    if (!isMap(spec.resources)) throw bad('spec.resources', 'must be an object with requests and limits');
    const resources: OperandResources = {};
    for (const [k, list] of Object.entries(spec.resources)) {
      if (k !== 'requests' && k !== 'limits') throw bad(`spec.resources.${k}`, 'unknown field: only requests and limits');
      if (!isMap(list)) throw bad(`spec.resources.${k}`, 'must be a map of resource name to quantity');
      for (const [name, q] of Object.entries(list)) {
        const ok = (typeof q === 'number' && q >= 0) || (typeof q === 'string' && new RegExp(NON_NEGATIVE_QUANTITY_PATTERN).test(q));
        if (!ok)
          throw bad(`spec.resources.${k}.${name}`, `must be a non-negative quantity such as 500m, 1 or 1Gi, got ${JSON.stringify(q)}`);
      }
      resources[k] = { ...(list as Record<string, string | number>) };
    }
    out.resources = resources;
  }
  if (spec.settings !== undefined) {
    if (!isMap(spec.settings)) throw bad('spec.settings', 'must be an object');
    const s = spec.settings;
    const settings: KarpenterSettings = {};
    for (const [k, v] of Object.entries(s)) {
      const field = `spec.settings.${k}`;
      switch (k) {
        case 'batchIdleDuration':
        case 'batchMaxDuration':
        case 'interruptionQueue':
          check(field, v, karpenterSpecRules[k]);
          settings[k] = v as string;
          break;
        case 'vmMemoryOverheadPercent':
        case 'reservedENIs':
          check(field, v, karpenterSpecRules[k]);
          settings[k] = v as number;
          break;
        case 'featureGates':
          if (!isMap(v) || Object.values(v).some((g) => typeof g !== 'boolean'))
            throw bad(field, 'must be a map of gate name to true or false');
          if (unknownFeatureGates(v).length)
            throw bad(
              field,
              `unknown feature gate ${unknownFeatureGates(v).join(', ')}; Karpenter v1.14.1 knows ${karpenterFeatureGates.join(', ')}`,
            );
          settings.featureGates = { ...(v as Record<string, boolean>) };
          break;
        default:
          throw bad(field, 'unknown field');
      }
    }
    out.settings = settings;
  }
  return out;
}
