import type { KubeObject } from '../../model/kube.js';
import { csrState, csrView, KubeletClientSigner, KubeletServingSigner, nodeNameFromUser } from '../../policy/csr.js';
import type { Clock } from '../../ports/clock.js';

/** A pending kubelet CSR as the index knows it. */
export interface PendingCsr {
  signer: string;
  /** Normalised node name, once known (serving: from the requester; client: from the parsed CN). */
  nodeName?: string;
}

/** The decision key of a client CSR that matched no NodeClaim (re-examined when a NodeClaim launches). */
const NoMatchKey = 'ignore/NoMatchingNodeClaim';

/**
 * What node-identity knows about pending kubelet CSRs, in this process: the node each concerns, when this
 * process first saw it, its last decision, and which NodeClaim listing that decision was made from.
 *
 * Written only by reconcile and resync (`track`, `forget`, `decided`, `prune`). The event mappings
 * (`keysForNodeClaim`, `keysForNode`) only read it: they run on standby replicas and behind a closed gate,
 * where nothing is reconciled, so an event there changes nothing and costs nothing. A CSR not indexed yet
 * needs no mapping: its own event has queued it.
 */
export class CsrIndex {
  private readonly pending = new Map<string, PendingCsr>();
  /** When this process first saw each pending CSR (its clock): after the CSR's creation, whatever the skew. */
  private readonly firstSeen = new Map<string, { uid: string | undefined; ms: number }>();
  private readonly lastDecision = new Map<string, string>();
  /** The generation of the NodeClaim listing each CSR's last decision was made from. */
  private readonly claimsUsed = new Map<string, number>();

  constructor(private readonly clock: Clock) {}

  /**
   * Remembers a kubelet CSR while it is pending, and the node it concerns (`cnNodeName`: from its parsed
   * request, when parsed); forgets its entry once it is not.
   */
  track(csr: KubeObject, cnNodeName: string | undefined): void {
    const view = csrView(csr);
    const name = csr.metadata.name;
    if (csrState(csr) !== 'pending') {
      this.pending.delete(name);
      return;
    }
    const fromUser = view.signerName === KubeletServingSigner ? nodeNameFromUser(view.username) : undefined;
    const nodeName = fromUser ?? cnNodeName;
    this.pending.set(name, nodeName ? { signer: view.signerName, nodeName } : { signer: view.signerName });
    // Keyed by name, valid for one uid: a CSR deleted and re-created under the same name is a new CSR,
    // seen now (an answer read for the old one must not approve it).
    const seen = this.firstSeen.get(name);
    if (!seen || seen.uid !== csr.metadata.uid) {
      this.firstSeen.set(name, { uid: csr.metadata.uid, ms: this.clock.now() });
      if (seen) {
        this.lastDecision.delete(name);
        this.claimsUsed.delete(name);
      }
    }
  }

  forget(name: string): void {
    this.pending.delete(name);
    this.lastDecision.delete(name);
    this.firstSeen.delete(name);
    this.claimsUsed.delete(name);
  }

  /** Forgets every CSR not in `live` (the names the cluster has). */
  prune(live: ReadonlySet<string>): void {
    for (const name of [...this.pending.keys()]) if (!live.has(name)) this.forget(name);
    for (const map of [this.lastDecision, this.claimsUsed, this.firstSeen])
      for (const name of [...map.keys()]) if (!live.has(name)) map.delete(name);
  }

  /** True when anything is held about CSR `name` (pending entry, first sighting, decision). */
  knows(name: string): boolean {
    return this.pending.has(name) || this.firstSeen.has(name) || this.lastDecision.has(name) || this.claimsUsed.has(name);
  }

  get(name: string): PendingCsr | undefined {
    return this.pending.get(name);
  }

  entries(): IterableIterator<[string, PendingCsr]> {
    return this.pending.entries();
  }

  /** When this process first saw CSR `name` (undefined: not tracked). */
  seenMs(name: string): number | undefined {
    return this.firstSeen.get(name)?.ms;
  }

  /**
   * Records CSR `name`'s decision (`<decision>/<reason>`) and the NodeClaim listing it was made from (none
   * for a decision on the request alone); false when it is the decision recorded last (events and metrics are recorded once per change).
   */
  decided(name: string, key: string, claimsGeneration: number | undefined): boolean {
    if (claimsGeneration !== undefined) this.claimsUsed.set(name, claimsGeneration);
    if (this.lastDecision.get(name) === key) return false;
    this.lastDecision.set(name, key);
    return true;
  }

  /** The generation of the NodeClaim listing CSR `name` was last decided from. */
  claimsGenerationOf(name: string): number | undefined {
    return this.claimsUsed.get(name);
  }

  /**
   * The pending CSRs a change of NodeClaim `obj` can unblock: those waiting or not decided yet, those of the
   * node it registered, and, when it is launched and not registered, client CSRs judged "no matching
   * NodeClaim" (it may be the one they came too early for). Reads only.
   */
  keysForNodeClaim(obj: { metadata: { deletionTimestamp?: unknown }; status?: unknown }): string[] {
    const status = obj.status as { nodeName?: unknown; providerID?: unknown } | undefined;
    const registered = typeof status?.nodeName === 'string' && status.nodeName ? status.nodeName : undefined;
    const launched = !registered && !obj.metadata.deletionTimestamp && typeof status?.providerID === 'string';
    return [...this.pending.entries()]
      .filter(([name, e]) => {
        if (registered && e.nodeName === registered) return true;
        const last = this.lastDecision.get(name);
        return !last?.startsWith('ignore/') || (launched && e.signer === KubeletClientSigner && last === NoMatchKey);
      })
      .map(([name]) => name);
  }

  /** The pending CSRs of node `nodeName`. Reads only. */
  keysForNode(nodeName: string): string[] {
    return [...this.pending.entries()].filter(([, e]) => e.nodeName === nodeName).map(([name]) => name);
  }
}
