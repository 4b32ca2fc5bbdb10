import { ConflictError, NotFoundError } from '../errors.js';
import type { KubeObject, ObjectRef, TypeRef } from '../model/kube.js';
import type { FinalizerChange } from '../policy/finalizers.js';
import { isApplied, isSubset, replacingPatch } from '../policy/subset.js';
import type { ApplyOptions, ClusterStore, ListOptions, WriteResult } from '../ports/cluster-store.js';
import { updateFinalizersVia } from '../runtime/finalizers.js';

export interface RecordedWrite {
  verb: 'apply' | 'create' | 'patchStatus' | 'patch' | 'delete' | 'approve';
  ref: ObjectRef;
  body?: unknown;
}

const keyOf = (r: { apiVersion: string; kind: string; name: string; namespace?: string | undefined }) =>
  `${r.apiVersion}|${r.kind}|${r.namespace ?? ''}|${r.name}`;

const clone = <T>(v: T): T => structuredClone(v);

function deepFreeze<T>(v: T): T {
  if (v && typeof v === 'object' && !Object.isFrozen(v)) {
    for (const child of Object.values(v)) deepFreeze(child);
    Object.freeze(v);
  }
  return v;
}

/** Deep merge with merge-patch semantics (`null` deletes; arrays replace). */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return clone(patch);
  const base: Record<string, unknown> =
    typeof target === 'object' && target !== null && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [k, v] of Object.entries(patch as Record<string, unknown>)) {
    if (v === null) delete base[k];
    else if (v !== undefined) base[k] = mergePatch(base[k], v);
  }
  return base;
}

/**
 * An in-memory ClusterStore for unit tests of use-cases: reads see writes at once, every request is
 * recorded in `writes`, and `failNext` injects errors. Apply merges like server-side apply for maps and
 * replaces lists (good enough for tests that compare desired with current).
 */
export class MemoryClusterStore implements ClusterStore {
  private readonly objects = new Map<string, KubeObject>();
  readonly writes: RecordedWrite[] = [];
  private readonly failures: Array<{ verb?: RecordedWrite['verb']; error: Error }> = [];
  private uidSeq = 0;
  private rv = 0;

  constructor(
    initial: KubeObject[] = [],
    private readonly now: () => string = () => new Date(0).toISOString(),
  ) {
    for (const o of initial) this.seed(o);
  }

  /** Puts an object in place without recording a write (test setup, or "another actor changed it"). */
  seed(obj: KubeObject): KubeObject {
    const o = clone(obj);
    o.metadata.uid ??= `uid-${++this.uidSeq}`;
    o.metadata.resourceVersion = String(++this.rv);
    o.metadata.creationTimestamp ??= this.now();
    o.metadata.generation ??= 1;
    this.objects.set(keyOf({ ...o, ...o.metadata }), o);
    return clone(o);
  }

  /** Removes an object without recording a write. */
  remove(ref: ObjectRef): void {
    this.objects.delete(keyOf(ref));
  }

  /** The next write (of `verb`, or any) throws `error`. */
  failNext(error: Error, verb?: RecordedWrite['verb']): void {
    this.failures.push(verb ? { verb, error } : { error });
  }

  clearWrites(): void {
    this.writes.length = 0;
  }

  all(): KubeObject[] {
    return [...this.objects.values()].map(clone);
  }

  async get<T extends KubeObject = KubeObject>(ref: ObjectRef): Promise<T | undefined> {
    const o = this.objects.get(keyOf(ref));
    return o ? (clone(o) as T) : undefined;
  }

  async list<T extends KubeObject = KubeObject>(type: TypeRef, options: ListOptions = {}): Promise<T[]> {
    return (
      [...this.objects.values()]
        .filter((o) => o.apiVersion === type.apiVersion && o.kind === type.kind)
        .filter((o) => options.namespace === undefined || o.metadata.namespace === options.namespace)
        .filter((o) =>
          Object.entries(options.labels ?? {}).every(([k, v]) =>
            v === undefined ? o.metadata.labels?.[k] !== undefined : o.metadata.labels?.[k] === v,
          ),
        )
        .map((o) => ({ o, key: `${o.metadata.namespace ?? ''}/${o.metadata.name}` }))
        .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)) // code-unit order, as the real store
        .map(({ o }) => o)
        // Read-only lists are frozen copies here: a caller that changes one fails its test (strict mode throws).
        .map((o) => (options.readOnly ? deepFreeze(clone(o)) : clone(o)) as T)
    );
  }

  private takeFailure(verb: RecordedWrite['verb']): void {
    const i = this.failures.findIndex((f) => f.verb === undefined || f.verb === verb);
    if (i >= 0) {
      const [f] = this.failures.splice(i, 1);
      throw f!.error;
    }
  }

  private refOf(o: KubeObject): ObjectRef {
    const r: ObjectRef = { apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name };
    if (o.metadata.namespace) r.namespace = o.metadata.namespace;
    return r;
  }

  private bump(o: KubeObject, specChanged: boolean): void {
    o.metadata.resourceVersion = String(++this.rv);
    if (specChanged) o.metadata.generation = (o.metadata.generation ?? 1) + 1;
  }

  async apply<T extends KubeObject = KubeObject>(desired: T, options: ApplyOptions = {}): Promise<WriteResult<T>> {
    const ref = this.refOf(desired);
    const current = this.objects.get(keyOf(ref));
    const owned = options.ownedWhole ?? [];
    if (current && isApplied(desired, current, owned)) return { changed: false, object: clone(current) as T };
    this.takeFailure('apply');
    this.writes.push({ verb: 'apply', ref, body: clone(desired) });
    if (!current) return { changed: true, object: this.seed(desired) as T };
    const merged = mergePatch(current, replacingPatch(desired, current, owned)) as KubeObject;
    this.bump(merged, true);
    this.objects.set(keyOf(ref), merged);
    return { changed: true, object: clone(merged) as T };
  }

  async createIfAbsent<T extends KubeObject = KubeObject>(desired: T, _options?: ApplyOptions): Promise<WriteResult<T>> {
    const ref = this.refOf(desired);
    const current = this.objects.get(keyOf(ref));
    if (current) return { changed: false, object: clone(current) as T };
    this.takeFailure('create');
    this.writes.push({ verb: 'create', ref, body: clone(desired) });
    return { changed: true, object: this.seed(desired) as T };
  }

  async patchStatus(ref: ObjectRef, status: Record<string, unknown>, options: { resourceVersion?: string } = {}): Promise<WriteResult> {
    const current = this.objects.get(keyOf(ref));
    if (!current) throw new NotFoundError(`patching status of ${ref.kind} ${ref.name}: not found`);
    if (isSubset({ status }, current)) return { changed: false, object: clone(current) };
    if (options.resourceVersion !== undefined && options.resourceVersion !== current.metadata.resourceVersion) {
      throw new ConflictError(`patching status of ${ref.kind} ${ref.name}: the object has been modified`);
    }
    this.takeFailure('patchStatus');
    this.writes.push({ verb: 'patchStatus', ref, body: clone(status) });
    current.status = mergePatch(current.status, status);
    this.bump(current, false);
    return { changed: true, object: clone(current) };
  }

  async patch(ref: ObjectRef, patch: Record<string, unknown>): Promise<WriteResult> {
    const current = this.objects.get(keyOf(ref));
    if (!current) throw new NotFoundError(`patching ${ref.kind} ${ref.name}: not found`);
    if (isSubset(patch, current)) return { changed: false, object: clone(current) };
    this.takeFailure('patch');
    this.writes.push({ verb: 'patch', ref, body: clone(patch) });
    // Like the API server: a patch naming a resourceVersion applies only over that version.
    const precondition = (patch.metadata as { resourceVersion?: unknown } | undefined)?.resourceVersion;
    if (precondition !== undefined && precondition !== current.metadata.resourceVersion) {
      throw new ConflictError(
        `patching ${ref.kind} ${ref.name}: the object has been modified (resourceVersion ${String(precondition)}, now ${current.metadata.resourceVersion})`,
      );
    }
    const merged = mergePatch(current, patch) as KubeObject;
    this.bump(merged, false);
    // Like the API server: an object being deleted disappears once its last finalizer is gone.
    if (merged.metadata.deletionTimestamp && !(merged.metadata.finalizers ?? []).length) {
      this.objects.delete(keyOf(ref));
      return { changed: true, object: undefined };
    }
    this.objects.set(keyOf(ref), merged);
    return { changed: true, object: clone(merged) };
  }

  async updateFinalizers(ref: ObjectRef, change: FinalizerChange): Promise<WriteResult> {
    return updateFinalizersVia(this, ref, change);
  }

  async delete(ref: ObjectRef): Promise<boolean> {
    const current = this.objects.get(keyOf(ref));
    if (!current || current.metadata.deletionTimestamp) return false;
    this.takeFailure('delete');
    this.writes.push({ verb: 'delete', ref });
    if ((current.metadata.finalizers ?? []).length) {
      current.metadata.deletionTimestamp = this.now();
      this.bump(current, false);
    } else {
      this.objects.delete(keyOf(ref));
    }
    return true;
  }

  async approveCertificateSigningRequest(name: string, reason: string, message: string): Promise<WriteResult> {
    const ref: ObjectRef = { apiVersion: 'certificates.k8s.io/v1', kind: 'CertificateSigningRequest', name };
    const current = this.objects.get(keyOf(ref));
    if (!current) throw new NotFoundError(`approving CSR ${name}: not found`);
    const status = (current.status ?? {}) as { conditions?: Array<{ type: string }> };
    if (status.conditions?.some((c) => c.type === 'Approved')) return { changed: false, object: clone(current) };
    this.takeFailure('approve');
    this.writes.push({ verb: 'approve', ref, body: { reason, message } });
    current.status = {
      ...status,
      conditions: [...(status.conditions ?? []), { type: 'Approved', status: 'True', reason, message, lastUpdateTime: this.now() }],
    };
    this.bump(current, false);
    return { changed: true, object: clone(current) };
  }
}
