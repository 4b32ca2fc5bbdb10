import type { KarpenterRequest, KarpenterSettings, OperandResources } from '../model/cluster.js';
import { Types, type KubeObject } from '../model/kube.js';

/**
 * Karpenter's feature gates as the pinned karpenter (v1.14.1) parses `FEATURE_GATES`
 * (`sigs.k8s.io/karpenter/pkg/operator/options`); a gate it does not know would be ignored there, so the
 * CRD refuses it instead.
 */
export const karpenterFeatureGates = [
  'NodeRepair',
  'ReservedCapacity',
  'SpotToSpotConsolidation',
  'NodeOverlay',
  'StaticCapacity',
  'CapacityBuffer',
] as const;
export type KarpenterFeatureGate = (typeof karpenterFeatureGates)[number];

/**
 * A validation of the Karpenter CRD: the CEL rule and message the API server evaluates, and the same
 * check in TypeScript for the decoder and for `render`, which validates offline.
 */
export interface SchemaRule {
  rule: string;
  message: string;
  holds(value: unknown): boolean;
}

// Go's time.ParseDuration syntax (what Karpenter reads these env vars with), without signs or a bare 0.
const DURATION = '^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$';
const DURATION_UNITS_NS: Record<string, number> = { ns: 1, us: 1e3, µs: 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 };

/** Nanoseconds of a Go duration string, or undefined when it is not one `DURATION` accepts. Pure. */
export function parseDurationNs(s: string): number | undefined {
  if (!new RegExp(DURATION).test(s)) return undefined;
  let total = 0;
  for (const m of s.matchAll(/([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)/g))
    total += Number(m[1]) * (DURATION_UNITS_NS[m[2] as string] as number);
  return total;
}

/** A Kubernetes resource quantity (`500m`, `1Gi`, `2`, `1e3`). */
export const QUANTITY = /^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:([eE][+-]?[0-9]+)|(n|u|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei))?$/;
/**
 * The CRD's `pattern` for a request or limit: a quantity without a sign. A pattern, not a CEL rule: a
 * map's keys and an int-or-string value have no length bound, which CEL's cost estimate refuses.
 */
export const NON_NEGATIVE_QUANTITY_PATTERN = '^([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][+-]?[0-9]+|n|u|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$';

/**
 * The feature gates set in `gates` that the pinned Karpenter does not know. The CRD lists the known ones
 * as properties, so the API server refuses others under strict field validation (kubectl's default).
 */
export function unknownFeatureGates(gates: Record<string, unknown>): string[] {
  return Object.keys(gates).filter((k) => !(karpenterFeatureGates as readonly string[]).includes(k));
}

// SQS queue names: 1 to 80 letters, digits, hyphens and underscores (Karpenter looks the URL up by name).
const QUEUE_NAME = '^[A-Za-z0-9_-]{1,80}$';

const fixed = (rule: string, message: string, holds: (v: unknown) => boolean): SchemaRule => ({ rule, message, holds });

const durationRule = (field: string, example: string): SchemaRule =>
  fixed(
    `self.matches('${DURATION}') && duration(self) > duration('0s')`,
    `${field} must be a positive duration such as ${example}, 500ms or 1m30s`,
    (v) => {
      const ns = typeof v === 'string' ? parseDurationNs(v) : undefined;
      return ns !== undefined && ns > 0;
    },
  );

/** The CEL rules of the Karpenter CRD's spec fields, by field. */
export const karpenterSpecRules = {
  replicas: fixed('self >= 1', 'spec.replicas must be at least 1', (v) => typeof v === 'number' && Number.isInteger(v) && v >= 1),
  batchIdleDuration: durationRule('spec.settings.batchIdleDuration', '1s'),
  batchMaxDuration: durationRule('spec.settings.batchMaxDuration', '10s'),
  interruptionQueue: fixed(
    `self == '' || self.matches('${QUEUE_NAME}')`,
    'spec.settings.interruptionQueue must be an SQS queue name (up to 80 letters, digits, hyphens or underscores, not a URL), or empty',
    (v) => typeof v === 'string' && (v === '' || new RegExp(QUEUE_NAME).test(v)),
  ),
  vmMemoryOverheadPercent: fixed(
    'self >= 0.0 && self < 1.0',
    'spec.settings.vmMemoryOverheadPercent must be a fraction from 0 up to (not including) 1, such as 0.075',
    (v) => typeof v === 'number' && v >= 0 && v < 1,
  ),
  reservedENIs: fixed(
    'self >= 0',
    'spec.settings.reservedENIs must not be negative',
    (v) => typeof v === 'number' && Number.isInteger(v) && v >= 0,
  ),
} satisfies Record<string, SchemaRule>;

/** A rule above by its CEL text and message: how `render` finds the TypeScript check for a rule of the schema. */
export function schemaRuleFor(v: { rule: string; message?: string }): SchemaRule | undefined {
  return Object.values(karpenterSpecRules).find((r) => r.rule === v.rule && r.message === v.message);
}

type EnvVar = { name: string; value: string };

/** What the CR's settings make of the operand's controller container and Deployment. */
export interface OperandSettingsRender {
  /** Env vars for the settings that are set (Karpenter's defaults apply to the rest). */
  env: EnvVar[];
  /** `spec.replicas`, when set. */
  replicas?: number;
  /** The container's resources, when `spec.resources` is set (it replaces the default whole). */
  resources?: OperandResources;
}

/** `NodeRepair=true,ReservedCapacity=false`: the gates set, in Karpenter's order; undefined when none. Pure. */
export function featureGatesValue(gates: KarpenterSettings['featureGates']): string | undefined {
  if (!gates) return undefined;
  const set = karpenterFeatureGates.filter((g) => gates[g] !== undefined).map((g) => `${g}=${String(gates[g])}`);
  return set.length ? set.join(',') : undefined;
}

/**
 * The CR's `spec.replicas`, `spec.resources` and `spec.settings` as the operand takes them: each setting
 * that is set becomes the env var karpenter-provider-aws v1.14.1 reads it from (`BATCH_IDLE_DURATION`,
 * `BATCH_MAX_DURATION`, `FEATURE_GATES`, `INTERRUPTION_QUEUE`, `VM_MEMORY_OVERHEAD_PERCENT`,
 * `RESERVED_ENIS`); unset ones are left out so Karpenter's own defaults apply. Resource quantities are
 * written in the API server's canonical form, so an applied Deployment compares equal. Pure.
 */
export function operandSettings(request: Pick<KarpenterRequest, 'replicas' | 'resources' | 'settings'>): OperandSettingsRender {
  const s = request.settings ?? {};
  const env: EnvVar[] = [];
  const put = (name: string, value: string | number | undefined) => {
    if (value !== undefined) env.push({ name, value: String(value) });
  };
  put('BATCH_IDLE_DURATION', s.batchIdleDuration);
  put('BATCH_MAX_DURATION', s.batchMaxDuration);
  put('FEATURE_GATES', featureGatesValue(s.featureGates));
  // Empty turns interruption handling off, as Karpenter's own default does: nothing to say then.
  put('INTERRUPTION_QUEUE', s.interruptionQueue || undefined);
  put('VM_MEMORY_OVERHEAD_PERCENT', s.vmMemoryOverheadPercent);
  put('RESERVED_ENIS', s.reservedENIs);
  const out: OperandSettingsRender = { env };
  if (request.replicas !== undefined) out.replicas = request.replicas;
  if (request.resources) {
    const resources: OperandResources = {};
    for (const k of ['requests', 'limits'] as const) {
      const list = request.resources[k];
      if (list && Object.keys(list).length)
        resources[k] = Object.fromEntries(Object.entries(list).map(([name, q]) => [name, canonicalQuantity(q)]));
    }
    out.resources = resources;
  }
  return out;
}

/**
 * PodDisruptionBudget for an operand Deployment of more than one replica (the chart's `maxUnavailable: 1`):
 * a drain of the control-plane nodes keeps one Karpenter up while the leader moves. Undefined for one
 * replica, where it would only block drains. Same name, namespace and selector as the Deployment. Pure.
 */
export function operandDisruptionBudget(deployment: KubeObject): KubeObject | undefined {
  const spec = deployment.spec as { replicas?: number; selector?: { matchLabels?: Record<string, string> } } | undefined;
  if ((spec?.replicas ?? 1) <= 1) return undefined;
  return {
    ...Types.PodDisruptionBudget,
    metadata: { name: deployment.metadata.name, ...(deployment.metadata.namespace ? { namespace: deployment.metadata.namespace } : {}) },
    spec: { maxUnavailable: 1, selector: { matchLabels: { ...spec?.selector?.matchLabels } } },
  };
}

const DECIMAL_SUFFIX: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BINARY_SUFFIX: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };

/**
 * A quantity as the API server stores it (resource.Quantity's canonical form): `1000m` → `1`, `1.5` →
 * `1500m`, `1024Mi` → `1Gi`, `0.5Gi` → `512Mi`, `1000` → `1k`; fractions below a nano round up. Throws
 * on a string that is not a quantity (the CRD refuses those first). Pure.
 */
export function canonicalQuantity(q: string | number): string {
  const text = String(q).trim();
  const m = QUANTITY.exec(text);
  if (!m) throw new Error(`not a quantity: ${JSON.stringify(q)}`);
  const [, num = '0', exp, suffix = ''] = m;
  const negative = num.startsWith('-');
  const [whole = '', frac = ''] = num.replace(/^[+-]/, '').split('.');
  // value = digits × 10^scale × 2^bin
  let digits = BigInt(`${whole}${frac}` || '0');
  let scale = -frac.length + (exp ? Number(exp.slice(1)) : (DECIMAL_SUFFIX[suffix] ?? 0));
  const bin = BINARY_SUFFIX[suffix] ?? 0;
  const format = exp ? 'exponent' : bin ? 'binary' : 'decimal';
  if (digits === 0n) return '0';
  // In nanos, rounded up as resource.Quantity does.
  let nanos: bigint;
  if (bin) {
    const scaled = digits * 2n ** BigInt(bin);
    nanos = scale + 9 >= 0 ? scaled * 10n ** BigInt(scale + 9) : ceilDiv(scaled, 10n ** BigInt(-(scale + 9)));
  } else {
    nanos = scale + 9 >= 0 ? digits * 10n ** BigInt(scale + 9) : ceilDiv(digits, 10n ** BigInt(-(scale + 9)));
  }
  const sign = negative ? '-' : '';
  const NANO = 10n ** 9n;
  if (format === 'binary' && nanos % NANO === 0n && nanos / NANO >= 1024n) {
    let v = nanos / NANO;
    let i = 0;
    const names = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];
    while (i < 6 && v % 1024n === 0n) {
      v /= 1024n;
      i++;
    }
    return `${sign}${v}${names[i]}`;
  }
  // Decimal: the largest exponent (a multiple of 3, -9 to 18) that keeps the mantissa whole.
  digits = nanos;
  scale = -9;
  while (scale < 18 && digits % 1000n === 0n) {
    digits /= 1000n;
    scale += 3;
  }
  if (format === 'exponent') return `${sign}${digits}${scale === 0 ? '' : `e${scale}`}`;
  const suffixOf = Object.entries(DECIMAL_SUFFIX).find(([, e]) => e === scale)?.[0] ?? '';
  return `${sign}${digits}${suffixOf}`;
}

/**
 * The value of a quantity as a number (`3500m` → 3.5, `1Ki` → 1024, `2e1` → 20), for sums and roundings
 * where resource.Quantity's exactness does not matter; undefined when it is not a quantity. Pure.
 */
export function quantityValue(q: string | number): number | undefined {
  if (typeof q === 'number') return Number.isFinite(q) ? q : undefined;
  const m = QUANTITY.exec(q.trim());
  if (!m) return undefined;
  const [, num = '0', exp, suffix = ''] = m;
  if (exp) return Number(`${num}${exp}`);
  return Number(num) * 10 ** (DECIMAL_SUFFIX[suffix] ?? 0) * 2 ** (BINARY_SUFFIX[suffix] ?? 0);
}

function ceilDiv(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b;
}
