import { AppsV1Api, CoreV1Api, type V1Deployment } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { seededWorld, testCluster } from '../../src/test-env.js';
import { waitFor } from '../../src/wait.js';

const NS = 'testkit-workload';

describe('workloads on simulated nodes', () => {
  it('a 1-replica Deployment becomes Available on a KWOK worker node', async () => {
    const cluster = testCluster();
    const kc = cluster.kubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    const apps = kc.makeApiClient(AppsV1Api);
    await core.createNamespace({ body: { metadata: { name: NS } } });
    const labels = { app: 'probe' };
    await apps.createNamespacedDeployment({
      namespace: NS,
      body: {
        metadata: { name: 'probe' },
        spec: {
          replicas: 1,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              containers: [
                { name: 'probe', image: 'registry.example.com/probe:1', resources: { requests: { cpu: '100m', memory: '64Mi' } } },
              ],
            },
          },
        },
      },
    });

    const available = await waitFor(
      'Deployment probe to be Available',
      async () => {
        const d: V1Deployment = await apps.readNamespacedDeployment({ name: 'probe', namespace: NS });
        return d.status?.conditions?.some((c) => c.type === 'Available' && c.status === 'True') && d.status.availableReplicas === 1
          ? d
          : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    expect(available.status?.readyReplicas).toBe(1);

    // Scheduled by kube-scheduler onto a worker (control-plane nodes are tainted), run by KWOK.
    const pods = await core.listNamespacedPod({ namespace: NS, labelSelector: 'app=probe' });
    expect(pods.items).toHaveLength(1);
    const pod = pods.items[0]!;
    expect(pod.status?.phase).toBe('Running');
    expect(seededWorld().facts.workerNodes.map((n) => n.name)).toContain(pod.spec?.nodeName);
  });
});
