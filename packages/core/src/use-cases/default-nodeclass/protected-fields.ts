import type { KubeObject } from '../../model/kube.js';
import { sameUserData, rewriteIgnitionPool } from '../../policy/ignition.js';
import { jsonEqual } from '../../policy/subset.js';

/** True when two lists hold the same elements as sets (order and duplicates ignored). Pure. */
export function sameAsSets(a: unknown, b: unknown): boolean {
  if (!Array.isArray(a) || !Array.isArray(b)) return false;
  return a.every((x) => b.some((y) => jsonEqual(x, y))) && b.every((y) => a.some((x) => jsonEqual(x, y)));
}

/**
 * The partial object that puts the release-owned `protectedSpec` fields on `current`, or `undefined` when
 * they already mean the same: userData compared as JSON (after pointing it at `pool`, when given), lists as
 * sets, anything else structurally. Values already equal in meaning are sent back exactly as they are, so
 * the apply changes only what differs and never rewrites an equal value (which would drift every node). Pure.
 */
export function protectedFieldsPatch(
  current: KubeObject,
  protectedSpec: Record<string, unknown>,
  pool: string | undefined,
): KubeObject | undefined {
  const spec = (current.spec ?? {}) as Record<string, unknown>;
  const desired: Record<string, unknown> = {};
  let differs = false;
  for (const [field, want] of Object.entries(protectedSpec)) {
    const have = spec[field];
    let same: boolean;
    let value = want;
    if (field === 'userData' && typeof want === 'string') {
      value = pool ? rewriteIgnitionPool(want, pool) : want;
      same = typeof have === 'string' && sameUserData(have, value as string);
    } else if (Array.isArray(want)) {
      same = sameAsSets(have, want);
    } else {
      same = jsonEqual(have, want);
    }
    desired[field] = same ? have : value;
    differs ||= !same;
  }
  if (!differs) return undefined;
  return { apiVersion: current.apiVersion, kind: current.kind, metadata: { name: current.metadata.name }, spec: desired };
}
