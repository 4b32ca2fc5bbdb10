// One informer per distinct watch, and the wait for an installed CRD to be Established before its kind is listed.
import { crdEstablished as isEstablished, type TypeRef, type Watch } from '@karpenter-operator/core/ports';
import { watchKey, type CacheFactory } from '../runtime/cache.js';
import { systemTimers } from '../runtime/timers.js';
import { Informer, type InformerOptions } from './informer.js';

/** How long a kind whose CRD the operator installs waits for the CRD cache to sync before listing anyway. */
const CRD_CACHE_SYNC_GRACE_MS = 30_000;

export interface InformerFactoryOptions extends Omit<InformerOptions, 'watch' | 'crdEstablished'> {
  /**
   * The watch whose cache holds the CRDs the operator installs (the operator passes core's `ManagedCrdsWatch`,
   * the watch its CRD use-case reconciles from). A kind whose CRD is installed waits for that CRD to be
   * Established before it is listed; without this option, or while nothing watches it, such a kind is listed
   * as any other.
   */
  crdWatch?: Watch;
}

/**
 * Creates one `Informer` per distinct watch (see `watchKey`) and finds the informers of a kind for the
 * cluster store. Serves one cluster; combine two with `routeByCluster`.
 */
export class InformerFactory implements CacheFactory {
  private readonly informers = new Map<string, Informer>();

  constructor(private readonly options: InformerFactoryOptions) {}

  informerFor(watch: Watch): Informer {
    const key = watchKey(watch);
    let informer = this.informers.get(key);
    if (!informer) {
      const self = key;
      // One API server: when one watch gets through after an outage, the others retry at once.
      const onReachable = () => {
        for (const [k, other] of this.informers) if (k !== self) other.retryNow();
      };
      const crdEstablished = (name: string, signal: AbortSignal, whileAbsent: () => void) => this.crdEstablished(name, signal, whileAbsent);
      const { crdWatch: _crdWatch, ...options } = this.options;
      informer = new Informer({ ...options, watch, onReachable, crdEstablished });
      this.informers.set(key, informer);
    }
    return informer;
  }

  /**
   * Resolves once the CRD `name` is Established, as the cache of the operator's managed CRDs shows it (the
   * same watch the use-cases use, started here if nobody has yet). Every change of that cache re-checks.
   */
  private crdEstablished(name: string, signal: AbortSignal, whileAbsent: () => void): Promise<void> {
    // Only where something watches the operator's CRDs (the operator installs them on this cluster); a
    // process that does not (the HyperShift sidecar) lists the kind as any other.
    const crds = this.options.crdWatch && this.informers.get(watchKey(this.options.crdWatch));
    if (!crds) return Promise.resolve();
    crds.start();
    const timers = this.options.timers ?? systemTimers;
    return new Promise<void>((resolve) => {
      let absent = false;
      let done = false;
      const finish = () => {
        done = true;
        timers.clearTimeout(grace);
        unsubscribe();
        signal.removeEventListener('abort', check);
        resolve();
      };
      const check = () => {
        if (done) return;
        if (!signal.aborted && !crds.hasSynced()) return;
        if (!signal.aborted && !isEstablished(crds.get(name))) {
          if (!absent) whileAbsent();
          absent = true;
          return;
        }
        finish();
      };
      // A CRD cache that cannot sync (its watch refused or failing) never holds the kind back for long.
      const grace = timers.setTimeout(() => {
        if (!done && !crds.hasSynced()) finish();
      }, CRD_CACHE_SYNC_GRACE_MS);
      const unsubscribe = crds.addHandler(() => check());
      signal.addEventListener('abort', check, { once: true });
      crds.waitForSync(signal).then(check, check);
    });
  }

  /** Informers of a kind, in creation order. */
  informersOf(type: TypeRef): Informer[] {
    return [...this.informers.values()].filter((i) => i.watch.type.apiVersion === type.apiVersion && i.watch.type.kind === type.kind);
  }

  all(): Informer[] {
    return [...this.informers.values()];
  }

  hasSynced(): boolean {
    return this.all().every((i) => i.hasSynced());
  }

  async stop(): Promise<void> {
    await Promise.all(this.all().map((i) => i.stop()));
  }
}
