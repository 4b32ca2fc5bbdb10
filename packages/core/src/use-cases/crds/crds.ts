import { isUnsupportedPlatformError } from '../../errors.js';
import type { KarpenterRequest } from '../../model/cluster.js';
import type { KubeObject } from '../../model/kube.js';
import { Types } from '../../model/kube.js';
import { Names } from '../../model/names.js';
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
 * `customresourcedefinition.crds`: applies NodePool, NodeClaim, NodeOverlay and the provider's NodeClass
 * CRDs while Karpenter is requested; re-creates them when deleted; never deletes them (deleting a CRD
 * deletes every object of its kind).
 */
export class CrdsReconciler implements Reconciler {
  readonly name = 'customresourcedefinition.crds';
  readonly watches: Watch[];

  constructor(private readonly deps: CrdsDeps) {
    this.watches = [
      ...deps.topology.watches,
      ManagedCrdsWatch,
    ];
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
    const pending = await pendingCrds(topology, cloud);
    // Established follows within a second or two; the CRD watch usually wakes us first.
    return pending.length ? { requeueAfterMs: 1000 } : {};
  }
}
