import { execFileSync } from 'node:child_process';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type ClusterHandle } from '../../src/cluster.js';
import { waitFor } from '../../src/wait.js';

/** Process ids whose command line mentions `dir` (the cluster's working directory). */
function processesUsing(dir: string): string[] {
  const out = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  return out.split('\n').filter((l) => l.includes(dir) && !l.includes('ps -eo'));
}

describe('a test-owned cluster (chaos hooks)', () => {
  let cluster: ClusterHandle;
  beforeAll(async () => {
    cluster = await startCluster({ ec2: false, keepBaseDir: false });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('survives an API server restart with its data, then stops without leaving a process behind', async () => {
    const core = cluster.kubeConfig().makeApiClient(CoreV1Api);
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'survivor' }, data: { k: 'v' } } });

    await cluster.stopApiServer();
    await expect(core.readNamespacedConfigMap({ name: 'survivor', namespace: 'default' })).rejects.toThrow();

    await cluster.startApiServer();
    const cm = await core.readNamespacedConfigMap({ name: 'survivor', namespace: 'default' });
    expect(cm.data).toEqual({ k: 'v' });
    // The controllers reconnected: a new namespace still gets its default ServiceAccount.
    await core.createNamespace({ body: { metadata: { name: 'after-restart' } } });
    await waitFor(
      'ServiceAccount after-restart/default',
      () => core.readNamespacedServiceAccount({ name: 'default', namespace: 'after-restart' }),
      { timeoutMs: 60_000 },
    );

    const dir = cluster.info.baseDir;
    expect(processesUsing(dir).length).toBeGreaterThanOrEqual(5);
    await cluster.stop();
    expect(processesUsing(dir)).toEqual([]);
  });
});
