import type { KubeObject, Watch } from '@karpenter-operator/core/ports';

/** Called with the object's latest state for every add, update and delete (level-based: no event type). */
export type InformerHandler = (obj: KubeObject) => void;

/** One list+watch of a kind (scoped by namespace, labels, field selector) and its in-memory cache. */
export interface SharedInformer {
  readonly watch: Watch;
  /** Registers a handler; returns its removal. Handlers must not throw (errors are logged and dropped). */
  addHandler(handler: InformerHandler): () => void;
  /** Starts list+watch in the background. Idempotent. */
  start(): void;
  /** Stops watching for good; the cache keeps its last contents. */
  stop(): Promise<void>;
  /** True once the first list completed (stays true across watch restarts). */
  hasSynced(): boolean;
  /**
   * While not synced: why the last list failed, in the API server's words (a 403 names the verb, the
   * resource and the user). Undefined once synced, or before a list has failed.
   */
  syncProblem(): string | undefined;
  /** Resolves once synced; rejects when `signal` aborts first. */
  waitForSync(signal?: AbortSignal): Promise<void>;
  /** The cached object (a shared reference: callers must not mutate it). */
  get(name: string, namespace?: string): KubeObject | undefined;
  /** All cached objects (shared references). */
  list(): KubeObject[];
}

/** Hands out shared informers: equal watches get the same informer. */
export interface CacheFactory {
  informerFor(watch: Watch): SharedInformer;
}

/**
 * Identity of a watch for sharing informers: kind, namespace, sorted labels and field selector.
 * `cluster` is not part of it: a factory serves one cluster (see `routeByCluster`).
 */
export function watchKey(w: Watch): string {
  const labels = Object.entries(w.labels ?? {})
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  return [w.type.apiVersion, w.type.kind, w.namespace ?? '*', labels, w.fieldSelector ?? ''].join('|');
}

/** Sends `cluster: 'control'` watches to one factory and the rest (the default, `workload`) to another. */
export function routeByCluster(factories: { control: CacheFactory; workload: CacheFactory }): CacheFactory {
  return {
    informerFor: (watch) => (watch.cluster === 'control' ? factories.control : factories.workload).informerFor(watch),
  };
}
