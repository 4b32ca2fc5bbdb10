import { NotFoundError } from '../errors.js';
import type { ObjectRef } from '../model/kube.js';
import { finalizersAfter, finalizersPatch, type FinalizerChange } from '../policy/finalizers.js';
import type { ClusterStore, WriteResult } from '../ports/cluster-store.js';

/**
 * `ClusterStore.updateFinalizers` for any store, in terms of its `get` and `patch`: the one writer of
 * finalizer lists. The object as the store shows it, the change applied, the whole list written with that
 * resourceVersion as a precondition (`finalizersPatch`); nothing sent when the list already is so.
 */
export async function updateFinalizersVia(
  store: Pick<ClusterStore, 'get' | 'patch'>,
  ref: ObjectRef,
  change: FinalizerChange,
): Promise<WriteResult> {
  const current = await store.get(ref);
  if (!current) throw new NotFoundError(`updating the finalizers of ${ref.kind} ${ref.name}: not found`);
  const next = finalizersAfter(current.metadata.finalizers ?? [], change);
  if (!next) return { changed: false, object: current };
  return store.patch(
    ref,
    finalizersPatch(next, current.metadata.resourceVersion, `${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}`),
  );
}
