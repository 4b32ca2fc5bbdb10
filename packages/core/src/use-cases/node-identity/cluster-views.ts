// What node identity reads of the cluster, as the policy sees it: NodeClaims and kubelet CSRs projected once
// per cached object, the listings its decisions share, and what a decision derives from a lookup's answer.
import type { KubeObject } from '../../model/kube.js';
import { Types } from '../../model/kube.js';
import {
  type CsrNode,
  type CsrNodeClaim,
  csrNodeClaimView,
  csrState,
  csrView,
  KubeletClientSigner,
  KubeletServingSigner,
  normalizeDns,
} from '../../policy/csr.js';
import type { CloudProvider } from '../../ports/cloud-provider.js';
import type { ClusterStore } from '../../ports/cluster-store.js';
import type { CsrRequests, ListedCsr } from './csr-requests.js';
import type { ObservedInstance } from './instance-lookup.js';

/** The kubelet signers node identity decides for. */
export const KubeletSigners: ReadonlySet<string> = new Set([KubeletClientSigner, KubeletServingSigner]);

/** Objects projected (not memoised yet) between two yields to the event loop. */
const ProjectionSlice = 256;

export interface ClaimSnapshot {
  views: CsrNodeClaim[];
  /** Instance IDs of live NodeClaims not registered yet: the machines a client CSR may come from. */
  unregisteredInstanceIds: string[];
  /** `status.nodeName` of every NodeClaim: the Nodes Karpenter registered. */
  registeredNodeNames: Set<string>;
  /** The NodeClaims of each instance ID. */
  byInstanceId: Map<string, CsrNodeClaim[]>;
}

/** What the CSR census reads of a kubelet CSR object. */
export interface CsrCensusView {
  name: string;
  pending: boolean;
  /** An approved (or issued) client CSR: one the one-client-certificate rule may count. */
  approvedClient: boolean;
  createdMs: number;
}

export interface CsrSnapshot {
  /** Names of pending kubelet CSRs. */
  pending: string[];
  /**
   * Approved (or issued) client CSRs, unparsed. Only those created after a NodeClaim can count against it,
   * so each decision parses (once per request, see `CsrRequests`) just the ones newer than its NodeClaims:
   * a fresh start among thousands of approved CSRs does not parse them all before the first pending one is
   * decided.
   */
  approvedClient: ListedCsr[];
}

export interface ClusterViewsDeps {
  store: ClusterStore;
  cloud: Pick<CloudProvider, 'instanceIdFromProviderId'>;
  requests: CsrRequests;
  yieldToEventLoop: () => Promise<void>;
  /** A pending kubelet CSR the CSR listing found (parsed already). */
  onPending: (csr: KubeObject) => void;
}

/** Projections and listings of NodeClaims and kubelet CSRs for node identity (one per reconciler). */
export class ClusterViews {
  /**
   * Projections of cached objects, by object: a cache replaces an object when it changes, so a listing of
   * thousands projects only what changed since the last one (a fresh start's first CSR, and every CSR
   * after it, no longer re-reads every NodeClaim and CSR).
   */
  private readonly claimViews = new WeakMap<KubeObject, CsrNodeClaim>();
  private readonly csrViews = new WeakMap<KubeObject, CsrCensusView | false>();
  /** The candidates' instance IDs of the last NodeClaim listing (see `listClaims`). */
  private lastUnregistered: string[] = [];
  /** Projections made since the last yield to the event loop (see `projected`). */
  private projectedInSlice = 0;

  constructor(private readonly deps: ClusterViewsDeps) {}

  /** The memoised census view of `c`, if it was projected already (no await on the hot path). */
  knownCsrView(c: KubeObject): CsrCensusView | false | undefined {
    return this.csrViews.get(c);
  }

  /** Whether NodeClaim object `o` was projected already. */
  hasClaimView(o: KubeObject): boolean {
    return this.claimViews.has(o);
  }

  /** NodeClaims as the policy sees them (shared by concurrent reconciles; dropped by any NodeClaim event). */
  async listClaims(): Promise<ClaimSnapshot> {
    const objects = await this.deps.store.list(Types.NodeClaim, { readOnly: true });
    const views: CsrNodeClaim[] = [];
    const unregisteredInstanceIds: string[] = [];
    const registeredNodeNames = new Set<string>();
    const byInstanceId = new Map<string, CsrNodeClaim[]>();
    for (const o of objects) {
      const view = this.claimViews.get(o) ?? (await this.claimView(o));
      views.push(view);
      if (view.instanceId) byInstanceId.set(view.instanceId, [...(byInstanceId.get(view.instanceId) ?? []), view]);
      // A deleting NodeClaim never gets a client CSR approved (policy), so its instance is not worth a lookup.
      if (view.instanceId && !view.nodeName && !view.deleting) unregisteredInstanceIds.push(view.instanceId);
      if (view.nodeName) registeredNodeNames.add(view.nodeName);
    }
    // The same candidates keep the same array: the instance lookup shares its answer per array, and a
    // NodeClaim event (launched, registered) rebuilds this listing about as often as CSRs arrive in a burst.
    const last = this.lastUnregistered;
    const same = last.length === unregisteredInstanceIds.length && last.every((id, i) => id === unregisteredInstanceIds[i]);
    if (!same) this.lastUnregistered = unregisteredInstanceIds;
    return { views, unregisteredInstanceIds: this.lastUnregistered, registeredNodeNames, byInstanceId };
  }

  /** The policy's view of a NodeClaim object, projected once per cached object. */
  async claimView(o: KubeObject): Promise<CsrNodeClaim> {
    let view = this.claimViews.get(o);
    if (!view) {
      await this.projected();
      view = csrNodeClaimView(o, (p) => this.deps.cloud.instanceIdFromProviderId(p));
      this.claimViews.set(o, view);
    }
    return view;
  }

  /** The census fields of a CSR object (false: not a kubelet CSR), projected once per cached object. */
  async csrCensusView(c: KubeObject): Promise<CsrCensusView | false> {
    let view = this.csrViews.get(c);
    if (view === undefined) {
      await this.projected();
      const v = csrView(c);
      const state = csrState(c);
      view = KubeletSigners.has(v.signerName)
        ? {
            name: c.metadata.name,
            pending: state === 'pending',
            approvedClient: v.signerName === KubeletClientSigner && (state === 'approved' || state === 'issued'),
            createdMs: v.createdMs,
          }
        : false;
      this.csrViews.set(c, view);
    }
    return view;
  }

  /**
   * Counts a projection about to be made; every `ProjectionSlice` of them, first lets timers and I/O run
   * (the Lease renewal among them): the first listing after a start projects thousands of objects.
   */
  private async projected(): Promise<void> {
    if (++this.projectedInSlice < ProjectionSlice) return;
    this.projectedInSlice = 0;
    await this.deps.yieldToEventLoop();
  }

  /** The census of kubelet CSRs (shared by concurrent reconciles). */
  async listCsrs(): Promise<CsrSnapshot> {
    const objects = await this.deps.store.list(Types.CertificateSigningRequest, { readOnly: true });
    const out: CsrSnapshot = { pending: [], approvedClient: [] };
    const pending: KubeObject[] = [];
    for (const c of objects) {
      const v = this.csrViews.get(c) ?? (await this.csrCensusView(c));
      if (!v) continue;
      if (v.pending) {
        out.pending.push(v.name);
        pending.push(c);
      }
      if (v.approvedClient) out.approvedClient.push({ object: c, createdMs: v.createdMs });
    }
    // Parsed once per request, so that the census knows every pending CSR's node name.
    await this.deps.requests.parseAll(pending);
    for (const c of pending) this.deps.onPending(c);
    return out;
  }
}

/** What decisions read of a lookup's answer by node name: its canonical names, and its instances by name. */
export interface InstancesByName {
  names: Set<string>;
  byName: Map<string, ObservedInstance[]>;
}
const derived = new WeakMap<ReadonlyMap<string, ObservedInstance>, InstancesByName>();

/**
 * `instances` by canonical node name (EC2's spelling normalised), computed once per answer: the lookup
 * hands the same answer to every decision of a burst.
 */
export function derivedOf(instances: ReadonlyMap<string, ObservedInstance>): InstancesByName {
  let d = derived.get(instances);
  if (!d) {
    const byName = new Map<string, ObservedInstance[]>();
    for (const i of instances.values()) {
      if (!i.privateDnsName) continue;
      const name = normalizeDns(i.privateDnsName);
      byName.set(name, [...(byName.get(name) ?? []), i]);
    }
    d = { names: new Set(byName.keys()), byName };
    derived.set(instances, d);
  }
  return d;
}

/** `instances` with the answers of `fresh` for `ids` (an ID `fresh` did not find is dropped). */
export function withAnswers(
  instances: ReadonlyMap<string, ObservedInstance>,
  ids: Iterable<string>,
  fresh: ReadonlyMap<string, ObservedInstance>,
): Map<string, ObservedInstance> {
  const out = new Map(instances);
  for (const id of ids) {
    const info = fresh.get(id);
    if (info) out.set(id, info);
    else out.delete(id);
  }
  return out;
}

/** NodeClaims that may own Node `nodeName` (same test as the serving policy; used to scope lookups). */
export function ownersOf(nodeClaims: CsrNodeClaim[], node: CsrNode | undefined, nodeName: string): CsrNodeClaim[] {
  return nodeClaims.filter((nc) => nc.nodeName === nodeName || (node?.providerID !== undefined && nc.providerID === node.providerID));
}
