import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { applyObject, getObject, kubeRequest, resourceFor, waitFor, type KubeObj } from '@karpenter-operator/testkit';

/**
 * A small Cluster Version Operator for the tests: it loads `install/` as a release payload, orders it as the
 * CVO does, precreates ClusterOperators and waits on them with the CVO's own "done" predicate. Each rule
 * below names the function of github.com/openshift/cluster-version-operator it follows (read at commit
 * 6e719331fb5863141397f35b1f47bed42148a6dd).
 *
 * Left out on purpose: the inclusion filter (cvo-inclusion.int.test.ts runs library-go's own against
 * install/), the owner reference to ClusterVersion `version` that the CVO's `ownerReferenceModifier`
 * (pkg/cvo/cvo.go) sets (this cluster has no ClusterVersion: the garbage collector would delete the
 * ClusterOperator), the Job split (`SplitOnJobs`: install/ has no Job), and the CVO's per-kind merge
 * (lib/resourcemerge): objects are server-side applied instead.
 */

/** The release tooling replaces this placeholder with the payload's version in every manifest. */
export const VERSION_PLACEHOLDER = '0.0.1-snapshot';

/** The CVO's sync modes (lib/resourcebuilder/interface.go `Mode`, chosen in pkg/cvo/cvo.go `stateToMode`). */
export type CvoMode = 'Initializing' | 'Updating' | 'Reconciling';

export interface PayloadManifest {
  file: string;
  /** 1-based position in the payload, as the CVO numbers its tasks. */
  index: number;
  /** The `NN` of `0000_NN_component_`; undefined when the file name does not match. */
  runLevel: number | undefined;
  component: string | undefined;
  obj: KubeObj;
}

export const describeManifest = (m: PayloadManifest): string =>
  `${m.file} ${m.obj.kind} ${m.obj.metadata.namespace ? `${m.obj.metadata.namespace}/` : ''}${m.obj.metadata.name}`;

/**
 * pkg/payload/task_graph.go `reMatchPattern`: run level and component of a payload file name (the same
 * expression, written for JavaScript).
 */
const RUN_LEVEL = /^0000_(\d+)_([a-zA-Z0-9]+(-[a-zA-Z0-9]+)*?)_/;

/**
 * pkg/payload/payload.go `LoadUpdate`: the files of the manifest directory in directory order (Go's
 * os.ReadDir sorts by name), only `.yaml`/`.yml`/`.json` (`hasManifestExtension`; `image-references` is
 * skipped), every document of a file in file order, each remembering its file name (`OriginalFilename`).
 * The placeholder version is replaced first, as the payload carries it replaced.
 */
export function loadPayload(dir: string, releaseVersion: string): PayloadManifest[] {
  const out: PayloadManifest[] = [];
  for (const file of readdirSync(dir)
    .filter((f) => /\.(ya?ml|json)$/.test(f))
    .sort()) {
    const text = readFileSync(join(dir, file), 'utf8').split(VERSION_PLACEHOLDER).join(releaseVersion);
    const match = RUN_LEVEL.exec(file);
    for (const doc of parseAllDocuments(text)) {
      const obj = doc.toJS() as KubeObj | null;
      if (!obj || typeof obj.kind !== 'string') continue;
      out.push({
        file,
        index: out.length + 1,
        runLevel: match ? Number(match[1]) : undefined,
        component: match?.[2],
        obj,
      });
    }
  }
  return out;
}

/**
 * pkg/payload/task_graph.go `ByNumberAndComponent`, the split the CVO uses for an update
 * (pkg/cvo/sync_worker.go `apply`, the default branch): one step per run level, in payload order; within a
 * step, one serial chain per component, the chains running in parallel. A step starts only once every chain of
 * the previous step succeeded (`RunGraph`). A file whose name does not match stands alone, in order.
 *
 * (A first install instead flattens every `0000_NN_component` chain of every run level into one parallel
 * step, `FlattenByNumberAndComponent`, and a reconcile permutes that; only within a chain is order kept in
 * every mode. The tests apply even a first install by run level, the stricter order: what works so works in any.)
 */
export function byNumberAndComponent(manifests: readonly PayloadManifest[]): PayloadManifest[][][] {
  const steps: PayloadManifest[][][] = [];
  for (const m of manifests) {
    const step = steps.at(-1);
    const first = step?.[0]?.[0];
    if (!step || m.runLevel === undefined || first?.runLevel !== m.runLevel) {
      steps.push([[m]]);
      continue;
    }
    const chain = step.at(-1)!;
    if (chain[0]!.component === m.component) chain.push(m);
    else step.push([m]);
  }
  return steps;
}

/**
 * What is certainly applied before the ClusterOperator task `co` is run under `ByNumberAndComponent`: every
 * earlier run level, and the tasks ahead of it in its own chain. Everything else (later run levels, tasks after
 * it in its chain, other chains of its run level) may wait until it is done.
 */
export function appliedBefore(manifests: readonly PayloadManifest[], co: PayloadManifest): PayloadManifest[] {
  const out: PayloadManifest[] = [];
  for (const step of byNumberAndComponent(manifests)) {
    const chain = step.find((c) => c.includes(co));
    if (chain) return [...out, ...chain.slice(0, chain.indexOf(co))];
    out.push(...step.flat());
  }
  throw new Error(`${describeManifest(co)} is not in the payload`);
}

/** An UpdateError of the CVO: `effect` is what the sync does with it (pkg/payload/task.go `UpdateEffectType`). */
export interface CvoError {
  reason: string;
  effect: 'Fail' | 'FailAfterInterval' | 'None' | 'Report';
  message: string;
}

interface CoStatus {
  versions?: Array<{ name: string; version: string }>;
  conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>;
  relatedObjects?: Array<Record<string, string>>;
}
const statusOf = (o: KubeObj | undefined) => (o?.status ?? {}) as CoStatus;

/**
 * pkg/cvo/internal/operatorstatus.go `checkOperatorHealth`, rule for rule; `undefined` is "done" (a nil error).
 *
 * - The manifest must list `status.versions`; none is `ClusterOperatorNoVersions`, a failure, before the
 *   live object is even read.
 * - Available must be present and True, else `ClusterOperatorNotAvailable` (a failure).
 * - Degraded must be present and False: the CVO starts from "degraded" and only a Degraded=False condition
 *   clears it, so a missing or Unknown Degraded counts as degraded (`ClusterOperatorDegraded`; while
 *   initializing it is only reported, otherwise it fails after an interval).
 * - Every version the manifest lists must be reported under its name with exactly that value, else
 *   `ClusterOperatorUpdating`; while initializing, unfinished versions are allowed.
 * - Progressing is never consulted (the CVO reads it into a log message only).
 *
 * Every message names the object and field.
 */
export function checkOperatorHealth(expected: KubeObj, actual: KubeObj | undefined, mode: CvoMode): CvoError | undefined {
  const name = expected.metadata.name;
  const want = statusOf(expected).versions ?? [];
  if (want.length === 0) {
    return {
      reason: 'ClusterOperatorNoVersions',
      effect: 'Fail',
      message: `ClusterOperator ${name} manifest: status.versions is empty; the CVO requires the versions to wait for`,
    };
  }
  if (!actual) return { reason: 'NotFound', effect: 'Fail', message: `ClusterOperator ${name}: not found` };
  const st = statusOf(actual);
  const undone: string[] = [];
  for (const v of want) {
    const current = (st.versions ?? []).find((a) => a.name === v.name)?.version ?? '';
    if (current !== v.version)
      undone.push(`status.versions[${v.name}] is ${current === '' ? 'not reported' : current}, the manifest wants ${v.version}`);
  }
  undone.sort();
  const available = (st.conditions ?? []).find((c) => c.type === 'Available');
  const degraded = (st.conditions ?? []).find((c) => c.type === 'Degraded');
  const show = (c: typeof available, type: string) =>
    c ? `status.conditions[${type}] is ${c.status} (${c.reason ?? ''}: ${c.message ?? ''})` : `status.conditions has no ${type}`;
  if (available?.status !== 'True') {
    return { reason: 'ClusterOperatorNotAvailable', effect: 'Fail', message: `ClusterOperator ${name}: ${show(available, 'Available')}` };
  }
  if (degraded?.status !== 'False') {
    return {
      reason: 'ClusterOperatorDegraded',
      effect: mode === 'Initializing' ? 'Report' : 'FailAfterInterval',
      message: `ClusterOperator ${name}: ${show(degraded, 'Degraded')}${degraded ? '' : ' (the CVO counts a missing Degraded as degraded)'}`,
    };
  }
  if (undone.length > 0 && mode !== 'Initializing') {
    return { reason: 'ClusterOperatorUpdating', effect: 'None', message: `ClusterOperator ${name}: ${undone.join('; ')}` };
  }
  return undefined;
}

/** A task error that stops the sync (pkg/cvo/sync_worker.go `apply`: only `UpdateEffectReport` errors let it go on). */
export const blocksSync = (e: CvoError | undefined): boolean => e !== undefined && e.effect !== 'Report';

const FIELD_MANAGER = 'cluster-version-operator';
const CO_PATH = '/apis/config.openshift.io/v1/clusteroperators';

export type PrecreateOutcome = { outcome: 'created'; resourceVersion: string } | { outcome: 'exists' } | { outcome: 'conflict' };

/**
 * pkg/cvo/internal/operatorstatus.go `clusterOperatorBuilder.Do` in `PrecreatingMode`: create the
 * ClusterOperator from the manifest (the API server drops the status of a create: status is a subresource);
 * when it already exists, do nothing more. Only when this call created it, write its status once with the
 * manifest's `status.relatedObjects` and nothing else (not versions, not conditions); a conflict on that write
 * is ignored. As admin, like the CVO.
 */
export async function precreateClusterOperator(kc: KubeConfig, manifest: KubeObj): Promise<PrecreateOutcome> {
  const created = await kubeRequest<KubeObj>(kc, 'POST', `${CO_PATH}?fieldManager=${FIELD_MANAGER}`, { body: manifest });
  if (created.status === 409) return { outcome: 'exists' };
  if (created.status !== 201)
    throw new Error(`precreating ClusterOperator ${manifest.metadata.name}: HTTP ${created.status}: ${created.text}`);
  const body = {
    ...created.body,
    status: { ...(created.body.status ?? {}), relatedObjects: structuredClone(statusOf(manifest).relatedObjects) },
  };
  const updated = await kubeRequest<KubeObj>(
    kc,
    'PUT',
    `${CO_PATH}/${encodeURIComponent(manifest.metadata.name)}/status?fieldManager=${FIELD_MANAGER}`,
    { body },
  );
  if (updated.status === 409) return { outcome: 'conflict' };
  if (updated.status !== 200) {
    throw new Error(
      `precreating ClusterOperator ${manifest.metadata.name}: status.relatedObjects: HTTP ${updated.status}: ${updated.text}`,
    );
  }
  return { outcome: 'created', resourceVersion: String(updated.body.metadata['resourceVersion']) };
}

export interface ApplyPayloadOptions {
  mode: CvoMode;
  /** How long a ClusterOperator task may stay undone before the apply fails (the CVO would retry the sync). */
  clusterOperatorTimeoutMs: number;
  /** Takes a manifest over instead of applying it (e.g. the operator Deployment, run as a local process); true when it did. */
  handle?: (m: PayloadManifest) => Promise<boolean> | boolean;
  onPrecreated?: (m: PayloadManifest, outcome: PrecreateOutcome) => Promise<void> | void;
  /** Called when a ClusterOperator task is done, with the ClusterOperator as read and the wait's duration. */
  onDone?: (m: PayloadManifest, co: KubeObj | undefined, waitedMs: number) => Promise<void> | void;
}

export interface ApplyPayloadResult {
  /** Manifests in the order their tasks finished. */
  finished: string[];
  /** ClusterOperator errors the sync only reported (Initializing: Degraded). */
  reported: CvoError[];
  /** Manifests of a kind the cluster does not serve, with why. */
  skipped: string[];
}

/**
 * pkg/cvo/sync_worker.go `apply` with `ByNumberAndComponent` and `RunGraph`: run level after run level; in a
 * run level the component chains in parallel; each chain first precreates its ClusterOperators (only that
 * kind, without retries), then runs its tasks in order. A ClusterOperator task is done when
 * `checkOperatorHealth` returns nothing or only a reported error; until then the chain, and every later run
 * level, waits. (The CVO fails the attempt and syncs again from the start; polling the ClusterOperator has the
 * same effect on what gets applied.)
 */
export async function applyPayload(
  kc: KubeConfig,
  manifests: readonly PayloadManifest[],
  opts: ApplyPayloadOptions,
): Promise<ApplyPayloadResult> {
  const result: ApplyPayloadResult = { finished: [], reported: [], skipped: [] };
  const runChain = async (chain: PayloadManifest[]) => {
    for (const m of chain.filter((x) => x.obj.kind === 'ClusterOperator')) {
      const outcome = await precreateClusterOperator(kc, m.obj);
      await opts.onPrecreated?.(m, outcome);
    }
    for (const m of chain) {
      if (await opts.handle?.(m)) {
        result.finished.push(describeManifest(m));
        continue;
      }
      if (m.obj.kind === 'ClusterOperator') {
        const started = Date.now();
        let last: CvoError | undefined;
        const co = await waitFor(
          `${describeManifest(m)}: the CVO's checkOperatorHealth (${opts.mode})`,
          async () => {
            const live = await getObject(kc, 'config.openshift.io/v1', 'ClusterOperator', m.obj.metadata.name);
            last = checkOperatorHealth(m.obj, live, opts.mode);
            if (last?.reason === 'ClusterOperatorNoVersions') throw new Error(last.message);
            return blocksSync(last) ? undefined : { live };
          },
          { timeoutMs: opts.clusterOperatorTimeoutMs, intervalMs: 200 },
        ).catch((e: Error) => {
          throw new Error(`${e.message}; last: ${last ? `${last.reason}: ${last.message}` : 'none'}`);
        });
        if (last) result.reported.push(last);
        await opts.onDone?.(m, co.live, Date.now() - started);
      } else {
        try {
          await resourceFor(kc, m.obj.apiVersion, m.obj.kind);
        } catch (e) {
          // A kind this local cluster does not serve (monitoring's, which OpenShift always has): left out, said so.
          result.skipped.push(`${describeManifest(m)}: ${(e as Error).message}`);
          continue;
        }
        await applyObject(kc, m.obj, { fieldManager: FIELD_MANAGER });
        // lib/resourcebuilder/apiext.go `checkCustomResourceDefinitionHealth`: outside initialization the task
        // is done only once the CRD is Established.
        if (m.obj.kind === 'CustomResourceDefinition' && opts.mode !== 'Initializing') {
          await waitFor(`${describeManifest(m)}: Established`, async () => {
            const crd = await getObject(kc, 'apiextensions.k8s.io/v1', 'CustomResourceDefinition', m.obj.metadata.name);
            return statusOf(crd).conditions?.some((c) => c.type === 'Established' && c.status === 'True');
          });
        }
      }
      result.finished.push(describeManifest(m));
    }
  };
  for (const step of byNumberAndComponent(manifests)) await Promise.all(step.map(runChain));
  return result;
}
