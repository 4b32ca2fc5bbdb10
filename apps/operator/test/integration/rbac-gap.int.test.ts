import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getObject, kubeRequest, startOpenShiftAwsCluster, waitFor, type ClusterHandle, type KubeObj } from '@karpenter-operator/testkit';
import { installManifests, startOperator, type OperatorProcess } from '../support/operator-process.js';
import { applyKarpenterAndCredentials, isConverged } from '../support/scenario.js';

/**
 * A gap in the operator's RBAC at start-up, on the real kube-apiserver's RBAC authorizer: the Role in
 * openshift-machine-api loses its MachineSet rule (an admin's edit, or a cluster whose RBAC lags the
 * operator), so the operator's first list of MachineSets is answered 403. The operator must not exit or
 * crash-loop; `/readyz` stays 503 and names the kind, the namespace and the API server's refusal; once the
 * Role is restored (install/ applied again) it becomes ready and converges without a restart.
 * A cluster of its own: the shared one's audit log must hold no 403 of the operator (zz-security).
 */
let cluster: ClusterHandle;
const kc = () => cluster.kubeConfig();
const ROLE_PATH = '/apis/rbac.authorization.k8s.io/v1/namespaces/openshift-machine-api/roles/karpenter-operator';

let op: OperatorProcess | undefined;

const readyz = async (port: number) => {
  const r = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined);
  return r ? { status: r.status, body: await r.text() } : undefined;
};

describe('RBAC gap at start-up: list MachineSets refused (403)', () => {
  beforeAll(async () => {
    ({ cluster } = await startOpenShiftAwsCluster({}));
    await installManifests(cluster);
    await applyKarpenterAndCredentials(cluster, {});
  }, 240_000);

  afterAll(async () => {
    await op?.stop();
    await cluster?.stop();
  }, 120_000);

  it('stays up and not ready, /readyz names MachineSet and the 403; ready and converged once the Role is back', async () => {
    type Role = KubeObj & { rules: Array<{ apiGroups?: string[]; resources?: string[]; verbs: string[] }> };
    const role = await getObject<Role>(kc(), 'rbac.authorization.k8s.io/v1', 'Role', 'karpenter-operator', 'openshift-machine-api');
    expect(role?.rules.some((r) => r.resources?.includes('machinesets'))).toBe(true);
    const rules = role!.rules.filter((r) => !r.resources?.includes('machinesets'));
    const put = await kubeRequest(kc(), 'PUT', ROLE_PATH, { body: { ...role, rules } });
    expect(put.status, JSON.stringify(put.body)).toBe(200);

    op = await startOperator(cluster, { name: 'rbac-gap', waitReady: false });
    const exitedLog = () => (op!.exited() ? `the operator exited:\n${op!.logs().slice(-4000)}` : undefined);
    const refused = await waitFor(
      '/readyz naming the refused MachineSet list',
      async () => {
        const r = await readyz(op!.healthPort);
        return r && r.status === 503 && r.body.includes('MachineSet') && /forbidden/i.test(r.body) ? r : false;
      },
      { timeoutMs: 90_000, intervalMs: 250, abort: exitedLog },
    );
    expect(refused.body).toContain('openshift-machine-api');
    console.log(`rbac-gap: /readyz 503: ${refused.body}`);
    // A while longer under the gap: still up, never ready.
    const until = Date.now() + 10_000;
    while (Date.now() < until) {
      expect(exitedLog()).toBeUndefined();
      expect((await readyz(op.healthPort))?.status).toBe(503);
      await new Promise((r) => setTimeout(r, 500));
    }

    await installManifests(cluster);
    // The informer's backoff is at most 30 s (with jitter): ready within a few of those.
    await waitFor('ready once the Role is restored', async () => (await readyz(op!.healthPort))?.status === 200, {
      timeoutMs: 120_000,
      intervalMs: 250,
      abort: exitedLog,
    });
    await waitFor('converged', () => isConverged(cluster), { timeoutMs: 120_000, intervalMs: 500, abort: exitedLog });
    expect(op.exited()).toBe(false);
  }, 480_000);
});
