import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteObject, getObject, listObjects, waitFor } from '@karpenter-operator/testkit';
import { testCluster } from '@karpenter-operator/testkit/vitest';
import { adminRequest } from '../support/k8s.js';
import {
  installManifests,
  OPERATOR_NS,
  OPERATOR_USER,
  resetOperatorWorld,
  startOperator,
  type OperatorProcess,
} from '../support/operator-process.js';
import { applyKarpenterAndCredentials, isConverged, RUNTIME_CRDS } from '../support/scenario.js';

/**
 * Chaos, bounded: SIGKILL the operator at random points while it converges from scratch, then let
 * the last one run. `KO_CHAOS_KILLS` (default 20, as the issue asks) sets
 * the number of kills; each kill lands a random 0.2-2.5 s after the operator reported ready.
 */
const cluster = testCluster();
const kc = () => cluster.kubeConfig();
const KILLS = Math.max(1, Math.min(40, Number(process.env.KO_CHAOS_KILLS ?? 20)));
const USER_LABEL = 'team.example.com/owner';

const procs: OperatorProcess[] = [];

describe('chaos: kill -9 while converging', () => {
  beforeAll(async () => {
    await installManifests(cluster);
    await resetOperatorWorld(cluster);
    for (const name of ['karpenter-default'])
      await deleteObject(kc(), 'machineconfiguration.openshift.io/v1', 'MachineConfigPool', name).catch(() => false);
    await deleteObject(kc(), 'karpenter.k8s.aws/v1', 'EC2NodeClass', 'default').catch(() => false);
  }, 120_000);

  afterAll(async () => {
    for (const p of procs) await p.kill();
    await resetOperatorWorld(cluster);
  }, 120_000);

  it(`${KILLS} kills at random points; the last run converges with no duplicate, orphaned or lost object; a user label survives`, async () => {
    const t0 = Date.now();
    await applyKarpenterAndCredentials(cluster, {});
    const killDelays: number[] = [];
    let labelled = false;
    for (let i = 0; i < KILLS; i++) {
      const p = await startOperator(cluster, { name: `chaos-${i}`, electionTiming: 'fast' });
      procs.push(p);
      const delay = 200 + Math.floor(Math.random() * 2_300);
      killDelays.push(delay);
      await new Promise((r) => setTimeout(r, delay));
      // Once the operand exists, a user label on it (a field the operator does not own) must survive every later kill and restart.
      if (!labelled && (await getObject(kc(), 'apps/v1', 'Deployment', 'karpenter', OPERATOR_NS))) {
        const r = await adminRequest(
          cluster,
          'PATCH',
          `/apis/apps/v1/namespaces/${OPERATOR_NS}/deployments/karpenter`,
          { metadata: { labels: { [USER_LABEL]: 'me' } } },
          'application/merge-patch+json',
        );
        labelled = r.status === 200;
      }
      await p.kill();
    }
    const last = await startOperator(cluster, { name: 'chaos-final', electionTiming: 'fast' });
    procs.push(last);
    const restartedAt = Date.now();
    await waitFor('convergence after the last restart', () => isConverged(cluster), { timeoutMs: 90_000, intervalMs: 200 });
    const convergeMs = Date.now() - restartedAt;
    if (!labelled) {
      const r = await adminRequest(
        cluster,
        'PATCH',
        `/apis/apps/v1/namespaces/${OPERATOR_NS}/deployments/karpenter`,
        { metadata: { labels: { [USER_LABEL]: 'me' } } },
        'application/merge-patch+json',
      );
      expect(r.status).toBe(200);
      labelled = true;
    }
    // Settle: a few more reconciles must not undo anything.
    await new Promise((r) => setTimeout(r, 3_000));

    // Exactly one of each owned object; nothing duplicated under another name.
    const deployments = (await listObjects(kc(), 'apps/v1', 'Deployment', OPERATOR_NS)).filter((d) =>
      d.metadata.name?.startsWith('karpenter'),
    );
    expect(deployments.map((d) => d.metadata.name)).toEqual(['karpenter']);
    const dep = deployments[0]!;
    expect(dep.metadata.labels?.[USER_LABEL]).toBe('me');
    expect(dep.metadata.deletionTimestamp).toBeUndefined();
    expect((dep.metadata.ownerReferences as Array<{ kind: string }> | undefined)?.filter((o) => o.kind === 'Karpenter')).toHaveLength(1);
    const ncs = await listObjects(kc(), 'karpenter.k8s.aws/v1', 'EC2NodeClass');
    expect(ncs.filter((n) => n.metadata.name === 'default')).toHaveLength(1);
    const pools = (await listObjects(kc(), 'machineconfiguration.openshift.io/v1', 'MachineConfigPool')).filter((p) =>
      p.metadata.name?.startsWith('karpenter-'),
    );
    // One pool per NodeClass, no orphan pool of a NodeClass that does not exist.
    expect(pools.map((p) => p.metadata.name).sort()).toEqual(ncs.map((n) => `karpenter-${n.metadata.name}`).sort());
    // One registration-taint KubeletConfig per pool, none of a NodeClass that does not exist.
    const kubeletConfigs = (await listObjects(kc(), 'machineconfiguration.openshift.io/v1', 'KubeletConfig')).filter((k) =>
      k.metadata.name?.startsWith('set-karpenter-taint'),
    );
    expect(kubeletConfigs.map((k) => k.metadata.name).sort()).toEqual(ncs.map((n) => `set-karpenter-taint-${n.metadata.name}`).sort());
    for (const name of RUNTIME_CRDS)
      expect(await getObject(kc(), 'apiextensions.k8s.io/v1', 'CustomResourceDefinition', name)).toBeDefined();
    const cr = await getObject(kc(), 'autoscaling.openshift.io/v1alpha1', 'Karpenter', 'default');
    expect(
      (cr?.metadata.finalizers as string[] | undefined)?.filter((f) => f === 'karpenter.autoscaling.openshift.io/teardown'),
    ).toHaveLength(1);
    const sa = await getObject(kc(), 'v1', 'ServiceAccount', 'karpenter', OPERATOR_NS);
    expect(sa).toBeDefined();
    expect(last.exited()).toBe(false);
    const denied = cluster.auditEvents({ user: OPERATOR_USER, codes: [403], since: new Date(t0) });
    expect(denied.map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
    const summary = { kills: KILLS, killDelaysMs: killDelays, convergeAfterLastRestartMs: convergeMs, totalMs: Date.now() - t0 };
    console.log(`chaos-kill: ${JSON.stringify(summary)}`);
  }, 300_000);
});
