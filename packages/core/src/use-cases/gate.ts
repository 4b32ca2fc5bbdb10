/**
 * The one gate of everything that needs a running Karpenter: "Karpenter is requested, not being torn down,
 * supported here, and its runtime CRDs are Established", decided here and nowhere else, with one requeue
 * delay while the CRDs are pending. The CRD installer (`crds/crds.ts`), which cannot wait behind the CRDs
 * it installs, and the status use-case read the same parts.
 */
import { isInvalidInputError, isUnsupportedPlatformError } from '../errors.js';
import type { KarpenterRequest } from '../model/cluster.js';
import { crdEstablished, Types } from '../model/kube.js';
import type { Clock } from '../ports/clock.js';
import type { CloudProvider } from '../ports/cloud-provider.js';
import type { Topology } from '../ports/topology.js';
import type { Reconciler, Result } from '../runtime/reconciler.js';

/**
 * The request to run Karpenter when it should run now: present, not being torn down, and on a platform its
 * provider supports; otherwise undefined. A malformed request throws (`InvalidInputError`) like `readRequest`.
 */
export async function activeRequest(topology: Topology, cloud: CloudProvider): Promise<KarpenterRequest | undefined> {
  const request = await topology.readRequest();
  if (!request || request.deleting) return undefined;
  try {
    cloud.assertSupported();
  } catch (e) {
    if (isUnsupportedPlatformError(e)) return undefined;
    throw e;
  }
  return request;
}

const crdNames = new WeakMap<CloudProvider, string[]>();

/** The runtime CRD names of a provider, computed once (its `crds()` copies large schemas on every call). */
export function runtimeCrdNames(cloud: CloudProvider): string[] {
  let names = crdNames.get(cloud);
  if (!names) {
    names = cloud.crds().map((c) => c.metadata.name);
    crdNames.set(cloud, names);
  }
  return names;
}

/** Names of the runtime CRDs that are not Established yet (absent counts). */
export async function pendingCrds(topology: Topology, cloud: CloudProvider): Promise<string[]> {
  const pending: string[] = [];
  for (const name of runtimeCrdNames(cloud)) {
    const cur = await topology.workloadStore.get({ ...Types.CustomResourceDefinition, name });
    if (!crdEstablished(cur)) pending.push(name);
  }
  return pending;
}

/**
 * How long a reconcile waits before looking again while the runtime CRDs are not Established. Established
 * follows within a second or two of an apply, and the CRD watch usually wakes the reconcile first.
 */
export const CrdsPendingRequeueMs = 2_000;

/** How long an "all Established" answer is reused (see `KarpenterGate`). */
const EstablishedReuseMs = 1_000;

export type KarpenterGateState = { open: true; request: KarpenterRequest } | { open: false; requeueAfterMs?: number };

/**
 * The one gate in front of everything that needs a running Karpenter (the operand, NodeClasses,
 * MachineConfigPools, CSR approval): the request is active (`activeRequest`) and the runtime CRDs are
 * Established. Closed without a requeue when no request is active (its watch re-opens it), with
 * `CrdsPendingRequeueMs` while CRDs are pending. Throws what `activeRequest` throws.
 *
 * With a clock, an "all Established" answer is reused for a second: reading four large cached CRDs for every
 * reconcile costs real CPU when thousands of CSRs arrive at once (a fresh operator reconciles every CSR).
 */
export class KarpenterGate {
  private establishedUntil = 0;

  constructor(private readonly deps: { topology: Topology; cloud: CloudProvider; clock?: Clock }) {}

  async check(): Promise<KarpenterGateState> {
    const { topology, cloud, clock } = this.deps;
    const request = await activeRequest(topology, cloud);
    if (!request) return { open: false };
    const now = clock?.now();
    if (now === undefined || now >= this.establishedUntil) {
      if ((await pendingCrds(topology, cloud)).length) return { open: false, requeueAfterMs: CrdsPendingRequeueMs };
      if (now !== undefined) this.establishedUntil = now + EstablishedReuseMs;
    }
    return { open: true, request };
  }
}

/** What a gated reconcile returns while the gate is closed. */
export const closedResult = (state: Extract<KarpenterGateState, { open: false }>): Result =>
  state.requeueAfterMs !== undefined ? { requeueAfterMs: state.requeueAfterMs } : {};

/**
 * Runs `inner` only while the `KarpenterGate` is open (Karpenter requested, not being torn down, supported on
 * this platform, its CRDs Established): NodeClasses, MachineConfigPools and CSR approval serve a running
 * Karpenter only. The gate watches what it depends on, so `inner` runs as soon as the gate opens.
 */
export function whileKarpenterRuns(inner: Reconciler, deps: { topology: Topology; cloud: CloudProvider; clock?: Clock }): Reconciler {
  const gate = new KarpenterGate(deps);
  return {
    name: inner.name,
    watches: [...deps.topology.watches, ...inner.watches],
    keysFor: (obj) => inner.keysFor(obj),
    resyncKeys: () => inner.resyncKeys(),
    async reconcile(key: string): Promise<Result> {
      let state;
      try {
        state = await gate.check();
      } catch (e) {
        // A malformed request is reported by the status use-case; nothing here can act on it.
        if (isInvalidInputError(e)) return {};
        throw e;
      }
      if (!state.open) return closedResult(state);
      return inner.reconcile(key);
    },
  };
}
