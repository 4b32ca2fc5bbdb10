// What every benchmark shares: its own local cluster, the bundled operator run as its ServiceAccount, the
// convergence it waits for, metrics and audit reads, and the guarantee that it stops everything it started
// (on success, failure, timeout, Ctrl-C), bounded in time. Output: one JSON object on stdout; progress on stderr.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { Watch, type KubeConfig } from '@kubernetes/client-node';
import {
  applyManifests,
  applyObject,
  findRepoRoot,
  freePort,
  getObject,
  kubeRequest,
  LOOPBACK,
  ProcessSupervisor,
  startOpenShiftAwsCluster,
  tailLog,
  waitFor,
  type ClusterHandle,
  type KubeObj,
  type KubeRequestOptions,
  type KubeResponse,
  type ManagedProcess,
  type SeededWorld,
} from '@karpenter-operator/testkit';
import { isLaunchHoldTerm } from '@karpenter-operator/provider-aws';
import { parsePromText, type PromSample } from './prom.js';

export const OPERATOR_NS = 'openshift-karpenter';
export const OPERATOR_SA = 'karpenter-operator';
export const OPERATOR_USER = `system:serviceaccount:${OPERATOR_NS}:${OPERATOR_SA}`;
export const KARPENTER = { apiVersion: 'autoscaling.openshift.io/v1alpha1', kind: 'Karpenter' } as const;
export const EC2NODECLASS = { apiVersion: 'karpenter.k8s.aws/v1', kind: 'EC2NodeClass' } as const;
export const RUNTIME_CRDS = [
  'nodepools.karpenter.sh',
  'nodeclaims.karpenter.sh',
  'nodeoverlays.karpenter.sh',
  'ec2nodeclasses.karpenter.k8s.aws',
];
const CREDENTIALS_SECRET = 'karpenter-cloud-credentials';

export interface BenchContext {
  name: string;
  root: string;
  cluster: ClusterHandle;
  world: SeededWorld;
  /** A fresh admin KubeConfig (system:masters). */
  admin(): KubeConfig;
  /** Operator logs of this run (kept after the run). */
  logDir: string;
  log(line: string): void;
  /** Registers a cleanup run (last registered first) when the benchmark ends, however it ends. */
  onCleanup(fn: () => Promise<void> | void): void;
}

export interface BenchOptions {
  /** Hard bound on the whole run, cluster start and stop included. */
  timeoutMs: number;
}

const machine = () => ({
  cpus: cpus().length,
  memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
  loadavg1m: Math.round(loadavg()[0]! * 100) / 100,
  node: process.version,
});

/**
 * Starts the seeded OpenShift-on-AWS cluster, runs `body`, prints `{ benchmark, ...figures, machine }`
 * as one JSON object on stdout, and stops every process it started. A failure or timeout prints
 * `{ benchmark, ok: false, error }` and exits 1.
 */
export async function runBench(
  name: string,
  opts: BenchOptions,
  body: (ctx: BenchContext) => Promise<Record<string, unknown>>,
): Promise<void> {
  const started = Date.now();
  const log = (line: string) => console.error(`${name}: ${line}`);
  const root = findRepoRoot();
  const logDir = join(root, '.local', 'bench', `${name}-logs`);
  rmSync(logDir, { recursive: true, force: true });
  mkdirSync(logDir, { recursive: true });
  const cleanups: Array<() => Promise<void> | void> = [];
  let cleaning: Promise<void> | undefined;
  const cleanup = () =>
    (cleaning ??= (async () => {
      for (const fn of cleanups.reverse()) {
        try {
          await fn();
        } catch (e) {
          log(`cleanup: ${(e as Error).message}`);
        }
      }
    })());
  let failing = false;
  const fail = async (error: string, code: number) => {
    if (failing) return;
    failing = true;
    log(error);
    await cleanup();
    process.stdout.write(
      JSON.stringify({ benchmark: name, ok: false, error, durationS: Math.round((Date.now() - started) / 1000) }, null, 2) + '\n',
    );
    process.exit(code);
  };
  // `on`, not `once`: Ctrl-C reaches this process twice (the terminal and tools/bench/run.mjs).
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(sig, () => void fail(`interrupted by ${sig}`, 130));
  const timer = setTimeout(() => void fail(`timed out after ${Math.round(opts.timeoutMs / 1000)} s`, 1), opts.timeoutMs);

  const machineAtStart = machine();
  try {
    ensureOperatorBuilt(root, log);
    const keep = process.env.KO_KEEP_CLUSTER === '1';
    const baseDir = keep ? join(root, '.local', 'bench', `${name}-cluster`) : undefined;
    if (baseDir) rmSync(baseDir, { recursive: true, force: true });
    log('starting the local cluster');
    const { cluster, world } = await startOpenShiftAwsCluster({ log: (l) => log(l), ...(baseDir ? { baseDir, keepBaseDir: true } : {}) });
    cleanups.push(() => cluster.stop());
    log(`cluster up in ${(cluster.timings.total ?? 0).toFixed(1)} s, seeded in ${(cluster.timings.seed ?? 0).toFixed(1)} s`);
    const ctx: BenchContext = {
      name,
      root,
      cluster,
      world,
      admin: () => cluster.kubeConfig(),
      logDir,
      log,
      onCleanup: (fn) => void cleanups.push(fn),
    };
    const figures = await body(ctx);
    clearTimeout(timer);
    await cleanup();
    const out = {
      benchmark: name,
      ok: true,
      ...figures,
      machine: {
        ...machineAtStart,
        loadavg1mAtEnd: machine().loadavg1m,
        note: 'shared machine (other builds and tests run at the same time): figures are noisy',
      },
      durationS: Math.round((Date.now() - started) / 1000),
    };
    process.stdout.write(JSON.stringify(out, null, 2) + '\n');
    process.exit(0);
  } catch (e) {
    clearTimeout(timer);
    await fail((e as Error).stack ?? String(e), 1);
  }
}

/** Builds `apps/operator/dist/main.js` (and its CRDs) when missing, as the integration tests do. */
export function ensureOperatorBuilt(root: string, log: (l: string) => void): void {
  const dist = join(root, 'apps/operator/dist');
  if (existsSync(join(dist, 'main.js')) && existsSync(join(dist, 'crds'))) return;
  log('building the operator bundle (apps/operator/dist is missing)');
  const r = spawnSync(join(root, 'node_modules/.bin/node'), [join(root, 'apps/operator/scripts/build.mjs')], {
    cwd: root,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`building the operator failed: ${r.stderr || r.stdout}`);
}

// ---------------------------------------------------------------------------------------------------
// The operator process.

export interface OperatorRun {
  proc: ManagedProcess;
  /** Date.now() just before spawn. */
  spawnedAt: number;
  metricsPort: number;
  healthPort: number;
  /** Polls /readyz (caches synced); resolves with Date.now() of the first 200. */
  waitReady(timeoutMs?: number): Promise<number>;
  metrics(): Promise<PromSample[]>;
  /** SIGTERM (graceful: releases the Lease), SIGKILL after 15 s. */
  stop(): Promise<void>;
}

export interface OperatorOptions {
  /** Process (and log file) name; unique per run of a benchmark. */
  name: string;
  leaderElect?: boolean;
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** More env for the operator (e.g. `OPERATOR_IMAGE`, `OPERAND_AWS_ENDPOINT_URL_EC2` for the real operand). */
  env?: Record<string, string>;
  /**
   * The bundle to run instead of `apps/operator/dist/main.js` (default: `$KO_BENCH_OPERATOR_MAIN` or that),
   * e.g. one built from another commit with `node apps/operator/scripts/build.mjs OUTDIR` to compare two.
   */
  main?: string;
  /** Node flags instead of those the image's launcher passes (`images/karpenter-operator`). */
  nodeFlags?: string[];
  /** Environment for Node (e.g. `GLIBC_TUNABLES`, `MALLOC_ARENA_MAX`) to measure a launcher change with. */
  nodeEnv?: Record<string, string>;
}

/** `K=V K2=V2` as an environment (`undefined` for none). */
export function nodeEnvFrom(spec: string | undefined): Record<string, string> | undefined {
  const words = spec?.split(/\s+/).filter(Boolean) ?? [];
  if (!words.length) return undefined;
  return Object.fromEntries(
    words.map((w) => {
      const eq = w.indexOf('=');
      if (eq <= 0) throw new Error(`expected NAME=VALUE, got ${JSON.stringify(w)}`);
      return [w.slice(0, eq), w.slice(eq + 1)];
    }),
  );
}

/**
 * The Node flags the image's launcher (`images/karpenter-operator`) passes, read from that script so the
 * benchmarks run the operator as the image does.
 */
export function imageNodeFlags(root: string): string[] {
  const script = readFileSync(join(root, 'images/karpenter-operator'), 'utf8');
  const m = /^NODE_FLAGS="([^"]*)"/m.exec(script);
  return m?.[1]?.split(/\s+/).filter(Boolean) ?? [];
}

const supervisors = new WeakMap<BenchContext, { sup: ProcessSupervisor; kubeconfig: string; creds: string }>();

async function operatorEnv(ctx: BenchContext) {
  let s = supervisors.get(ctx);
  if (!s) {
    const dir = join(ctx.logDir, 'operator');
    mkdirSync(dir, { recursive: true });
    const sup = new ProcessSupervisor(dir);
    ctx.onCleanup(() => sup.stopAll(15_000));
    const kubeconfig = await ctx.cluster.writeKubeConfigFor(OPERATOR_NS, OPERATOR_SA, join(dir, 'kubeconfig'), {
      expirationSeconds: 4 * 3600,
    });
    const creds = join(dir, 'credentials');
    writeFileSync(creds, '[default]\naws_access_key_id = AKIDEXAMPLEOPERATOR\naws_secret_access_key = c2VjcmV0LW9wZXJhdG9yLWtleQ\n', {
      mode: 0o600,
    });
    supervisors.set(ctx, (s = { sup, kubeconfig, creds }));
  }
  return s;
}

/**
 * Spawns `apps/operator/dist/main.js run` as ServiceAccount `openshift-karpenter/karpenter-operator`
 * (its token, never admin), with metrics and probes on free loopback ports. Does not wait for it.
 */
export async function startOperator(ctx: BenchContext, opts: OperatorOptions): Promise<OperatorRun> {
  const { sup, kubeconfig, creds } = await operatorEnv(ctx);
  const metricsPort = await freePort();
  const healthPort = await freePort();
  // KO_BENCH_CPU_PROF=1: each operator process writes a V8 CPU profile into the run's log directory on exit.
  const prof =
    process.env.KO_BENCH_CPU_PROF === '1'
      ? ['--cpu-prof', `--cpu-prof-dir=${join(ctx.logDir, 'profiles')}`, `--cpu-prof-name=${opts.name}.cpuprofile`]
      : [];
  const main = opts.main ?? process.env.KO_BENCH_OPERATOR_MAIN ?? join(ctx.root, 'apps/operator/dist/main.js');
  const nodeFlags = opts.nodeFlags ?? process.env.KO_BENCH_NODE_FLAGS?.split(/\s+/).filter(Boolean) ?? imageNodeFlags(ctx.root);
  const args = [
    ...nodeFlags,
    ...prof,
    main,
    'run',
    `--namespace=${OPERATOR_NS}`,
    `--kubeconfig=${kubeconfig}`,
    `--health-probe-bind-address=${LOOPBACK}:${healthPort}`,
    `--metrics-bind-address=${LOOPBACK}:${metricsPort}`,
    ...(opts.leaderElect === false ? [] : ['--leader-elect']),
  ];
  const env = {
    // Only what the Deployment would set, plus the emulator: nothing of the benchmark's own environment.
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    KUBECONFIG: undefined,
    RELEASE_VERSION: ctx.world.facts.version,
    KARPENTER_IMAGE_AWS: 'quay.io/openshift/origin-aws-karpenter-provider-aws:bench',
    POD_NAME: `karpenter-operator-${opts.name}`,
    AWS_SHARED_CREDENTIALS_FILE: creds,
    NODE_IDENTITY_CREDENTIALS_FILE: creds,
    AWS_ENDPOINT_URL_EC2: ctx.cluster.info.ec2Endpoint ?? '',
    // The emulator answers IAM too (instance profile look-ups of the NodeClass verification): without it the
    // operator asks the real iam.amazonaws.com, fails and retries all through the benchmark.
    AWS_ENDPOINT_URL_IAM: ctx.cluster.info.ec2Endpoint ?? '',
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_ACCESS_KEY_ID: undefined,
    AWS_SECRET_ACCESS_KEY: undefined,
    LOG_LEVEL: opts.logLevel ?? 'info',
    // As the image runs it (/usr/bin/karpenter-operator): with Node's compile cache, warmed by the first run.
    NODE_COMPILE_CACHE: join(ctx.root, '.local/bench/compile-cache'),
    // KO_BENCH_NODE_ENV='K=V K2=V2': a launcher environment to measure (e.g. GLIBC_TUNABLES) in any benchmark.
    ...(opts.nodeEnv ?? nodeEnvFrom(process.env.KO_BENCH_NODE_ENV)),
    ...opts.env,
  };
  const spawnedAt = Date.now();
  const proc = sup.spawn(opts.name, join(ctx.root, 'node_modules/.bin/node'), args, { cwd: ctx.root, env });
  const exitedAbort = () =>
    proc.isRunning() ? undefined : `operator ${opts.name} exited (log ${proc.logFile}):\n${tailLog(proc.logFile, 30)}`;
  return {
    proc,
    spawnedAt,
    metricsPort,
    healthPort,
    waitReady: async (timeoutMs = 120_000) =>
      waitFor(
        `operator ${opts.name} /readyz`,
        async () =>
          (await fetch(`http://${LOOPBACK}:${healthPort}/readyz`).catch(() => undefined))?.status === 200 ? Date.now() : undefined,
        { timeoutMs, intervalMs: 20, abort: exitedAbort },
      ),
    metrics: async () => {
      const res = await fetch(`http://${LOOPBACK}:${metricsPort}/metrics`);
      if (res.status !== 200) throw new Error(`operator /metrics: HTTP ${res.status}`);
      return parsePromText(await res.text());
    },
    stop: () => proc.stop(15_000),
  };
}

// ---------------------------------------------------------------------------------------------------
// The world the operator converges.

/** `install/` as the CVO would apply it, minus the operator Deployment (the operator runs as a local process). */
export async function installManifests(ctx: BenchContext): Promise<void> {
  const r = await applyManifests(ctx.admin(), join(ctx.root, 'install'), {
    skip: (o: KubeObj) => o.kind === 'Deployment' || o.kind === 'ImageStream',
    fieldManager: 'bench-install',
  });
  ctx.log(`applied install/: ${r.applied.length} objects`);
}

/** The Karpenter CR `default` and the credentials Secret the cloud-credential operator would mint. */
export async function applyKarpenterAndCredentials(ctx: BenchContext): Promise<void> {
  const kc = ctx.admin();
  await applyObject(kc, { ...KARPENTER, metadata: { name: 'default' }, spec: {} });
  await applyObject(kc, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: CREDENTIALS_SECRET, namespace: OPERATOR_NS },
    stringData: {
      credentials: '[default]\naws_access_key_id = AKIDEXAMPLEOPERAND\naws_secret_access_key = c2VjcmV0LW9wZXJhbmQta2V5LXZhbHVl\n',
    },
  });
}

interface Condition {
  type: string;
  status: string;
  reason?: string;
}
export const conditionOf = (obj: KubeObj | undefined, type: string): Condition | undefined =>
  ((obj?.status as { conditions?: Condition[] } | undefined)?.conditions ?? []).find((c) => c.type === type);

export async function crdEstablished(kc: KubeConfig, name: string): Promise<boolean> {
  const crd = await getObject(kc, 'apiextensions.k8s.io/v1', 'CustomResourceDefinition', name);
  return conditionOf(crd, 'Established')?.status === 'True';
}

/** ClusterOperator Available=True/AsExpected, Progressing=False, and EC2NodeClass `default` rendered. */
export async function waitConverged(ctx: BenchContext, timeoutMs = 180_000): Promise<void> {
  const kc = ctx.admin();
  await waitFor(
    'the operator to converge (ClusterOperator AsExpected, not Progressing; EC2NodeClass default rendered, launches not held)',
    async () => {
      const co = await getObject(kc, 'config.openshift.io/v1', 'ClusterOperator', 'karpenter');
      if (conditionOf(co, 'Available')?.reason !== 'AsExpected' || conditionOf(co, 'Progressing')?.status !== 'False') return false;
      const nc = await getObject(kc, EC2NODECLASS.apiVersion, EC2NODECLASS.kind, 'default').catch(() => undefined);
      // Held until its MachineConfigPool serves: the release's AMIs are not there yet, so nothing could launch.
      const terms = (nc?.spec as { amiSelectorTerms?: Array<Record<string, unknown>> } | undefined)?.amiSelectorTerms ?? [];
      return terms.length > 0 && !terms.some(isLaunchHoldTerm);
    },
    { timeoutMs, intervalMs: 500 },
  );
}

// ---------------------------------------------------------------------------------------------------
// Observing the cluster.

/** A watch as admin (client-node, no resourceVersion: existing objects arrive as ADDED first). */
export async function watchPath(
  kc: KubeConfig,
  path: string,
  onEvent: (type: string, obj: KubeObj) => void,
  query: Record<string, string> = {},
): Promise<{ stop(): void }> {
  let stopped = false;
  let ctl: AbortController | undefined;
  const start = async () => {
    ctl = await new Watch(kc).watch(
      path,
      { allowWatchBookmarks: false, ...query },
      (type, obj: KubeObj) => onEvent(type, obj),
      () => {
        // Watches end (timeouts, resets): restart unless stopped. Events may repeat; callers are idempotent.
        if (!stopped) setTimeout(() => void start().catch(() => undefined), 100);
      },
    );
  };
  await start();
  return {
    stop: () => {
      stopped = true;
      ctl?.abort();
    },
  };
}

/** `kubeRequest`, retried on 429 and 5xx (a freshly installed CRD answers 429 while its storage initializes). */
export async function kubeRequestRetrying<T = unknown>(
  kc: KubeConfig,
  method: string,
  path: string,
  opts: KubeRequestOptions = {},
  attempts = 20,
): Promise<KubeResponse<T>> {
  for (let i = 1; ; i++) {
    const r = await kubeRequest<T>(kc, method, path, opts);
    if ((r.status !== 429 && r.status < 500) || i >= attempts) return r;
    await sleep(500);
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export { memoryBreakdown, mib } from './prom.js';
