import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Names } from '@karpenter-operator/core';
import {
  applyManifests,
  deleteObject,
  findRepoRoot,
  freePort,
  getObject,
  kubeRequest,
  waitFor,
  type ClusterClient,
  type KubeObj,
} from '@karpenter-operator/testkit';

// The repository's root, however this module is loaded (from source by vitest, or bundled by a benchmark).
export const REPO = findRepoRoot();
export const OPERATOR_NS = 'openshift-karpenter';
export const OPERATOR_SA = 'karpenter-operator';
export const OPERATOR_USER = `system:serviceaccount:${OPERATOR_NS}:${OPERATOR_SA}`;
export const RELEASE = '4.22.0';
const MAIN = join(REPO, 'apps/operator/dist/main.js');
const NODE = join(REPO, 'node_modules/.bin/node');

/** Builds the bundle once when it is missing (tools/test.sh builds it before the integration run). */
export function ensureBuilt(): void {
  if (existsSync(MAIN) && existsSync(join(REPO, 'apps/operator/dist/crds'))) return;
  const r = spawnSync(NODE, [join(REPO, 'apps/operator/scripts/build.mjs')], { cwd: REPO, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`building the operator failed: ${r.stderr || r.stdout}`);
}

/** Applies `install/` as the CVO would, minus the operator Deployment (the operator runs as a local process). */
export async function installManifests(cluster: ClusterClient): Promise<void> {
  await applyManifests(cluster.kubeConfig(), join(REPO, 'install'), {
    skip: (o: KubeObj) => o.kind === 'Deployment' || o.kind === 'ImageStream',
  });
}

/** What the cloud-credential operator would mint: a shared credentials file for the emulator. */
export function credentialsFileText(): string {
  return '[default]\naws_access_key_id = AKIDEXAMPLEOPERAND\naws_secret_access_key = c2VjcmV0LW9wZXJhbmQta2V5LXZhbHVl\n';
}

export interface OperatorProcess {
  proc: ChildProcess;
  healthPort: number;
  metricsPort: number;
  logs(): string;
  /** Graceful stop (SIGTERM), resolves with the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL. */
  kill(): Promise<void>;
  exited(): boolean;
}

/**
 * Leader-election timings the harness passes by default: a renew deadline of 40 s, so that a leader on a loaded
 * two-core machine (the operator, the API server, etcd and the real Karpenter sharing it) does not exit because
 * one renewal was slow; the shipped Deployment passes none (OpenShift's 137 s / 107 s / 26 s from the topology).
 * `resetOperatorWorld` deletes the Lease, so a replica killed by one file does not hold the next file back.
 */
export const TEST_ELECTION_FLAGS = [
  '--leader-elect-lease-duration=60s',
  '--leader-elect-renew-deadline=40s',
  '--leader-elect-retry-period=4s',
] as const;

/** client-go's 15 s / 10 s / 2 s, for the suites that measure failover in seconds. */
export const FAST_ELECTION_FLAGS = [
  '--leader-elect-lease-duration=15s',
  '--leader-elect-renew-deadline=10s',
  '--leader-elect-retry-period=2s',
] as const;

const electionFlags = { test: TEST_ELECTION_FLAGS, fast: FAST_ELECTION_FLAGS, production: [] } as const;

export interface StartOptions {
  name?: string;
  leaderElect?: boolean;
  /**
   * `test` (default): `TEST_ELECTION_FLAGS`; `fast`: `FAST_ELECTION_FLAGS` (failover suites); `production`: no
   * timing flags, OpenShift's timings as in the shipped Deployment.
   */
  electionTiming?: keyof typeof electionFlags;
  /** Environment over the harness's defaults; `undefined` removes a default (e.g. RELEASE_VERSION). */
  env?: Record<string, string | undefined>;
  /** Namespace and ServiceAccount the process runs as (default openshift-karpenter/karpenter-operator). */
  namespace?: string;
  serviceAccount?: string;
  /** More flags, e.g. `--guest-kubeconfig=...`. */
  args?: string[];
  /**
   * Instead of `run --namespace=NS` and `args`: the arguments exactly as a platform passes them (HyperShift's
   * Deployment). The harness adds only what a local process needs in place of a pod: `--kubeconfig` and the
   * bind addresses.
   */
  contractArgs?: string[];
  /** Bundle entry point: the operator (`main`, default) or the HyperShift sidecar adapter (`adapter`). */
  entry?: 'main' | 'adapter';
  /** The API server URL in the operator's kubeconfig (e.g. a fault proxy's); default the cluster's own. */
  apiServer?: string;
  /** Wait for /readyz 200 before returning (default true). */
  waitReady?: boolean;
}

/** A kubeconfig for a plain-HTTP API endpoint on 127.0.0.1 (a test proxy); client-node sends HTTP only with TLS checks off. */
function plainHttpKubeconfig(path: string, server: string, token: string): string {
  const doc = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'proxy', cluster: { server, 'insecure-skip-tls-verify': true } }],
    users: [{ name: 'operator', user: { token } }],
    contexts: [{ name: 'proxy', context: { cluster: 'proxy', user: 'operator' } }],
    'current-context': 'proxy',
  };
  writeFileSync(path, JSON.stringify(doc, null, 2), { mode: 0o600 });
  return path;
}

/** Starts the bundled operator as `openshift-karpenter/karpenter-operator`, never as admin. */
export async function startOperator(cluster: ClusterClient, opts: StartOptions = {}): Promise<OperatorProcess> {
  ensureBuilt();
  const dir = mkdtempSync(join(tmpdir(), 'ko-operator-'));
  const namespace = opts.namespace ?? OPERATOR_NS;
  const sa = opts.serviceAccount ?? OPERATOR_SA;
  const kubeconfig = opts.apiServer
    ? plainHttpKubeconfig(join(dir, 'kubeconfig'), opts.apiServer, await cluster.tokenFor(namespace, sa, { expirationSeconds: 7200 }))
    : await cluster.writeKubeConfigFor(namespace, sa, join(dir, 'kubeconfig'), { expirationSeconds: 7200 });
  const creds = join(dir, 'credentials');
  writeFileSync(creds, '[default]\naws_access_key_id = AKIDEXAMPLEOPERATOR\naws_secret_access_key = c2VjcmV0LW9wZXJhdG9yLWtleQ\n');
  const healthPort = await freePort();
  const metricsPort = await freePort();
  const entry = opts.entry === 'adapter' ? join(REPO, 'apps/operator/dist/adapter.js') : MAIN;
  const local = [
    `--kubeconfig=${kubeconfig}`,
    `--health-probe-bind-address=127.0.0.1:${healthPort}`,
    `--metrics-bind-address=127.0.0.1:${metricsPort}`,
  ];
  const args = opts.contractArgs
    ? [entry, ...opts.contractArgs, ...local]
    : [
        entry,
        'run',
        `--namespace=${namespace}`,
        ...local,
        ...(opts.leaderElect === false || opts.entry === 'adapter'
          ? []
          : ['--leader-elect', ...electionFlags[opts.electionTiming ?? 'test']]),
        ...(opts.args ?? []),
      ];
  const env: Record<string, string | undefined> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    RELEASE_VERSION: RELEASE,
    KARPENTER_IMAGE_AWS: 'quay.io/openshift/origin-aws-karpenter-provider-aws:test',
    POD_NAME: opts.name ?? 'karpenter-operator-test',
    AWS_SHARED_CREDENTIALS_FILE: creds,
    NODE_IDENTITY_CREDENTIALS_FILE: creds,
    AWS_ENDPOINT_URL_EC2: cluster.info.ec2Endpoint ?? '',
    AWS_ENDPOINT_URL_IAM: cluster.info.ec2Endpoint ?? '',
    AWS_EC2_METADATA_DISABLED: 'true',
    LOG_LEVEL: 'debug',
    ...opts.env,
  };
  let out = '';
  const proc = spawn(NODE, args, {
    cwd: REPO,
    env: Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined)),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  let exited = false;
  const exit = new Promise<number | null>((r) => proc.on('exit', (code) => ((exited = true), r(code))));
  const handle: OperatorProcess = {
    proc,
    healthPort,
    metricsPort,
    logs: () => out,
    exited: () => exited,
    stop: async () => {
      if (!exited) proc.kill('SIGTERM');
      return exit;
    },
    kill: async () => {
      if (!exited) proc.kill('SIGKILL');
      await exit;
    },
  };
  if (opts.waitReady === false) return handle;
  await waitFor(
    'the operator to report ready',
    async () => (await fetch(`http://127.0.0.1:${healthPort}/readyz`).catch(() => undefined))?.status === 200,
    { timeoutMs: 60_000, abort: () => (exited ? `operator exited:\n${out.slice(-4000)}` : undefined) },
  ).catch((e: Error) => {
    proc.kill('SIGKILL');
    throw new Error(`${e.message}\n${opts.entry ?? 'main'} log:\n${out.slice(-4000)}`);
  });
  return handle;
}

/**
 * Puts the shared cluster back to "operator never ran" for the objects the operator suites assert on, so
 * that files can run in any order: no Karpenter CR (finalizers dropped: no operator may be running), no
 * operand Deployment, no credentials Secret, no leader Lease (a replica a file killed would hold it until it expires).
 */
export async function resetOperatorWorld(cluster: ClusterClient): Promise<void> {
  const kc = cluster.kubeConfig();
  const cr = await getObject(kc, 'autoscaling.openshift.io/v1alpha1', 'Karpenter', 'default');
  if (cr) {
    await kubeRequest(kc, 'PATCH', '/apis/autoscaling.openshift.io/v1alpha1/karpenters/default', {
      body: { metadata: { finalizers: null } },
      contentType: 'application/merge-patch+json',
    });
    await deleteObject(kc, 'autoscaling.openshift.io/v1alpha1', 'Karpenter', 'default');
  }
  await deleteObject(kc, 'apps/v1', 'Deployment', 'karpenter', OPERATOR_NS).catch(() => false);
  await deleteObject(kc, 'v1', 'Secret', 'karpenter-cloud-credentials', OPERATOR_NS).catch(() => false);
  await deleteObject(kc, 'coordination.k8s.io/v1', 'Lease', Names.leaderLease, OPERATOR_NS).catch(() => false);
  await waitFor(
    'the shared world to be reset',
    async () =>
      !(await getObject(kc, 'autoscaling.openshift.io/v1alpha1', 'Karpenter', 'default')) &&
      !(await getObject(kc, 'apps/v1', 'Deployment', 'karpenter', OPERATOR_NS)) &&
      !(await getObject(kc, 'v1', 'Secret', 'karpenter-cloud-credentials', OPERATOR_NS)),
    { timeoutMs: 30_000 },
  );
}
