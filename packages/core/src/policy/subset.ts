/**
 * True when every field set in `desired` has the same value in `current`: the test for "applying
 * `desired` would change nothing". Arrays compare element-wise and must have the same length (server-side
 * apply replaces atomic lists and merges keyed lists; both end equal to desired only when lengths match).
 * `null` in desired means "absent" in current (merge-patch semantics). Pure.
 */
export function isSubset(desired: unknown, current: unknown): boolean {
  if (desired === null) return current === null || current === undefined;
  if (Array.isArray(desired)) {
    if (!Array.isArray(current) || current.length !== desired.length) return false;
    return desired.every((d, i) => isSubset(d, current[i]));
  }
  if (typeof desired === 'object' && desired !== undefined) {
    if (typeof current !== 'object' || current === null || Array.isArray(current)) return false;
    const cur = current as Record<string, unknown>;
    return Object.entries(desired as Record<string, unknown>).every(
      ([k, v]) => v === undefined || isSubset(v, cur[k]),
    );
  }
  return desired === current;
}

/** Structural equality of JSON values, key order ignored. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  return isSubset(a, b) && isSubset(b, a);
}
