import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyObject, deleteObject, getObject, waitFor } from '@karpenter-operator/testkit';
import { testCluster } from '@karpenter-operator/testkit/vitest';
import { credentialsFileText, installManifests, OPERATOR_NS, resetOperatorWorld, startOperator, type OperatorProcess } from '../support/operator-process.js';

const cluster = testCluster();
const kc = () => cluster.kubeConfig();
const LEASE = ['coordination.k8s.io/v1', 'Lease', 'karpenter-operator.openshift.io', OPERATOR_NS] as const;
const holder = async () => ((await getObject(kc(), ...LEASE))?.spec as { holderIdentity?: string } | undefined)?.holderIdentity ?? '';
const leading = (p: OperatorProcess) => p.logs().includes('"became leader"');

describe('two operator replicas with leader election', () => {
  const procs: OperatorProcess[] = [];

  beforeAll(async () => {
    await installManifests(cluster);
    await resetOperatorWorld(cluster);
    await applyObject(kc(), {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'karpenter-cloud-credentials', namespace: OPERATOR_NS },
      stringData: { credentials: credentialsFileText() },
    });
    procs.push(await startOperator(cluster, { name: 'replica-a' }));
    procs.push(await startOperator(cluster, { name: 'replica-b' }));
  }, 180_000);

  afterAll(async () => {
    await deleteObject(kc(), 'autoscaling.openshift.io/v1alpha1', 'Karpenter', 'default').catch(() => {});
    const alive = procs.filter((p) => !p.exited());
    if (alive.length) {
      await waitFor('teardown to finish', async () => (await getObject(kc(), 'autoscaling.openshift.io/v1alpha1', 'Karpenter', 'default')) === undefined, { timeoutMs: 60_000 }).catch(() => {});
    }
    await Promise.all(procs.map((p) => p.stop()));
    await resetOperatorWorld(cluster);
  }, 120_000);

  it('exactly one replica leads; both are ready; the Lease names the leader', async () => {
    await waitFor('a leader', async () => procs.some(leading), { timeoutMs: 30_000 });
    // Give a wrongly-eager second replica the time to show itself.
    await new Promise((r) => setTimeout(r, 4_000));
    expect(procs.filter(leading)).toHaveLength(1);
    const leader = procs.find(leading)!;
    expect(await holder()).toMatch(leader === procs[0] ? /^replica-a_/ : /^replica-b_/);
    for (const p of procs) expect((await fetch(`http://127.0.0.1:${p.healthPort}/readyz`)).status).toBe(200);
  });

  it('killing the leader (SIGKILL): the standby takes over within the lease duration and keeps reconciling', async () => {
    const leader = procs.find(leading)!;
    const standby = procs.find((p) => p !== leader)!;
    const killedAt = Date.now();
    await leader.kill();
    await waitFor('the standby to lead', async () => leading(standby), { timeoutMs: 25_000, intervalMs: 100 });
    const failoverMs = Date.now() - killedAt;
    // Like client-go, a standby counts the lease from when it *observed* the last renewal (no trust in
    // clocks across hosts): worst case lease 15 s + one retry period (2 s, +20 % jitter) late observation
    // + one more retry period to notice expiry.
    expect(failoverMs).toBeLessThan(15_000 + 2 * 2_400 + 1_000);
    console.error(`leader-election: failover took ${failoverMs} ms`);

    await applyObject(kc(), { apiVersion: 'autoscaling.openshift.io/v1alpha1', kind: 'Karpenter', metadata: { name: 'default' }, spec: {} });
    await waitFor('the new leader to deploy the operand', () => getObject(kc(), 'apps/v1', 'Deployment', 'karpenter', OPERATOR_NS), { timeoutMs: 60_000 });
    expect(standby.exited()).toBe(false);
  }, 120_000);
});
