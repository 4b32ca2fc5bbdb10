import { expect } from 'vitest';
import { DescribeInstancesCommand, EC2Client, type Instance } from '@aws-sdk/client-ec2';
import { getObject, listObjects, type ClusterHandle, type KubeObj } from '@karpenter-operator/testkit';
import type { Cond } from './k8s.js';

/**
 * The machines Karpenter launched, as the end-to-end suites on the real operand check them: the emulator's
 * instances, NodeClaims and Nodes one-to-one, one approved client CSR per Node, no forged CSR approved.
 */

export const NODECLAIM = ['karpenter.sh/v1', 'NodeClaim'] as const;
export const CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client-kubelet';
export const SERVING_SIGNER = 'kubernetes.io/kubelet-serving';

export type WithConditions = KubeObj & { status?: { conditions?: Cond[]; providerID?: string; nodeName?: string } };
export type NodeObj = KubeObj & { spec?: { providerID?: string } };
export type Csr = KubeObj & {
  spec: { request: string; signerName: string; username?: string };
  status?: { conditions?: Array<Cond & { lastUpdateTime?: string }>; certificate?: string };
};

export const idOf = (providerID?: string) => providerID?.split('/').pop();

export const nodeClaimsOf = async (cluster: ClusterHandle, pool: string) =>
  (await listObjects<WithConditions>(cluster.kubeConfig(), ...NODECLAIM)).filter(
    (c) => c.metadata.labels?.['karpenter.sh/nodepool'] === pool,
  );

export const karpenterNodes = async (cluster: ClusterHandle) =>
  (await listObjects<NodeObj>(cluster.kubeConfig(), 'v1', 'Node')).filter(
    (n) => n.metadata.labels?.['karpenter.sh/nodepool'] !== undefined,
  );

export const listCsrs = (cluster: ClusterHandle) =>
  listObjects<Csr>(cluster.kubeConfig(), 'certificates.k8s.io/v1', 'CertificateSigningRequest');

/** The emulator's pending/running instances carrying `clusterTagKey=owned` (Karpenter's own tag filter), minus `exclude`. */
export async function clusterInstances(
  cluster: ClusterHandle,
  clusterTagKey: string,
  exclude: ReadonlySet<string> = new Set(),
): Promise<Instance[]> {
  const ec2 = new EC2Client(cluster.ec2Config());
  try {
    const r = await ec2.send(
      new DescribeInstancesCommand({
        Filters: [
          { Name: `tag:${clusterTagKey}`, Values: ['owned'] },
          { Name: 'instance-state-name', Values: ['pending', 'running'] },
        ],
      }),
    );
    return (r.Reservations ?? []).flatMap((x) => x.Instances ?? []).filter((i) => !exclude.has(i.InstanceId!));
  } finally {
    ec2.destroy();
  }
}

/** The node name a client CSR asks a certificate for (`CN=system:node:<name>` in its DER, read with its length byte). */
export function csrNodeName(csr: Csr): string | undefined {
  const pem = Buffer.from(csr.spec.request, 'base64').toString('utf8');
  const der = Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
  const at = der.indexOf('system:node:');
  if (at < 1) return undefined;
  return der
    .subarray(at, at + der[at - 1]!)
    .toString('utf8')
    .slice('system:node:'.length);
}

export const approvalsOf = (c: Csr) => (c.status?.conditions ?? []).filter((x) => x.type === 'Approved');

export interface FleetCheck {
  cluster: ClusterHandle;
  clusterTagKey: string;
  pool: string;
  /** Instances that are not Karpenter's (there before it ran). */
  preexisting?: ReadonlySet<string>;
  /** Names of the forged CSRs the simulated kubelets submitted. */
  forged: readonly string[];
}

/**
 * Every instance has exactly one NodeClaim and one Node, every NodeClaim and Karpenter Node an instance,
 * every approved client CSR one Approved condition, every Node exactly one approved client CSR, and no forged
 * CSR any condition or certificate. Each failure names the object (`when` says after what).
 */
export async function expectFleetConsistent(check: FleetCheck, when: string): Promise<void> {
  const { cluster } = check;
  const claims = await nodeClaimsOf(cluster, check.pool);
  const nodes = await karpenterNodes(cluster);
  const instances = await clusterInstances(cluster, check.clusterTagKey, check.preexisting);
  for (const i of instances) {
    const pid = (c: { status?: { providerID?: string } }) => idOf(c.status?.providerID) === i.InstanceId;
    expect(
      claims.filter(pid).map((c) => c.metadata.name),
      `${when}: NodeClaims of instance ${i.InstanceId}`,
    ).toHaveLength(1);
    expect(
      nodes.filter((n) => idOf(n.spec?.providerID) === i.InstanceId).map((n) => n.metadata.name),
      `${when}: Nodes of instance ${i.InstanceId}`,
    ).toHaveLength(1);
  }
  const ids = new Set(instances.map((i) => i.InstanceId));
  for (const c of claims)
    expect(ids.has(idOf(c.status?.providerID)), `${when}: instance of NodeClaim ${c.metadata.name} (${c.status?.providerID})`).toBe(true);
  for (const n of nodes)
    expect(ids.has(idOf(n.spec?.providerID)), `${when}: instance of Node ${n.metadata.name} (${n.spec?.providerID})`).toBe(true);

  const csrs = await listCsrs(cluster);
  const approvedClient = csrs.filter((c) => c.spec.signerName === CLIENT_SIGNER && approvalsOf(c).length > 0);
  for (const c of approvedClient) expect(approvalsOf(c), `${when}: Approved conditions of CSR ${c.metadata.name}`).toHaveLength(1);
  for (const n of nodes) {
    const mine = approvedClient.filter((c) => csrNodeName(c) === n.metadata.name).map((c) => c.metadata.name);
    expect(mine, `${when}: approved client CSRs for Node ${n.metadata.name}`).toHaveLength(1);
  }
  expect(check.forged.length, 'forged CSRs submitted').toBeGreaterThan(0);
  for (const name of check.forged) {
    const c = csrs.find((x) => x.metadata.name === name);
    expect({ name, conditions: c?.status?.conditions ?? [], certificate: c?.status?.certificate }, `${when}: forged CSR ${name}`).toEqual({
      name,
      conditions: [],
      certificate: undefined,
    });
  }
}

/** A `forgeCsr` knob for the kubelet simulator: the first machine also submits a forged client CSR (extra `system:masters`). */
export function forgeOnFirstMachine(): (claim: string) => Array<{ request: { organizations: string[] } }> | undefined {
  const forgedFor = new Set<string>();
  return (claim) => {
    if (forgedFor.size > 0 && !forgedFor.has(claim)) return undefined;
    forgedFor.add(claim);
    return [{ request: { organizations: ['system:nodes', 'system:masters'] } }];
  };
}

/**
 * EC2NodeClass `name` is Ready and its userData merges its own pool (`/config/karpenter-<name>`). Before that
 * it boots `/config/worker`, where a Karpenter machine cannot register (the simulated kubelet refuses it), so
 * the suites launch only after this holds.
 */
export async function nodeClassServesItsPool(cluster: ClusterHandle, name: string): Promise<boolean> {
  const o = await getObject<WithConditions>(cluster.kubeConfig(), 'karpenter.k8s.aws/v1', 'EC2NodeClass', name);
  const userData = (o?.spec as { userData?: string } | undefined)?.userData ?? '';
  const ready = (o?.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
  return ready && userData.includes(`/config/karpenter-${name}"`);
}
