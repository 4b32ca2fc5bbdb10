// startup: process start → first complete reconcile (CRDs Established, operand applied, status written), median of N (target < 2 s)
//
// The Karpenter CR `default` and the credentials Secret are present before each start. Before each run the
// operator is stopped and everything it created is removed (its CRDs, hence EC2NodeClass default; every
// object with its managed label; the operand Deployment), and the ClusterOperator and Karpenter statuses are
// cleared, so every run starts from the same world. Timestamps come from one clock (this machine): the
// operator's requests from the audit log (requestReceived / stageTimestamp), CRD Established from an admin
// watch. "Complete" = every runtime CRD Established, the operand Deployment created, and the first
// ClusterOperator status write that the API server received after that Deployment create has finished.
//
// --compare DIR/main.js alternates runs of that bundle (another build, e.g. `node
// apps/operator/scripts/build.mjs DIR` at another commit) with this one, same cluster, same load, and reports
// both medians and their ratio.
//
//   npm run bench -- startup [--runs 5] [--compare MAIN] [--leader-elect true] [--timeout-s 900]
import { parseArgs } from 'node:util';
import { waitFor, type KubeObj } from '@karpenter-operator/testkit';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  applyKarpenterAndCredentials,
  conditionOf,
  installManifests,
  KARPENTER,
  kubeRequestRetrying as kubeRequest,
  OPERATOR_NS,
  OPERATOR_USER,
  runBench,
  RUNTIME_CRDS,
  sleep,
  startOperator,
  watchPath,
  type BenchContext,
} from './src/harness.js';
import { median, ratio, summarize } from './src/stats.js';

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    'leader-elect': { type: 'string', default: 'true' },
    'timeout-s': { type: 'string', default: '900' },
    compare: { type: 'string' },
  },
});
const COMPARE = args.compare;
const RUNS = Number(args.runs);
const LEADER_ELECT = args['leader-elect'] !== 'false';
const TARGET_MS = 2_000;
const MANAGED = 'karpenter-operator.openshift.io/managed=true';

/** Everything the operator creates, listed cluster-wide by its managed label: [list path, plural path prefix]. */
const MANAGED_KINDS = [
  '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
  '/apis/apps/v1/deployments',
  '/api/v1/serviceaccounts',
  '/apis/rbac.authorization.k8s.io/v1/roles',
  '/apis/rbac.authorization.k8s.io/v1/rolebindings',
  '/apis/rbac.authorization.k8s.io/v1/clusterroles',
  '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
  '/apis/machineconfiguration.openshift.io/v1/machineconfigpools',
  '/apis/machineconfiguration.openshift.io/v1/kubeletconfigs',
];

const itemPath = (listPath: string, o: KubeObj) => {
  const i = listPath.lastIndexOf('/');
  return `${listPath.slice(0, i)}${o.metadata.namespace ? `/namespaces/${o.metadata.namespace}` : ''}/${listPath.slice(i + 1)}/${o.metadata.name}`;
};

async function listManaged(kc: KubeConfig): Promise<Array<{ path: string; obj: KubeObj }>> {
  const out: Array<{ path: string; obj: KubeObj }> = [];
  for (const p of MANAGED_KINDS) {
    const r = await kubeRequest<{ items?: KubeObj[] }>(kc, 'GET', `${p}?labelSelector=${encodeURIComponent(MANAGED)}`);
    if (r.status === 404) continue; // a kind not served (yet)
    if (r.status !== 200) throw new Error(`listing ${p}: HTTP ${r.status}: ${r.text}`);
    for (const obj of r.body.items ?? []) out.push({ path: itemPath(p, obj), obj });
  }
  const dep = await kubeRequest<KubeObj>(kc, 'GET', `/apis/apps/v1/namespaces/${OPERATOR_NS}/deployments/karpenter`);
  if (dep.status === 200 && !out.some((o) => o.obj.kind === 'Deployment' && o.obj.metadata.name === 'karpenter')) {
    out.push({ path: `/apis/apps/v1/namespaces/${OPERATOR_NS}/deployments/karpenter`, obj: dep.body });
  }
  return out;
}

/** Back to "installed by the CVO, CR and credentials present, operator never ran". */
async function resetWorld(ctx: BenchContext): Promise<void> {
  const kc = ctx.admin();
  for (const { path } of await listManaged(kc)) {
    const r = await kubeRequest(kc, 'DELETE', path, { body: { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background' } });
    if (r.status >= 300 && r.status !== 404) throw new Error(`deleting ${path}: HTTP ${r.status}: ${r.text}`);
  }
  await waitFor('the operator-created objects to be gone', async () => (await listManaged(kc)).length === 0, {
    timeoutMs: 120_000,
    intervalMs: 500,
  });
  // The operand's ReplicaSets and pods too (garbage collection), or the next Deployment adopts them.
  await waitFor(
    'the operand ReplicaSets and pods to be gone',
    async () => {
      for (const p of [`/apis/apps/v1/namespaces/${OPERATOR_NS}/replicasets`, `/api/v1/namespaces/${OPERATOR_NS}/pods`]) {
        const r = await kubeRequest<{ items?: unknown[] }>(kc, 'GET', p);
        if (r.status !== 200 || (r.body.items?.length ?? 0) > 0) return false;
      }
      return true;
    },
    { timeoutMs: 120_000, intervalMs: 500 },
  );
  for (const path of [
    '/apis/config.openshift.io/v1/clusteroperators/karpenter/status',
    `/apis/${KARPENTER.apiVersion}/karpenters/default/status`,
  ]) {
    const r = await kubeRequest(kc, 'PATCH', path, { body: { status: null }, contentType: 'application/merge-patch+json' });
    if (r.status !== 200) throw new Error(`clearing ${path}: HTTP ${r.status}: ${r.text}`);
  }
}

interface RunFigures {
  run: number;
  /** `this` (apps/operator/dist/main.js) or `compare` (--compare). */
  bundle: 'this' | 'compare';
  /** Process start → /readyz 200 (caches synced). */
  readyMs: number;
  /** Process start → the operator's first API request received. */
  firstRequestMs: number;
  leaseAcquiredMs?: number;
  crdsEstablishedMs: number;
  deploymentCreatedMs: number;
  statusWrittenMs: number;
  completeMs: number;
  /** completeMs − firstRequestMs: the target's "after the API is reachable". */
  completeAfterFirstRequestMs: number;
  operatorRequests: number;
  /** The operator's writes (leases and events aside) before its Deployment write, and those after the last CRD was Established. */
  writesBeforeDeployment: number;
  writesAfterCrdsEstablishedBeforeDeployment: string[];
  clusterOperatorAtComplete?: string;
}

async function oneRun(ctx: BenchContext, run: number, compare: boolean): Promise<RunFigures> {
  const kc = ctx.admin();
  const established = new Map<string, number>();
  let deploymentSeen: number | undefined;
  const coWrites: Array<{ at: number; obj: KubeObj }> = [];
  const watches = await Promise.all([
    watchPath(
      kc,
      '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
      (_t, o) => {
        if (RUNTIME_CRDS.includes(o.metadata.name) && !established.has(o.metadata.name) && conditionOf(o, 'Established')?.status === 'True')
          established.set(o.metadata.name, Date.now());
      },
      { labelSelector: MANAGED },
    ),
    watchPath(kc, `/apis/apps/v1/namespaces/${OPERATOR_NS}/deployments`, () => (deploymentSeen ??= Date.now()), {
      fieldSelector: 'metadata.name=karpenter',
    }),
    watchPath(
      kc,
      '/apis/config.openshift.io/v1/clusteroperators',
      (_t, o) => {
        if (((o.status as { conditions?: unknown[] } | undefined)?.conditions?.length ?? 0) > 0) coWrites.push({ at: Date.now(), obj: o });
      },
      { fieldSelector: 'metadata.name=karpenter' },
    ),
  ]);
  await sleep(1_000); // the watches' initial ADDED events
  const op = await startOperator(ctx, { name: `operator-${run}`, leaderElect: LEADER_ELECT, ...(compare ? { main: COMPARE! } : {}) });
  const t0 = op.spawnedAt;
  const since = new Date(t0);
  try {
    const readyAt = await op.waitReady(60_000);
    await waitFor(
      `run ${run}: CRDs Established, operand Deployment applied, ClusterOperator status written after it`,
      () => established.size === RUNTIME_CRDS.length && deploymentSeen !== undefined && coWrites.some((w) => w.at > deploymentSeen!),
      { timeoutMs: 60_000, intervalMs: 50, abort: () => (op.proc.isRunning() ? undefined : `operator exited; log ${op.proc.logFile}`) },
    );
    await sleep(1_500); // let the audit log catch up
    const events = ctx.cluster.auditEvents({ user: OPERATOR_USER, since });
    const at = (iso: string) => Date.parse(iso);
    const firstRequest = Math.min(...events.map((e) => at(e.requestReceivedTimestamp)));
    const depCreate = events.find(
      (e) =>
        e.objectRef?.resource === 'deployments' &&
        e.objectRef.name === 'karpenter' &&
        ['patch', 'create', 'update'].includes(e.verb) &&
        (e.responseStatus?.code ?? 0) < 300,
    );
    if (!depCreate) throw new Error(`run ${run}: no successful write of Deployment karpenter by the operator in the audit log`);
    const status = events.find(
      (e) =>
        e.objectRef?.resource === 'clusteroperators' &&
        e.objectRef.subresource === 'status' &&
        (e.responseStatus?.code ?? 0) < 300 &&
        at(e.requestReceivedTimestamp) >= at(depCreate.stageTimestamp),
    );
    if (!status) throw new Error(`run ${run}: no ClusterOperator status write after the Deployment write in the audit log`);
    const lease = events.find(
      (e) => e.objectRef?.resource === 'leases' && ['create', 'update', 'patch'].includes(e.verb) && (e.responseStatus?.code ?? 0) < 300,
    );
    const crdsAt = Math.max(...established.values());
    const writes = events.filter(
      (e) => ['create', 'update', 'patch', 'delete'].includes(e.verb) && !['leases', 'events'].includes(e.objectRef?.resource ?? ''),
    );
    const statusAt = at(status.stageTimestamp);
    const complete = Math.max(crdsAt, at(depCreate.stageTimestamp), statusAt);
    const co = coWrites.find((w) => w.at >= statusAt)?.obj ?? coWrites[coWrites.length - 1]?.obj;
    const figures: RunFigures = {
      run,
      bundle: compare ? 'compare' : 'this',
      readyMs: readyAt - t0,
      firstRequestMs: firstRequest - t0,
      ...(lease ? { leaseAcquiredMs: at(lease.stageTimestamp) - t0 } : {}),
      crdsEstablishedMs: crdsAt - t0,
      deploymentCreatedMs: at(depCreate.stageTimestamp) - t0,
      statusWrittenMs: statusAt - t0,
      completeMs: complete - t0,
      completeAfterFirstRequestMs: complete - firstRequest,
      operatorRequests: events.filter((e) => at(e.requestReceivedTimestamp) <= complete).length,
      writesBeforeDeployment: writes.filter((e) => at(e.requestReceivedTimestamp) < at(depCreate.requestReceivedTimestamp)).length,
      writesAfterCrdsEstablishedBeforeDeployment: writes
        .filter((e) => at(e.requestReceivedTimestamp) >= crdsAt && at(e.requestReceivedTimestamp) < at(depCreate.requestReceivedTimestamp))
        .map((e) => `${at(e.requestReceivedTimestamp) - t0}ms ${e.verb} ${e.objectRef?.resource}/${e.objectRef?.name}`),
      ...(co
        ? {
            clusterOperatorAtComplete: ['Available', 'Progressing', 'Degraded']
              .map((t) => `${t}=${conditionOf(co, t)?.status}/${conditionOf(co, t)?.reason}`)
              .join(' '),
          }
        : {}),
    };
    ctx.log(`run ${run}: ${JSON.stringify(figures)}`);
    return figures;
  } finally {
    for (const w of watches) w.stop();
    await op.stop();
  }
}

await runBench('startup', { timeoutMs: Number(args['timeout-s']) * 1000 }, async (ctx) => {
  await installManifests(ctx);
  await applyKarpenterAndCredentials(ctx);
  const all: RunFigures[] = [];
  for (let run = 1; run <= RUNS * (COMPARE ? 2 : 1); run++) {
    await resetWorld(ctx);
    all.push(await oneRun(ctx, run, COMPARE !== undefined && run % 2 === 0));
  }
  const runs = all.filter((r) => r.bundle === 'this');
  const pick = (k: keyof RunFigures, of = runs) => of.map((r) => Number(r[k]));
  const compared = all.filter((r) => r.bundle === 'compare');
  const comparison = COMPARE
    ? {
        main: COMPARE,
        medianCompleteMs: median(pick('completeMs', compared)),
        medianFirstRequestMs: median(pick('firstRequestMs', compared)),
        medianCompleteAfterApiReachableMs: median(pick('completeAfterFirstRequestMs', compared)),
        ratioComplete: ratio(median(pick('completeMs')), median(pick('completeMs', compared))),
        ratioFirstRequest: ratio(median(pick('firstRequestMs')), median(pick('firstRequestMs', compared))),
      }
    : undefined;
  const medianComplete = median(pick('completeMs'));
  const medianAfterApi = median(pick('completeAfterFirstRequestMs'));
  return {
    runs: RUNS,
    leaderElect: LEADER_ELECT,
    medianCompleteMs: medianComplete,
    medianCompleteAfterApiReachableMs: medianAfterApi,
    medianReadyMs: median(pick('readyMs')),
    medianFirstRequestMs: median(pick('firstRequestMs')),
    completeMs: summarize(pick('completeMs')),
    targets: { medianBelow2sAfterApiReachable: medianAfterApi < TARGET_MS, medianBelow2sFromProcessStart: medianComplete < TARGET_MS },
    ...(comparison ? { comparison } : {}),
    perRun: all,
    notes: [
      'Times in ms from just before spawn of apps/operator/dist/main.js (node_modules/.bin/node).',
      'firstRequestMs: Node start-up, bundle load and config until the API server receives the first request; the API server itself is up all along.',
      "Each run starts with the operator's CRDs, operand objects, node-config objects and both statuses removed; the Karpenter CR and credentials Secret present.",
    ],
  };
});
