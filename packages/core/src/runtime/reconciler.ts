import type { TypeRef } from '../model/kube.js';

/** What a reconcile asks of the queue: nothing, or another run later. Errors mean backoff. */
export interface Result {
  requeueAfterMs?: number;
}

/** Maps a watched object to the keys of the controllers that care about it. */
export interface Watch {
  type: TypeRef;
  /** Which cluster: `control` (operator and operand Deployments) or `workload` (Karpenter objects, Nodes, CSRs). Default workload. */
  cluster?: 'control' | 'workload';
  /** Namespace to watch; all namespaces when absent. */
  namespace?: string;
  /** Label selector (equality) for the informer. */
  labels?: Record<string, string>;
  /** Field selector for the informer, e.g. `metadata.name=cluster`. */
  fieldSelector?: string;
}

/**
 * One controller, named `"<resource>.<concern>"`. `reconcile` is level-based: it receives only a key,
 * re-derives desired state from caches, and writes only differences.
 */
export interface Reconciler {
  readonly name: string;
  /** Kinds this controller reads; the runtime starts one informer per distinct watch. */
  readonly watches: Watch[];
  /** The keys to enqueue for a change of `obj` (of a watched kind). */
  keysFor(obj: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }): string[];
  /** Keys to reconcile on start-up and periodic resync. */
  resyncKeys(): Promise<string[]>;
  reconcile(key: string): Promise<Result>;
}
