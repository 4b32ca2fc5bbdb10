import { describeError, isConflictError, isForbiddenError, isInvalidInputError, isNotFoundError } from '../../errors.js';
import type { ClusterFacts } from '../../model/cluster.js';
import type { KubeObject, ObjectRef } from '../../model/kube.js';
import { Types } from '../../model/kube.js';
import type { ConditionInput } from '../../policy/conditions.js';
import {
  type CsrDecision,
  type CsrNode,
  type CsrNodeClaim,
  csrNodeView,
  csrState,
  csrView,
  DefaultApprovalWindowMs,
  decideClientCsr,
  decideServingCsr,
  KubeletClientSigner,
  LaunchDeadlineMs,
  precheckKubeletCsr,
} from '../../policy/csr.js';
import type { CsrParseResult } from '../../policy/csr-parse.js';
import type { Clock } from '../../ports/clock.js';
import type { CloudProvider } from '../../ports/cloud-provider.js';
import type { ClusterStore } from '../../ports/cluster-store.js';
import type { EventRecorder, EventType } from '../../ports/event-recorder.js';
import type { Logger } from '../../ports/logger.js';
import type { Metrics } from '../../ports/metrics.js';
import type { Reconciler, Result, Watch } from '../../runtime/reconciler.js';
import type { StatusBoard } from '../status-board.js';
import { InstanceLookup, type InstanceIds, type LookupOptions, type ObservedInstance } from './instance-lookup.js';
import {
  CsrDecisionsMetric,
  CsrPendingMetric,
  CsrUnmatchedPendingMetric,
  NodeIdentityConditionType,
  instanceLookupRefusedCondition,
  nodeIdentityCondition,
  NodeIdentityReasons,
  NotOursReasons,
} from './reporting.js';
import { CsrIndex } from './csr-index.js';
import { CsrRequests } from './csr-requests.js';
import { SharedSnapshot } from './shared-snapshot.js';
import { ClusterViews, derivedOf, KubeletSigners, ownersOf, withAnswers, type ClaimSnapshot, type CsrSnapshot } from './cluster-views.js';

export const NodeIdentityController = 'certificatesigningrequest.node-identity';
export interface NodeIdentityLimits {
  /**
   * Approvals stop while more than `maxPendingBase + NodeClaims` approvable CSRs are pending (node names
   * of Karpenter instances or Nodes; CSRs that match none never count, so a flood cannot starve real ones).
   */
  maxPendingBase?: number;
  /** A fixed bound instead of `maxPendingBase + NodeClaims`. */
  maxPending?: number;
  /** Requeue delay of a `wait` decision (and while approvals are paused). */
  waitRequeueMs?: number;
  /** Client CSRs are approvable this long after their NodeClaim was created. */
  windowMs?: number;
  /** `wait` becomes `ignore` for CSRs older than this (Karpenter's registration deadline). */
  launchDeadlineMs?: number;
  instanceCacheTtlMs?: number;
  instanceNegativeCacheTtlMs?: number;
  /** Found instances used this close to expiry are refreshed in the background (0: never). */
  instanceRefreshAheadMs?: number;
  /** How long instance IDs are collected before one DescribeInstances call. */
  lookupBatchWindowMs?: number;
  /** How long instance IDs needing an answer newer than their CSR are collected before one call. */
  freshLookupBatchWindowMs?: number;
  /** IDs per DescribeInstances call. Default: the provider's `maxInstancesPerLookup`. */
  lookupMaxBatchSize?: number;
  /**
   * How long one listing of NodeClaims and CSRs serves concurrent reconciles. A CSR is never decided twice
   * from one NodeClaim listing (reconciled again after a NodeClaim or Node event, it reads NodeClaims anew);
   * the CSR census (pending count, approved client CSRs) may lag by this much, which the in-process record
   * of this operator's own approvals covers.
   */
  snapshotTtlMs?: number;
  /** Timer for the lookup micro-batch and the parsing slices (defaults to setTimeout). */
  schedule?: (fn: () => void, ms: number) => void;
  /** Approved client CSRs parsed at most this many at a time between yields to the event loop. */
  parseSliceSize?: number;
}

export interface NodeIdentityDeps {
  /** Store of the cluster where CSRs, Nodes and NodeClaims live. */
  store: ClusterStore;
  cloud: CloudProvider;
  facts: () => Promise<ClusterFacts>;
  clock: Clock;
  events: EventRecorder;
  metrics: Metrics;
  logger: Logger;
  limits?: NodeIdentityLimits;
  /** When given, the condition is also posted here whenever it changes. */
  board?: StatusBoard;
}

const Defaults = {
  maxPendingBase: 100,
  waitRequeueMs: 5_000,
  // What a found instance proves (its ID's private DNS name, the cluster tag, running) is reused for up
  // to 60 s. The name of an instance never changes; a terminated instance's NodeClaim goes away with it
  // and NodeClaims are read live; so the age adds no approval the policy would refuse a minute later.
  instanceCacheTtlMs: 60_000,
  instanceNegativeCacheTtlMs: 3_000,
  lookupBatchWindowMs: 5,
  // Every client CSR needs an answer read after it was seen: a lone CSR gets it at once; CSRs arriving over
  // a while share one call per second (a few calls for a burst, at most one a second however long it lasts).
  freshLookupBatchWindowMs: 1_000,
  // Refreshed in the background half-way: a slow cloud (tens of seconds per call under throttling)
  // never makes a caller wait on an expired entry.
  instanceRefreshAheadMs: 30_000,
  snapshotTtlMs: 1_000,
} as const;

type AnyObject = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } } & Record<string, unknown>;

/**
 * `certificatesigningrequest.node-identity`: approves the kubelet client and serving CSRs of nodes that
 * Karpenter launched for this cluster, and nothing else (policy: `policy/csr.ts`). It never denies.
 *
 * Per CSR: skip anything not pending or of another signer; run the request-only checks; gather NodeClaims,
 * Nodes and the instances behind them (batched, briefly cached `describeInstances`); decide; approve.
 * `wait` decisions requeue after a few seconds; the policy turns them into `ignore` after the launch
 * deadline. Events and the decisions metric are recorded when a CSR's decision changes, so resyncs do not
 * repeat them. Approvals pause, with condition `NodeIdentityHealthy=False/TooManyPendingCSRs`, while
 * more Karpenter-looking CSRs are pending than the bound.
 *
 * In-process state (all derived, rebuilt by resync): parsed requests by CSR (`CsrRequests`), the `CsrIndex` (pending
 * CSRs, when each was first seen, its last decision; used to map NodeClaim and Node events to CSRs), and
 * the client CSRs this process approved per NodeClaim (the cache may not show an approval yet when the
 * next CSR arrives). Only reconcile and resync change it or call the cloud: `keysFor` reads, so standby
 * replicas and a closed gate, which map events but reconcile nothing, stay idle.
 */
export class NodeIdentityReconciler implements Reconciler {
  readonly name = NodeIdentityController;
  readonly watches: Watch[] = [{ type: Types.CertificateSigningRequest }, { type: Types.NodeClaim }, { type: Types.Node }];

  private readonly lookup: InstanceLookup;
  private readonly requests: CsrRequests;
  private readonly index: CsrIndex;
  /** Canonical node names of the instances of unregistered NodeClaims, as of the last client reconcile. */
  private candidateNames = new Set<string>();
  /** NodeClaim uid (or name) → names of client CSRs this process approved for it. */
  private readonly approvedHere = new Map<string, Set<string>>();
  private readonly claims: SharedSnapshot<ClaimSnapshot>;
  private readonly csrs: SharedSnapshot<CsrSnapshot>;
  private readonly views: ClusterViews;
  private readonly yieldToEventLoop: () => Promise<void>;
  private readonly schedule: (fn: () => void, ms: number) => void;
  private readonly snapshotTtlMs: number;
  /** Decisions waiting on a cloud answer now; while there are any, the CSR census is kept built. */
  private waitingOnCloud = 0;
  private warming = false;
  private currentCondition: ConditionInput = {
    type: NodeIdentityConditionType,
    status: 'True',
    reason: NodeIdentityReasons.AsExpected,
    message: 'Kubelet CSRs of Karpenter nodes are being approved',
  };

  constructor(private readonly deps: NodeIdentityDeps) {
    const l = deps.limits ?? {};
    this.index = new CsrIndex(deps.clock);
    const schedule = l.schedule;
    this.schedule = schedule ?? ((fn, ms) => void setTimeout(fn, ms));
    this.yieldToEventLoop = () => new Promise<void>((resolve) => this.schedule(resolve, 0));
    this.requests = new CsrRequests({
      ...(l.parseSliceSize !== undefined ? { sliceSize: l.parseSliceSize } : {}),
      yieldToEventLoop: this.yieldToEventLoop,
    });
    this.lookup = new InstanceLookup({
      cloud: deps.cloud,
      facts: deps.facts,
      clock: deps.clock,
      ttlMs: l.instanceCacheTtlMs ?? Defaults.instanceCacheTtlMs,
      negativeTtlMs: l.instanceNegativeCacheTtlMs ?? Defaults.instanceNegativeCacheTtlMs,
      batchWindowMs: l.lookupBatchWindowMs ?? Defaults.lookupBatchWindowMs,
      freshBatchWindowMs: l.freshLookupBatchWindowMs ?? Defaults.freshLookupBatchWindowMs,
      maxBatchSize: l.lookupMaxBatchSize ?? deps.cloud.maxInstancesPerLookup,
      refreshAheadMs: l.instanceRefreshAheadMs ?? Defaults.instanceRefreshAheadMs,
      ...(l.schedule ? { schedule: l.schedule } : {}),
    });
    this.views = new ClusterViews({
      store: deps.store,
      cloud: deps.cloud,
      requests: this.requests,
      yieldToEventLoop: this.yieldToEventLoop,
      onPending: (c) => this.track(c),
    });
    const ttl = l.snapshotTtlMs ?? Defaults.snapshotTtlMs;
    this.snapshotTtlMs = ttl;
    this.claims = new SharedSnapshot(deps.clock, ttl, () => this.views.listClaims());
    this.csrs = new SharedSnapshot(deps.clock, ttl, () => this.views.listCsrs());
    deps.board?.setCondition(this.name, this.currentCondition);
  }

  /** `NodeIdentityHealthy`, for the status use-case. */
  condition(): ConditionInput {
    return { ...this.currentCondition };
  }

  /**
   * Maps an event to CSR names, reading the index and the parse memo only: it runs on standby replicas and
   * behind a closed gate too, where it must neither change state nor cost a lookup. Reconcile and resync
   * keep the index.
   * Its one effect: a NodeClaim event marks the shared NodeClaim listing out of date (a dropped reference,
   * no I/O), so the CSRs it maps to are decided from a listing that includes the change.
   */
  keysFor(obj: AnyObject): string[] {
    if (obj.kind === Types.CertificateSigningRequest.kind) {
      const signer = (obj.spec as { signerName?: unknown } | undefined)?.signerName;
      if (typeof signer !== 'string' || !KubeletSigners.has(signer)) return [];
      // A CSR that is not pending needs a reconcile only to forget what this process holds about it (its
      // index entry, its parsed request): an approved CSR it never looked at, such as each of the thousands
      // an informer lists at start-up, has nothing to forget and costs no reconcile.
      const name = obj.metadata.name;
      const known = this.index.knows(name) || this.requests.has(name);
      return known || csrState(obj as KubeObject) === 'pending' ? [name] : [];
    }
    // A NodeClaim change (providerID set, registered, deleted) can only unblock CSRs that are waiting or
    // not decided yet, those of the node it registered, and those that came before it.
    if (obj.kind === Types.NodeClaim.kind) {
      this.claims.invalidate();
      return this.index.keysForNodeClaim(obj as KubeObject);
    }
    if (obj.kind === Types.Node.kind) return this.index.keysForNode(obj.metadata.name);
    return [];
  }

  async resyncKeys(): Promise<string[]> {
    const csrs = await this.deps.store.list(Types.CertificateSigningRequest, { readOnly: true });
    const keys: string[] = [];
    // Also projects every CSR for the census (a fresh start's resync does it, in slices, before the first
    // pending CSR needs it).
    for (const csr of csrs) {
      const v = this.views.knownCsrView(csr) ?? (await this.views.csrCensusView(csr));
      if (!v) continue;
      if (v.pending) {
        this.track(csr);
        keys.push(v.name);
      } else if (this.index.get(v.name)) {
        this.track(csr); // no longer pending: out of the index
      }
    }
    const claims = await this.deps.store.list(Types.NodeClaim, { readOnly: true });
    for (const c of claims) if (!this.views.hasClaimView(c)) await this.views.claimView(c);
    // The projections above yield to the event loop, and CSRs and NodeClaims seen by reconciles meanwhile
    // must not be forgotten: prune against lists read now, with no yield before the pruning.
    const [liveCsrs, liveClaims] = await Promise.all([
      this.deps.store.list(Types.CertificateSigningRequest, { readOnly: true }),
      this.deps.store.list(Types.NodeClaim, { readOnly: true }),
    ]);
    const live = new Set(liveCsrs.map((c) => c.metadata.name));
    this.index.prune(live);
    this.requests.retain(live);
    const claimKeys = new Set(liveClaims.map((c) => c.metadata.uid ?? c.metadata.name));
    for (const k of [...this.approvedHere.keys()]) if (!claimKeys.has(k)) this.approvedHere.delete(k);
    this.lookup.prune();
    return keys;
  }

  async reconcile(name: string): Promise<Result> {
    const { store, clock } = this.deps;
    const csr = await store.get({ ...Types.CertificateSigningRequest, name });
    if (!csr) {
      this.forget(name, false);
      return {};
    }
    const view = csrView(csr);
    if (!KubeletSigners.has(view.signerName) || csrState(csr) !== 'pending') {
      this.forget(name, KubeletSigners.has(view.signerName));
      return {};
    }
    const log = this.deps.logger.child({ controller: this.name, csr: name });
    const parsed = await this.parse(csr);
    this.track(csr);

    // Checks that need nothing but the CSR: forged and malformed requests cost no lookup.
    const pre = precheckKubeletCsr(csr, parsed);
    if (!pre) return {};
    if ('decision' in pre) {
      this.report(csr, pre, log);
      return {};
    }

    const limits = this.deps.limits ?? {};
    const now = clock.now();
    // A CSR reconciled again reads NodeClaims anew if it was decided from the listing at hand already: it is
    // here because something changed (a NodeClaim or Node event, a requeue), and that listing may predate it.
    const [{ value: claims, generation: claimsGeneration }, nodes] = await Promise.all([
      this.claims.get(this.index.claimsGenerationOf(name)),
      this.nodesNamed(pre.nodeName),
    ]);
    const nodeClaims = claims.views;

    const isClient = pre.kind === 'client';
    const wanted = isClient
      ? claims.unregisteredInstanceIds
      : ownersOf(nodeClaims, nodes[0], pre.nodeName).flatMap((nc) => (nc.instanceId ? [nc.instanceId] : []));
    let instances = await this.lookupOrThrow(wanted, {}, pre.nodeName, log);
    if (isClient) this.candidateNames = derivedOf(instances).names;
    // Read after the cloud answered (the census is kept built meanwhile, see `warmCensus`).
    const { value: csrs } = await this.csrs.get();

    const seenMs = this.index.seenMs(name) ?? now;
    const decide = async () => {
      const input = {
        csr,
        request: parsed,
        nodeClaims,
        nodes,
        instances,
        now,
        csrSeenMs: seenMs,
        windowMs: limits.windowMs ?? DefaultApprovalWindowMs,
        launchDeadlineMs: limits.launchDeadlineMs ?? LaunchDeadlineMs,
        approvedClientCsrs: isClient ? await this.approvedCounts(pre.nodeName, claims, instances, csrs) : new Map<string, number>(),
      };
      return isClient ? decideClientCsr(input) : decideServingCsr(input);
    };
    let decision = await decide();
    if (decision.reason === 'InstanceAnswerStale' && decision.instanceId) {
      // The answer that approves must have been read after the CSR was seen. One call serves every
      // pending client CSR seen so far whose instance answer is older than it. Its answers land in the
      // lookup's cache (an older answer never replaces a newer one): the candidates as cached now are the
      // one map every decision after that call shares; when some candidate needs a call again, the answer
      // at hand is patched instead.
      const ids = new Set([decision.instanceId, ...this.staleForPending(instances)]);
      const fresh = await this.lookupOrThrow(ids, { readAfterMs: seenMs }, pre.nodeName, log);
      instances = this.lookup.peek(wanted) ?? withAnswers(instances, ids, fresh);
      decision = await decide();
    }

    const census = this.census(csrs.pending, claims.registeredNodeNames);
    const bound = limits.maxPending ?? (limits.maxPendingBase ?? Defaults.maxPendingBase) + nodeClaims.length;
    this.deps.metrics.set(CsrPendingMetric, census.approvable);
    this.deps.metrics.set(CsrUnmatchedPendingMetric, census.unmatched);
    const overloaded = census.approvable > bound;
    this.setCondition(nodeIdentityCondition(overloaded, bound, census));
    if (decision.decision === 'approve' && overloaded) {
      log.warn('approvals paused: too many pending CSRs', { pending: census.approvable, bound, node: decision.nodeName });
      this.report(
        csr,
        {
          ...decision,
          decision: 'wait',
          reason: 'ApprovalsPaused',
          message: `${census.approvable} approvable kubelet CSRs are pending, more than ${bound}; approvals are paused until they are approved, denied or expire (${decision.message})`,
        },
        log,
        claimsGeneration,
      );
      return { requeueAfterMs: limits.waitRequeueMs ?? Defaults.waitRequeueMs };
    }

    // One client certificate per NodeClaim, also between concurrent reconciles: check and claim the slot
    // synchronously, before the first await of the approval.
    const claimKey = isClient && decision.decision === 'approve' ? this.claimKeyOf(nodeClaims, decision.nodeClaim) : undefined;
    if (claimKey !== undefined) {
      const here = this.approvedHere.get(claimKey);
      if (here && here.size > 0 && !here.has(name)) {
        decision = {
          ...decision,
          decision: 'ignore',
          reason: 'ClientCsrAlreadyApproved',
          message: `NodeClaim ${decision.nodeClaim} already has an approved client CSR (${[...here].join(', ')})`,
        };
      } else {
        this.approvedHere.set(claimKey, new Set([...(here ?? []), name]));
      }
    }

    if (decision.decision === 'approve') {
      let written: boolean;
      try {
        written = (await store.approveCertificateSigningRequest(name, decision.reason, decision.message)).changed;
      } catch (e) {
        if (claimKey !== undefined) this.approvedHere.get(claimKey)?.delete(name);
        if (isNotFoundError(e)) {
          this.forget(name, false);
          return {};
        }
        // The CSR changed between the live read and the approval (cluster-machine-approver approving it, most
        // often): not a failure. The change wakes the CSR again; the requeue covers a missed event.
        if (isConflictError(e)) {
          log.debug('CSR changed while approving; deciding again', { node: decision.nodeName });
          return { requeueAfterMs: limits.waitRequeueMs ?? Defaults.waitRequeueMs };
        }
        throw e;
      }
      if (!written) {
        // Approved by another approver since the cache was read (cluster-machine-approver approves serving
        // renewals it can match to a Machine): done, and not ours to report as approved.
        log.info('CSR already approved by another approver', { node: decision.nodeName, nodeClaim: decision.nodeClaim });
        this.forget(name, true);
        return {};
      }
      this.report(csr, decision, log, claimsGeneration);
      this.forget(name, true);
      return {};
    }

    this.report(csr, decision, log, claimsGeneration);
    return decision.decision === 'wait' ? { requeueAfterMs: limits.waitRequeueMs ?? Defaults.waitRequeueMs } : {};
  }

  private async lookupOrThrow(
    ids: InstanceIds,
    opts: LookupOptions,
    nodeName: string,
    log: Logger,
  ): Promise<ReadonlyMap<string, ObservedInstance>> {
    this.waitingOnCloud++;
    this.warmCensus();
    try {
      return await this.lookup.lookup(ids, opts);
    } catch (e) {
      // No approval without proof; the typed error goes to the queue, which backs off and retries.
      log.warn('instance lookup failed', { node: nodeName, instances: [...ids].length, error: describeError(e) });
      // Refused or unusable credentials do not heal by retrying: say so where an admin looks. The next
      // reconcile whose lookups succeed sets the condition from the census again.
      if (isForbiddenError(e) || isInvalidInputError(e)) this.setCondition(instanceLookupRefusedCondition(describeError(e)));
      throw e;
    } finally {
      this.waitingOnCloud--;
    }
  }

  /**
   * While decisions wait on the cloud, rebuilds the shared CSR census once per snapshot TTL, parsing the
   * CSRs that arrived meanwhile. In a burst, the decisions an answer releases then find the census built
   * instead of all waiting on one parse of every CSR that arrived during the call; the census they read is
   * no older than it would be otherwise. Runs only from a reconcile (never on a standby), and stops once
   * no decision waits.
   */
  private warmCensus(): void {
    if (this.warming) return;
    this.warming = true;
    const tick = (): void => {
      if (this.waitingOnCloud === 0) {
        this.warming = false;
        return;
      }
      void this.csrs
        .get()
        .catch(() => undefined)
        .then(() => this.schedule(tick, this.snapshotTtlMs));
    };
    this.schedule(tick, this.snapshotTtlMs);
  }

  /** Instances matched by pending client CSRs whose answer at hand was read before that CSR was seen. */
  private staleForPending(instances: ReadonlyMap<string, ObservedInstance>): string[] {
    const { byName } = derivedOf(instances);
    const out: string[] = [];
    for (const [csr, e] of this.index.entries()) {
      if (e.signer !== KubeletClientSigner || !e.nodeName) continue;
      const seen = this.index.seenMs(csr);
      if (seen === undefined) continue;
      for (const i of byName.get(e.nodeName) ?? []) if (i.readAtMs < seen) out.push(i.instanceId);
    }
    return out;
  }

  /**
   * Pending kubelet CSRs that could still be approved (one per node name: one client certificate per
   * NodeClaim, one Node per name), and those that match no Karpenter instance or Node.
   */
  private census(pendingNames: readonly string[], karpenterNodes: ReadonlySet<string>): { approvable: number; unmatched: number } {
    // Run by every decision over every pending CSR: two sets of names, no string built per CSR.
    const clients = new Set<string>();
    const serving = new Set<string>();
    let unmatched = 0;
    for (const n of pendingNames) {
      const e = this.index.get(n);
      if (!e?.nodeName) continue;
      const isClient = e.signer === KubeletClientSigner;
      if (isClient ? this.candidateNames.has(e.nodeName) : karpenterNodes.has(e.nodeName)) (isClient ? clients : serving).add(e.nodeName);
      else unmatched++;
    }
    return { approvable: clients.size + serving.size, unmatched };
  }

  private async parse(csr: KubeObject): Promise<CsrParseResult> {
    return (await this.requests.parse(csr)).parsed;
  }

  /** Indexes a kubelet CSR (with the node name of its parsed request, when parsed). */
  private track(csr: KubeObject): void {
    this.index.track(csr, this.requests.nodeNameOf(csr));
  }

  /**
   * A CSR that is no longer pending, or gone: out of the index. Its parse is kept while `keepParse` (an
   * approved kubelet CSR, which the one-client-certificate rule may ask about); a deleted CSR's is dropped.
   */
  private forget(name: string, keepParse: boolean): void {
    this.index.forget(name);
    if (!keepParse) this.requests.drop(name);
  }

  private async nodesNamed(nodeName: string): Promise<CsrNode[]> {
    const found = await this.deps.store.get({ ...Types.Node, name: nodeName });
    return found ? [csrNodeView(found)] : [];
  }

  /**
   * Client CSRs already approved for the NodeClaims whose instance is `nodeName`: those the cache shows
   * (created after the NodeClaim) and those this process approved.
   */
  private async approvedCounts(
    nodeName: string,
    claims: ClaimSnapshot,
    instances: ReadonlyMap<string, ObservedInstance>,
    csrs: CsrSnapshot,
  ): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    const named = derivedOf(instances).byName.get(nodeName) ?? [];
    for (const nc of named.flatMap((i) => claims.byInstanceId.get(i.instanceId) ?? [])) {
      const seen = new Set(await this.requests.approvedFor(csrs.approvedClient, nodeName, nc.createdMs));
      for (const n of this.approvedHere.get(nc.uid ?? nc.name) ?? []) seen.add(n);
      if (seen.size) counts.set(nc.name, seen.size);
    }
    return counts;
  }

  private claimKeyOf(nodeClaims: CsrNodeClaim[], name: string | undefined): string | undefined {
    const nc = nodeClaims.find((n) => n.name === name);
    return nc ? (nc.uid ?? nc.name) : undefined;
  }

  /** Event, metric and log for a decision, once per change of a CSR's decision. */
  private report(csr: KubeObject, d: CsrDecision, log: Logger, claimsGeneration?: number): void {
    const name = csr.metadata.name;
    const key = `${d.decision}/${d.reason}`;
    if (!this.index.decided(name, key, claimsGeneration)) return;
    const fields = { decision: d.decision, reason: d.reason, node: d.nodeName, nodeClaim: d.nodeClaim, instance: d.instanceId };
    this.deps.metrics.inc(CsrDecisionsMetric, { outcome: d.decision, reason: d.reason });
    const ref: ObjectRef & { uid?: string } = { ...Types.CertificateSigningRequest, name };
    if (csr.metadata.uid) ref.uid = csr.metadata.uid;
    const type: EventType = d.decision === 'ignore' && !NotOursReasons.has(d.reason) ? 'Warning' : 'Normal';
    const verb = d.decision === 'approve' ? 'Approved' : d.decision === 'wait' ? 'Waiting' : 'Not approved';
    this.deps.events.record(ref, type, d.reason, `${verb}: ${d.message}`);
    if (d.decision === 'approve') log.info('approved CSR', { ...fields, message: d.message });
    else if (d.decision === 'wait') log.debug('CSR not approvable yet', { ...fields, message: d.message });
    else log.info('not approving CSR', { ...fields, message: d.message });
  }

  private setCondition(next: ConditionInput): void {
    const c = this.currentCondition;
    if (c.status === next.status && c.reason === next.reason && c.message === next.message) return;
    this.currentCondition = next;
    this.deps.board?.setCondition(this.name, next);
  }
}
