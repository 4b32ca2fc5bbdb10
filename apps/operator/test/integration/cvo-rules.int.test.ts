import { join } from 'node:path';
import { Watch } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteObject, getObject, readManifests, resourceFor, waitFor, type KubeObj } from '@karpenter-operator/testkit';
import { testCluster } from '@karpenter-operator/testkit/vitest';
import {
  appliedBefore,
  applyPayload,
  byNumberAndComponent,
  checkOperatorHealth,
  describeManifest,
  loadPayload,
  VERSION_PLACEHOLDER,
  type CvoError,
  type PayloadManifest,
  type PrecreateOutcome,
} from '../support/cvo.js';
import { clusterOperator, conditionOf } from '../support/k8s.js';
import {
  installManifests,
  OPERATOR_NS,
  RELEASE,
  REPO,
  resetOperatorWorld,
  startOperator,
  type OperatorProcess,
} from '../support/operator-process.js';
import { applyKarpenterAndCredentials, isConverged } from '../support/scenario.js';

/**
 * install/ applied the way the Cluster Version Operator applies it (support/cvo.ts: run level after run level,
 * the ClusterOperator precreated with only its relatedObjects, each ClusterOperator task waited on with the
 * CVO's `checkOperatorHealth`), and each CVO rule checked against this operator:
 *
 * - precreation (pkg/cvo/internal/operatorstatus.go `clusterOperatorBuilder.Do`, PrecreatingMode): no status
 *   write of the operator may drop the relatedObjects the CVO put there;
 * - the manifest must declare `status.versions` (`checkOperatorHealth`: ClusterOperatorNoVersions), and the
 *   operator reports exactly those names;
 * - "done" is Available=True, Degraded present and False, every manifest version reported at its value
 *   (`checkOperatorHealth`); Progressing is never read;
 * - strict run-level order (pkg/payload/task_graph.go `ByNumberAndComponent`, pkg/cvo/sync_worker.go `apply`):
 *   what sits after the ClusterOperator in its chain, or at a later run level, is applied only once it is done,
 *   so the operator must become done without it;
 * - an update or a downgrade waits on the new manifest's versions until the operator reports them.
 */
const cluster = testCluster();
const kc = () => cluster.kubeConfig();
const INSTALL = join(REPO, 'install');
const OLD = { version: RELEASE, image: 'quay.io/openshift/origin-aws-karpenter-provider-aws:test' };
const NEW = { version: '4.23.0', image: 'quay.io/openshift/origin-aws-karpenter-provider-aws:next' };
/**
 * Bounds, far above what was measured (2 cores): ClusterOperator done 0.8 s after the operator started (no
 * Karpenter CR); converged with a CR and its operand 3.1–3.7 s; an upgrade or downgrade done 0.9–1.2 s after the
 * new operator started. The bounds leave room for a machine loaded by a whole run (cvo-upgrade.int.test.ts waits
 * up to 120 s for the same version move).
 */
const INSTALL_DONE_MS = 60_000;
const UPGRADE_DONE_MS = 180_000;

type Related = Record<string, string>;
const relatedOf = (o: KubeObj | undefined): Related[] => (o?.status as { relatedObjects?: Related[] } | undefined)?.relatedObjects ?? [];
const versionsOf = (o: KubeObj | undefined) =>
  (o?.status as { versions?: Array<{ name: string; version: string }> } | undefined)?.versions ?? [];
const key = (r: Related) => JSON.stringify([r['group'] ?? '', r['resource'] ?? '', r['namespace'] ?? '', r['name'] ?? '']);
const statusEntries = (o: KubeObj) =>
  ((o.metadata['managedFields'] as Array<{ manager?: string; subresource?: string; time?: string }> | undefined) ?? [])
    .filter((f) => f.subresource === 'status')
    .sort((a, b) => String(b.time).localeCompare(String(a.time)));
const statusManagers = (o: KubeObj) =>
  ((o.metadata['managedFields'] as Array<{ manager?: string; operation?: string; subresource?: string; time?: string }> | undefined) ?? [])
    .filter((f) => f.subresource === 'status')
    .map((f) => `${f.manager} ${f.operation} ${f.time}`)
    .join(', ');

interface Observed {
  type: string;
  resourceVersion: string;
  missing: Related[];
  managers: string;
  /** Who last wrote the status (managedFields of the status subresource, newest first). */
  lastWriter: string | undefined;
}

/** Every version of ClusterOperator `karpenter` after `fromResourceVersion`, from a watch (re-opened where it left off). */
function watchClusterOperator(fromResourceVersion: string, expected: readonly Related[]) {
  const seen: Observed[] = [];
  const errors: string[] = [];
  let rv = fromResourceVersion;
  let stopped = false;
  let abort: AbortController | undefined;
  const open = async (): Promise<void> => {
    if (stopped) return;
    abort = await new Watch(kc()).watch(
      '/apis/config.openshift.io/v1/clusteroperators',
      { fieldSelector: 'metadata.name=karpenter', resourceVersion: rv, allowWatchBookmarks: false },
      (type, obj: KubeObj) => {
        if (type === 'ERROR') {
          errors.push(`watch error: ${JSON.stringify(obj)}`);
          return;
        }
        rv = String(obj.metadata['resourceVersion']);
        const have = new Set(relatedOf(obj).map(key));
        seen.push({
          type,
          resourceVersion: rv,
          missing: expected.filter((r) => !have.has(key(r))),
          managers: statusManagers(obj),
          lastWriter: statusEntries(obj)[0]?.manager,
        });
      },
      (err: unknown) => {
        if (stopped) return;
        if (err && !(err instanceof Error && err.name === 'AbortError')) errors.push(`watch ended: ${String(err)}`);
        void open().catch((e: Error) => errors.push(`re-opening the watch: ${e.message}`));
      },
    );
  };
  const ready = open();
  return {
    seen,
    errors,
    ready,
    stop: () => {
      stopped = true;
      abort?.abort();
    },
  };
}

/** The manifests of a payload that are in the cluster now, by `file Kind ns/name`. */
async function presentIn(manifests: readonly PayloadManifest[]): Promise<string[]> {
  const out: string[] = [];
  for (const m of manifests) {
    try {
      await resourceFor(kc(), m.obj.apiVersion, m.obj.kind);
    } catch {
      continue; // kind not served: not present
    }
    if (await getObject(kc(), m.obj.apiVersion, m.obj.kind, m.obj.metadata.name, m.obj.metadata.namespace)) out.push(describeManifest(m));
  }
  return out;
}

const isOperatorDeployment = (m: PayloadManifest) => m.obj.kind === 'Deployment' && m.obj.metadata.name === 'karpenter-operator';
const isKarpenterCo = (m: PayloadManifest) => m.obj.kind === 'ClusterOperator' && m.obj.metadata.name === 'karpenter';

let op: OperatorProcess | undefined;
let watch: ReturnType<typeof watchClusterOperator> | undefined;
const payload = loadPayload(INSTALL, OLD.version);
const coManifest = payload.find(isKarpenterCo)!;
const before = appliedBefore(payload, coManifest);
const after = payload.filter((m) => m !== coManifest && !before.includes(m));
const timings: Record<string, number> = {};

describe('install/ through a CVO-like applier: each CVO rule for ClusterOperator karpenter', () => {
  beforeAll(async () => {
    // After other files: no operator world left. On a fresh cluster (this file alone) install/ was never applied.
    const served = await resourceFor(kc(), 'autoscaling.openshift.io/v1alpha1', 'Karpenter').then(
      () => true,
      () => false,
    );
    if (served) await resetOperatorWorld(cluster);
    // As on a cluster where the CVO has not reached this run level yet: no ClusterOperator, nothing that comes
    // after it in the CVO's order (earlier suites applied all of install/).
    await deleteObject(kc(), 'config.openshift.io/v1', 'ClusterOperator', 'karpenter');
    for (const m of after) {
      await resourceFor(kc(), m.obj.apiVersion, m.obj.kind).then(
        () => deleteObject(kc(), m.obj.apiVersion, m.obj.kind, m.obj.metadata.name, m.obj.metadata.namespace),
        () => false,
      );
    }
    await waitFor(
      'ClusterOperator karpenter and the later manifests gone',
      async () => !(await clusterOperator(cluster)) && (await presentIn(after)).length === 0,
      { timeoutMs: 60_000 },
    );
  }, 120_000);

  afterAll(async () => {
    watch?.stop();
    await op?.stop();
    await resetOperatorWorld(cluster);
    await installManifests(cluster); // puts back all of install/ for the next files
    console.log(`cvo-rules timings (ms): ${JSON.stringify(timings)}`);
  }, 180_000);

  it('the manifest declares status.versions (the CVO fails a ClusterOperator without) with the release placeholder', () => {
    const raw = readManifests(join(INSTALL, coManifest.file)).find((o) => o.kind === 'ClusterOperator')!;
    expect(versionsOf(raw), `${coManifest.file}: ClusterOperator karpenter status.versions`).toEqual([
      { name: 'operator', version: VERSION_PLACEHOLDER },
    ]);
    expect(versionsOf(coManifest.obj)).toEqual([{ name: 'operator', version: OLD.version }]);
    expect(relatedOf(coManifest.obj).length, `${coManifest.file}: status.relatedObjects`).toBeGreaterThan(0);
    // The port of checkOperatorHealth refuses a manifest without versions, whatever the live object says.
    const noVersions = structuredClone(coManifest.obj);
    delete (noVersions.status as { versions?: unknown }).versions;
    expect(checkOperatorHealth(noVersions, undefined, 'Updating')?.reason).toBe('ClusterOperatorNoVersions');
  });

  it('install/ is ordered by run level; the ClusterOperator comes after everything the operator runs with', () => {
    const steps = byNumberAndComponent(payload).map((s) => s.map((c) => `${c[0]!.runLevel}/${c[0]!.component} x${c.length}`));
    console.log(`cvo-rules payload steps: ${JSON.stringify(steps)}`);
    expect(
      payload.every((m) => m.runLevel !== undefined),
      'every install/ file is named 0000_NN_component_*',
    ).toBe(true);
    expect(coManifest.runLevel).toBe(50);
    const kinds = new Set(before.map((m) => m.obj.kind));
    for (const k of [
      'Namespace',
      'CustomResourceDefinition',
      'ServiceAccount',
      'ClusterRole',
      'ClusterRoleBinding',
      'Role',
      'RoleBinding',
    ]) {
      expect(kinds.has(k), `a ${k} of install/ before ${describeManifest(coManifest)}`).toBe(true);
    }
    expect(before.some(isOperatorDeployment), 'the operator Deployment is applied before its ClusterOperator').toBe(true);
    console.log(`cvo-rules: applied only after ClusterOperator karpenter is done: ${after.map(describeManifest).join('; ')}`);
  });

  it(
    'first install: precreated with only relatedObjects, done by the CVO predicate without any later manifest, Progressing not needed',
    async () => {
      let precreated: PrecreateOutcome | undefined;
      let doneCo: KubeObj | undefined;
      let laterPresent: string[] = [];
      let startedAt = 0;
      const result = await applyPayload(kc(), [...before, coManifest], {
        mode: 'Initializing',
        clusterOperatorTimeoutMs: INSTALL_DONE_MS,
        handle: async (m) => {
          if (!isOperatorDeployment(m)) return false;
          startedAt = Date.now();
          op = await startOperator(cluster, { name: 'cvo-rules-1' });
          timings.operatorReady = Date.now() - startedAt;
          return true;
        },
        onPrecreated: async (m, outcome) => {
          precreated = outcome;
          if (outcome.outcome !== 'created') return;
          // Right after precreation: status is the manifest's relatedObjects and nothing else.
          const co = await clusterOperator(cluster);
          expect(co?.status, `${describeManifest(m)}: status right after the CVO precreated it`).toEqual({
            relatedObjects: relatedOf(m.obj),
          });
          watch = watchClusterOperator(outcome.resourceVersion, relatedOf(m.obj));
          await watch.ready;
        },
        onDone: async (_m, co) => {
          doneCo = co;
          timings.installDoneAfterOperatorStart = Date.now() - startedAt;
          laterPresent = await presentIn(after);
        },
      });
      expect(precreated?.outcome, 'ClusterOperator karpenter precreated by the CVO (it did not exist)').toBe('created');
      expect(laterPresent, 'manifests the CVO applies only after ClusterOperator karpenter is done, present when it was done').toEqual([]);
      expect(result.reported, 'errors the CVO would only report at install (Degraded)').toEqual([]);
      // The stricter predicate of the syncs that follow the install (versions and Degraded too) holds as well.
      expect(checkOperatorHealth(coManifest.obj, doneCo, 'Reconciling')).toBeUndefined();
      // Progressing plays no part: the same answer with it absent, True or Unknown.
      for (const progressing of [undefined, 'True', 'Unknown']) {
        const co = structuredClone(doneCo!);
        const st = co.status as { conditions: Array<{ type: string; status: string }> };
        st.conditions = st.conditions.filter((c) => c.type !== 'Progressing');
        if (progressing) st.conditions.push({ type: 'Progressing', status: progressing });
        expect(checkOperatorHealth(coManifest.obj, co, 'Reconciling'), `Progressing=${progressing ?? 'absent'}`).toBeUndefined();
      }
      // A missing Degraded is degraded to the CVO: the operator must report one.
      expect(conditionOf(doneCo, 'Degraded')?.status, 'ClusterOperator karpenter status.conditions[Degraded]').toBe('False');
      const noDegraded = structuredClone(doneCo!);
      const st = noDegraded.status as { conditions: Array<{ type: string }> };
      st.conditions = st.conditions.filter((c) => c.type !== 'Degraded');
      expect(checkOperatorHealth(coManifest.obj, noDegraded, 'Reconciling')?.reason).toBe('ClusterOperatorDegraded');
      expect(checkOperatorHealth(coManifest.obj, noDegraded, 'Initializing')?.effect).toBe('Report');

      // The rest of the payload, now that the ClusterOperator is done.
      const rest = await applyPayload(kc(), after, { mode: 'Initializing', clusterOperatorTimeoutMs: INSTALL_DONE_MS });
      expectOnlyMonitoringSkipped(rest.skipped);
      expect(checkOperatorHealth(coManifest.obj, await clusterOperator(cluster), 'Reconciling')).toBeUndefined();
    },
    INSTALL_DONE_MS + 120_000,
  );

  it('reports exactly the version names the manifest declares, at their values', async () => {
    const co = await clusterOperator(cluster);
    const names = (vs: Array<{ name: string }>) => vs.map((v) => v.name).sort();
    expect(names(versionsOf(co)), 'ClusterOperator karpenter status.versions names').toEqual(names(versionsOf(coManifest.obj)));
    expect(versionsOf(co), 'ClusterOperator karpenter status.versions').toEqual(versionsOf(coManifest.obj));
  });

  it('with a Karpenter CR and its operand: still done by the CVO predicate once converged', async () => {
    const t0 = Date.now();
    await applyKarpenterAndCredentials(cluster, {});
    let last: CvoError | undefined;
    await waitFor(
      'converged and done by the CVO predicate',
      async () => {
        last = checkOperatorHealth(coManifest.obj, await clusterOperator(cluster), 'Reconciling');
        return last === undefined && (await isConverged(cluster)) && (await operandAt(OLD.image));
      },
      { timeoutMs: 180_000, intervalMs: 300 },
    ).catch((e: Error) => {
      throw new Error(`${e.message}; CVO: ${last ? `${last.reason}: ${last.message}` : 'done'}`);
    });
    timings.convergedWithOperand = Date.now() - t0;
  }, 240_000);

  it.each([
    { name: 'upgrade', from: OLD, to: NEW, process: 'cvo-rules-2' },
    { name: 'downgrade', from: NEW, to: OLD, process: 'cvo-rules-3' },
  ])(
    '$name: the CVO predicate with the new manifest is false until the operator reports the new version, then true',
    async ({ name, from, to, process }) => {
      const target = loadPayload(INSTALL, to.version);
      const targetCo = target.find(isKarpenterCo)!;
      expect(versionsOf(targetCo.obj)).toEqual([{ name: 'operator', version: to.version }]);
      expect(versionsOf(await clusterOperator(cluster))).toEqual([{ name: 'operator', version: from.version }]);
      const first = checkOperatorHealth(targetCo.obj, await clusterOperator(cluster), 'Updating');
      expect(first?.reason, 'before the new operator runs').toBe('ClusterOperatorUpdating');
      expect(first?.message).toContain(`status.versions[operator] is ${from.version}, the manifest wants ${to.version}`);

      await op?.stop();
      op = undefined;
      const samples: Array<{ at: number; version: string | undefined; error: CvoError | undefined }> = [];
      let sampling = true;
      const sample = async () => {
        const co = await clusterOperator(cluster);
        samples.push({
          at: Date.now(),
          version: versionsOf(co).find((v) => v.name === 'operator')?.version,
          error: checkOperatorHealth(targetCo.obj, co, 'Updating'),
        });
      };
      // Samples at a 200 ms pace while the CVO applies, and one more after it returned: on a loaded machine the
      // last paced sample may predate the version report, and the state after the CVO is done must be sampled.
      const sampler = (async () => {
        while (sampling) {
          await sample();
          await new Promise((r) => setTimeout(r, 200));
        }
        await sample();
      })();
      let startedAt = 0;
      let precreated: PrecreateOutcome | undefined;
      let waited = 0;
      try {
        const applied = await applyPayload(kc(), target, {
          mode: 'Updating',
          clusterOperatorTimeoutMs: UPGRADE_DONE_MS,
          handle: async (m) => {
            if (!isOperatorDeployment(m)) return false;
            startedAt = Date.now();
            op = await startOperator(cluster, { name: process, env: { RELEASE_VERSION: to.version, KARPENTER_IMAGE_AWS: to.image } });
            return true;
          },
          onPrecreated: (_m, outcome) => void (precreated = outcome),
          onDone: (_m, _co, ms) => void (waited = ms),
        });
        expectOnlyMonitoringSkipped(applied.skipped);
      } finally {
        sampling = false;
        await sampler;
      }
      timings[`${name}DoneAfterOperatorStart`] = Date.now() - startedAt;
      timings[`${name}ClusterOperatorWait`] = waited;
      expect(precreated?.outcome, 'the CVO precreates only a missing ClusterOperator').toBe('exists');

      // That the CVO waited before the new operator ran is asserted above (`first`); whether a paced sample also
      // caught the wait depends on how fast the new operator reports, so it is printed, not required.
      const firstDone = samples.findIndex((s) => s.error === undefined);
      expect(firstDone, `a sample after the CVO was done (${samples.length} samples)`).toBeGreaterThanOrEqual(0);
      // Until the operator reports the new version the CVO waits, and only for the version: never
      // unavailable or degraded, which would mark the update as failing.
      for (const s of samples.slice(0, firstDone)) {
        expect(s.version, 'status.versions[operator] while the CVO waited').toBe(from.version);
        expect(s.error?.reason, JSON.stringify(s.error)).toBe('ClusterOperatorUpdating');
      }
      // From then on it stays done.
      const regressed = samples.slice(firstDone).filter((s) => s.error !== undefined);
      expect(
        regressed.map((s) => s.error?.message),
        'ClusterOperator karpenter after it was done',
      ).toEqual([]);
      expect(samples[firstDone]!.version).toBe(to.version);
      expect(await operandAt(to.image), `Deployment ${OPERATOR_NS}/karpenter rolled out at ${to.image}`).toBe(true);
      expect(checkOperatorHealth(targetCo.obj, await clusterOperator(cluster), 'Reconciling')).toBeUndefined();
      console.log(
        `cvo-rules ${name} ${from.version} -> ${to.version}: ${JSON.stringify({
          samplesWaiting: firstDone,
          doneAfterOperatorStartMs: samples[firstDone]!.at - startedAt,
        })}`,
      );
    },
    UPGRADE_DONE_MS + 120_000,
  );

  it('no status write ever dropped a relatedObject the CVO precreated', () => {
    expect(watch, 'the ClusterOperator watch was started at precreation').toBeDefined();
    watch!.stop();
    expect(watch!.errors, 'the watch saw every version of ClusterOperator karpenter').toEqual([]);
    expect(watch!.seen.length, 'versions of ClusterOperator karpenter seen after precreation').toBeGreaterThan(3);
    const dropped = watch!.seen
      .filter((s) => s.missing.length > 0)
      .map(
        (s) =>
          `ClusterOperator karpenter status.relatedObjects at resourceVersion ${s.resourceVersion} (${s.type}; status written by ${s.managers}) lacks ${JSON.stringify(s.missing)}`,
      );
    expect(dropped).toEqual([]);
    const writers = [...new Set(watch!.seen.map((s) => s.lastWriter))];
    console.log(`cvo-rules: status writers seen: ${JSON.stringify(writers)}`);
    expect(
      writers.some((w) => w !== undefined && w !== 'cluster-version-operator'),
      'the watch saw status written by the operator',
    ).toBe(true);
    timings.statusVersionsWatched = watch!.seen.length;
  });
});

/** The local cluster serves no monitoring.coreos.com (OpenShift always does); any other kind left out is a failure. */
function expectOnlyMonitoringSkipped(skipped: string[]): void {
  if (skipped.length) console.log(`cvo-rules: not served here, left out: ${skipped.join('; ')}`);
  expect(skipped.filter((s) => !/ (ServiceMonitor|PrometheusRule) /.test(s))).toEqual([]);
}

async function operandAt(image: string): Promise<boolean> {
  type Deployment = KubeObj & {
    spec: { replicas?: number; template: { spec: { containers: Array<{ image: string }> } } };
    status?: { observedGeneration?: number; replicas?: number; updatedReplicas?: number; availableReplicas?: number };
  };
  const d = (await getObject(kc(), 'apps/v1', 'Deployment', 'karpenter', OPERATOR_NS)) as Deployment | undefined;
  const st = d?.status ?? {};
  const replicas = d?.spec.replicas ?? 1;
  return (
    d !== undefined &&
    d.spec.template.spec.containers[0]?.image === image &&
    (st.observedGeneration ?? 0) >= Number(d.metadata['generation'] ?? 1) &&
    st.updatedReplicas === replicas &&
    st.replicas === replicas &&
    (st.availableReplicas ?? 0) >= replicas
  );
}
