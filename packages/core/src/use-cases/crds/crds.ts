import { isUnsupportedPlatformError } from '../../errors.js';
import type { KarpenterRequest } from '../../model/cluster.js';
import type { KubeObject } from '../../model/kube.js';
import { Types } from '../../model/kube.js';
import { Names } from '../../model/names.js';
import type { Clock } from '../../ports/clock.js';
import type { CloudProvider } from '../../ports/cloud-provider.js';
import type { Topology } from '../../ports/topology.js';
import type { Reconciler, Result, Watch } from '../../runtime/reconciler.js';

export const CRDS_KEY = 'crds';

export interface CrdsDeps {
  topology: Topology;
  cloud: CloudProvider;
}

/** The watch of the CRDs the operator installs (they carry the managed label): one informer for every user. */
export const ManagedCrdsWatch: Watch = { type: Types.CustomResourceDefinition, labels: { [Names.managedLabel]: 'true' } };

/** True when the CRD reports `Established=True`. */
export function crdEstablished(crd: KubeObject | undefined): boolean {
  const conds = (crd?.status as { conditions?: Array<{ type: string; status: string }> } | undefined)?.conditions;
  return Boolean(conds?.some((c) => c.type === 'Established' && c.status === 'True'));
}

/** The runtime CRDs, labelled so the operator's informer watches only them. Schemas stay as upstream ships them. */
export function desiredCrds(cloud: CloudProvider): KubeObject[] {
  return cloud.crds().map((crd) => ({
    apiVersion: crd.apiVersion,
    kind: crd.kind,
    metadata: { name: crd.metadata.name, labels: { [Names.managedLabel]: 'true' } },
    spec: crd.spec,
  }));
}

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
      if (now !== undefined) this.establishedUntil = now + 1_000;
    }
    return { open: true, request };
  }
}

/** What a gated reconcile returns while the gate is closed. */
export const closedResult = (state: Extract<KarpenterGateState, { open: false }>): Result =>
  state.requeueAfterMs !== undefined ? { requeueAfterMs: state.requeueAfterMs } : {};

/**
 * `customresourcedefinition.crds`: applies NodePool, NodeClaim, NodeOverlay and the provider's NodeClass
 * CRDs while Karpenter is requested; re-creates them when deleted; never deletes them (deleting a CRD
 * deletes every object of its kind).
 */
export class CrdsReconciler implements Reconciler {
  readonly name = 'customresourcedefinition.crds';
  readonly watches: Watch[];

  constructor(private readonly deps: CrdsDeps) {
    this.watches = [...deps.topology.watches, ManagedCrdsWatch];
  }

  keysFor(): string[] {
    return [CRDS_KEY];
  }

  async resyncKeys(): Promise<string[]> {
    return [CRDS_KEY];
  }

  async reconcile(): Promise<Result> {
    const { topology, cloud } = this.deps;
    if (!(await activeRequest(topology, cloud))) return {};
    for (const crd of desiredCrds(cloud)) await topology.workloadStore.apply(crd);
    // Not gated on the CRDs it installs; it waits for them as the gate does.
    return (await pendingCrds(topology, cloud)).length ? { requeueAfterMs: CrdsPendingRequeueMs } : {};
  }
}
