import type { KubeObject, ObjectRef, TypeRef } from '../model/kube.js';
import type { FinalizerChange } from '../policy/finalizers.js';
import type { OwnedPath } from '../policy/subset.js';
import { token } from './token.js';

export interface ListOptions {
  namespace?: string;
  /** Equality match on labels; a value of `undefined` matches "key exists". */
  labels?: Record<string, string | undefined>;
  /**
   * The cached objects themselves instead of copies: for a reader that only projects fields out of
   * thousands of objects (copying them all would block the event loop for as long as it takes). They are
   * the cache's own: the caller must never change them (the cache replaces an object when it changes).
   */
  readOnly?: boolean;
}

export interface ApplyOptions {
  /** Field manager; defaults to `karpenter-operator`. */
  fieldManager?: string;
  /** Take ownership of fields other managers own (server-side apply `force`). Defaults to true. */
  force?: boolean;
  /**
   * Fields of `desired` the operator owns as whole values (see `OwnedPath`): a map key or list element
   * found there that `desired` lacks is removed, whoever wrote it (`apply` only).
   */
  ownedWhole?: readonly OwnedPath[];
}

export interface WriteResult<T extends KubeObject = KubeObject> {
  /** False when the desired state was already in place and no request was sent. */
  changed: boolean;
  /** The object as the API server returned it (or the cached object when unchanged). */
  object: T | undefined;
}

/**
 * Reads from the operator's caches and writes to the API server.
 *
 * Reads are served from informer caches (never a live LIST): they are cheap and may lag the API server
 * by a watch event. Writes compare with the cache first and send nothing when the cache already shows
 * the desired state, so a reconcile of an unchanged world makes no request.
 *
 * Errors: `ForbiddenError` (401/403), `NotFoundError` (404 on a write to a missing object), `ConflictError`
 * (409), `RejectedError` (400/422, e.g. CEL validation), `TransientError` (5xx, timeouts, network).
 */
export interface ClusterStore {
  /** The cached object, or `undefined`. Never throws for a missing object. */
  get<T extends KubeObject = KubeObject>(ref: ObjectRef): Promise<T | undefined>;

  /** Cached objects of a kind, sorted by namespace then name. */
  list<T extends KubeObject = KubeObject>(type: TypeRef, options?: ListOptions): Promise<T[]>;

  /**
   * Server-side apply of a partial object (the fields this manager owns). Idempotent: sends nothing
   * when every field of `desired` already has that value in the cached object and nothing foreign is under
   * `options.ownedWhole`. Foreign entries there cannot be removed by an apply (it never drops what another
   * manager owns), so that write is a JSON merge patch of `desired` that replaces those values whole
   * (`replacingPatch`), still one request. A write is not repeated while the object is exactly as that
   * write left it (same resourceVersion): what the server did not change once it will not change again.
   */
  apply<T extends KubeObject = KubeObject>(desired: T, options?: ApplyOptions): Promise<WriteResult<T>>;

  /**
   * Creates the object only if it does not exist (the cache shows none); never updates it.
   * Used for defaults that belong to the user once created. Idempotent.
   */
  createIfAbsent<T extends KubeObject = KubeObject>(desired: T, options?: ApplyOptions): Promise<WriteResult<T>>;

  /**
   * Merge-patches the `status` subresource. Idempotent: sends nothing when every field of `status` already
   * has that value. Throws `NotFoundError` when the object is gone. With `options.resourceVersion` the patch
   * applies only over that version (a list replaced whole, such as conditions, then never drops what
   * another writer added meanwhile): `ConflictError` otherwise.
   */
  patchStatus(ref: ObjectRef, status: Record<string, unknown>, options?: { resourceVersion?: string }): Promise<WriteResult>;

  /**
   * JSON merge patch of the main resource (metadata such as finalizers or annotations).
   * Idempotent in the same sense as `apply`.
   */
  patch(ref: ObjectRef, patch: Record<string, unknown>): Promise<WriteResult>;

  /**
   * Adds and removes finalizers on the object as the store shows it, writing the whole list with its
   * resourceVersion as a precondition, always: a finalizer another controller changed meanwhile is never
   * undone (409 Conflict, the caller retries with fresh state). Sends nothing when the list already is so.
   * Throws `NotFoundError` when the object is gone. Implementations delegate to `updateFinalizersVia`.
   */
  updateFinalizers(ref: ObjectRef, change: FinalizerChange): Promise<WriteResult>;

  /** Deletes the object. Returns false (and sends nothing) when the cache shows it absent or deleting. */
  delete(ref: ObjectRef, options?: { propagation?: 'Foreground' | 'Background' | 'Orphan' }): Promise<boolean>;

  /**
   * Adds condition `Approved=True` to a CSR through the `approval` subresource.
   * Idempotent: does nothing when the CSR is already approved. Throws `NotFoundError` when it is gone.
   */
  approveCertificateSigningRequest(name: string, reason: string, message: string): Promise<WriteResult>;
}

export const ClusterStoreId = token<ClusterStore>('ClusterStore');
