import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  deleteObject,
  getObject,
  startOpenShiftAwsCluster,
  waitFor,
  type ClusterHandle,
  type SeededWorld,
} from '@karpenter-operator/testkit';
import { clusterOperator } from '../support/k8s.js';
import { installManifests, OPERATOR_NS, startOperator, type OperatorProcess } from '../support/operator-process.js';
import {
  applyKarpenterAndCredentials,
  isConverged,
  launchKarpenterInstance,
  submitClientCsr,
  waitCsrApproved,
} from '../support/scenario.js';

/**
 * Chaos: the kube-apiserver stops for 10 s and comes back. A dedicated cluster (stopping the shared
 * one would break the other files, and its handle lives in the globalSetup process). The operator
 * runs without leader election here (see beforeAll).
 */
let cluster: ClusterHandle;
let world: SeededWorld;
let op: OperatorProcess;

describe('chaos: kube-apiserver down for 10 s', () => {
  beforeAll(async () => {
    ({ cluster, world } = await startOpenShiftAwsCluster({}));
    await installManifests(cluster);
    // Without leader election: with it, a 10 s outage reaches the 10 s renew deadline and the process
    // exits by design ("lost the leader lease; exiting", as client-go) for its Pod to be restarted.
    op = await startOperator(cluster, { name: 'chaos-apiserver', leaderElect: false });
    await applyKarpenterAndCredentials(cluster, {});
    await waitFor('convergence', () => isConverged(cluster), { timeoutMs: 90_000, intervalMs: 300 });
  }, 240_000);

  afterAll(async () => {
    await op?.stop();
    await cluster?.stop();
  }, 120_000);

  it('informers recover, a CSR created right after recovery is approved within 30 s, the operator never exits', async () => {
    const node = await launchKarpenterInstance(cluster, world, 'chaos-apiserver-1');
    const stoppedAt = Date.now();
    await cluster.stopApiServer();
    await new Promise((r) => setTimeout(r, 10_000));
    expect(op.exited(), `the operator exited during the outage:\n${op.logs().split('\n').slice(-8).join('\n')}`).toBe(false);
    await cluster.startApiServer();
    const upAt = Date.now();
    const csr = await waitFor('a CSR to be accepted after the restart', () => submitClientCsr(cluster, node.dns), {
      timeoutMs: 30_000,
      intervalMs: 250,
    });
    await waitCsrApproved(cluster, csr, 30_000);
    const approvedMs = Date.now() - upAt;
    // Informers back: a deletion after recovery is seen and reverted.
    const MCP = ['machineconfiguration.openshift.io/v1', 'MachineConfigPool', 'karpenter-default'] as const;
    const uid = (await getObject(cluster.kubeConfig(), ...MCP))!.metadata.uid;
    await deleteObject(cluster.kubeConfig(), ...MCP);
    await waitFor(
      'the deleted pool re-created',
      async () => {
        const p = await getObject(cluster.kubeConfig(), ...MCP);
        return p !== undefined && p.metadata.uid !== uid;
      },
      { timeoutMs: 30_000, intervalMs: 300 },
    );
    const revertedMs = Date.now() - upAt;
    await waitFor('converged after recovery', () => isConverged(cluster), { timeoutMs: 30_000, intervalMs: 300 }).catch(
      async (e: Error) => {
        // Say what was not converged: the ClusterOperator's conditions and the operand's rollout.
        const co = (await clusterOperator(cluster))?.status as { conditions?: unknown[] } | undefined;
        const dep = await getObject(cluster.kubeConfig(), 'apps/v1', 'Deployment', 'karpenter', OPERATOR_NS);
        const rollout = { generation: dep?.metadata['generation'], status: dep?.status };
        throw new Error(
          `${e.message}\nClusterOperator: ${JSON.stringify(co?.conditions)}\noperand: ${JSON.stringify(rollout)}\noperator log:\n${op.logs().split('\n').slice(-30).join('\n')}`,
        );
      },
    );
    expect(op.exited()).toBe(false);
    expect(approvedMs).toBeLessThan(30_000);
    console.log(
      `chaos-apiserver: ${JSON.stringify({ outageMs: upAt - stoppedAt, csrApprovedAfterRecoveryMs: approvedMs, driftRevertedAfterRecoveryMs: revertedMs, operatorExited: op.exited() })}`,
    );
    await node.terminate();
  }, 120_000);
});
