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
    return Object.entries(desired as Record<string, unknown>).every(([k, v]) => v === undefined || isSubset(v, cur[k]));
  }
  return desired === current;
}

/** Structural equality of JSON values, key order ignored. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  return isSubset(a, b) && isSubset(b, a);
}

/**
 * A field the writer owns as a whole value, as a dotted path into the object: `spec.nodeSelector`,
 * `spec.template.spec.containers`, or `spec.template.spec.containers[].env` (`[]`: every element of that
 * list, paired with the desired element of the same `name`). At such a path an entry of the current
 * object that the desired object lacks (a map key, a list element) is foreign and must go; `isSubset`
 * alone would call it "already applied".
 */
export type OwnedPath = string;

/** The paths of a label selector, owned whole: extra keys or expressions change what it selects. */
export function wholeSelector(path: string): OwnedPath[] {
  return [path, `${path}.matchLabels`, `${path}.matchExpressions`];
}

/**
 * A value owned whole at every depth: `path` itself, and below it every map (by its dotted path) and every
 * list (by its path, and its elements by `path[]`) found in any of `values` (typically the desired and the
 * current object). With these paths owned, a map key, a list element or a scalar found in the current
 * object and not in the desired one, however deep, is foreign (`foreignEntries`). Pure.
 */
export function wholeTree(path: string, ...values: unknown[]): OwnedPath[] {
  const out = new Set<string>();
  const at = (v: unknown, segs: string[]): unknown[] => {
    if (!segs.length) return [v];
    const [seg, ...rest] = segs as [string, ...string[]];
    const each = seg.endsWith('[]');
    const child = asMap(v)?.[each ? seg.slice(0, -2) : seg];
    if (!each) return at(child, rest);
    return Array.isArray(child) ? child.flatMap((e) => at(e, rest)) : [];
  };
  const walk = (p: string, found: unknown[]): void => {
    out.add(p);
    const maps = found.map(asMap).filter((m): m is Record<string, unknown> => m !== undefined);
    for (const key of new Set(maps.flatMap((m) => Object.keys(m)))) {
      const children = maps.map((m) => m[key]);
      // A scalar is covered by its map's path; a key with a dot cannot be named in a path (its map owns it whole).
      if (!key.includes('.') && children.some((c) => typeof c === 'object' && c !== null)) walk(`${p}.${key}`, children);
    }
    const elements = found.flatMap((v) => (Array.isArray(v) ? v : []));
    if (elements.some((e) => asMap(e) !== undefined)) walk(`${p}[]`, elements);
  };
  walk(
    path,
    values.flatMap((v) => at(v, path.split('.'))),
  );
  return [...out];
}

/**
 * The entries of `current` under the `owned` paths that `desired` does not have, named by path
 * (`spec.nodeSelector.matchLabels.team`, `spec.template.spec.containers[sidecar]`, `spec.detailedMonitoring`
 * for a scalar). List elements pair by `name`, else `mountPath`, else as the desired element being a subset
 * of the current one (server defaults aside). Empty when nothing foreign is there. Pure.
 */
export function foreignEntries(desired: unknown, current: unknown, owned: readonly OwnedPath[]): string[] {
  const out: string[] = [];
  for (const path of owned) visit(desired, current, path.split('.'), '', out);
  // An entry inside one already named foreign is not named again.
  const all = [...new Set(out)];
  return all.filter((e) => !all.some((p) => p !== e && (e.startsWith(`${p}.`) || e.startsWith(`${p}[`))));
}

/** True when applying `desired` would change nothing: `isSubset`, and no foreign entry under `owned`. Pure. */
export function isApplied(desired: unknown, current: unknown, owned: readonly OwnedPath[] = []): boolean {
  return isSubset(desired, current) && foreignEntries(desired, current, owned).length === 0;
}

/**
 * A JSON merge patch that makes `current` equal to `desired` at the `owned` paths, foreign entries
 * included: `desired` with `null` for every foreign map key. Lists need nothing more, since a merge patch
 * replaces a list whole; an owned path below a list (`containers[].env`) is covered by the list's
 * replacement. Used instead of server-side apply when foreign entries are there, because apply never
 * removes a field another manager owns. Pure.
 */
export function replacingPatch<T>(desired: T, current: unknown, owned: readonly OwnedPath[]): T {
  const patch = structuredClone(desired) as unknown;
  for (const path of owned) {
    const segs = path.split('.');
    if (segs.some((s) => s.endsWith('[]'))) continue;
    let d = patch as Record<string, unknown>;
    let c: unknown = current;
    for (const [i, seg] of segs.entries()) {
      c = asMap(c)?.[seg];
      if (c === undefined || c === null) break;
      const last = i === segs.length - 1;
      const next = d[seg];
      if (next === undefined) {
        // The desired object lacks the whole value: remove it.
        d[seg] = null;
        break;
      }
      if (!asMap(next)) break; // a list or scalar is replaced whole by the merge patch
      if (last) {
        const want = next as Record<string, unknown>;
        for (const k of Object.keys(asMap(c) ?? {})) if (want[k] === undefined) want[k] = null;
      }
      d = next as Record<string, unknown>;
    }
  }
  return patch as T;
}

function asMap(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

function elementKey(v: unknown): string | undefined {
  const m = asMap(v);
  if (typeof m?.name === 'string') return m.name;
  if (typeof m?.mountPath === 'string') return m.mountPath;
  return undefined;
}

function partnerOf(list: unknown[], element: unknown): unknown {
  const key = elementKey(element);
  return key !== undefined ? list.find((d) => elementKey(d) === key) : list.find((d) => isSubset(d, element));
}

function labelOf(element: unknown, index: number): string {
  return elementKey(element) ?? String(index);
}

function visit(desired: unknown, current: unknown, segs: string[], at: string, out: string[]): void {
  if (segs.length === 0) {
    // An owned scalar the desired object leaves out: the value itself is foreign.
    if (desired === undefined && current !== undefined && current !== null && typeof current !== 'object') {
      out.push(at);
      return;
    }
    if (Array.isArray(current)) {
      const want = Array.isArray(desired) ? desired : [];
      current.forEach((c, i) => {
        if (partnerOf(want, c) === undefined) out.push(`${at}[${labelOf(c, i)}]`);
      });
      return;
    }
    const cur = asMap(current);
    if (!cur) return;
    const want = asMap(desired) ?? {};
    for (const k of Object.keys(cur)) if (want[k] === undefined) out.push(`${at}.${k}`);
    return;
  }
  const [seg, ...rest] = segs as [string, ...string[]];
  const each = seg.endsWith('[]');
  const name = each ? seg.slice(0, -2) : seg;
  const here = at ? `${at}.${name}` : name;
  const d = asMap(desired)?.[name];
  const c = asMap(current)?.[name];
  if (!each) {
    visit(d, c, rest, here, out);
    return;
  }
  if (!Array.isArray(c)) return;
  const want = Array.isArray(d) ? d : [];
  c.forEach((element, i) => {
    const partner = partnerOf(want, element);
    // An element without a desired partner is foreign as a whole (reported at the list's own path).
    if (partner !== undefined) visit(partner, element, rest, `${here}[${labelOf(element, i)}]`, out);
  });
}
