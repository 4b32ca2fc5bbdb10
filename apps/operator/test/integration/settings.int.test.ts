import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CreateQueueCommand, DeleteQueueCommand, GetQueueUrlCommand, SQSClient } from '@aws-sdk/client-sqs';
import { applyObject, getObject, listObjects, waitFor } from '@karpenter-operator/testkit';
import { testCluster } from '@karpenter-operator/testkit/vitest';
import { adminRequest, conditionOf } from '../support/k8s.js';
import {
  credentialsFileText,
  installManifests,
  OPERATOR_NS,
  resetOperatorWorld,
  startOperator,
  type OperatorProcess,
} from '../support/operator-process.js';
import { fullKarpenterSpec, invalidKarpenterSpecs } from '../support/settings-cases.js';

const cluster = testCluster();
const kc = () => cluster.kubeConfig();
const KARPENTER = { apiVersion: 'autoscaling.openshift.io/v1alpha1', kind: 'Karpenter' };
const KARPENTERS = '/apis/autoscaling.openshift.io/v1alpha1/karpenters';
const getOperand = () => getObject(kc(), 'apps/v1', 'Deployment', 'karpenter', OPERATOR_NS);
const getCr = () => getObject(kc(), KARPENTER.apiVersion, KARPENTER.kind, 'default');
type Container = { env?: Array<{ name: string; value?: string }>; resources?: unknown };
const controllerOf = (d: { [k: string]: unknown } | undefined) =>
  (d?.['spec'] as { template: { spec: { containers: Container[] } } }).template.spec.containers[0]!;
const envOf = (d: { [k: string]: unknown } | undefined) => Object.fromEntries((controllerOf(d).env ?? []).map((e) => [e.name, e.value]));

describe('Karpenter CR settings on a real API server', () => {
  beforeAll(async () => {
    await installManifests(cluster);
    await resetOperatorWorld(cluster);
  }, 120_000);

  it.each(invalidKarpenterSpecs)('refuses $name, naming $field', async ({ spec, field, says }) => {
    const r = await adminRequest(cluster, 'POST', `${KARPENTERS}?dryRun=All&fieldValidation=Strict`, {
      ...KARPENTER,
      metadata: { name: 'default' },
      spec,
    });
    const text = JSON.stringify(r.body);
    expect(r.status, text).toBeGreaterThanOrEqual(400);
    expect(text).toContain(field);
    expect(text).toMatch(says);
  });

  it('accepts every setting at once (dry run)', async () => {
    const r = await adminRequest(cluster, 'POST', `${KARPENTERS}?dryRun=All&fieldValidation=Strict`, {
      ...KARPENTER,
      metadata: { name: 'default' },
      spec: fullKarpenterSpec,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect((r.body as { spec: unknown }).spec).toEqual(fullKarpenterSpec);
  });

  describe('with the operator running', () => {
    let op: OperatorProcess;
    beforeAll(async () => {
      // moto serves SQS on the same endpoint as EC2.
      op = await startOperator(cluster, {
        name: 'karpenter-operator-settings',
        env: { AWS_ENDPOINT_URL_SQS: cluster.info.ec2Endpoint ?? '' },
      });
    }, 120_000);
    afterAll(async () => {
      await op?.stop();
      await resetOperatorWorld(cluster);
    }, 60_000);

    const rolledOut = async () => {
      const d = await getOperand();
      const st = (d?.status ?? {}) as {
        availableReplicas?: number;
        updatedReplicas?: number;
        observedGeneration?: number;
        replicas?: number;
      };
      const replicas = (d?.spec as { replicas?: number } | undefined)?.replicas ?? 0;
      return (
        d !== undefined &&
        st.updatedReplicas === replicas &&
        st.availableReplicas === replicas &&
        st.replicas === replicas &&
        (st.observedGeneration ?? 0) >= Number(d.metadata.generation)
      );
    };
    const crSettled = async (generation: number) => {
      const cr = await getCr();
      const st = cr?.status as { observedGeneration?: number } | undefined;
      return st?.observedGeneration === generation && conditionOf(cr!, 'Progressing')?.status === 'False' ? cr : undefined;
    };

    it('renders the settings, then a change rolls the operand once and the CR status follows it', async () => {
      await applyObject(kc(), {
        ...KARPENTER,
        metadata: { name: 'default' },
        spec: { settings: { batchMaxDuration: '20s', featureGates: { NodeRepair: true } }, replicas: 2 },
      });
      await applyObject(kc(), {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'karpenter-cloud-credentials', namespace: OPERATOR_NS },
        stringData: { credentials: credentialsFileText() },
      });
      await waitFor('the operand to roll out', rolledOut, { timeoutMs: 120_000 });
      const first = (await getOperand())!;
      expect(envOf(first)).toMatchObject({ BATCH_MAX_DURATION: '20s', FEATURE_GATES: 'NodeRepair=true' });
      expect(await getObject(kc(), 'policy/v1', 'PodDisruptionBudget', 'karpenter', OPERATOR_NS)).toBeDefined();
      const gen1 = Number((await getCr())!.metadata.generation);
      await waitFor('the CR to settle on its first generation', () => crSettled(gen1), { timeoutMs: 60_000 });

      const r = await adminRequest(
        cluster,
        'PATCH',
        `${KARPENTERS}/default`,
        { spec: { settings: { batchMaxDuration: '30s' }, resources: { requests: { cpu: '1500m', memory: '1024Mi' } } } },
        'application/merge-patch+json',
      );
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
      expect(
        sets.filter((s) =>
          (s.metadata.ownerReferences as Array<{ name: string; kind: string }> | undefined)?.some(
            (o) => o.name === 'karpenter' && o.kind === 'Deployment',
          ),
        ).length,
      ).toBe(2);
    }, 300_000);

    it('interruptionQueue naming a queue that does not exist: a condition names it; once created in the emulator, True', async () => {
      const queue = `settings-${Date.now()}`;
      const sqs = new SQSClient({
        region: 'us-east-1',
        endpoint: cluster.info.ec2Endpoint!,
        credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'example' },
      });
      try {
        const r = await adminRequest(
          cluster,
          'PATCH',
          `${KARPENTERS}/default`,
          { spec: { settings: { interruptionQueue: queue } } },
          'application/merge-patch+json',
        );
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        const missing = await waitFor(
          'InterruptionQueueVerified=False',
          async () => {
            const c = conditionOf((await getCr())!, 'InterruptionQueueVerified');
            return c?.reason === 'QueueNotFound' && c.message.includes(queue) ? c : undefined;
          },
          { timeoutMs: 60_000 },
        );
        expect(missing).toMatchObject({
          status: 'False',
          message: expect.stringMatching(/^spec\.settings\.interruptionQueue: SQS queue settings-\d+ does not exist/),
        });
        expect(envOf(await getOperand())['INTERRUPTION_QUEUE']).toBe(queue);

        await sqs.send(new CreateQueueCommand({ QueueName: queue }));
        const found = await waitFor(
          'InterruptionQueueVerified=True',
          async () => {
            const c = conditionOf((await getCr())!, 'InterruptionQueueVerified');
            return c?.status === 'True' ? c : undefined;
          },
          { timeoutMs: 120_000 },
        );
        expect(found).toMatchObject({ reason: 'AsExpected', message: `SQS queue ${queue} exists` });
      } finally {
        const url = await sqs.send(new GetQueueUrlCommand({ QueueName: queue })).catch(() => undefined);
        if (url?.QueueUrl) await sqs.send(new DeleteQueueCommand({ QueueUrl: url.QueueUrl }));
      }
    }, 240_000);

    it('down to one replica: the PodDisruptionBudget goes', async () => {
      const r = await adminRequest(cluster, 'PATCH', `${KARPENTERS}/default`, { spec: { replicas: 1 } }, 'application/merge-patch+json');
      expect(r.status).toBe(200);
      await waitFor(
        'the PDB to be removed',
        async () => !(await getObject(kc(), 'policy/v1', 'PodDisruptionBudget', 'karpenter', OPERATOR_NS)),
        { timeoutMs: 60_000 },
      );
      expect(((await getOperand())!.spec as { replicas: number }).replicas).toBe(1);
    }, 120_000);
  });
});
