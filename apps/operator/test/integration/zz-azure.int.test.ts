import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyObject, deleteObject, getObject, listObjects, waitFor, WRITE_VERBS, type KubeObj } from '@karpenter-operator/testkit';
import { testCluster } from '@karpenter-operator/testkit/vitest';
import { adminRequest, clusterOperator, conditionOf } from '../support/k8s.js';
import { installManifests, OPERATOR_NS, OPERATOR_USER, startOperator, type OperatorProcess } from '../support/operator-process.js';

// Runs last by name: it changes the platform of the cluster the other files share, and puts it back.
const cluster = testCluster();
const kc = () => cluster.kubeConfig();
const KARPENTER = { apiVersion: 'autoscaling.openshift.io/v1alpha1', kind: 'Karpenter' };
const INFRA_STATUS = '/apis/config.openshift.io/v1/infrastructures/cluster/status';
const KARPENTER_GROUPS = /\.(karpenter\.sh|karpenter\.k8s\.aws|karpenter\.azure\.com)$/;
// The Infrastructure CRD only admits platforms OpenShift knows; GCP is one no provider package serves.
const UNSERVED_PLATFORM = 'GCP';

let savedStatus: Record<string, unknown> | undefined;
const operators: OperatorProcess[] = [];

const infrastructure = async () => (await getObject(kc(), 'config.openshift.io/v1', 'Infrastructure', 'cluster'))!;

/** Sets `status.platform(Status)` the way the installer would have on that platform. */
async function setPlatform(type: string, platformStatus: Record<string, unknown>): Promise<void> {
  const current = (await infrastructure()).status as { platformStatus?: Record<string, unknown> };
  const cleared = Object.fromEntries(
    Object.keys(current.platformStatus ?? {})
      .filter((k) => k !== 'type')
      .map((k) => [k, null]),
  );
  const r = await adminRequest(
    cluster,
    'PATCH',
    INFRA_STATUS,
    { status: { platform: type, platformStatus: { ...cleared, type, ...platformStatus } } },
    'application/merge-patch+json',
  );
  expect(r.status, JSON.stringify(r.body)).toBe(200);
}

async function restoreInfrastructure(): Promise<void> {
  if (!savedStatus) return;
  const now = await infrastructure();
  const r = await adminRequest(cluster, 'PUT', INFRA_STATUS, { ...now, status: savedStatus });
  if (r.status !== 200) throw new Error(`restoring Infrastructure cluster status: HTTP ${r.status}: ${JSON.stringify(r.body)}`);
  const back = (await infrastructure()).status;
  if (JSON.stringify(back) !== JSON.stringify(savedStatus))
    throw new Error(`Infrastructure cluster status not restored: ${JSON.stringify(back)}`);
}

async function deleteKarpenterCr(): Promise<void> {
  const path = '/apis/autoscaling.openshift.io/v1alpha1/karpenters/default';
  if (!(await getObject(kc(), KARPENTER.apiVersion, KARPENTER.kind, 'default'))) return;
  await deleteObject(kc(), KARPENTER.apiVersion, KARPENTER.kind, 'default');
  const gone = async () => !(await getObject(kc(), KARPENTER.apiVersion, KARPENTER.kind, 'default'));
  // A running operator releases its finalizer; without one, nothing will.
  const released = await waitFor('the Karpenter CR to go', gone, { timeoutMs: 20_000 }).catch(() => false);
  if (!released) {
    await adminRequest(cluster, 'PATCH', path, { metadata: { finalizers: null } }, 'application/merge-patch+json');
    await waitFor('the Karpenter CR to go once its finalizers are removed', gone, { timeoutMs: 15_000 });
  }
}

const karpenterCrdNames = async () =>
  (await listObjects(kc(), 'apiextensions.k8s.io/v1', 'CustomResourceDefinition'))
    .map((c) => c.metadata.name)
    .filter((n) => KARPENTER_GROUPS.test(n))
    .sort();
const operand = () => getObject(kc(), 'apps/v1', 'Deployment', 'karpenter', OPERATOR_NS);
const writesBy = (resource: string, since: Date) => cluster.auditEvents({ user: OPERATOR_USER, verbs: WRITE_VERBS, resource, since });

/** startOperator, naming the requests the API server refused when the operator never gets ready. */
async function start(name: string): Promise<OperatorProcess> {
  const since = new Date();
  try {
    const op = await startOperator(cluster, { name });
    operators.push(op);
    return op;
  } catch (e) {
    const refused = cluster
      .auditEvents({ user: OPERATOR_USER, codes: [401, 403, 404], since })
      .map((a) => `${a.verb} ${a.requestURI} → ${a.responseStatus?.code}`);
    throw new Error(`${(e as Error).message}\nrequests refused meanwhile:\n${[...new Set(refused)].join('\n')}`, { cause: e });
  }
}

const converged = (check: (co: KubeObj | undefined) => boolean) => async () => {
  const co = await clusterOperator(cluster);
  return check(co) ? co : undefined;
};

describe('on a platform without a provider that can run Karpenter', () => {
  let crdsBefore: string[] = [];

  beforeAll(async () => {
    savedStatus = structuredClone((await infrastructure()).status as Record<string, unknown>);
    await installManifests(cluster);
    // Another file's operand would make "no operand" meaningless.
    await deleteKarpenterCr();
    if (await operand()) {
      await deleteObject(kc(), 'apps/v1', 'Deployment', 'karpenter', OPERATOR_NS);
      await waitFor('a leftover operand Deployment to go', async () => !(await operand()), { timeoutMs: 30_000 });
    }
    crdsBefore = await karpenterCrdNames();
  }, 120_000);

  afterAll(async () => {
    // Delete the CR while an operator still runs (it releases the finalizer), then stop it, then restore.
    await deleteKarpenterCr().catch((e: unknown) => console.error(`deleting the Karpenter CR: ${String(e)}`));
    for (const op of operators) await op.stop();
    await restoreInfrastructure();
  }, 120_000);

  it('Azure: Available=True PlatformNotSupported saying Azure is unsupported, not Degraded, no operand, no CRDs, no restart', async () => {
    await setPlatform('Azure', {
      azure: { resourceGroupName: 'demo-x7k2p-rg', networkResourceGroupName: 'demo-x7k2p-rg', cloudName: 'AzurePublicCloud' },
    });
    await applyObject(kc(), { ...KARPENTER, metadata: { name: 'default' }, spec: { logLevel: 'debug' } });
    const since = new Date();
    const op = await start('karpenter-operator-azure');

    const co = await waitFor(
      'ClusterOperator karpenter to report PlatformNotSupported',
      converged((c) => conditionOf(c, 'Available')?.reason === 'PlatformNotSupported'),
      {
        timeoutMs: 30_000,
        abort: () => (op.exited() ? `operator exited:\n${op.logs().slice(-4000)}` : undefined),
      },
    );
    const available = conditionOf(co, 'Available')!;
    expect(available.status).toBe('True');
    expect(available.message).toMatch(/Azure is not supported/);
    expect(conditionOf(co, 'Degraded')).toMatchObject({ status: 'False' });
    expect(conditionOf(co, 'Progressing')).toMatchObject({ status: 'False', reason: 'PlatformNotSupported' });
    const cr = await waitFor(
      'the Karpenter CR to say so too',
      async () => {
        const c = await getObject(kc(), KARPENTER.apiVersion, KARPENTER.kind, 'default');
        return conditionOf(c, 'Available')?.reason === 'PlatformNotSupported' ? c : undefined;
      },
      { timeoutMs: 15_000 },
    );
    expect(conditionOf(cr, 'Available')?.message).toMatch(/Azure is not supported/);

    // Give the work queue time to do anything it would: resyncs, requeues, a crash loop.
    await new Promise((r) => setTimeout(r, 10_000));
    expect(op.exited(), op.logs().slice(-4000)).toBe(false);
    expect((await fetch(`http://127.0.0.1:${op.healthPort}/readyz`)).status).toBe(200);
    expect(await operand()).toBeUndefined();
    expect(await karpenterCrdNames()).toEqual(crdsBefore);
    expect(writesBy('customresourcedefinitions', since).map((e) => `${e.verb} ${e.objectRef?.name}`)).toEqual([]);
    expect(writesBy('deployments', since).map((e) => `${e.verb} ${e.objectRef?.name}`)).toEqual([]);
    expect(conditionOf(await clusterOperator(cluster), 'Available')?.lastTransitionTime).toBe(available.lastTransitionTime);
    expect(cluster.auditEvents({ user: OPERATOR_USER, codes: [403], since })).toEqual([]);
  });

  it(`a platform no package serves (${UNSERVED_PLATFORM}): the running operator exits 3 to reload, a fresh one reports Degraded=True UnknownPlatform`, async () => {
    const previous = operators.at(-1);
    expect(previous, 'the Azure case started an operator').toBeDefined();
    await setPlatform(UNSERVED_PLATFORM, { gcp: { projectID: 'demo-project', region: 'us-central1' } });
    await waitFor('the Azure operator to exit on the platform change', async () => previous!.exited(), { timeoutMs: 30_000 });
    expect(await previous!.stop()).toBe(3);

    const since = new Date();
    const op = await start('karpenter-operator-unknown');
    const co = await waitFor(
      'ClusterOperator karpenter to report UnknownPlatform',
      converged((c) => conditionOf(c, 'Degraded')?.reason === 'UnknownPlatform'),
      {
        timeoutMs: 30_000,
        abort: () => (op.exited() ? `operator exited:\n${op.logs().slice(-4000)}` : undefined),
      },
    );
    expect(conditionOf(co, 'Degraded')).toMatchObject({ status: 'True', reason: 'UnknownPlatform' });
    expect(conditionOf(co, 'Degraded')?.message).toContain(UNSERVED_PLATFORM);
    expect(conditionOf(co, 'Available')).toMatchObject({ status: 'True', reason: 'PlatformNotSupported' });

    await new Promise((r) => setTimeout(r, 5_000));
    expect(op.exited(), op.logs().slice(-4000)).toBe(false);
    expect(await operand()).toBeUndefined();
    expect(await karpenterCrdNames()).toEqual(crdsBefore);
    expect(writesBy('customresourcedefinitions', since)).toEqual([]);
    expect(writesBy('deployments', since)).toEqual([]);
  });
});
