import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyObject, getObject, listObjects, waitFor } from '@karpenter-operator/testkit';
import { testCluster } from '@karpenter-operator/testkit/vitest';
import { adminRequest, conditionOf } from '../support/k8s.js';
import { credentialsFileText, installManifests, OPERATOR_NS, resetOperatorWorld, startOperator, type OperatorProcess } from '../support/operator-process.js';
import { fullKarpenterSpec, invalidKarpenterSpecs } from '../support/settings-cases.js';

const cluster = testCluster();
const kc = () => cluster.kubeConfig();
const KARPENTER = { apiVersion: 'autoscaling.openshift.io/v1alpha1', kind: 'Karpenter' };
const KARPENTERS = '/apis/autoscaling.openshift.io/v1alpha1/karpenters';
const getOperand = () => getObject(kc(), 'apps/v1', 'Deployment', 'karpenter', OPERATOR_NS);
const getCr = () => getObject(kc(), KARPENTER.apiVersion, KARPENTER.kind, 'default');
type Container = { env?: Array<{ name: string; value?: string }>; resources?: unknown };
const controllerOf = (d: { [k: string]: unknown } | undefined) => (d?.['spec'] as { template: { spec: { containers: Container[] } } }).template.spec.containers[0]!;
const envOf = (d: { [k: string]: unknown } | undefined) => Object.fromEntries((controllerOf(d).env ?? []).map((e) => [e.name, e.value]));

describe('Karpenter CR settings on a real API server', () => {
  beforeAll(async () => {
    await installManifests(cluster);
    await resetOperatorWorld(cluster);
  }, 120_000);

  it.each(invalidKarpenterSpecs)('refuses $name, naming $field', async ({ spec, field, says }) => {
    const r = await adminRequest(cluster, 'POST', `${KARPENTERS}?dryRun=All&fieldValidation=Strict`, { ...KARPENTER, metadata: { name: 'default' }, spec });
    const text = JSON.stringify(r.body);
    expect(r.status, text).toBeGreaterThanOrEqual(400);
    expect(text).toContain(field);
    expect(text).toMatch(says);
  });

  it('accepts every setting at once (dry run)', async () => {
    const r = await adminRequest(cluster, 'POST', `${KARPENTERS}?dryRun=All&fieldValidation=Strict`, { ...KARPENTER, metadata: { name: 'default' }, spec: fullKarpenterSpec });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect((r.body as { spec: unknown }).spec).toEqual(fullKarpenterSpec);
  });

  describe('with the operator running', () => {
    let op: OperatorProcess;
    beforeAll(async () => {
      op = await startOperator(cluster, { name: 'karpenter-operator-settings' });
    }, 120_000);
    afterAll(async () => {
      await op?.stop();
      await resetOperatorWorld(cluster);
    }, 60_000);

    const rolledOut = async () => {
      const d = await getOperand();
      const st = (d?.status ?? {}) as { availableReplicas?: number; updatedReplicas?: number; observedGeneration?: number; replicas?: number };
      const replicas = (d?.spec as { replicas?: number } | undefined)?.replicas ?? 0;
      return d !== undefined && st.updatedReplicas === replicas && st.availableReplicas === replicas && st.replicas === replicas && (st.observedGeneration ?? 0) >= Number(d.metadata.generation);
    };
    const crSettled = async (generation: number) => {
      const cr = await getCr();
      const st = cr?.status as { observedGeneration?: number } | undefined;
      return st?.observedGeneration === generation && conditionOf(cr!, 'Progressing')?.status === 'False' ? cr : undefined;
    };

    it('renders the settings, then a change rolls the operand once and the CR status follows it', async () => {
      await applyObject(kc(), { ...KARPENTER, metadata: { name: 'default' }, spec: { settings: { batchMaxDuration: '20s', featureGates: { NodeRepair: true } }, replicas: 2 } });
      await applyObject(kc(), { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'karpenter-cloud-credentials', namespace: OPERATOR_NS }, stringData: { credentials: credentialsFileText() } });
      await waitFor('the operand to roll out', rolledOut, { timeoutMs: 120_000 });
      const first = (await getOperand())!;
      expect(envOf(first)).toMatchObject({ BATCH_MAX_DURATION: '20s', FEATURE_GATES: 'NodeRepair=true' });
      expect(await getObject(kc(), 'policy/v1', 'PodDisruptionBudget', 'karpenter', OPERATOR_NS)).toBeDefined();
      const gen1 = Number((await getCr())!.metadata.generation);
      await waitFor('the CR to settle on its first generation', () => crSettled(gen1), { timeoutMs: 60_000 });

      const r = await adminRequest(cluster, 'PATCH', `${KARPENTERS}/default`, { spec: { settings: { batchMaxDuration: '30s' }, resources: { requests: { cpu: '1500m', memory: '1024Mi' } } } }, 'application/merge-patch+json');
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      const gen2 = Number((r.body as { metadata: { generation: number } }).metadata.generation);
      expect(gen2).toBe(gen1 + 1);
      const cr = await waitFor('the CR to report the new generation rolled out', () => crSettled(gen2), { timeoutMs: 120_000 });
      expect(conditionOf(cr, 'Available')).toMatchObject({ status: 'True', observedGeneration: gen2 });
      const second = (await getOperand())!;
      expect(envOf(second)['BATCH_MAX_DURATION']).toBe('30s');
      expect(controllerOf(second).resources).toEqual({ requests: { cpu: '1500m', memory: '1Gi' } });
      // One rollout: the Deployment's generation moved once and stays there (no flapping between renders).
      expect(Number(second.metadata.generation)).toBe(Number(first.metadata.generation) + 1);
      await new Promise((res) => setTimeout(res, 5_000));
      expect(Number((await getOperand())!.metadata.generation)).toBe(Number(second.metadata.generation));
      const sets = await listObjects(kc(), 'apps/v1', 'ReplicaSet', OPERATOR_NS);
      expect(sets.filter((s) => (s.metadata.ownerReferences as Array<{ name: string; kind: string }> | undefined)?.some((o) => o.name === 'karpenter' && o.kind === 'Deployment')).length).toBe(2);
    }, 300_000);

    it('down to one replica: the PodDisruptionBudget goes', async () => {
      const r = await adminRequest(cluster, 'PATCH', `${KARPENTERS}/default`, { spec: { replicas: 1 } }, 'application/merge-patch+json');
      expect(r.status).toBe(200);
      await waitFor('the PDB to be removed', async () => !(await getObject(kc(), 'policy/v1', 'PodDisruptionBudget', 'karpenter', OPERATOR_NS)), { timeoutMs: 60_000 });
      expect(((await getOperand())!.spec as { replicas: number }).replicas).toBe(1);
    }, 120_000);
  });
});
