import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ClusterClient } from './access.js';
import { LocalClusterError } from './errors.js';
import { fetchServedConfig, pointerOf } from './ignition.js';
import { kubeRequest } from './kube-request.js';
import { portFor } from './ports.js';
import { ProcessSupervisor, type ManagedProcess } from './processes.js';
import { applyObject, applyStatus, getObject, listObjects, type KubeObj } from './resources.js';
import { anInfrastructure, openShiftAws, SEED_FIELD_MANAGER, type OpenShiftAwsFacts } from './seed/openshift-aws.js';
import { loadToolchain, mcoBinaries, type Toolchain } from './toolchain.js';
import { waitFor } from './wait.js';

const MCO_NS = 'openshift-machine-config-operator';
const MC_API = 'machineconfiguration.openshift.io/v1';
const DESIRED_CONFIG = 'machineconfiguration.openshift.io/desiredConfig';
const CURRENT_CONFIG = 'machineconfiguration.openshift.io/currentConfig';
const MCD_STATE = 'machineconfiguration.openshift.io/state';

/** The real Machine Config Operator's controller and server beside a local cluster. */
export interface MachineConfigOperator {
  /** Where machine-config-server listens: the `api-int` host of the pointer configs resolves here. */
  server: { host: string; port: number };
  controller: ManagedProcess;
  serverProcess: ManagedProcess;
  logDir: string;
  stop(): Promise<void>;
}

export interface StartMcoOptions {
  /** Working directory (logs, the server's certificate and bootstrap token). */
  baseDir: string;
  toolchain?: Toolchain;
  facts?: OpenShiftAwsFacts;
  log?: (line: string) => void;
  /** How long the first render may take (default 180 s). */
  readyTimeoutMs?: number;
}

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

/**
 * What the Machine Config Operator itself creates before its controller runs, as it renders them from the
 * cluster's config: ControllerConfig `machine-config-controller` (annotated with the controller's version, or
 * the render controller refuses it), the pull secret, and the cluster-scoped config objects its informers
 * read. The FeatureGate it asks about is in the seed (`aFeatureGate`).
 */
export function mcoSeedObjects(caPem: string, mcoVersion: string, f: OpenShiftAwsFacts = openShiftAws): KubeObj[] {
  const infra = anInfrastructure(f);
  const image = (name: string) =>
    `quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:${Buffer.from(name).toString('hex').padEnd(64, '0').slice(0, 64)}`;
  const dns = { apiVersion: 'config.openshift.io/v1', kind: 'DNS', metadata: { name: 'cluster' }, spec: { baseDomain: f.clusterDomain } };
  const network = {
    clusterNetwork: [{ cidr: '10.128.0.0/14', hostPrefix: 23 }],
    serviceNetwork: ['172.30.0.0/16'],
    networkType: 'OVNKubernetes',
  };
  const cluster = (kind: string, spec: Record<string, unknown> = {}): KubeObj => ({
    apiVersion: 'config.openshift.io/v1',
    kind,
    metadata: { name: 'cluster' },
    spec,
  });
  return [
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'pull-secret', namespace: 'openshift-config' },
      type: 'kubernetes.io/dockerconfigjson',
      data: { '.dockerconfigjson': b64(JSON.stringify({ auths: { 'quay.io': { auth: b64('demo:demo'), email: 'demo@example.com' } } })) },
    } as KubeObj,
    cluster('APIServer'),
    cluster('Image'),
    cluster('Node'),
    cluster('Scheduler', { mastersSchedulable: false }),
    cluster('Proxy'),
    cluster('Network', network),
    dns,
    {
      apiVersion: 'operator.openshift.io/v1',
      kind: 'MachineConfiguration',
      metadata: { name: 'cluster' },
      spec: { managementState: 'Managed' },
    },
    {
      apiVersion: MC_API,
      kind: 'ControllerConfig',
      metadata: {
        name: 'machine-config-controller',
        annotations: {
          'machineconfiguration.openshift.io/generated-by-version': mcoVersion,
          'machineconfiguration.openshift.io/release-image-version': f.version,
        },
      },
      spec: {
        clusterDNSIP: '172.30.0.10',
        cloudProviderConfig: '',
        cloudProviderCAData: null,
        additionalTrustBundle: null,
        kubeAPIServerServingCAData: b64(caPem),
        rootCAData: b64(caPem),
        releaseImage: f.releaseImage,
        baseOSContainerImage: image('rhel-coreos'),
        baseOSExtensionsContainerImage: image('rhel-coreos-extensions'),
        ipFamilies: 'IPv4',
        platform: 'aws',
        pullSecret: { namespace: 'openshift-config', name: 'pull-secret' },
        images: {
          machineConfigOperator: image('machine-config-operator'),
          infraImageKey: image('pod'),
          keepalivedImage: image('keepalived-ipfailover'),
          corednsImage: image('coredns'),
          haproxyImage: image('haproxy-router'),
          baremetalRuntimeCfgImage: image('baremetal-runtimecfg'),
          kubeRbacProxyImage: image('kube-rbac-proxy'),
          apiServerWatcherKey: image('cluster-kube-apiserver-operator'),
        },
        infra: { apiVersion: infra.apiVersion, kind: infra.kind, metadata: { name: 'cluster' }, spec: infra.spec, status: infra.status },
        dns,
        network: { mtuMigration: null },
        proxy: null,
      },
    } as KubeObj,
  ];
}

/**
 * Starts the real machine-config-controller (template, render, kubelet-config, node and certificate-rotation
 * controllers) and machine-config-server (`tools/cluster/build-mco.sh`) against a seeded local cluster, and
 * waits until the worker pool is rendered and the server answers `/config/worker` with the CA that the
 * certificate rotation wrote into the worker user-data Secret.
 *
 * The server reads its node-bootstrapper token from the fixed path `/etc/mcs/bootstrap-token`: it runs in a
 * private mount namespace (`unshare -m`, root) with an overlay on `/etc` holding that directory, so nothing
 * on this machine's `/etc` changes. The existing machines of the world get the daemon's annotations from here
 * (there is no machine-config-daemon); Karpenter's machines get them from the kubelet simulator.
 */
export async function startMachineConfigOperator(cluster: ClusterClient, opts: StartMcoOptions): Promise<MachineConfigOperator> {
  const tc = opts.toolchain ?? loadToolchain();
  const bins = mcoBinaries(tc);
  const f = opts.facts ?? openShiftAws;
  const log = opts.log ?? (() => undefined);
  const kc = cluster.kubeConfig();
  const caPem = readFileSync(cluster.info.caFile, 'utf8');
  mkdirSync(opts.baseDir, { recursive: true });
  for (const obj of mcoSeedObjects(caPem, bins.version, f)) {
    await applyObject(kc, obj, { fieldManager: SEED_FIELD_MANAGER });
    if (obj.status !== undefined) await applyStatus(kc, obj, { fieldManager: SEED_FIELD_MANAGER });
  }

  const sup = new ProcessSupervisor(opts.baseDir);
  const metricsPort = await portFor(undefined, 'machine-config-controller metrics');
  const controller = sup.spawn('machine-config-controller', bins.controller, [
    'start',
    `--kubeconfig=${cluster.info.kubeconfigPath}`,
    `--templates=${bins.templates}`,
    `--resourcelock-namespace=${MCO_NS}`,
    `--metrics-listen-address=127.0.0.1:${metricsPort}`,
    '--v=2',
  ]);
  let stopped = false;
  let daemonTimer: NodeJS.Timeout | undefined;
  const stop = async () => {
    stopped = true;
    if (daemonTimer) clearTimeout(daemonTimer);
    await sup.stopAll(5_000);
  };
  const died = (p: ManagedProcess) => () => {
    if (!p.isRunning()) throw new LocalClusterError(`${p.name} exited (${p.logFile}): ${tail(p.logFile)}`);
  };
  try {
    // The machine-config daemon's part for the machines the world started with: a machine boots from its
    // pool's rendered config and its daemon records it (current = desired, state Done); a later desired config
    // the node controller sets is "applied" the same way. Karpenter's nodes are left to the kubelet simulator.
    type Pool = KubeObj & { spec?: { nodeSelector?: { matchLabels?: Record<string, string> }; configuration?: { name?: string } } };
    const daemon = async () => {
      const [nodes, pools] = await Promise.all([
        listObjects(kc, 'v1', 'Node').catch(() => [] as KubeObj[]),
        listObjects<Pool>(kc, MC_API, 'MachineConfigPool').catch(() => [] as Pool[]),
      ]);
      const poolOf = (n: KubeObj) => {
        const labels = n.metadata.labels ?? {};
        const matching = pools.filter((p) => {
          const sel = Object.entries(p.spec?.nodeSelector?.matchLabels ?? {});
          return sel.length > 0 && sel.every(([k, v]) => labels[k] === v) && p.spec?.configuration?.name;
        });
        return matching.find((p) => p.metadata.name !== 'worker') ?? matching[0];
      };
      for (const n of nodes) {
        const a = n.metadata.annotations ?? {};
        if (n.metadata.labels?.['karpenter.sh/nodepool'] !== undefined) continue;
        const target = a[DESIRED_CONFIG] || poolOf(n)?.spec?.configuration?.name;
        if (!target || (a[CURRENT_CONFIG] === target && a[DESIRED_CONFIG] === target && a[MCD_STATE] === 'Done')) continue;
        await kubeRequest(kc, 'PATCH', `/api/v1/nodes/${encodeURIComponent(n.metadata.name)}`, {
          body: { metadata: { annotations: { [CURRENT_CONFIG]: target, [DESIRED_CONFIG]: target, [MCD_STATE]: 'Done' } } },
          contentType: 'application/merge-patch+json',
        }).catch(() => undefined);
      }
    };
    const loop = () => {
      if (stopped) return;
      void daemon().finally(() => {
        if (!stopped) daemonTimer = setTimeout(loop, 2_000);
      });
    };
    loop();
    const timeoutMs = opts.readyTimeoutMs ?? 180_000;
    const workerRendered = async () => {
      died(controller)();
      type Pool = KubeObj & { spec?: { configuration?: { name?: string } }; status?: { configuration?: { name?: string } } };
      const pool = await getObject<Pool>(kc, MC_API, 'MachineConfigPool', 'worker');
      const name = pool?.status?.configuration?.name;
      return name?.startsWith('rendered-worker-') && name === pool?.spec?.configuration?.name ? name : undefined;
    };
    const rendered = await waitFor('machine-config-controller to render pool worker', workerRendered, { timeoutMs, intervalMs: 1000 });
    log(`machine-config-controller rendered pool worker as ${rendered}`);
    const tls = await waitFor(
      `Secret ${MCO_NS}/machine-config-server-tls from the certificate rotation`,
      async () => {
        died(controller)();
        const s = await getObject<KubeObj & { data?: Record<string, string> }>(kc, 'v1', 'Secret', 'machine-config-server-tls', MCO_NS);
        return s?.data?.['tls.crt'] && s.data['tls.key'] ? s.data : undefined;
      },
      { timeoutMs, intervalMs: 1000 },
    );
    const certFile = join(opts.baseDir, 'tls.crt');
    const keyFile = join(opts.baseDir, 'tls.key');
    writeFileSync(certFile, Buffer.from(tls['tls.crt']!, 'base64'));
    writeFileSync(keyFile, Buffer.from(tls['tls.key']!, 'base64'), { mode: 0o600 });
    const tokenDir = join(opts.baseDir, 'bootstrap-token');
    mkdirSync(tokenDir, { recursive: true });
    writeFileSync(join(tokenDir, 'token'), await cluster.tokenFor(MCO_NS, 'node-bootstrapper', { expirationSeconds: 7 * 24 * 3600 }));
    writeFileSync(join(tokenDir, 'ca.crt'), caPem);
    const upper = join(opts.baseDir, 'etc-overlay');
    mkdirSync(join(upper, 'upper'), { recursive: true });
    mkdirSync(join(upper, 'work'), { recursive: true });
    const securePort = await portFor(undefined, 'machine-config-server');
    const insecurePort = await portFor(undefined, 'machine-config-server (insecure)');
    const script = [
      'set -e',
      `mount -t overlay overlay -o lowerdir=/etc,upperdir=${upper}/upper,workdir=${upper}/work /etc`,
      'mkdir -p /etc/mcs/bootstrap-token',
      `cp ${tokenDir}/token ${tokenDir}/ca.crt /etc/mcs/bootstrap-token/`,
      `exec ${bins.server} start --kubeconfig=${cluster.info.kubeconfigPath} --apiserver-url=${cluster.info.server}` +
        ` --secure-port=${securePort} --insecure-port=${insecurePort} --cert=${certFile} --key=${keyFile} --v=2`,
    ].join('\n');
    const serverProcess = sup.spawn('machine-config-server', 'unshare', ['-m', '--propagation', 'private', 'bash', '-c', script]);
    const server = { host: '127.0.0.1', port: securePort };
    await waitFor(
      'machine-config-server to serve /config/worker to the worker pointer config',
      async () => {
        died(serverProcess)();
        const secret = await getObject<KubeObj & { data?: Record<string, string> }>(
          kc,
          'v1',
          'Secret',
          f.userDataSecret,
          'openshift-machine-api',
        );
        const userData = Buffer.from(secret?.data?.userData ?? '', 'base64').toString('utf8');
        const pointer = pointerOf(userData);
        if (!pointer) return false;
        const r = await fetchServedConfig(pointer, server, { timeoutMs: 5_000 }).catch(() => undefined);
        return r?.status === 200;
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    log(`machine-config-server serves on ${server.host}:${server.port}`);

    return { server, controller, serverProcess, logDir: sup.logDir, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').slice(-5).join(' | ');
  } catch {
    return '(no log)';
  }
}
