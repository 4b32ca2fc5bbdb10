import { createHash } from 'node:crypto';
import type { ClusterClient } from './access.js';
import { kubeRequest } from './kube-request.js';
import { listObjects, type KubeObj } from './resources.js';

type Pool = KubeObj & { spec?: unknown; status?: { configuration?: { name?: string } } };

/**
 * Stands in for the Machine Config Operator's render step: every MachineConfigPool with the given label
 * (default: the pools karpenter-operator manages) gets `status.configuration.name`
 * (`rendered-<pool>-<hash of its spec>`), which is how MCO says the Machine Config Server can serve
 * `/config/<pool>`. Returns a function that stops it.
 */
export function startMachineConfigRenderer(
  cluster: ClusterClient,
  opts: { labelSelector?: string; pollMs?: number; log?: (line: string) => void } = {},
): () => void {
  const kc = cluster.kubeConfig();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const poll = async () => {
    const pools = await listObjects<Pool>(
      kc,
      'machineconfiguration.openshift.io/v1',
      'MachineConfigPool',
      undefined,
      opts.labelSelector ?? 'karpenter-operator.openshift.io/managed=true',
    ).catch(() => []);
    for (const p of pools) {
      if (p.status?.configuration?.name) continue;
      const name = `rendered-${p.metadata.name}-${createHash('sha256')
        .update(JSON.stringify(p.spec ?? {}))
        .digest('hex')
        .slice(0, 32)}`;
      const res = await kubeRequest(
        kc,
        'PATCH',
        `/apis/machineconfiguration.openshift.io/v1/machineconfigpools/${encodeURIComponent(p.metadata.name)}/status`,
        {
          body: { status: { configuration: { name }, observedGeneration: p.metadata.generation } },
          contentType: 'application/merge-patch+json',
        },
      ).catch(() => undefined);
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
