import { applyObject, getObject, waitFor, type ClusterClient, type KubeObj, type SeededWorld } from '@karpenter-operator/testkit';
import { createKubeletClientCsr } from '@karpenter-operator/testkit';
import { EC2Client, RunInstancesCommand, TerminateInstancesCommand } from '@aws-sdk/client-ec2';
import { CertificatesV1Api } from '@kubernetes/client-node';
import { adminRequest, clusterOperator, conditionOf } from './k8s.js';
import { credentialsFileText, OPERATOR_NS } from './operator-process.js';

/** Steps shared by the security and chaos suites: the same real objects standalone.int.test.ts builds. */
export const KARPENTER = { apiVersion: 'autoscaling.openshift.io/v1alpha1', kind: 'Karpenter' } as const;
export const RUNTIME_CRDS = ['nodepools.karpenter.sh', 'nodeclaims.karpenter.sh', 'nodeoverlays.karpenter.sh', 'ec2nodeclasses.karpenter.k8s.aws'];

export async function applyKarpenterAndCredentials(cluster: ClusterClient, spec: Record<string, unknown> = {}): Promise<void> {
  const kc = cluster.kubeConfig();
  await applyObject(kc, { ...KARPENTER, metadata: { name: 'default' }, spec });
  await applyObject(kc, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'karpenter-cloud-credentials', namespace: OPERATOR_NS },
    stringData: { credentials: credentialsFileText() },
  });
}

export async function crdEstablished(cluster: ClusterClient, name: string): Promise<boolean> {
  const crd = await getObject(cluster.kubeConfig(), 'apiextensions.k8s.io/v1', 'CustomResourceDefinition', name);
  return Boolean((crd?.status as { conditions?: Array<{ type: string; status: string }> } | undefined)?.conditions?.some((c) => c.type === 'Established' && c.status === 'True'));
}

/** Converged: CRDs Established, operand Deployment applied, EC2NodeClass default and its pool, ClusterOperator AsExpected. */
export async function isConverged(cluster: ClusterClient): Promise<boolean> {
  const kc = cluster.kubeConfig();
  for (const n of RUNTIME_CRDS) if (!(await crdEstablished(cluster, n))) return false;
  if (!(await getObject(kc, 'apps/v1', 'Deployment', 'karpenter', OPERATOR_NS))) return false;
  const nc = await getObject(kc, 'karpenter.k8s.aws/v1', 'EC2NodeClass', 'default');
  if (!(nc?.spec as { amiFamily?: string } | undefined)?.amiFamily) return false;
  if (!(await getObject(kc, 'machineconfiguration.openshift.io/v1', 'MachineConfigPool', 'karpenter-default'))) return false;
  const co = await clusterOperator(cluster);
  return conditionOf(co, 'Available')?.reason === 'AsExpected' && conditionOf(co, 'Progressing')?.status === 'False';
}

export interface LaunchedNode {
  instanceId: string;
  dns: string;
  nodeClaim: string;
  terminate(): Promise<void>;
}

/**
 * An instance as Karpenter would launch it, and its NodeClaim with the providerID. The NodeClaim goes to
 * `opts.nodeClaimCluster` when given (a HyperShift guest), else to the cluster whose emulator runs the instance.
 */
export async function launchKarpenterInstance(cluster: ClusterClient, world: SeededWorld, nodeClaim: string, opts: { nodeClaimCluster?: ClusterClient } = {}): Promise<LaunchedNode> {
  const ec2 = new EC2Client(cluster.ec2Config());
  const claims = opts.nodeClaimCluster ?? cluster;
  const zone = world.facts.zones[0]!;
  const run = await ec2.send(
    new RunInstancesCommand({
      ImageId: world.facts.amis.x86_64,
      InstanceType: 'm6i.large',
      MinCount: 1,
      MaxCount: 1,
      SubnetId: world.ec2!.privateSubnetIds[zone],
      TagSpecifications: [{ ResourceType: 'instance', Tags: [{ Key: world.facts.clusterTagKey, Value: 'owned' }, { Key: 'karpenter.sh/nodepool', Value: 'general' }] }],
    }),
  );
  const inst = run.Instances![0]!;
  const instanceId = inst.InstanceId!;
  await applyObject(claims.kubeConfig(), {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: { name: nodeClaim, labels: { 'karpenter.sh/nodepool': 'general' } },
    spec: { nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' }, requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }] },
  });
  const r = await adminRequest(claims, 'PATCH', `/apis/karpenter.sh/v1/nodeclaims/${nodeClaim}/status`, { status: { providerID: `aws:///${zone}/${instanceId}` } }, 'application/merge-patch+json');
  if (r.status !== 200) throw new Error(`setting the NodeClaim providerID: HTTP ${r.status}`);
  return {
    instanceId,
    dns: inst.PrivateDnsName!,
    nodeClaim,
    terminate: async () => {
      await ec2.send(new TerminateInstancesCommand({ InstanceIds: [instanceId] }));
    },
  };
}

/** Submits a kubelet client CSR for `dns` as the node bootstrapper; returns its name. */
export async function submitClientCsr(cluster: ClusterClient, dns: string): Promise<string> {
  const api = (await cluster.kubeConfigFor('openshift-machine-config-operator', 'node-bootstrapper')).makeApiClient(CertificatesV1Api);
  const csr = await createKubeletClientCsr(dns);
  const created = await api.createCertificateSigningRequest({
    body: {
      metadata: { generateName: 'csr-' },
      spec: { request: Buffer.from(csr.csrPem).toString('base64'), signerName: 'kubernetes.io/kube-apiserver-client-kubelet', usages: ['digital signature', 'client auth'] },
    },
  });
  return created.metadata!.name!;
}

export async function csrApproved(cluster: ClusterClient, name: string): Promise<boolean> {
  const csr = await cluster.kubeConfig().makeApiClient(CertificatesV1Api).readCertificateSigningRequest({ name });
  return Boolean(csr.status?.conditions?.some((c) => c.type === 'Approved' && c.status === 'True'));
}

export async function waitCsrApproved(cluster: ClusterClient, name: string, timeoutMs: number): Promise<void> {
  await waitFor(`CSR ${name} approved`, () => csrApproved(cluster, name), { timeoutMs, intervalMs: 200 });
}

export type { KubeObj };
