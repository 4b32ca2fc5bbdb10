import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  aNodePool,
  applyObject,
  deleteObject,
  getObject,
  kubeRequest,
  listObjects,
  waitFor,
  type ClusterHandle,
  type KubeObj,
} from '@karpenter-operator/testkit';
import { seededWorld, testCluster } from '@karpenter-operator/testkit/vitest';
import {
  createHostedControlPlane,
  HCP_FINALIZER,
  HCP_TYPE,
  hcpPath,
  hostedControlPlane,
  hyperShiftCredentialsSecret,
  OPERATOR_SA,
  prepareHostedClusters,
  startKarpenterStandIn,
  startOperatorAsHyperShift,
} from '../support/hypershift-env.js';
import { conditionOf } from '../support/k8s.js';
import type { OperatorProcess } from '../support/operator-process.js';
import { applyKarpenterNodeClaim, crdEstablished, RUNTIME_CRDS } from '../support/scenario.js';

/**
 * The HCP's life around the operator in management-cluster mode, on the shared cluster as the management
 * cluster (serving PodMonitor and CAPI's Cluster, as a HyperShift management cluster does) and a guest
 * cluster: PodMonitor `karpenter` for the operand, and the teardown HyperShift's deletion of the hosted
 * cluster starts, which begins with the CAPI Cluster `<HCP namespace>/<infra ID>`, long before the HCP.
 */
const NS = 'clusters-lifecycle';
const HCP = 'lifecycle';
const CLUSTER_ID = '3d1f6c2e-8b4a-4e7f-9c0d-5a6b7c8d9e0f';
const MGMT_USER = `system:serviceaccount:${NS}:${OPERATOR_SA}`;
const CAPI = { apiVersion: 'cluster.x-k8s.io/v1beta1', kind: 'Cluster' } as const;
/** CAPI's own finalizer on a Cluster: it keeps the Cluster (deletionTimestamp set) while CAPI tears it down. */
const CAPI_FINALIZER = 'cluster.cluster.x-k8s.io';
const NODECLAIM = { apiVersion: 'karpenter.sh/v1', kind: 'NodeClaim' } as const;
const NODEPOOL = { apiVersion: 'karpenter.sh/v1', kind: 'NodePool' } as const;

const mgmt = testCluster();
const world = seededWorld();
let guest: ClusterHandle;
let dir: string;
let op: OperatorProcess | undefined;
let stopKarpenterStandIn: (() => void) | undefined;
const started = new Date();

const hcp = () => getObject(mgmt.kubeConfig(), HCP_TYPE.apiVersion, HCP_TYPE.kind, HCP, NS);
const finalizers = async () => ((await hcp())?.metadata.finalizers as string[] | undefined) ?? [];
const operand = () => getObject(mgmt.kubeConfig(), 'apps/v1', 'Deployment', 'karpenter', NS);
const podMonitor = () => getObject(mgmt.kubeConfig(), 'monitoring.coreos.com/v1', 'PodMonitor', 'karpenter', NS);
const capiCluster = () => getObject(mgmt.kubeConfig(), CAPI.apiVersion, CAPI.kind, world.facts.infraId, NS);
const logTail = (p: OperatorProcess | undefined) =>
  (p?.logs() ?? '')
    .split('\n')
    .filter((l) => /warn|error|teardown|NodeClaim|NodePool/i.test(l))
    .slice(-20)
    .join('\n');

describe('HyperShift lifecycle: PodMonitor and cleanup on CAPI Cluster deletion', () => {
  let guestKubeconfigPath: string;

  beforeAll(async () => {
    ({ guest, dir, guestKubeconfigPath } = await prepareHostedClusters(mgmt, { namespace: NS, managementRole: 'project' }));
    await createHostedControlPlane(mgmt, hostedControlPlane(world, { name: HCP, namespace: NS, clusterID: CLUSTER_ID }));
    await applyObject(mgmt.kubeConfig(), hyperShiftCredentialsSecret(NS));
    // HyperShift's CAPI Cluster of the hosted cluster, named after the infra ID; CAPI keeps its finalizer on it.
    await applyObject(mgmt.kubeConfig(), {
      ...CAPI,
      metadata: { name: world.facts.infraId, namespace: NS, finalizers: [CAPI_FINALIZER] },
      spec: {},
    } as KubeObj);
    op = await startOperatorAsHyperShift(mgmt, world, { namespace: NS, guestKubeconfigPath, name: 'lifecycle-operator' });
  }, 240_000);

  afterAll(async () => {
    stopKarpenterStandIn?.();
    await op?.stop();
    const m = mgmt.kubeConfig();
    // Nothing of this file may outlive it on the shared cluster.
    for (const path of [hcpPath(NS, HCP), `/apis/cluster.x-k8s.io/v1beta1/namespaces/${NS}/clusters/${world.facts.infraId}`]) {
      await kubeRequest(m, 'PATCH', path, { body: { metadata: { finalizers: null } }, contentType: 'application/merge-patch+json' }).catch(
        () => undefined,
      );
    }
    await deleteObject(m, HCP_TYPE.apiVersion, HCP_TYPE.kind, HCP, NS).catch(() => false);
    await deleteObject(m, CAPI.apiVersion, CAPI.kind, world.facts.infraId, NS).catch(() => false);
    await deleteObject(m, 'v1', 'Namespace', NS).catch(() => false);
    await guest?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it("PodMonitor karpenter in the HCP namespace selects the operand's pods, carries the cluster ID, and comes back when deleted", async () => {
    const pm = await waitFor('PodMonitor karpenter in the HCP namespace', async () => (await podMonitor()) ?? false, {
      timeoutMs: 60_000,
      intervalMs: 500,
      abort: () => (op?.exited() ? op.logs().slice(-3000) : undefined),
    });
    const spec = pm.spec as {
      namespaceSelector: unknown;
      selector: { matchLabels: Record<string, string> };
      podMetricsEndpoints: Array<Record<string, unknown>>;
    };
    expect(spec.namespaceSelector).toEqual({ matchNames: [NS] });
    const id = { targetLabel: '_id', action: 'replace', replacement: CLUSTER_ID };
    expect(spec.podMetricsEndpoints).toEqual([
      { port: 'metrics', path: '/metrics', interval: '30s', scheme: 'http', relabelings: [id], metricRelabelings: [id] },
    ]);
    expect((pm.metadata.ownerReferences as Array<{ kind: string; name: string }> | undefined)?.map((r) => `${r.kind}/${r.name}`)).toEqual([
      `HostedControlPlane/${HCP}`,
    ]);
    // The selector finds the operand's pods (its Deployment's template) and the port the operand names `metrics`.
    const dep = await waitFor('the operand Deployment', async () => (await operand()) ?? false, { timeoutMs: 60_000 });
    const template = (
      dep.spec as {
        template: { metadata: { labels: Record<string, string> }; spec: { containers: Array<{ ports?: Array<{ name?: string }> }> } };
      }
    ).template;
    expect(Object.keys(spec.selector.matchLabels).length).toBeGreaterThan(0);
    for (const [k, v] of Object.entries(spec.selector.matchLabels)) expect(template.metadata.labels[k]).toBe(v);
    expect(template.spec.containers.flatMap((c) => c.ports ?? []).map((p) => p.name)).toContain('metrics');

    await deleteObject(mgmt.kubeConfig(), 'monitoring.coreos.com/v1', 'PodMonitor', 'karpenter', NS);
    const recreated = await waitFor(
      'PodMonitor karpenter re-created',
      async () => {
        const cur = await podMonitor();
        return cur && cur.metadata.uid !== pm.metadata.uid ? cur : false;
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    expect(recreated.spec).toEqual(pm.spec);
    // Converged: no further PodMonitor writes.
    const quietSince = new Date();
    await new Promise((r) => setTimeout(r, 5_000));
    expect(
      mgmt.auditEvents({ user: MGMT_USER, since: quietSince, verbs: ['create', 'patch', 'update', 'delete'], resource: 'podmonitors' }),
    ).toEqual([]);
  });

  it('the CAPI Cluster marked for deletion: NodePools and NodeClaims go at once (forced), the finalizer stays until the HCP is deleted, then the HCP goes away', async () => {
    const g = guest.kubeConfig();
    await waitFor('the finalizer on the HCP', async () => (await finalizers()).includes(HCP_FINALIZER), { timeoutMs: 60_000 });
    await waitFor(
      'the runtime CRDs Established in the guest',
      async () => (await Promise.all(RUNTIME_CRDS.map((n) => crdEstablished(guest, n)))).every(Boolean),
      { timeoutMs: 60_000 },
    );
    await applyObject(g, aNodePool('general', { instanceTypes: ['m5.large'], arch: 'amd64' }));
    for (const name of ['lifecycle-a', 'lifecycle-b']) await applyKarpenterNodeClaim(guest, name, undefined, ['karpenter.sh/termination']);
    const forcedAt = new Map<string, number>();
    stopKarpenterStandIn = startKarpenterStandIn(guest, forcedAt);

    // HyperShift's hosted-cluster deletion starts with the CAPI Cluster; CAPI's finalizer keeps it there.
    const deletedAt = Date.now();
    await deleteObject(mgmt.kubeConfig(), CAPI.apiVersion, CAPI.kind, world.facts.infraId, NS);
    expect((await capiCluster())?.metadata).toHaveProperty('deletionTimestamp');
    await waitFor(
      'NodePools and NodeClaims gone from the guest',
      async () =>
        (await listObjects(g, NODEPOOL.apiVersion, NODEPOOL.kind)).length === 0 &&
        (await listObjects(g, NODECLAIM.apiVersion, NODECLAIM.kind)).length === 0,
      { timeoutMs: 90_000, intervalMs: 500 },
    ).catch(async (e: Error) => {
      throw new Error(`${e.message}\nforced: ${JSON.stringify([...forcedAt])}\noperator log:\n${logTail(op)}`);
    });
    // Forced at once (the stand-in only ever releases forced NodeClaims), far inside the 5-minute drain bound.
    expect([...forcedAt.keys()].sort()).toEqual(['lifecycle-a', 'lifecycle-b']);
    for (const t of forcedAt.values()) expect(t - deletedAt).toBeLessThan(120_000);

    // The HCP itself is not being deleted yet: its finalizer and the operand stay for that.
    await new Promise((r) => setTimeout(r, 3_000));
    expect(await finalizers()).toContain(HCP_FINALIZER);
    expect(await operand()).toBeDefined();
    await waitFor(
      'AutoNodeEnabled saying the hosted cluster is being deleted',
      async () => /hosted cluster is being deleted/.test(conditionOf(await hcp(), 'AutoNodeEnabled')?.message ?? ''),
      { timeoutMs: 30_000, intervalMs: 500 },
    );

    // Then HyperShift deletes the HCP: the operand goes, the finalizer is released, the HCP is gone.
    await deleteObject(mgmt.kubeConfig(), HCP_TYPE.apiVersion, HCP_TYPE.kind, HCP, NS);
    await waitFor('the HCP to be gone', async () => (await hcp()) === undefined, { timeoutMs: 90_000, intervalMs: 500 }).catch(
      async (e: Error) => {
        throw new Error(`${e.message}\nfinalizers: ${JSON.stringify(await finalizers())}\noperator log:\n${logTail(op)}`);
      },
    );
    expect(await operand()).toBeUndefined();
    expect(op?.exited()).toBe(false);
  }, 240_000);

  it('no 403 for the operator on the management cluster under the Role this project asks HyperShift for', () => {
    expect(mgmt.auditEvents({ user: MGMT_USER, codes: [403], since: started }).map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
  });
});
