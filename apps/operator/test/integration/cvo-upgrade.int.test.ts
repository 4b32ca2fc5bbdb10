import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getObject, listObjects, waitFor, type KubeObj } from '@karpenter-operator/testkit';
import { testCluster } from '@karpenter-operator/testkit/vitest';
import { adminRequest, clusterOperator, conditionOf } from '../support/k8s.js';
import {
  installManifests,
  OPERATOR_NS,
  OPERATOR_USER,
  RELEASE,
  resetOperatorWorld,
  startOperator,
  type OperatorProcess,
} from '../support/operator-process.js';
import { applyKarpenterAndCredentials, isConverged } from '../support/scenario.js';

/**
 * The CVO upgrade protocol: ClusterOperator `versions[operator]` names the release whose operand is fully
 * rolled out. A new release is a new operator process (new RELEASE_VERSION and operand image, as the CVO
 * rolls the operator Deployment); its operand pods cannot schedule while the control-plane nodes are
 * cordoned, so the rollout is held until the test uncordons them.
 */
const cluster = testCluster();
const kc = () => cluster.kubeConfig();
const OLD = { version: RELEASE, image: 'quay.io/openshift/origin-aws-karpenter-provider-aws:test' };
const NEW = { version: '4.23.0', image: 'quay.io/openshift/origin-aws-karpenter-provider-aws:next' };
/** The previous operator reported its version to the CVO about 3 s after start; held 3x that. */
const HOLD_MS = 10_000;

let op: OperatorProcess | undefined;

type Deployment = KubeObj & {
  spec: { replicas: number; template: { spec: { containers: Array<{ image: string }> } } };
  status?: { observedGeneration?: number; replicas?: number; updatedReplicas?: number; availableReplicas?: number };
};
const operand = async () => (await getObject(kc(), 'apps/v1', 'Deployment', 'karpenter', OPERATOR_NS)) as Deployment | undefined;
const imageOf = (d: Deployment | undefined) => d?.spec.template.spec.containers[0]?.image;
const rolledOutAt = (d: Deployment | undefined, image: string) => {
  const st = d?.status ?? {};
  return (
    d !== undefined &&
    imageOf(d) === image &&
    (st.observedGeneration ?? 0) >= Number(d.metadata.generation ?? 1) &&
    st.updatedReplicas === d.spec.replicas &&
    st.replicas === d.spec.replicas && // no pod of the old template left
    (st.availableReplicas ?? 0) >= (d.spec.replicas ?? 1)
  );
};
const versionOf = (co: KubeObj | undefined) =>
  (co?.status as { versions?: Array<{ name: string; version: string }> } | undefined)?.versions?.find((v) => v.name === 'operator')
    ?.version;

async function setControlPlaneSchedulable(schedulable: boolean): Promise<void> {
  const nodes = await listObjects(kc(), 'v1', 'Node', undefined, 'node-role.kubernetes.io/control-plane');
  expect(nodes.length).toBeGreaterThan(0);
  for (const n of nodes) {
    const r = await adminRequest(
      cluster,
      'PATCH',
      `/api/v1/nodes/${n.metadata.name}`,
      { spec: { unschedulable: schedulable ? null : true } },
      'application/merge-patch+json',
    );
    expect(r.status).toBe(200);
  }
}

interface Sample {
  at: number;
  version: string | undefined;
  progressing: string | undefined;
  image: string | undefined;
  rolledOut: boolean;
  /** The operand's generation and rollout counts as read, for a failure's message. */
  operand: string;
}

/** Samples the ClusterOperator, then the operand, every 100 ms until stopped. */
function sampler(target: string) {
  const samples: Sample[] = [];
  let running = true;
  const done = (async () => {
    while (running) {
      const co = await clusterOperator(cluster);
      const d = await operand();
      samples.push({
        at: Date.now(),
        version: versionOf(co),
        progressing: conditionOf(co, 'Progressing')?.reason,
        image: imageOf(d),
        rolledOut: rolledOutAt(d, target),
        operand: d
          ? `generation ${d.metadata.generation} observed ${d.status?.observedGeneration} replicas ${d.spec.replicas} current ${d.status?.replicas} updated ${d.status?.updatedReplicas} available ${d.status?.availableReplicas}`
          : 'absent',
      });
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    samples,
    stop: async () => {
      running = false;
      await done;
      return samples;
    },
  };
}

describe('CVO upgrade protocol: versions[operator] moves only once the operand rolled out', () => {
  beforeAll(async () => {
    await installManifests(cluster);
    await resetOperatorWorld(cluster);
    op = await startOperator(cluster, { name: 'cvo-upgrade-1' });
    await applyKarpenterAndCredentials(cluster, {});
    await waitFor(
      'converged at the first release',
      async () =>
        (await isConverged(cluster)) &&
        rolledOutAt(await operand(), OLD.image) &&
        versionOf(await clusterOperator(cluster)) === OLD.version,
      {
        timeoutMs: 120_000,
        intervalMs: 300,
      },
    );
  }, 240_000);

  afterAll(async () => {
    await setControlPlaneSchedulable(true).catch(() => {});
    await op?.stop();
    await resetOperatorWorld(cluster);
  }, 120_000);

  it.each([
    { name: 'upgrade', from: OLD, to: NEW, process: 'cvo-upgrade-2' },
    { name: 'downgrade', from: NEW, to: OLD, process: 'cvo-upgrade-3' },
  ])(
    '$name with the new operand unschedulable: the old version until the rollout completes, then the new one once',
    async ({ from, to, process }) => {
      expect(versionOf(await clusterOperator(cluster))).toBe(from.version);
      await setControlPlaneSchedulable(false);
      await op?.stop();
      const watch = sampler(to.image);
      const startedAt = Date.now();
      op = await startOperator(cluster, { name: process, env: { RELEASE_VERSION: to.version, KARPENTER_IMAGE_AWS: to.image } });

      // The new operator applies its template; the new pods stay Pending on cordoned nodes.
      await waitFor('the new template applied', async () => imageOf(await operand()) === to.image, { timeoutMs: 60_000, intervalMs: 200 });
      await waitFor(
        'Progressing=True (OperandRollingOut)',
        async () => conditionOf(await clusterOperator(cluster), 'Progressing')?.reason === 'OperandRollingOut',
        { timeoutMs: 30_000, intervalMs: 200 },
      );
      const left = HOLD_MS - (Date.now() - startedAt);
      if (left > 0) await new Promise((r) => setTimeout(r, left));
      expect(rolledOutAt(await operand(), to.image), 'the new operand must not be able to roll out while the nodes are cordoned').toBe(
        false,
      );
      const held = [...watch.samples];
      expect(
        held.filter((s) => s.version !== from.version),
        'versions[operator] while the operand was not rolled out',
      ).toEqual([]);

      const uncordonedAt = Date.now();
      await setControlPlaneSchedulable(true);
      await waitFor(`versions[operator] = ${to.version}`, async () => versionOf(await clusterOperator(cluster)) === to.version, {
        timeoutMs: 120_000,
        intervalMs: 200,
      });
      const movedAt = Date.now();
      await new Promise((r) => setTimeout(r, 1_000));
      const samples = await watch.stop();

      // Once: old until some point, new from then on; and never new while the sampled operand was not rolled out.
      const firstNew = samples.findIndex((s) => s.version === to.version);
      expect(firstNew).toBeGreaterThan(0);
      expect(samples.slice(0, firstNew).every((s) => s.version === from.version)).toBe(true);
      expect(samples.slice(firstNew).every((s) => s.version === to.version)).toBe(true);
      // Each sample reads the operand right after the ClusterOperator: when the new version first showed, the
      // operand it names had rolled out. (Later samples are not held to it: once rolled out, the Deployment
      // controller's own counts may move for a moment, e.g. a pod replaced, which is not the version's
      // business; they are printed below when it happens.)
      expect(samples[firstNew]!.rolledOut, JSON.stringify(samples[firstNew])).toBe(true);
      const regressed = samples.slice(firstNew).filter((s) => !s.rolledOut);
      if (regressed.length) console.log(`cvo-upgrade: operand not rolled out after the version moved: ${JSON.stringify(regressed)}`);
      expect(rolledOutAt(await operand(), to.image)).toBe(true);
      const co = await clusterOperator(cluster);
      expect(conditionOf(co, 'Progressing')?.status).toBe('False');
      expect(conditionOf(co, 'Available')?.status).toBe('True');
      expect(conditionOf(co, 'Degraded')?.status).toBe('False');
      console.log(
        `cvo-upgrade ${from.version} -> ${to.version}: ${JSON.stringify({
          heldMs: held.length ? held.at(-1)!.at - startedAt : 0,
          samplesWhileHeld: held.length,
          versionMovedAfterUncordonMs: movedAt - uncordonedAt,
        })}`,
      );
    },
    240_000,
  );

  it('an annotation edit on the operand Deployment (a new generation, no new pod) flips no condition: no status write', async () => {
    const co = await clusterOperator(cluster);
    expect(conditionOf(co, 'Progressing')?.status).toBe('False');
    const since = new Date();
    const r = await adminRequest(
      cluster,
      'PATCH',
      `/apis/apps/v1/namespaces/${OPERATOR_NS}/deployments/karpenter`,
      { metadata: { annotations: { 'example.com/note': 'edited' } } },
      'application/merge-patch+json',
    );
    expect(r.status).toBe(200);
    const d = (await operand())!;
    await waitFor(
      'the Deployment controller to observe the new generation',
      async () => ((await operand())?.status?.observedGeneration ?? 0) >= Number(d.metadata.generation),
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    // The status reconcile after each Deployment event has run well within this.
    await new Promise((r) => setTimeout(r, 3_000));
    const writes = cluster.auditEvents({
      user: OPERATOR_USER,
      verbs: ['create', 'update', 'patch'],
      resource: 'clusteroperators/status',
      since,
    });
    expect(writes.map((e) => `${e.verb} ${e.objectRef?.name}`)).toEqual([]);
    expect(conditionOf(await clusterOperator(cluster), 'Progressing')?.status).toBe('False');
  }, 60_000);
});
