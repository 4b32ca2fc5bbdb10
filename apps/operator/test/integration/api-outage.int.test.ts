import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteObject, getObject, startApiFaultProxy, waitFor, type ApiFaultProxy } from '@karpenter-operator/testkit';
import { testCluster } from '@karpenter-operator/testkit/vitest';
import { installManifests, OPERATOR_NS, resetOperatorWorld, startOperator, type OperatorProcess } from '../support/operator-process.js';
import { applyKarpenterAndCredentials, isConverged } from '../support/scenario.js';

/**
 * A kube-apiserver rollout as the leader sees it: every connection dropped and every new one reset for
 * 60 s (the longest gap a rollout leaves), with the operator on the timings the shipped Deployment gets
 * (no timing flags: OpenShift's 137 s / 107 s / 26 s). The leader's renewals fail during the gap and it
 * keeps leading: no exit, no "lost the leader lease", the same holder renewing afterwards, and it repairs
 * drift made during the gap. With client-go's 10 s renew deadline the same gap ends in exit code 2.
 */
const cluster = testCluster();
const kc = () => cluster.kubeConfig();
const OUTAGE_MS = 60_000;
const LEASE = ['coordination.k8s.io/v1', 'Lease', 'karpenter-operator.openshift.io', OPERATOR_NS] as const;
const MCP = ['machineconfiguration.openshift.io/v1', 'MachineConfigPool', 'karpenter-default'] as const;

interface LeaseSpec {
  holderIdentity?: string;
  renewTime?: string;
  leaseDurationSeconds?: number;
}
const leaseSpec = async () => ((await getObject(kc(), ...LEASE))?.spec ?? {}) as LeaseSpec;
const tail = (op: OperatorProcess) => op.logs().split('\n').slice(-15).join('\n');

let proxy: ApiFaultProxy | undefined;
let op: OperatorProcess | undefined;

describe('kube-apiserver unavailable for 60 s (a rollout) under the shipped leader-election timings', () => {
  beforeAll(async () => {
    await installManifests(cluster);
    await resetOperatorWorld(cluster);
    proxy = await startApiFaultProxy(cluster.info.server, cluster.info.caFile);
    op = await startOperator(cluster, { name: 'api-outage', apiServer: proxy.url, electionTiming: 'production' });
    await applyKarpenterAndCredentials(cluster, {});
    // A Lease left by another file's killed replica expires after its own (test) duration.
    await waitFor('the operator to lead', async () => op!.logs().includes('"became leader"'), {
      timeoutMs: 60_000,
      abort: () => (op!.exited() ? tail(op!) : undefined),
    });
    await waitFor('converged before the outage', () => isConverged(cluster), { timeoutMs: 120_000, intervalMs: 300 });
  }, 240_000);

  afterAll(async () => {
    proxy?.setFault({ kind: 'none' });
    await op?.stop();
    await proxy?.close();
    await resetOperatorWorld(cluster);
  }, 120_000);

  it('the leader keeps leading through the gap, renews the same Lease after it, and reconciles', async () => {
    expect(op!.logs()).toContain('"leaseDurationMs":137000');
    const before = await leaseSpec();
    expect(before.leaseDurationSeconds).toBe(137);
    expect(before.holderIdentity).toMatch(/^api-outage_/);

    proxy!.setFault({ kind: 'unavailable' });
    const outageStart = Date.now();
    // Drift made while the operator cannot see the API server.
    const uid = (await getObject(kc(), ...MCP))!.metadata.uid;
    await deleteObject(kc(), ...MCP);
    while (Date.now() - outageStart < OUTAGE_MS) {
      expect(op!.exited(), `the operator exited during the outage:\n${tail(op!)}`).toBe(false);
      await new Promise((r) => setTimeout(r, 1_000));
    }
    proxy!.setFault({ kind: 'none' });
    const recoveredAt = Date.now();
    const reset = proxy!.requests().filter((r) => r.fault === 'unavailable');
    expect(reset.length, 'requests refused during the outage').toBeGreaterThan(0);
    expect(op!.logs(), 'a renewal failed during the outage').toContain('acquiring or renewing the leader lease failed');

    // The next renewal is at most one retry period (26 s) away; the bound leaves room for a loaded machine.
    await waitFor('the same holder to renew after the outage', async () => Date.parse((await leaseSpec()).renewTime ?? '') > recoveredAt, {
      timeoutMs: 90_000,
      intervalMs: 1_000,
      abort: () => (op!.exited() ? tail(op!) : undefined),
    });
    const after = await leaseSpec();
    expect(after.holderIdentity).toBe(before.holderIdentity);
    await waitFor(
      'the pool deleted during the outage re-created',
      async () => {
        const p = await getObject(kc(), ...MCP);
        return p !== undefined && p.metadata.uid !== uid;
      },
      { timeoutMs: 90_000, intervalMs: 500 },
    );
    expect(op!.exited()).toBe(false);
    expect(op!.logs()).not.toContain('lost the leader lease');
    console.log(
      `api-outage: ${JSON.stringify({ outageMs: recoveredAt - outageStart, refusedRequests: reset.length, renewedAfterMs: Date.parse(after.renewTime!) - recoveredAt })}`,
    );
  }, 300_000);
});
