import { createHash } from 'node:crypto';
import type { ClusterClient } from './access.js';
import { kubeRequest } from './kube-request.js';
import { listObjects, type KubeObj } from './resources.js';

const MCO_API = '/apis/machineconfiguration.openshift.io/v1';
const SUFFIX_ANNOTATION = 'machineconfiguration.openshift.io/mc-name-suffix';

type Configuration = { name: string; source: Array<{ apiVersion: string; kind: string; name: string }> };
type Pool = KubeObj & {
  spec?: { configuration?: Configuration };
  status?: { configuration?: Configuration };
};
type KubeletConfig = KubeObj & {
  spec?: { machineConfigPoolSelector?: { matchLabels?: Record<string, string> } };
  status?: { observedGeneration?: number; conditions?: Array<{ type: string }> };
};

/**
 * Stands in for the Machine Config Operator where a test is not about MCO (the real machine-config-controller
 * and machine-config-server run in the tests that are: `mco.ts`). It keeps to what the real controller is seen
 * to do, for the pools with the given label (default: the pools karpenter-operator manages):
 *
 * - a pool is rendered at once: `spec.configuration` and `status.configuration` name `rendered-<pool>-<hash>`,
 *   rendered from `00-worker` and the generated kubelet MachineConfig of every synced KubeletConfig selecting it;
 * - a KubeletConfig selecting a configured pool is synced: annotation `mc-name-suffix` (`""`, the first one of
 *   its pool), condition `Success`, and its `99-<pool>-generated-kubelet` joins the pool's sources. No
 *   finalizer: nothing here would remove it.
 *
 * Like the real kubelet-config controller it never re-syncs a KubeletConfig for a pool created after it.
 * Returns a function that stops it.
 */
export function startMachineConfigRenderer(
  cluster: ClusterClient,
  opts: { labelSelector?: string; pollMs?: number; log?: (line: string) => void } = {},
): () => void {
  const kc = cluster.kubeConfig();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  /** KubeletConfig name → the pools it was synced for (the real controller's one pass). */
  const synced = new Map<string, string[]>();
  const poll = async () => {
    const [pools, kubeletConfigs] = await Promise.all([
      listObjects<Pool>(
        kc,
        'machineconfiguration.openshift.io/v1',
        'MachineConfigPool',
        undefined,
        opts.labelSelector ?? 'karpenter-operator.openshift.io/managed=true',
      ).catch(() => [] as Pool[]),
      listObjects<KubeletConfig>(kc, 'machineconfiguration.openshift.io/v1', 'KubeletConfig').catch(() => [] as KubeletConfig[]),
    ]);
    for (const k of kubeletConfigs) {
      if (synced.has(k.metadata.name) || k.metadata.deletionTimestamp) continue;
      const labels = k.spec?.machineConfigPoolSelector?.matchLabels ?? {};
      const selected = pools.filter((p) => Object.entries(labels).every(([key, v]) => p.metadata.labels?.[key] === v));
      if (!selected.length || selected.some((p) => !p.spec?.configuration?.name)) continue;
      const patched = await kubeRequest(kc, 'PATCH', `${MCO_API}/kubeletconfigs/${encodeURIComponent(k.metadata.name)}`, {
        body: { metadata: { annotations: { [SUFFIX_ANNOTATION]: '' } } },
        contentType: 'application/merge-patch+json',
      }).catch(() => undefined);
      if (patched?.status !== 200) continue;
      await kubeRequest(kc, 'PATCH', `${MCO_API}/kubeletconfigs/${encodeURIComponent(k.metadata.name)}/status`, {
        body: {
          status: { observedGeneration: k.metadata.generation, conditions: [{ type: 'Success', status: 'True', message: 'Success' }] },
        },
        contentType: 'application/merge-patch+json',
      }).catch(() => undefined);
      synced.set(
        k.metadata.name,
        selected.map((p) => p.metadata.name),
      );
      opts.log?.(`KubeletConfig ${k.metadata.name} synced for ${selected.map((p) => p.metadata.name).join(', ')}`);
    }
    const live = new Set(kubeletConfigs.filter((k) => !k.metadata.deletionTimestamp).map((k) => k.metadata.name));
    for (const name of synced.keys()) if (!live.has(name)) synced.delete(name);
    for (const p of pools) {
      const generated = [...synced.entries()]
        .filter(([, ps]) => ps.includes(p.metadata.name))
        .map(() => `99-${p.metadata.name}-generated-kubelet`);
      const source = ['00-worker', ...new Set(generated)].map((name) => ({
        apiVersion: 'machineconfiguration.openshift.io/v1',
        kind: 'MachineConfig',
        name,
      }));
      const name = `rendered-${p.metadata.name}-${createHash('md5').update(JSON.stringify(source)).digest('hex')}`;
      if (p.spec?.configuration?.name === name && p.status?.configuration?.name === name) continue;
      const configuration = { name, source };
      const spec = await kubeRequest(kc, 'PATCH', `${MCO_API}/machineconfigpools/${encodeURIComponent(p.metadata.name)}`, {
        body: { spec: { configuration } },
        contentType: 'application/merge-patch+json',
      }).catch(() => undefined);
      if (spec?.status !== 200) continue;
      const res = await kubeRequest(kc, 'PATCH', `${MCO_API}/machineconfigpools/${encodeURIComponent(p.metadata.name)}/status`, {
        body: { status: { configuration, observedGeneration: p.metadata.generation } },
        contentType: 'application/merge-patch+json',
      }).catch(() => undefined);
      if (res?.status === 200) opts.log?.(`MachineConfigPool ${p.metadata.name} rendered as ${name}`);
    }
  };
  const loop = () => {
    if (stopped) return;
    void poll().finally(() => {
      if (!stopped) timer = setTimeout(loop, opts.pollMs ?? 1000);
    });
  };
  loop();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}
