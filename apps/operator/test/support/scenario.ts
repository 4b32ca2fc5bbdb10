import { applyObject, getObject, waitFor, type ClusterClient, type KubeObj, type SeededWorld } from '@karpenter-operator/testkit';
import { createKubeletClientCsr } from '@karpenter-operator/testkit';
import { EC2Client, RunInstancesCommand, TerminateInstancesCommand } from '@aws-sdk/client-ec2';
import { CertificatesV1Api } from '@kubernetes/client-node';
import { adminRequest, clusterOperator, conditionOf } from './k8s.js';
import { credentialsFileText, OPERATOR_NS } from './operator-process.js';

/** Steps shared by the security and chaos suites: the same real objects standalone.int.test.ts builds. */
export const KARPENTER = { apiVersion: 'autoscaling.openshift.io/v1alpha1', kind: 'Karpenter' } as const;
export const RUNTIME_CRDS = [
  'nodepools.karpenter.sh',
  'nodeclaims.karpenter.sh',
  'nodeoverlays.karpenter.sh',
  'ec2nodeclasses.karpenter.k8s.aws',
];

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
  return Boolean(
    (crd?.status as { conditions?: Array<{ type: string; status: string }> } | undefined)?.conditions?.some(
      (c) => c.type === 'Established' && c.status === 'True',
    ),
  );
}

/**
 * Converged: CRDs Established, operand Deployment applied, EC2NodeClass default, its pool and the pool's
 * registration-taint KubeletConfig, ClusterOperator AsExpected.
 */
export async function isConverged(cluster: ClusterClient): Promise<boolean> {
  const kc = cluster.kubeConfig();
  for (const n of RUNTIME_CRDS) if (!(await crdEstablished(cluster, n))) return false;
  if (!(await getObject(kc, 'apps/v1', 'Deployment', 'karpenter', OPERATOR_NS))) return false;
  const nc = await getObject(kc, 'karpenter.k8s.aws/v1', 'EC2NodeClass', 'default');
  if (!(nc?.spec as { amiFamily?: string } | undefined)?.amiFamily) return false;
  if (!(await getObject(kc, 'machineconfiguration.openshift.io/v1', 'MachineConfigPool', 'karpenter-default'))) return false;
  if (!(await getObject(kc, 'machineconfiguration.openshift.io/v1', 'KubeletConfig', 'set-karpenter-taint-default'))) return false;
  const co = await clusterOperator(cluster);
  return conditionOf(co, 'Available')?.reason === 'AsExpected' && conditionOf(co, 'Progressing')?.status === 'False';
}

/** An instance in the emulator as Karpenter launches it. */
export interface KarpenterInstance {
  instanceId: string;
  /** Its private DNS name: the kubelet's node name. */
  dns: string;
  ip: string;
  /** `aws:///<zone>/<instanceId>`, as Karpenter sets it on the NodeClaim. */
  providerID: string;
  terminate(): Promise<void>;
}

export interface LaunchedNode extends KarpenterInstance {
  nodeClaim: string;
}

/**
 * Runs an instance as Karpenter would launch it for NodePool `general`: tagged with the cluster tag, whose value
 * is `opts.tagValue` (`owned` unless a test wants another cluster's or a shared instance).
 */
export async function runKarpenterInstance(
  cluster: ClusterClient,
  world: SeededWorld,
  opts: { tagValue?: string } = {},
): Promise<KarpenterInstance> {
  const ec2 = new EC2Client(cluster.ec2Config());
  const zone = world.facts.zones[0]!;
  const run = await ec2.send(
    new RunInstancesCommand({
      ImageId: world.facts.amis.x86_64,
      InstanceType: 'm6i.large',
      MinCount: 1,
      MaxCount: 1,
      SubnetId: world.ec2!.privateSubnetIds[zone],
      TagSpecifications: [
        {
          ResourceType: 'instance',
          Tags: [
            { Key: world.facts.clusterTagKey, Value: opts.tagValue ?? 'owned' },
            { Key: 'karpenter.sh/nodepool', Value: 'general' },
          ],
        },
      ],
    }),
  );
  const inst = run.Instances![0]!;
  const instanceId = inst.InstanceId!;
  return {
    instanceId,
    dns: inst.PrivateDnsName!,
    ip: inst.PrivateIpAddress!,
    providerID: `aws:///${zone}/${instanceId}`,
    terminate: async () => {
      await ec2.send(new TerminateInstancesCommand({ InstanceIds: [instanceId] }));
    },
  };
}

/**
 * A NodeClaim of NodePool `general`, with `providerID` in its status when given (as Karpenter sets it once
 * launched) and the `finalizers` given (Karpenter's `karpenter.sh/termination` holds it until the instance is gone).
 */
export async function applyKarpenterNodeClaim(
  cluster: ClusterClient,
  name: string,
  providerID?: string,
  finalizers?: string[],
): Promise<void> {
  await applyObject(cluster.kubeConfig(), {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: { name, labels: { 'karpenter.sh/nodepool': 'general' }, ...(finalizers ? { finalizers } : {}) },
    spec: {
      nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
      requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }],
    },
  });
  if (providerID === undefined) return;
  const r = await adminRequest(
    cluster,
    'PATCH',
    `/apis/karpenter.sh/v1/nodeclaims/${name}/status`,
    { status: { providerID } },
    'application/merge-patch+json',
  );
  if (r.status !== 200) throw new Error(`setting the providerID of NodeClaim ${name}: HTTP ${r.status}`);
}

/**
 * An instance as Karpenter would launch it, and its NodeClaim with the providerID. The NodeClaim goes to
 * `opts.nodeClaimCluster` when given (a HyperShift guest), else to the cluster whose emulator runs the instance.
 */
export async function launchKarpenterInstance(
  cluster: ClusterClient,
  world: SeededWorld,
  nodeClaim: string,
  opts: { nodeClaimCluster?: ClusterClient; tagValue?: string } = {},
): Promise<LaunchedNode> {
  const instance = await runKarpenterInstance(cluster, world, { tagValue: opts.tagValue });
  await applyKarpenterNodeClaim(opts.nodeClaimCluster ?? cluster, nodeClaim, instance.providerID);
  return { ...instance, nodeClaim };
}

/** Submits a kubelet client CSR for `dns` as the node bootstrapper; returns its name. */
export async function submitClientCsr(cluster: ClusterClient, dns: string): Promise<string> {
  const api = (await cluster.kubeConfigFor('openshift-machine-config-operator', 'node-bootstrapper')).makeApiClient(CertificatesV1Api);
  const csr = await createKubeletClientCsr(dns);
  const created = await api.createCertificateSigningRequest({
    body: {
      metadata: { generateName: 'csr-' },
      spec: {
        request: Buffer.from(csr.csrPem).toString('base64'),
        signerName: 'kubernetes.io/kube-apiserver-client-kubelet',
        usages: ['digital signature', 'client auth'],
      },
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
