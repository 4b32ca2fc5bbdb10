import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyObject, deleteObject, getObject, listObjects, waitFor, type KubeObj } from '@karpenter-operator/testkit';
import { testCluster } from '@karpenter-operator/testkit/vitest';
import { adminRequest, clusterOperator, conditionOf } from '../support/k8s.js';
import { credentialsFileText, installManifests, OPERATOR_NS, OPERATOR_USER, RELEASE, startOperator, type OperatorProcess } from '../support/operator-process.js';

const cluster = testCluster();
const kc = () => cluster.kubeConfig();
const KARPENTER = { apiVersion: 'autoscaling.openshift.io/v1alpha1', kind: 'Karpenter' };
const operandRef = ['apps/v1', 'Deployment', 'karpenter', OPERATOR_NS] as const;
const getOperand = () => getObject(kc(), ...operandRef);
const RUNTIME_CRDS = ['nodepools.karpenter.sh', 'nodeclaims.karpenter.sh', 'nodeoverlays.karpenter.sh', 'ec2nodeclasses.karpenter.k8s.aws'];
const started = new Date();

let op: OperatorProcess;

const established = async (name: string) => {
  const crd = await getObject(kc(), 'apiextensions.k8s.io/v1', 'CustomResourceDefinition', name);
  return Boolean((crd?.status as { conditions?: Array<{ type: string; status: string }> } | undefined)?.conditions?.some((c) => c.type === 'Established' && c.status === 'True'));
};
const operandAvailable = async () => {
  const d = await getOperand();
  const st = (d?.status ?? {}) as { availableReplicas?: number; updatedReplicas?: number; observedGeneration?: number };
  const replicas = (d?.spec as { replicas?: number } | undefined)?.replicas ?? 0;
  return d !== undefined && replicas > 0 && st.availableReplicas === replicas && st.updatedReplicas === replicas && (st.observedGeneration ?? 0) >= (d.metadata.generation ?? 1);
};

describe('standalone operator on a real cluster, as its ServiceAccount', () => {
  beforeAll(async () => {
    await installManifests(cluster);
    op = await startOperator(cluster, { name: 'karpenter-operator-a' });
  }, 180_000);

  afterAll(async () => {
    await op?.stop();
  });

  it('with no Karpenter CR: ClusterOperator Available=True (KarpenterNotFound) at the release version', async () => {
    const co = await waitFor('ClusterOperator karpenter to report idle', async () => {
      const c = await clusterOperator(cluster);
      return conditionOf(c, 'Available')?.reason === 'KarpenterNotFound' ? c : undefined;
    }, { timeoutMs: 30_000 });
    expect(conditionOf(co, 'Available')?.status).toBe('True');
    expect(conditionOf(co, 'Degraded')?.status).toBe('False');
    expect((co.status as { versions?: unknown }).versions).toEqual([{ name: 'operator', version: RELEASE }]);
    expect(await getOperand()).toBeUndefined();
  });

  it('a Karpenter CR named other is refused by the API server', async () => {
    const r = await adminRequest(cluster, 'POST', '/apis/autoscaling.openshift.io/v1alpha1/karpenters', { ...KARPENTER, metadata: { name: 'other' } });
    expect(r.status).toBe(422);
    expect(JSON.stringify(r.body)).toMatch(/default/);
  });

  it('creating default: CRDs Established, operand gated on credentials, then Available and AsExpected', async () => {
    await applyObject(kc(), { ...KARPENTER, metadata: { name: 'default' }, spec: { logLevel: 'debug' } });
    for (const name of RUNTIME_CRDS) await waitFor(`CRD ${name} Established`, () => established(name), { timeoutMs: 30_000 });
    await waitFor('Progressing=WaitingForCredentials', async () => conditionOf(await clusterOperator(cluster), 'Progressing')?.reason === 'WaitingForCredentials', { timeoutMs: 30_000 });
    expect(await getOperand()).toBeUndefined();

    await applyObject(kc(), {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'karpenter-cloud-credentials', namespace: OPERATOR_NS },
      stringData: { credentials: credentialsFileText() },
    });
    await waitFor('the operand Deployment to become Available', operandAvailable, { timeoutMs: 90_000 });
    const dep = (await getOperand())!;
    expect(dep.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'Karpenter', name: 'default', controller: true, blockOwnerDeletion: true });
    const container = (dep.spec as { template: { spec: { containers: Array<{ args?: string[]; env?: Array<{ name: string; value?: string }> }> } } }).template.spec.containers[0]!;
    expect(container.env?.find((e) => e.name === 'CLUSTER_NAME')?.value).toBe('demo-x7k2p');
    expect(JSON.stringify(container)).toContain('debug');

    const co = await waitFor('ClusterOperator AsExpected', async () => {
      const c = await clusterOperator(cluster);
      return conditionOf(c, 'Available')?.reason === 'AsExpected' && conditionOf(c, 'Progressing')?.status === 'False' ? c : undefined;
    }, { timeoutMs: 60_000 });
    expect((co.status as { versions?: unknown }).versions).toEqual([{ name: 'operator', version: RELEASE }]);
    const related = (co.status as { relatedObjects: Array<{ resource: string }> }).relatedObjects.map((r) => r.resource);
    expect(related).toEqual(expect.arrayContaining(['namespaces', 'deployments', 'nodepools', 'nodeclaims', 'ec2nodeclasses']));
    const cr = await getObject(kc(), KARPENTER.apiVersion, KARPENTER.kind, 'default');
    expect(conditionOf(cr, 'Available')).toMatchObject({ status: 'True', reason: 'AsExpected', observedGeneration: cr?.metadata.generation });
  });

  it('no 403 for the operator so far', () => {
    const denied = cluster.auditEvents({ user: OPERATOR_USER, codes: [403], since: started });
    expect(denied.map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
    expect(op.exited()).toBe(false);
  });

  it.skip('placeholder', () => {
    void listObjects;
    void deleteObject;
    const _o: KubeObj | undefined = undefined;
    void _o;
  });
});
