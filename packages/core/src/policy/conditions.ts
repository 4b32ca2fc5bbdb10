import type { Condition } from '../model/kube.js';

export type ConditionInput = Omit<Condition, 'lastTransitionTime'>;

/**
 * Sets `next` in `list`, keeping `lastTransitionTime` unless the status changes. Pure.
 * `changed` is false when the list already says exactly this.
 */
export function setCondition(
  list: readonly Condition[],
  next: ConditionInput,
  nowIso: string,
): { conditions: Condition[]; changed: boolean } {
  const current = list.find((c) => c.type === next.type);
  const lastTransitionTime = current && current.status === next.status ? current.lastTransitionTime : nowIso;
  const merged: Condition = { ...next, lastTransitionTime };
  if (merged.observedGeneration === undefined) delete merged.observedGeneration;
  if (current && conditionEquals(current, merged)) return { conditions: [...list], changed: false };
  const conditions = current ? list.map((c) => (c.type === next.type ? merged : c)) : [...list, merged];
  return { conditions, changed: true };
}

/** Applies several conditions in order. */
export function setConditions(
  list: readonly Condition[],
  next: readonly ConditionInput[],
  nowIso: string,
): { conditions: Condition[]; changed: boolean } {
  let conditions = [...list];
  let changed = false;
  for (const c of next) {
    const r = setCondition(conditions, c, nowIso);
    conditions = r.conditions;
    changed = changed || r.changed;
  }
  return { conditions, changed };
}

export function findCondition(list: readonly Condition[] | undefined, type: string): Condition | undefined {
  return list?.find((c) => c.type === type);
}

function conditionEquals(a: Condition, b: Condition): boolean {
  return (
    a.type === b.type &&
    a.status === b.status &&
    a.reason === b.reason &&
    a.message === b.message &&
    a.lastTransitionTime === b.lastTransitionTime &&
    a.observedGeneration === b.observedGeneration
  );
}
