/**
 * Flags and environment, read once at start-up into a typed object. Pure: takes argv and env, returns
 * the settings or every problem at once, so a misconfigured Deployment fails with one message.
 */

import type { Command } from 'commander';
import { boolFlag, flagCommand, parseFlags } from './cli/flags.js';
import { electionTimingProblem, type ElectionTiming } from '@karpenter-operator/kube-runtime';
import { readProxyEnv } from './egress.js';
import { releaseVersionPlaceholder } from './manifests/cvo.js';

export interface OperatorConfig {
  namespace: string;
  kubeconfig?: string;
  guestKubeconfig?: string;
  metricsBindAddress: { host: string; port: number };
  /**
   * `--metrics-secure`: serve metrics over HTTPS, each scrape authenticated (TokenReview) and authorised
   * (SubjectAccessReview for `get` on the non-resource URL `/metrics`). Off by default: HyperShift's
   * Deployment and local runs scrape plain HTTP.
   */
  metricsSecure: boolean;
  /** `--metrics-cert-dir`: the mounted serving-certificate Secret (`tls.crt`, `tls.key`). */
  metricsCertDir?: string;
  healthProbeBindAddress: { host: string; port: number };
  leaderElect: boolean;
  /**
   * `--leader-elect-lease-duration`, `--leader-elect-renew-deadline`, `--leader-elect-retry-period`, all three
   * or none: timings that replace OpenShift's (derived from the control-plane topology at start-up). Tests
   * pass short ones to measure failover; the shipped Deployment passes none.
   */
  leaderElectionTiming?: ElectionTiming;
  /**
   * RELEASE_VERSION. Required standalone (the CVO sets it; ClusterOperator `versions[operator]`). HyperShift sets
   * none and this topology reports no version (the HCP has no field for it): there it defaults to
   * `UNKNOWN_RELEASE_VERSION`, which only names the process in its log and User-Agent.
   */
  releaseVersion: string;
  managementCluster: boolean;
  /** CLUSTER_NAME: standalone an override of Infrastructure's name; management-cluster mode the HCP's infra ID. */
  clusterName?: string;
  clusterEndpoint?: string;
  platform?: string;
  region?: string;
  /** Management-cluster mode: the HostedControlPlane's name (HCP_NAME); default the one HCP in the namespace. */
  hcpName?: string;
  /**
   * Management-cluster mode: GUEST_UNREACHABLE_TIMEOUT, how long the guest API may be unreachable during the HCP's
   * deletion before HyperShift's finalizer is released (default 5 minutes; HyperShift sets none).
   */
  guestUnreachableAfterMs?: number;
  /** Management-cluster mode: the Secret in the HCP namespace the operand mounts as its guest kubeconfig (GUEST_KUBECONFIG_SECRET). */
  guestKubeconfigSecret?: string;
  operandImageAws?: string;
  operatorImage?: string;
  /** TOKEN_MINTER_IMAGE: management-cluster mode, the token minter run beside the operand (newer HyperShift sets it). */
  tokenMinterImage?: string;
  awsSharedCredentialsFile?: string;
  /** Credentials for the operator's own node-identity lookups (DescribeInstances only). */
  nodeIdentityCredentialsFile?: string;
  awsEndpoint?: string;
  /** EC2 endpoint handed to the operand (emulators, private endpoints). */
  operandEc2Endpoint?: string;
  /** SQS endpoint of the interruption-queue check (`AWS_ENDPOINT_URL_SQS`, else `AWS_ENDPOINT_URL`). */
  awsSqsEndpoint?: string;
  /** IAM endpoint of the instance profile look-ups (`AWS_ENDPOINT_URL_IAM`, else `AWS_ENDPOINT_URL`). */
  awsIamEndpoint?: string;
  crdDir: string;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  podName: string;
  /** The usable cluster-wide proxy variables (`readProxyEnv`): cloud calls go through it, the operand gets it. */
  proxyEnv?: Record<string, string>;
  /** What is wrong with the proxy variables: reported as a condition, never a start-up failure. */
  proxyProblems: string[];
}

export type ConfigResult = { ok: true; config: OperatorConfig } | { ok: false; errors: string[] };

/** The version named when RELEASE_VERSION is absent (management-cluster mode only): the CVO's placeholder. */
export const UNKNOWN_RELEASE_VERSION = releaseVersionPlaceholder;

/**
 * Other names a flag is accepted under: HyperShift starts the operator with `--target-kubeconfig=FILE`
 * (`control-plane-operator/.../karpenteroperator`), this project's name for it is `--guest-kubeconfig`.
 */
export const FLAG_ALIASES: Readonly<Record<string, string>> = { 'target-kubeconfig': 'guest-kubeconfig' };

/**
 * Default listen addresses of the two processes. They differ so that the operator and the sidecar adapter
 * can run as two containers of one pod (where they share the network namespace) without a flag. HyperShift's
 * Deployment declares only the operator's metrics port (8080); nothing else in its pod listens.
 */
export const DEFAULT_ADDRESSES = {
  operator: { metrics: ':8080', health: ':8081' },
  adapter: { metrics: ':8082', health: ':8083' },
} as const;

/** The flags of `run`; their values are checked in `parseConfig`. */
function runFlags(): Command {
  return flagCommand('run')
    .option('--namespace <ns>')
    .option('--kubeconfig <file>')
    .option('--guest-kubeconfig <file>')
    .option('--metrics-bind-address <[host]:port>')
    .addOption(boolFlag('--metrics-secure', 'serve metrics over HTTPS'))
    .option('--metrics-cert-dir <dir>')
    .option('--health-probe-bind-address <[host]:port>')
    .addOption(boolFlag('--leader-elect', 'run with leader election'))
    .option('--leader-elect-lease-duration <duration>')
    .option('--leader-elect-renew-deadline <duration>')
    .option('--leader-elect-retry-period <duration>')
    .option('--crd-dir <dir>')
    .option('--log-level <level>')
    .helpOption(false);
}

function parseBool(name: string, v: string | undefined, fallback: boolean, errors: string[]): boolean {
  if (v === undefined || v === '') return fallback;
  if (v === 'true') return true;
  if (v === 'false') return false;
  errors.push(`${name} must be "true" or "false", got ${JSON.stringify(v)}`);
  return fallback;
}

/** A duration as Go spells it, in whole units: `15s`, `500ms`, `2m`, `1m30s`; pushes an error naming the flag otherwise. */
export function parseDuration(name: string, v: string, errors: string[]): number {
  const unit: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  const parts = /^(?:\d+(?:ms|s|m|h))+$/.test(v) ? [...v.matchAll(/(\d+)(ms|s|m|h)/g)] : [];
  const ms = parts.reduce((sum, [, n, u]) => sum + Number(n) * unit[u!]!, 0);
  if (!parts.length || ms <= 0) {
    errors.push(`${name} must be a positive duration such as 15s or 500ms, got ${JSON.stringify(v)}`);
    return 0;
  }
  return ms;
}

/** The three leader-election timing flags: all or none, consistent with each other. */
function parseElectionTiming(flags: Map<string, string>, errors: string[]): ElectionTiming | undefined {
  const names = ['leader-elect-lease-duration', 'leader-elect-renew-deadline', 'leader-elect-retry-period'] as const;
  const given = names.filter((n) => flags.has(n));
  if (!given.length) return undefined;
  if (given.length < names.length) {
    errors.push(
      `${names.map((n) => `--${n}`).join(', ')} go together: give all three or none (got ${given.map((n) => `--${n}`).join(', ')})`,
    );
    return undefined;
  }
  const before = errors.length;
  const [leaseDurationMs, renewDeadlineMs, retryPeriodMs] = names.map((n) => parseDuration(`--${n}`, flags.get(n)!, errors)) as [
    number,
    number,
    number,
  ];
  if (errors.length > before) return undefined;
  const timing = { leaseDurationMs, renewDeadlineMs, retryPeriodMs };
  const problem = electionTimingProblem(timing);
  if (problem) errors.push(`leader-election timings: ${problem}`);
  return problem ? undefined : timing;
}

/** `[host]:port` (empty host = all interfaces); a malformed value is pushed to `errors` naming the flag. */
export function parseAddress(name: string, v: string, errors: string[]): { host: string; port: number } {
  const m = /^(.*):(\d{1,5})$/.exec(v);
  const port = m ? Number(m[2]) : NaN;
  if (!m || port > 65535) {
    errors.push(`${name} must be [host]:port, got ${JSON.stringify(v)}`);
    return { host: '0.0.0.0', port: 0 };
  }
  return { host: m[1] === '' ? '0.0.0.0' : m[1]!, port };
}

export function parseConfig(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  defaults: { crdDir: string },
): ConfigResult {
  const parsed = parseFlags(runFlags(), argv, FLAG_ALIASES);
  if (!parsed.ok) return { ok: false, errors: [parsed.help ? 'unknown flag --help' : parsed.error] };
  const { flags } = parsed;
  const errors: string[] = [];
  const namespace = flags.get('namespace') ?? env.POD_NAMESPACE;
  if (!namespace) errors.push('--namespace is required (set it from the downward API: metadata.namespace)');
  const managementCluster = parseBool('MANAGEMENT_CLUSTER', env.MANAGEMENT_CLUSTER, false, errors);
  const releaseVersion = env.RELEASE_VERSION || (managementCluster ? UNKNOWN_RELEASE_VERSION : undefined);
  if (!releaseVersion) errors.push('RELEASE_VERSION is required (unless MANAGEMENT_CLUSTER=true)');
  const leaderElect = parseBool('--leader-elect', flags.get('leader-elect'), false, errors);
  const metricsSecure = parseBool('--metrics-secure', flags.get('metrics-secure'), false, errors);
  const platform = env.PLATFORM || undefined;
  if (managementCluster) {
    for (const k of ['CLUSTER_NAME', 'CLUSTER_ENDPOINT', 'PLATFORM', 'REGION'] as const) {
      if (!env[k]) errors.push(`${k} is required when MANAGEMENT_CLUSTER=true`);
    }
    if (!flags.get('guest-kubeconfig')) errors.push('--guest-kubeconfig (or --target-kubeconfig) is required when MANAGEMENT_CLUSTER=true');
  }
  if (platform === 'AWS' && !env.KARPENTER_IMAGE_AWS) errors.push('KARPENTER_IMAGE_AWS is required for PLATFORM=AWS');
  const logLevel = (flags.get('log-level') ?? env.LOG_LEVEL ?? 'info') as OperatorConfig['logLevel'];
  if (!['debug', 'info', 'warn', 'error'].includes(logLevel))
    errors.push(`--log-level must be debug, info, warn or error, got ${JSON.stringify(logLevel)}`);
  const metrics = parseAddress('--metrics-bind-address', flags.get('metrics-bind-address') ?? DEFAULT_ADDRESSES.operator.metrics, errors);
  const health = parseAddress(
    '--health-probe-bind-address',
    flags.get('health-probe-bind-address') ?? DEFAULT_ADDRESSES.operator.health,
    errors,
  );
  const leaderElectionTiming = parseElectionTiming(flags, errors);
  const guestUnreachableAfterMs = env.GUEST_UNREACHABLE_TIMEOUT
    ? parseDuration('GUEST_UNREACHABLE_TIMEOUT', env.GUEST_UNREACHABLE_TIMEOUT, errors)
    : undefined;
  const proxy = readProxyEnv(env);
  if (errors.length) return { ok: false, errors };
  const config: OperatorConfig = {
    namespace: namespace!,
    metricsBindAddress: metrics,
    metricsSecure,
    healthProbeBindAddress: health,
    leaderElect,
    releaseVersion: releaseVersion!,
    managementCluster,
    crdDir: flags.get('crd-dir') ?? env.KARPENTER_CRD_DIR ?? defaults.crdDir,
    logLevel,
    // MY_NAME: what HyperShift's Deployment sets from metadata.name.
    podName: env.POD_NAME ?? env.MY_NAME ?? env.HOSTNAME ?? 'karpenter-operator',
    proxyProblems: proxy.problems,
    ...(proxy.proxyEnv ? { proxyEnv: proxy.proxyEnv } : {}),
  };
  if (leaderElectionTiming) config.leaderElectionTiming = leaderElectionTiming;
  if (guestUnreachableAfterMs !== undefined) config.guestUnreachableAfterMs = guestUnreachableAfterMs;
  const opt = (k: keyof OperatorConfig, v: string | undefined) => {
    if (v) (config as unknown as Record<string, unknown>)[k] = v;
  };
  opt('kubeconfig', flags.get('kubeconfig') ?? env.KUBECONFIG);
  opt('guestKubeconfig', flags.get('guest-kubeconfig'));
  opt('metricsCertDir', flags.get('metrics-cert-dir'));
  opt('clusterName', env.CLUSTER_NAME);
  opt('clusterEndpoint', env.CLUSTER_ENDPOINT);
  opt('platform', platform);
  opt('region', env.REGION);
  opt('hcpName', env.HCP_NAME);
  opt('guestKubeconfigSecret', env.GUEST_KUBECONFIG_SECRET);
  opt('operandImageAws', env.KARPENTER_IMAGE_AWS);
  opt('operatorImage', env.OPERATOR_IMAGE);
  opt('tokenMinterImage', env.TOKEN_MINTER_IMAGE);
  opt('awsSharedCredentialsFile', env.AWS_SHARED_CREDENTIALS_FILE);
  opt('nodeIdentityCredentialsFile', env.NODE_IDENTITY_CREDENTIALS_FILE);
  opt('awsEndpoint', env.AWS_ENDPOINT_URL_EC2 ?? env.AWS_ENDPOINT_URL);
  opt('operandEc2Endpoint', env.OPERAND_AWS_ENDPOINT_URL_EC2);
  opt('awsSqsEndpoint', env.AWS_ENDPOINT_URL_SQS ?? env.AWS_ENDPOINT_URL);
  opt('awsIamEndpoint', env.AWS_ENDPOINT_URL_IAM ?? env.AWS_ENDPOINT_URL);
  return { ok: true, config };
}

/** The HyperShift sidecar adapter's settings (`karpenter-operator-hypershift-adapter`). */
export interface AdapterConfig {
  namespace: string;
  guestKubeconfig: string;
  kubeconfig?: string;
  hcpName?: string;
  metrics: { host: string; port: number };
  health: { host: string; port: number };
  /** `--guest-unreachable-timeout`: how long the guest API may be unreachable during HCP deletion. */
  unreachableAfterMs: number;
  /**
   * `--run-controllers`: run the hosted controllers here. Off by default: the operator runs them itself in
   * management-cluster mode, and two processes must not write the same objects.
   */
  runControllers: boolean;
}

/** The adapter's settings from its flags (`run` first is optional); every value problem at once, each naming its flag. */
export function parseAdapterConfig(
  argv: readonly string[],
): { ok: true; config: AdapterConfig } | { ok: false; help?: boolean; errors: string[] } {
  const args = argv[0] === 'run' ? argv.slice(1) : argv;
  const parsed = parseFlags(
    flagCommand('hypershift-adapter')
      .option('--namespace <ns>')
      .option('--kubeconfig <file>')
      .option('--guest-kubeconfig <file>')
      .option('--hcp-name <name>')
      .option('--metrics-bind-address <[host]:port>', '', DEFAULT_ADDRESSES.adapter.metrics)
      .option('--health-probe-bind-address <[host]:port>', '', DEFAULT_ADDRESSES.adapter.health)
      .option('--guest-unreachable-timeout <duration>', '', '5m')
      .addOption(boolFlag('--run-controllers', 'run the hosted controllers here (the operator runs them by default)'))
      .helpOption('-h, --help'),
    args,
  );
  if (!parsed.ok) return parsed.help ? { ok: false, help: true, errors: [] } : { ok: false, errors: [parsed.error] };
  const { flags } = parsed;
  const errors: string[] = [];
  const namespace = flags.get('namespace');
  const guestKubeconfig = flags.get('guest-kubeconfig');
  if (!namespace) errors.push('--namespace is required');
  if (!guestKubeconfig) errors.push('--guest-kubeconfig is required');
  const metrics = parseAddress('--metrics-bind-address', flags.get('metrics-bind-address')!, errors);
  const health = parseAddress('--health-probe-bind-address', flags.get('health-probe-bind-address')!, errors);
  const unreachableAfterMs = parseDuration('--guest-unreachable-timeout', flags.get('guest-unreachable-timeout')!, errors);
  const runControllers = parseBool('--run-controllers', flags.get('run-controllers'), false, errors);
  if (!namespace || !guestKubeconfig || errors.length) return { ok: false, errors };
  const kubeconfig = flags.get('kubeconfig');
  const hcpName = flags.get('hcp-name');
  const config: AdapterConfig = {
    namespace,
    guestKubeconfig,
    metrics,
    health,
    unreachableAfterMs,
    runControllers,
    ...(kubeconfig ? { kubeconfig } : {}),
    ...(hcpName ? { hcpName } : {}),
  };
  return { ok: true, config };
}

/** Problems that can only be known once the platform is known (standalone reads it from Infrastructure). */
export function platformRequirements(config: OperatorConfig, platform: string): string[] {
  if (platform === 'AWS' && !config.operandImageAws) return ['KARPENTER_IMAGE_AWS is required on AWS'];
  return [];
}
