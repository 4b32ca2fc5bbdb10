// `npm run dev`: the local OpenShift-on-AWS cluster for a person. Started by tools/dev.sh (bundled with
// esbuild); runs until Ctrl-C or SIGTERM (`npm run dev:stop`), then stops everything it started.
import { copyFileSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import type { ClusterHandle } from './cluster.js';
import { startCredentialsMinter } from './credentials-minter.js';
import { isLocalClusterError } from './errors.js';
import { startKubeletSimulator, type KubeletSimulator } from './kubelet-simulator.js';
import { startKarpenterRunner } from './karpenter-runner.js';
import type { DeploymentRunner } from './operand-runner.js';
import { freePort, LOOPBACK } from './ports.js';
import { ProcessSupervisor, tailLog, type ManagedProcess } from './processes.js';
import { applyManifests, listObjects, getObject, type KubeObj } from './resources.js';
import { openShiftAws, startOpenShiftAwsCluster } from './seed/openshift-aws.js';
import { findRepoRoot, karpenterBinary, loadToolchain } from './toolchain.js';

const OPERATOR_NS = 'openshift-karpenter';
const OPERATOR_SA = 'karpenter-operator';

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}
type WithStatus = KubeObj & { status?: { conditions?: Condition[]; [k: string]: unknown } };

export interface DevState {
  pid: number;
  kubeconfig: string;
  server: string;
  ec2Endpoint?: string;
  startedAt: string;
  operator: string;
  /** The real Karpenter controller, or why it does not run. */
  karpenter: string;
}

/** What runs beside the cluster: the operator, the real operand, simulated kubelets, the CCO stand-in. */
interface Workers {
  operator?: ManagedProcess;
  karpenter?: DeploymentRunner;
  kubelets?: KubeletSimulator;
}

async function main(): Promise<void> {
  const detached = process.argv.includes('--detached');
  const root = findRepoRoot();
  const devDir = join(root, '.local', 'dev');
  const baseDir = join(devDir, 'cluster');
  const statePath = join(devDir, 'state.json');
  mkdirSync(devDir, { recursive: true });
  rmSync(baseDir, { recursive: true, force: true });
  rmSync(statePath, { force: true });
  const say = (l: string) => console.log(`dev: ${l}`);

  // Filled in as things start; shutdown stops whatever is there.
  const live: {
    cluster?: ClusterHandle;
    operatorSup?: ProcessSupervisor;
    workers?: Workers;
    stopMinter?: () => void;
  } = {};
  let stopping = false;
  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    say('stopping...');
    live.stopMinter?.();
    await live.workers?.kubelets?.stop().catch(() => undefined);
    await live.workers?.karpenter?.stop().catch(() => undefined);
    await live.operatorSup?.stopAll().catch(() => undefined);
    await live.cluster?.stop().catch(() => undefined);
    rmSync(statePath, { force: true });
    say('stopped; logs kept in ' + relative(root, join(baseDir, 'logs')));
    process.exit(code);
  };
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));
  process.on('SIGHUP', () => void shutdown(0));

  const started = Date.now();
  say('starting the local OpenShift-on-AWS cluster (etcd, kube-apiserver, controllers, KWOK, EC2 emulator, MCO)');
  const { cluster, mco } = await startOpenShiftAwsCluster({ baseDir, keepBaseDir: true, machineConfig: 'real', log: (l) => say(l) });
  live.cluster = cluster;
  const kubeconfig = join(devDir, 'kubeconfig');
  copyFileSync(cluster.info.kubeconfigPath, kubeconfig);
  const kc = cluster.kubeConfig();
  say(`cluster up and seeded in ${((Date.now() - started) / 1000).toFixed(1)}s`);

  const installDir = join(root, 'install');
  if (existsSync(installDir)) {
    // The operator runs here as a local process (as its ServiceAccount), not as the Deployment.
    const r = await applyManifests(kc, installDir, { skip: (o) => o.kind === 'Deployment', fieldManager: 'dev-install' });
    say(
      `applied install/: ${r.applied.length} objects; skipped ${r.skipped.length}${r.skipped.length ? ` (${r.skipped.join('; ')})` : ''}`,
    );
  } else {
    say('no install/ directory yet: nothing to apply');
  }

  live.operatorSup = new ProcessSupervisor(join(baseDir, 'operator'));
  const operator = await startOperator(cluster, live.operatorSup, root, devDir);
  // The local cluster stands in for the cloud-credential operator: it mints the Secrets the
  // CredentialsRequests of install/ ask for, pointing at the emulator.
  live.stopMinter = startCredentialsMinter(cluster, { log: say });
  const workers: Workers = { operator };
  live.workers = workers;
  let karpenterState: string;
  try {
    const binary = karpenterBinary(loadToolchain(root));
    workers.karpenter = startKarpenterRunner({
      cluster,
      karpenterBinary: binary,
      operatorEntry: join(root, 'apps', 'operator', 'dist', 'main.js'),
      baseDir: join(baseDir, 'karpenter'),
      log: (l) => say(`karpenter: ${l}`),
    });
    // Machines boot from what the real machine-config-server serves for their NodeClass's pool.
    workers.kubelets = startKubeletSimulator({
      cluster,
      log: (l) => say(`kubelet: ${l}`),
      ...(mco ? { machineConfigServer: mco.server } : {}),
    });
    karpenterState = `runs Deployment ${OPERATOR_NS}/karpenter with ${relative(root, binary)}`;
  } catch (e) {
    karpenterState = `not running: ${(e as Error).message}`;
    say(`karpenter ${karpenterState}`);
  }
  const state: DevState = {
    pid: process.pid,
    kubeconfig,
    server: cluster.info.server,
    ec2Endpoint: cluster.info.ec2Endpoint,
    startedAt: new Date().toISOString(),
    operator: operator
      ? `running, log ${relative(root, operator.logFile)}`
      : 'not started (apps/operator/dist/main.js missing: npx nx build operator)',
    karpenter: karpenterState,
  };
  writeFileSync(statePath, JSON.stringify(state, null, 2) + '\n');

  let last = '';
  const tick = async () => {
    if (stopping) return;
    let text: string;
    try {
      text = await summary(kc, state, root, workers, started);
    } catch (e) {
      text = `summary unavailable: ${(e as Error).message}`;
    }
    // Logs get a block only when something other than the uptime changed.
    const key = text.split('\n').slice(1).join('\n');
    if (process.stdout.isTTY && !detached) {
      process.stdout.write(`\x1b[H\x1b[2J${text}\n\nCtrl-C stops everything.\n`);
    } else if (key !== last) {
      console.log(`--- ${new Date().toISOString()}\n${text}`);
    }
    last = key;
  };
  await tick();
  setInterval(() => void tick(), 3000);
}

/** Runs the built operator as its ServiceAccount against the local cluster, when it has been built. */
async function startOperator(
  cluster: ClusterHandle,
  sup: ProcessSupervisor,
  root: string,
  devDir: string,
): Promise<ManagedProcess | undefined> {
  const main = join(root, 'apps', 'operator', 'dist', 'main.js');
  if (!existsSync(main)) return undefined;
  const kubeconfig = await cluster.writeKubeConfigFor(OPERATOR_NS, OPERATOR_SA, join(devDir, 'operator.kubeconfig'), {
    expirationSeconds: 48 * 3600,
  });
  const [metrics, health] = [await freePort(), await freePort()];
  return sup.spawn(
    'operator',
    process.execPath,
    [
      main,
      'run',
      '--namespace',
      OPERATOR_NS,
      '--kubeconfig',
      kubeconfig,
      '--metrics-bind-address',
      `${LOOPBACK}:${metrics}`,
      '--health-probe-bind-address',
      `${LOOPBACK}:${health}`,
    ],
    {
      cwd: root,
      env: {
        RELEASE_VERSION: openShiftAws.version,
        PLATFORM: 'AWS',
        REGION: openShiftAws.region,
        AWS_REGION: openShiftAws.region,
        KARPENTER_IMAGE_AWS: process.env.KARPENTER_IMAGE_AWS ?? 'quay.io/openshift/origin-aws-karpenter-provider-aws:latest',
        // Renders the check-credentials init container; the operand's EC2 calls go to the emulator.
        OPERATOR_IMAGE: process.env.OPERATOR_IMAGE ?? 'quay.io/openshift/origin-karpenter-operator:latest',
        OPERAND_AWS_ENDPOINT_URL_EC2: cluster.info.ec2Endpoint,
        AWS_ENDPOINT_URL: cluster.info.ec2Endpoint,
        AWS_ACCESS_KEY_ID: 'testing',
        AWS_SECRET_ACCESS_KEY: 'testing',
        AWS_EC2_METADATA_DISABLED: 'true',
        POD_NAMESPACE: OPERATOR_NS,
        POD_NAME: 'karpenter-operator-dev',
        KUBECONFIG: kubeconfig,
      },
    },
  );
}

const cond = (list: Condition[] | undefined, type: string) => {
  const c = list?.find((x) => x.type === type);
  return c ? `${type}=${c.status}${c.reason ? ` (${c.reason})` : ''}` : `${type}=?`;
};

async function summary(kc: KubeConfig, state: DevState, root: string, workers: Workers, started: number): Promise<string> {
  const { operator } = workers;
  const up = Math.round((Date.now() - started) / 1000);
  const lines = [
    `karpenter-operator local cluster — up ${Math.floor(up / 60)}m${String(up % 60).padStart(2, '0')}s`,
    `  kubeconfig   export KUBECONFIG=${relative(process.cwd(), state.kubeconfig) || state.kubeconfig}`,
    `  API server   ${state.server}      EC2 emulator ${state.ec2Endpoint ?? 'off'}`,
  ];
  if (!operator) lines.push(`  operator     ${state.operator}`);
  else if (operator.isRunning())
    lines.push(`  operator     running as ${OPERATOR_NS}/${OPERATOR_SA} (pid ${operator.pid}, log ${relative(root, operator.logFile)})`);
  else lines.push(`  operator     EXITED — last log lines:\n${tailLog(operator.logFile, 5).replace(/^/gm, '      ')}`);

  const co = await getObject<WithStatus>(kc, 'config.openshift.io/v1', 'ClusterOperator', 'karpenter').catch(() => undefined);
  const coConds = co?.status?.conditions;
  lines.push(
    `  ClusterOperator karpenter  ${co ? ['Available', 'Progressing', 'Degraded', 'Upgradeable'].map((t) => cond(coConds, t)).join('  ') : 'not there yet'}`,
  );
  const degraded = coConds?.find((c) => c.type === 'Degraded' && c.status === 'True');
  if (degraded?.message) lines.push(`      Degraded: ${degraded.message}`);

  const operand = await getObject<WithStatus>(kc, 'apps/v1', 'Deployment', 'karpenter', OPERATOR_NS).catch(() => undefined);
  const st = operand?.status as { replicas?: number; availableReplicas?: number; updatedReplicas?: number } | undefined;
  lines.push(
    `  operand      ${operand ? `Deployment ${OPERATOR_NS}/karpenter ${st?.availableReplicas ?? 0}/${st?.replicas ?? 0} available, ${st?.updatedReplicas ?? 0} updated` : 'no Deployment yet'}`,
  );

  const ncs = await listObjects<WithStatus>(kc, 'karpenter.k8s.aws/v1', 'EC2NodeClass').catch(() => undefined);
  lines.push(
    `  EC2NodeClass ${ncs === undefined ? 'CRD not installed yet' : ncs.length === 0 ? 'none' : ncs.map((n) => `${n.metadata.name} ${cond(n.status?.conditions, 'Ready')}`).join(', ')}`,
  );

  const csrs = await listObjects<WithStatus>(kc, 'certificates.k8s.io/v1', 'CertificateSigningRequest').catch(() => [] as WithStatus[]);
  const pending = csrs.filter((c) => !(c.status?.conditions ?? []).some((x) => ['Approved', 'Denied', 'Failed'].includes(x.type)));
  lines.push(
    `  CSRs         ${pending.length} pending of ${csrs.length}${
      pending.length
        ? `: ${pending
            .map((c) => c.metadata.name)
            .slice(0, 5)
            .join(', ')}`
        : ''
    }`,
  );

  if (!workers.karpenter) {
    lines.push(`  Karpenter    ${state.karpenter}`);
  } else {
    const replicas = workers.karpenter.replicas();
    lines.push(
      `  Karpenter    ${replicas.length ? replicas.map((r) => `${r.pod} ${r.state}${r.pid ? ` pid ${r.pid}` : ''}${r.restarts ? `, ${r.restarts} restarts` : ''}`).join('; ') : 'no operand pod yet (create the Karpenter CR)'}`,
    );
    const crash = workers.karpenter.crashes().at(-1);
    if (crash)
      lines.push(
        `      last crash: ${crash.pod}/${crash.container} exit ${String(crash.exitCode)} at ${crash.at.toISOString()} (log ${relative(root, crash.logFile)}):\n${crash.logTail.split('\n').slice(-5).join('\n').replace(/^/gm, '        ')}`,
      );
  }
  const pools = await listObjects<WithStatus>(kc, 'karpenter.sh/v1', 'NodePool').catch(() => undefined);
  if (pools !== undefined)
    lines.push(
      `  NodePools    ${pools.length ? pools.map((p) => `${p.metadata.name} ${cond(p.status?.conditions, 'Ready')}`).join(', ') : 'none'}`,
    );
  const claims = await listObjects<WithStatus>(kc, 'karpenter.sh/v1', 'NodeClaim').catch(() => undefined);
  if (claims !== undefined) {
    lines.push(`  NodeClaims   ${claims.length ? '' : 'none'}`);
    for (const c of claims) {
      const phase =
        ['Ready', 'Initialized', 'Registered', 'Launched'].find((t) =>
          c.status?.conditions?.some((x) => x.type === t && x.status === 'True'),
        ) ?? 'Pending';
      lines.push(
        `      ${c.metadata.name} ${c.metadata.deletionTimestamp ? 'Deleting' : phase}  node ${String(c.status?.nodeName ?? '-')}`,
      );
    }
  }
  const sims = workers.kubelets?.kubelets().filter((k) => k.phase !== 'gone') ?? [];
  if (workers.kubelets)
    lines.push(
      `  Nodes joined ${sims.filter((k) => k.phase === 'joined').length}${sims.length ? ` (${sims.map((k) => `${k.nodeName ?? k.instanceId} ${k.phase}${k.error ? `: ${k.error}` : ''}`).join('; ')})` : ''}`,
    );
  return lines.join('\n');
}

main().catch((e: unknown) => {
  console.error(`dev: ${isLocalClusterError(e) ? e.message : ((e as Error).stack ?? String(e))}`);
  process.exit(1);
});
