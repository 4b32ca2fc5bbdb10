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
