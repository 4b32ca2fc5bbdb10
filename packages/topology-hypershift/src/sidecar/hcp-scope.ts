import { type ClusterStore, type KubeObject, type Result } from '@karpenter-operator/core';
import { decodeHostedControlPlane, HostedControlPlaneType, type HostedControlPlane } from '../hcp.js';

/** The HostedControlPlanes one sidecar serves: every HCP of `namespace`, or only `hcpName` when given. */
export interface HcpScopeDeps {
  /** Management cluster, HCP namespace. */
  management: ClusterStore;
  namespace: string;
  /** Only this HCP; every HCP of the namespace when absent. */
  hcpName?: string;
}

/** The key that stands for every HCP of the scope. */
export const ALL_HCPS = '*';

/**
 * The preamble every sidecar controller shares: which keys an object maps to, which HCPs exist, and a
 * reconcile of one key that reads the HCP, decodes it and hands it on. An HCP that is gone or fails to
 * decode is skipped: the operator reports an invalid HCP (condition and event naming the field), and the
 * HCP watch wakes the controller when it is fixed.
 */
export class HcpScope {
  constructor(private readonly deps: HcpScopeDeps) {}

  /** An HCP of the scope → its name; an HCP outside it → none; any other object → `others`. */
  keysFor(obj: { apiVersion: string; kind: string; metadata: { name: string } }, others: 'every-hcp' | 'none'): string[] {
    if (obj.apiVersion === HostedControlPlaneType.apiVersion && obj.kind === HostedControlPlaneType.kind) {
      return this.deps.hcpName && obj.metadata.name !== this.deps.hcpName ? [] : [obj.metadata.name];
    }
    if (others === 'none') return [];
    return [this.deps.hcpName ?? ALL_HCPS];
  }

  /** The names of the HCPs of the scope that exist. */
  async names(): Promise<string[]> {
    return (await this.objects()).map((h) => h.metadata.name);
  }

  private async objects(): Promise<KubeObject[]> {
    const all = await this.deps.management.list(HostedControlPlaneType, { namespace: this.deps.namespace });
    return this.deps.hcpName ? all.filter((h) => h.metadata.name === this.deps.hcpName) : all;
  }

  /**
   * Runs `fn` for HCP `key` (`*`: each HCP of the scope) if it exists and decodes, in turn; the result is
   * the soonest requeue any of them asked for.
   */
  async each(key: string, fn: (hcp: HostedControlPlane, obj: KubeObject) => Promise<Result>): Promise<Result> {
    const { management, namespace } = this.deps;
    const targets =
      key === ALL_HCPS
        ? await this.objects()
        : [await management.get<KubeObject>({ ...HostedControlPlaneType, namespace, name: key })].filter((o): o is KubeObject => !!o);
    let requeueAfterMs: number | undefined;
    for (const obj of targets) {
      let hcp: HostedControlPlane;
      try {
        hcp = decodeHostedControlPlane(obj);
      } catch {
        continue;
      }
      const r = await fn(hcp, obj);
      if (r.requeueAfterMs !== undefined) requeueAfterMs = Math.min(requeueAfterMs ?? Infinity, r.requeueAfterMs);
    }
    return requeueAfterMs === undefined ? {} : { requeueAfterMs };
  }
}
