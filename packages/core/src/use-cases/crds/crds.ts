import type { KubeObject } from '../../model/kube.js';
import { Types } from '../../model/kube.js';
import { Names } from '../../model/names.js';
import type { CloudProvider } from '../../ports/cloud-provider.js';
import type { Topology } from '../../ports/topology.js';
import type { Reconciler, Result, Watch } from '../../runtime/reconciler.js';
import { activeRequest, CrdsPendingRequeueMs, pendingCrds } from '../gate.js';

export const CRDS_KEY = 'crds';

export interface CrdsDeps {
  topology: Topology;
  cloud: CloudProvider;
}

/** The watch of the CRDs the operator installs (they carry the managed label): one informer for every user. */
export const ManagedCrdsWatch: Watch = { type: Types.CustomResourceDefinition, labels: { [Names.managedLabel]: 'true' } };

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
