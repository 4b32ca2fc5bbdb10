import { Option, type Command } from 'commander';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeError, systemClock, type OperatorSettings } from '@karpenter-operator/core';
import { ExitCodes, runMain } from '@karpenter-operator/kube-runtime';
import { parseConfig, UNKNOWN_RELEASE_VERSION } from './config.js';
import { clusterEgressProblems, readIfPresent, readProxyEnv } from './egress.js';
import { flagCommand, parseFlags } from './cli/flags.js';
import { providerFor } from './providers.js';
// Static, unlike the offline commands' modules: the image warms Node's compile cache by running `--help`
// (images/operator.Containerfile), and the cache holds only the modules a run loads, so everything the
// operator itself loads has to load for `--help` too (client-node, prom-client: the chunks).
import { runOperator } from './cli/run.js';

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
     PLATFORM, REGION, MANAGEMENT_CLUSTER, HCP_NAME, GUEST_UNREACHABLE_TIMEOUT, AWS_SHARED_CREDENTIALS_FILE, NODE_IDENTITY_CREDENTIALS_FILE,
     POD_NAMESPACE, POD_NAME (or MY_NAME)
exit codes: 0 stopped or done, 1 failed, 2 a flag or setting is wrong (the message names it) or the leader lease
            was lost, 3 the platform changed`;

async function main(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const [first, ...rest] = argv;
  if (first === '--help' || first === '-h' || first === 'help') {
    process.stdout.write(USAGE + '\n');
    return ExitCodes.ok;
  }
  if (first === 'render') return renderCommand(rest, env);
  if (first === 'check-credentials') return checkCredentialsCommand(rest, env);
  const runArgs = first === 'run' ? rest : argv;
  if (first !== undefined && first !== 'run' && !first.startsWith('-')) {
    process.stderr.write(`karpenter-operator: unknown command ${JSON.stringify(first)}\n${USAGE}\n`);
    return ExitCodes.usage;
  }
  const parsed = parseConfig(runArgs, env, { crdDir: defaultCrdDir(env) });
  if (!parsed.ok) {
    process.stderr.write(`karpenter-operator: cannot start: ${parsed.errors.join('; ')}\n`);
    return ExitCodes.usage;
  }
  return runOperator(parsed.config, env);
}

/** Parses a command's flags; on a usage error writes one line naming the flag and returns the exit code. */
function commandFlags(name: string, cmd: Command, argv: string[]): Map<string, string> | number {
  const r = parseFlags(cmd, argv);
  if (r.ok) return r.flags;
  if (r.help) {
    process.stdout.write(r.usage.endsWith('\n') ? r.usage : `${r.usage}\n`);
    return ExitCodes.ok;
  }
  process.stderr.write(`${name}: ${r.error}\n`);
  return ExitCodes.usage;
}

async function renderCommand(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const flags = commandFlags(
    'render',
    flagCommand('render')
      .option('--from <dir>', 'directory of cluster objects (YAML/JSON), required')
      .option('--kind <kind>', 'print only objects of this kind')
      .addOption(new Option('--output <format>', 'output format').choices(['yaml', 'json']).default('yaml'))
      .option('--namespace <ns>', 'operator namespace', 'openshift-karpenter'),
    argv,
  );
  if (typeof flags === 'number') return flags;
  if (!flags.get('from')) {
    process.stderr.write('render: --from is required\n');
    return ExitCodes.usage;
  }
  const o = {
    from: flags.get('from')!,
    kind: flags.get('kind'),
    output: flags.get('output') as 'yaml' | 'json',
    namespace: flags.get('namespace')!,
  };
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
      // The operand's EC2 endpoint is rendered into its Deployment: read as by `run`.
      providerFor: (p) =>
        providerFor(p, {
          crdDir: settings.crdDir,
          ...(env.OPERAND_AWS_ENDPOINT_URL_EC2 ? { operandEndpoint: env.OPERAND_AWS_ENDPOINT_URL_EC2 } : {}),
        }),
      ...(o.kind ? { kind: o.kind } : {}),
    });
    for (const n of r.notes) process.stderr.write(`render: ${n}\n`);
    process.stdout.write(formatObjects(r.objects, o.output));
    return ExitCodes.ok;
  } catch (e) {
    if (e instanceof InputError) {
      process.stderr.write(`render: ${e.message}\n`);
      return ExitCodes.fatal;
    }
    throw e;
  }
}

async function checkCredentialsCommand(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const defaults = { credentials: env.AWS_SHARED_CREDENTIALS_FILE, region: env.AWS_REGION ?? env.REGION, platform: env.PLATFORM ?? 'AWS' };
  const flags = commandFlags(
    'check-credentials',
    flagCommand('check-credentials')
      .option('--credentials <file>', 'shared credentials file', defaults.credentials)
      .option('--region <region>', 'region', defaults.region)
      .option('--platform <platform>', 'platform', defaults.platform),
    argv,
  );
  if (typeof flags === 'number') return flags;
  const platform = flags.get('platform')!;
  const credentials = flags.get('credentials');
  const region = flags.get('region');
  const egress = clusterEgressProblems(env, readIfPresent);
  if (egress.length) {
    process.stderr.write(`check-credentials: ${egress.join('; ')}\n`);
    return ExitCodes.fatal;
  }
  const proxy = readProxyEnv(env);
  const provider = providerFor(platform, {
    crdDir: defaultCrdDir(env),
    ...(proxy.proxyEnv ? { proxyEnv: proxy.proxyEnv } : {}),
    ...(credentials ? { credentialsFile: credentials } : {}),
    ...(env.AWS_ENDPOINT_URL_EC2 ? { endpoint: env.AWS_ENDPOINT_URL_EC2 } : {}),
  });
  const facts = {
    platform,
    infrastructureName: env.CLUSTER_NAME ?? 'unknown',
    apiServerInternalURL: 'https://unknown',
    resourceTags: [],
    ...(region ? { region } : {}),
  };
  const start = systemClock.now();
  try {
    provider.assertSupported();
    await provider.checkCredentials(facts);
    process.stdout.write(`check-credentials: ${platform} credentials work (${systemClock.now() - start} ms)\n`);
    return ExitCodes.ok;
  } catch (e) {
    process.stderr.write(`check-credentials: ${describeError(e)}\n`);
    return ExitCodes.fatal;
  }
}

runMain('karpenter-operator', () => main(process.argv.slice(2), process.env));
