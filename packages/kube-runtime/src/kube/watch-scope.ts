// Whether an object is inside a watch's scope, and which of two versions of an object is older.
import type { KubeObject, Watch } from '@karpenter-operator/core/ports';

/** `a=b,c=d` from equality labels. */
export function labelSelectorString(labels: Record<string, string> | undefined): string | undefined {
  const entries = Object.entries(labels ?? {});
  if (entries.length === 0) return undefined;
  return entries
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

/**
 * Whether `obj` is inside the scope of `watch` (namespace, labels, and the `metadata.name` /
 * `metadata.namespace` field selectors). `undefined` when a field selector on another field makes it
 * impossible to tell locally.
 */
export function inScope(watch: Watch, obj: KubeObject): boolean | undefined {
  if (watch.namespace !== undefined && obj.metadata.namespace !== watch.namespace) return false;
  for (const [k, v] of Object.entries(watch.labels ?? {})) if (obj.metadata.labels?.[k] !== v) return false;
  if (!watch.fieldSelector) return true;
  for (const term of watch.fieldSelector
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean)) {
    const m = /^([^!=]+?)\s*(==|=|!=)\s*(.*)$/.exec(term);
    if (!m) return undefined;
    const [, field, op, value] = m as unknown as [string, string, string, string];
    let actual: string | undefined;
    if (field === 'metadata.name') actual = obj.metadata.name;
    else if (field === 'metadata.namespace') actual = obj.metadata.namespace ?? '';
    else return undefined;
    if ((op === '!=') === (actual === value)) return false;
  }
  return true;
}

const isDecimal = (s: string | undefined): s is string => s !== undefined && /^\d+$/.test(s);

/** True when `candidate` has a lower resourceVersion than `current` (both decimal; otherwise false). */
export function isOlder(candidate: KubeObject, current: KubeObject | undefined): boolean {
  const a = candidate.metadata.resourceVersion;
  const b = current?.metadata.resourceVersion;
  if (!isDecimal(a) || !isDecimal(b)) return false;
  return BigInt(a) < BigInt(b);
}
