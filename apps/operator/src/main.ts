import { Command, Option } from 'commander';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeError, systemClock, type OperatorSettings } from '@karpenter-operator/core';
import { parseConfig, UNKNOWN_RELEASE_VERSION } from './config.js';
import { clusterEgressProblems, readIfPresent, readProxyEnv } from './egress.js';
import { providerFor } from './providers.js';

const here = dirname(fileURLToPath(import.meta.url));
/** The build (apps/operator/scripts/build.mjs) puts the runtime CRDs beside the bundled main.js. */
const defaultCrdDir = (env: NodeJS.ProcessEnv) => env.KARPENTER_CRD_DIR ?? join(here, 'crds');

const USAGE = `Usage: karpenter-operator [run] [flags]           the operator (default)
       karpenter-operator render --from DIR [--kind K] [--output yaml|json]
       karpenter-operator check-credentials [--credentials FILE] [--region R]

run flags: --namespace NS (required) --kubeconfig FILE --guest-kubeconfig FILE (alias --target-kubeconfig) --leader-elect
           --metrics-bind-address [host]:port (:8080) --metrics-secure --metrics-cert-dir DIR
           --health-probe-bind-address [host]:port (:8081)
           --crd-dir DIR --log-level debug|info|warn|error
env: RELEASE_VERSION (required unless MANAGEMENT_CLUSTER=true), KARPENTER_IMAGE_AWS, CLUSTER_NAME, CLUSTER_ENDPOINT,
     PLATFORM, REGION, MANAGEMENT_CLUSTER, HCP_NAME, AWS_SHARED_CREDENTIALS_FILE, NODE_IDENTITY_CREDENTIALS_FILE,
     POD_NAMESPACE, POD_NAME (or MY_NAME)`;

async function main(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const [first, ...rest] = argv;
  if (first === '--help' || first === '-h' || first === 'help') {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  if (first === 'render') return renderCommand(rest, env);
  if (first === 'check-credentials') return checkCredentialsCommand(rest, env);
  const runArgs = first === 'run' ? rest : argv;
  if (first !== undefined && first !== 'run' && !first.startsWith('--')) {
    process.stderr.write(`karpenter-operator: unknown command ${JSON.stringify(first)}\n${USAGE}\n`);
    return 1;
  }
  const parsed = parseConfig(runArgs, env, { crdDir: defaultCrdDir(env) });
  if (!parsed.ok) {
    process.stderr.write(`karpenter-operator: cannot start: ${parsed.errors.join('; ')}\n`);
    return 1;
  }
  const { runOperator } = await import('./cli/run.js');
  return runOperator(parsed.config, env);
}

async function renderCommand(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const cmd = new Command('render')
    .exitOverride()
    .requiredOption('--from <dir>', 'directory of cluster objects (YAML/JSON)')
    .option('--kind <kind>', 'print only objects of this kind')
    .addOption(new Option('--output <format>', 'output format').choices(['yaml', 'json']).default('yaml'))
    .option('--namespace <ns>', 'operator namespace', 'openshift-karpenter');
  try {
    cmd.parse(argv, { from: 'user' });
  } catch (e) {
    return (e as { exitCode?: number }).exitCode === 0 ? 0 : 1;
  }
  const o = cmd.opts<{ from: string; kind?: string; output: 'yaml' | 'json'; namespace: string }>();
  const { renderFrom, formatObjects } = await import('./cli/render.js');
  const { InputError } = await import('./cli/load-objects.js');
  const settings: OperatorSettings = {
    namespace: o.namespace,
    releaseVersion: env.RELEASE_VERSION ?? UNKNOWN_RELEASE_VERSION,
    operandImage: env.KARPENTER_IMAGE_AWS ?? 'quay.io/openshift/origin-aws-karpenter-provider-aws:latest',
    crdDir: defaultCrdDir(env),
    ...(env.CLUSTER_NAME ? { clusterNameOverride: env.CLUSTER_NAME } : {}),
    ...(env.CLUSTER_ENDPOINT ? { clusterEndpointOverride: env.CLUSTER_ENDPOINT } : {}),
  };
  try {
    const r = await renderFrom({
      from: o.from,
      output: o.output,
      settings,
      providerFor: (p) => providerFor(p, { crdDir: settings.crdDir }),
      ...(o.kind ? { kind: o.kind } : {}),
    });
    for (const n of r.notes) process.stderr.write(`render: ${n}\n`);
    process.stdout.write(formatObjects(r.objects, o.output));
    return 0;
  } catch (e) {
    if (e instanceof InputError) {
      process.stderr.write(`render: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
}

async function checkCredentialsCommand(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const cmd = new Command('check-credentials')
    .exitOverride()
    .option('--credentials <file>', 'shared credentials file', env.AWS_SHARED_CREDENTIALS_FILE)
    .option('--region <region>', 'region', env.AWS_REGION ?? env.REGION)
    .option('--platform <platform>', 'platform', env.PLATFORM ?? 'AWS');
  try {
    cmd.parse(argv, { from: 'user' });
  } catch (e) {
    return (e as { exitCode?: number }).exitCode === 0 ? 0 : 1;
  }
  const o = cmd.opts<{ credentials?: string; region?: string; platform: string }>();
  const egress = clusterEgressProblems(env, readIfPresent);
  if (egress.length) {
    process.stderr.write(`check-credentials: ${egress.join('; ')}\n`);
    return 1;
  }
  const proxy = readProxyEnv(env);
  const provider = providerFor(o.platform, {
    ...(proxy.proxyEnv ? { proxyEnv: proxy.proxyEnv } : {}),
    crdDir: defaultCrdDir(env),
    ...(o.credentials ? { sharedCredentialsFile: o.credentials } : {}),
    ...(env.AWS_ENDPOINT_URL_EC2 ? { endpoint: env.AWS_ENDPOINT_URL_EC2 } : {}),
  });
  const facts = {
    platform: o.platform,
    infrastructureName: env.CLUSTER_NAME ?? 'unknown',
    apiServerInternalURL: 'https://unknown',
    resourceTags: [],
    ...(o.region ? { region: o.region } : {}),
  };
  const start = systemClock.now();
  try {
    provider.assertSupported();
    await provider.checkCredentials(facts);
    process.stdout.write(`check-credentials: ${o.platform} credentials work (${systemClock.now() - start} ms)\n`);
    return 0;
  } catch (e) {
    process.stderr.write(`check-credentials: ${describeError(e)}\n`);
    return 1;
  }
}

/**
 * Exits once stdout and stderr are flushed: into a pipe they are asynchronous, and `process.exit` right
 * after a large write (`render --output json | ...`) cut the output at 64 KiB.
 */
function exitAfterFlush(code: number): void {
  let pending = 2;
  const done = () => {
    if (--pending === 0) process.exit(code);
  };
  process.stdout.write('', done);
  process.stderr.write('', done);
}

main(process.argv.slice(2), process.env).then(exitAfterFlush, (e: unknown) => {
  process.stderr.write(`karpenter-operator: ${describeError(e)}\n`);
  exitAfterFlush(1);
});
