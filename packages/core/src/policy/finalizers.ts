/**
 * The merge patch that sets an object's finalizer list. The list is replaced whole, so the patch carries the
 * `resourceVersion` it was read at: the API server applies it only over that version (409 Conflict
 * otherwise, and the caller retries with fresh state), so a finalizer another controller added or removed
 * meanwhile is never undone. Pure.
 */
export function finalizersPatch(finalizers: readonly string[], resourceVersion: string | undefined, what: string): Record<string, unknown> {
  if (!resourceVersion) throw new Error(`${what}: no resourceVersion to write its finalizers over`);
  return { metadata: { finalizers: [...finalizers], resourceVersion } };
}

/** Finalizers to add (appended when absent) and to remove. */
export interface FinalizerChange {
  add?: readonly string[];
  remove?: readonly string[];
}

/** The finalizer list after `change`, or undefined when it already is so (nothing to write). Order is kept. Pure. */
export function finalizersAfter(current: readonly string[], change: FinalizerChange): string[] | undefined {
  const remove = new Set(change.remove ?? []);
  const next = current.filter((f) => !remove.has(f));
  for (const f of change.add ?? []) if (!next.includes(f)) next.push(f);
  return next.length === current.length && next.every((f, i) => f === current[i]) ? undefined : next;
}
