import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AUDIT_POLICY } from './audit.js';
import { ADMIN_USER, connectCluster, type ClusterClient, type ClusterInfo } from './access.js';
import { startEc2Emulator, type MotoAmi } from './ec2-emulator.js';
import { LocalClusterError } from './errors.js';
import { kubeConfigFromFile, writeKubeconfig } from './kubeconfig.js';
import { kubeRequest } from './kube-request.js';
import { createCertificateAuthority, createKeyPair } from './pki.js';
import { LOOPBACK, portFor, retryOnPortClash } from './ports.js';
import { ProcessSupervisor, tailLog, type ManagedProcess } from './processes.js';
import { loadToolchain, type Toolchain } from './toolchain.js';
import { waitFor } from './wait.js';

/** Nodes with this annotation are simulated by KWOK (kubelet heartbeats, pods Running). */
export const KWOK_NODE_ANNOTATION = 'kwok.x-k8s.io/node';

/**
 * KWOK's stock stages mark a pod Ready only while it is Pending. The node lifecycle controller sets a Running
 * pod's Ready to False when its node's heartbeats stop (a kube-apiserver outage longer than the grace period
 * does that); a real kubelet sets it back on its next status sync once the node is back, so this stage does,
 * a few seconds later (KWOK pods have no probes: nothing else makes a Running pod unready).
 */
const READY_AGAIN_STAGE = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready-again
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values: ['Running']
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: 'In'
      values: ['False']
  delay:
    durationMilliseconds: 5000
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - type: Initialized
        status: "True"
      - type: Ready
        status: "True"
        lastTransitionTime: {{ $now | Quote }}
      - type: ContainersReady
        status: "True"
      - type: PodScheduled
        status: "True"
`;

function writeReadyAgainStage(dir: string): string {
  const path = join(dir, 'kwok-ready-again.yaml');
  writeFileSync(path, READY_AGAIN_STAGE);
  return path;
}
export const KWOK_NODE_ANNOTATION_VALUE = 'fake';

export interface StartClusterOptions {
  /** Working directory; default a fresh temp dir, removed on stop. */
  baseDir?: string;
  /** Keep `baseDir` on stop (logs, audit log). Default: keep when it was passed in. */
  keepBaseDir?: boolean;
  /**
   * Fixed ports on 127.0.0.1; each is checked and a busy one fails with one line. Default: the env
   * `KO_ETCD_PORT`, `KO_APISERVER_PORT`, `KO_EC2_PORT` when set, else free ports.
   */
  ports?: { etcd?: number; apiServer?: number; ec2?: number };
  /** Start the EC2 emulator (moto). Default true. */
  ec2?: boolean;
  /** AMIs the emulator serves (seed/openshift-aws.ts passes the RHCOS images). */
  amis?: MotoAmi[];
  region?: string;
  /** Progress lines (default: silent). */
  log?: (line: string) => void;
  toolchain?: Toolchain;
}

export interface ClusterHandle extends ClusterClient {
  /** Seconds each start-up phase took. */
  readonly timings: Record<string, number>;
  /** Stops kube-apiserver only (etcd and the controllers keep running), for chaos tests. */
  stopApiServer(): Promise<void>;
  /** Starts it again with the same flags and waits until /readyz is OK. */
  startApiServer(): Promise<void>;
  /** Stops every process it started and removes the working directory (unless kept). */
  stop(): Promise<void>;
}

interface Paths {
  pki: string;
  ca: string;
  caKey: string;
}

/**
 * Starts a real control plane on 127.0.0.1: etcd, kube-apiserver (Node+RBAC authorization,
 * ServiceAccount tokens, audit log), kube-controller-manager (all default controllers but the CSR
 * auto-approver, CSR signing), kube-scheduler, KWOK for simulated nodes, and optionally the EC2
 * emulator. Binaries come from `npm run setup`. Every process dies with this one.
 */
export async function startCluster(opts: StartClusterOptions = {}): Promise<ClusterHandle> {
  // A directory of its own (state from a failed attempt would be reused) can start again on a port clash.
  if (opts.baseDir !== undefined) return startClusterOnce(opts);
  return retryOnPortClash(() => startClusterOnce(opts), 3, opts.log);
}

async function startClusterOnce(opts: StartClusterOptions): Promise<ClusterHandle> {
  const t0 = Date.now();
  const timings: Record<string, number> = {};
  const mark = (phase: string, since: number) => (timings[phase] = (Date.now() - since) / 1000);
  const log = opts.log ?? (() => undefined);
  const tc = opts.toolchain ?? loadToolchain();
  const bin = (name: string) => join(tc.binDir, name);
  const region = opts.region ?? 'us-east-1';
  const baseDir = opts.baseDir ?? mkdtempSync(join(tmpdir(), 'ko-cluster-'));
  const keep = opts.keepBaseDir ?? opts.baseDir !== undefined;
  mkdirSync(baseDir, { recursive: true });
  const startEc2 = opts.ec2 ?? true;

  const envPort = (name: string): number | undefined => {
    const v = process.env[name];
    if (v === undefined || v === '') return undefined;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1 || n > 65535) throw new LocalClusterError(`${name}=${v} is not a TCP port`);
    return n;
  };
  const etcdPort = await portFor(opts.ports?.etcd ?? envPort('KO_ETCD_PORT'), 'etcd client');
  const etcdPeerPort = await portFor(undefined, 'etcd peer');
  const apiPort = await portFor(opts.ports?.apiServer ?? envPort('KO_APISERVER_PORT'), 'kube-apiserver');
  const kcmPort = await portFor(undefined, 'kube-controller-manager');
  const schedPort = await portFor(undefined, 'kube-scheduler');
  const kwokPort = await portFor(undefined, 'kwok');
  const ec2Port = startEc2 ? await portFor(opts.ports?.ec2 ?? envPort('KO_EC2_PORT'), 'EC2 emulator') : 0;

  let phase = Date.now();
  const paths = await writePki(baseDir);
  const server = `https://${LOOPBACK}:${apiPort}`;
  const kubeconfig = (name: string, cn: string) =>
    writeKubeconfig(join(baseDir, `${name}.kubeconfig`), {
      server,
      caFile: paths.ca,
      user: { clientCertificateFile: join(paths.pki, `${cn}.crt`), clientKeyFile: join(paths.pki, `${cn}.key`) },
      name,
    });
  const adminKubeconfig = kubeconfig('admin', 'admin');
  const kcmKubeconfig = kubeconfig('kube-controller-manager', 'kube-controller-manager');
  const schedKubeconfig = kubeconfig('kube-scheduler', 'kube-scheduler');
  const kwokKubeconfig = kubeconfig('kwok', 'kwok');
  const auditLogPath = join(baseDir, 'audit.log');
  const auditPolicy = join(baseDir, 'audit-policy.yaml');
  writeFileSync(auditPolicy, AUDIT_POLICY);
  mark('pki', phase);

  const sup = new ProcessSupervisor(baseDir);
  const procs: Record<string, ManagedProcess> = {};
  const stopAll = async () => {
    await sup.stopAll();
    if (!keep) rmSync(baseDir, { recursive: true, force: true });
  };
  const exitedAbort = (p: ManagedProcess) => () =>
    p.isRunning() ? undefined : `${p.name} exited (log ${p.logFile}):\n${tailLog(p.logFile)}`;

  const apiServerArgs = [
    `--etcd-servers=http://${LOOPBACK}:${etcdPort}`,
    `--bind-address=${LOOPBACK}`,
    `--advertise-address=${LOOPBACK}`,
    `--secure-port=${apiPort}`,
    `--cert-dir=${join(baseDir, 'apiserver-certs')}`,
    `--tls-cert-file=${join(paths.pki, 'apiserver.crt')}`,
    `--tls-private-key-file=${join(paths.pki, 'apiserver.key')}`,
    `--client-ca-file=${paths.ca}`,
    '--service-cluster-ip-range=10.0.0.0/24',
    '--allow-privileged=true',
    '--authorization-mode=Node,RBAC',
    '--enable-admission-plugins=NodeRestriction',
    '--service-account-issuer=https://kubernetes.default.svc',
    `--service-account-key-file=${join(paths.pki, 'sa.pub')}`,
    `--service-account-signing-key-file=${join(paths.pki, 'sa.key')}`,
    `--audit-policy-file=${auditPolicy}`,
    `--audit-log-path=${auditLogPath}`,
    '--audit-log-format=json',
    '--audit-log-mode=blocking',
    '--audit-log-maxbackup=0',
    '--profiling=false',
    '--event-ttl=1h',
  ];
  const spawnApiServer = () => (procs.apiserver = sup.spawn('kube-apiserver', bin('kube-apiserver'), apiServerArgs));
  const waitApiServer = async () => {
    const kc = kubeConfigFromFile(adminKubeconfig);
    await waitFor('kube-apiserver /readyz', async () => (await kubeRequest(kc, 'GET', '/readyz')).status === 200, {
      timeoutMs: 120_000,
      intervalMs: 300,
      abort: exitedAbort(procs.apiserver!),
    });
  };

  try {
    log(`starting etcd on ${LOOPBACK}:${etcdPort}`);
    phase = Date.now();
    procs.etcd = sup.spawn('etcd', bin('etcd'), [
      '--name=ko',
      `--data-dir=${join(baseDir, 'etcd')}`,
      `--listen-client-urls=http://${LOOPBACK}:${etcdPort}`,
      `--advertise-client-urls=http://${LOOPBACK}:${etcdPort}`,
      `--listen-peer-urls=http://${LOOPBACK}:${etcdPeerPort}`,
      `--initial-advertise-peer-urls=http://${LOOPBACK}:${etcdPeerPort}`,
      `--initial-cluster=ko=http://${LOOPBACK}:${etcdPeerPort}`,
      '--unsafe-no-fsync',
      '--log-level=warn',
    ]);
    await waitFor(
      'etcd /health',
      async () => ((await (await fetch(`http://${LOOPBACK}:${etcdPort}/health`)).json()) as { health?: string }).health === 'true',
      { timeoutMs: 30_000, abort: exitedAbort(procs.etcd) },
    );
    mark('etcd', phase);

    log(`starting kube-apiserver on ${server}`);
    phase = Date.now();
    spawnApiServer();
    // moto starts meanwhile: it is independent and takes a few seconds.
    const ec2 = startEc2
      ? startEc2Emulator(sup, { motoServer: tc.motoServer, port: ec2Port, baseDir, amis: opts.amis ?? [] })
      : Promise.resolve(undefined);
    ec2.catch(() => undefined);
    await waitApiServer();
    mark('kube-apiserver', phase);

    log('starting kube-controller-manager, kube-scheduler, kwok');
    phase = Date.now();
    procs.kcm = sup.spawn('kube-controller-manager', bin('kube-controller-manager'), [
      `--kubeconfig=${kcmKubeconfig}`,
      `--authentication-kubeconfig=${kcmKubeconfig}`,
      `--authorization-kubeconfig=${kcmKubeconfig}`,
      `--bind-address=${LOOPBACK}`,
      `--secure-port=${kcmPort}`,
      `--cert-dir=${join(baseDir, 'kcm-certs')}`,
      '--leader-elect=false',
      // csrapproving would auto-approve kubelet CSRs; approving them is the operator's job under test.
      '--controllers=*,-csrapproving',
      `--cluster-signing-cert-file=${paths.ca}`,
      `--cluster-signing-key-file=${paths.caKey}`,
      `--service-account-private-key-file=${join(paths.pki, 'sa.key')}`,
      `--root-ca-file=${paths.ca}`,
      '--use-service-account-credentials=true',
      '--profiling=false',
    ]);
    procs.scheduler = sup.spawn('kube-scheduler', bin('kube-scheduler'), [
      `--kubeconfig=${schedKubeconfig}`,
      `--authentication-kubeconfig=${schedKubeconfig}`,
      `--authorization-kubeconfig=${schedKubeconfig}`,
      `--bind-address=${LOOPBACK}`,
      `--secure-port=${schedPort}`,
      `--cert-dir=${join(baseDir, 'scheduler-certs')}`,
      '--leader-elect=false',
      '--profiling=false',
    ]);
    procs.kwok = sup.spawn('kwok', bin('kwok'), [
      `--kubeconfig=${kwokKubeconfig}`,
      `--config=${tc.kwokStages}`,
      `--config=${writeReadyAgainStage(baseDir)}`,
      '--manage-all-nodes=false',
      `--manage-nodes-with-annotation-selector=${KWOK_NODE_ANNOTATION}=${KWOK_NODE_ANNOTATION_VALUE}`,
      '--cidr=10.128.0.0/16',
      '--node-lease-duration-seconds=40',
      `--server-address=${LOOPBACK}:${kwokPort}`,
    ]);
    const admin = kubeConfigFromFile(adminKubeconfig);
    // Pods need the default ServiceAccount (serviceaccount controller) and kube-root-ca.crt (root CA publisher).
    await waitFor(
      'kube-controller-manager to create ServiceAccount default/default and ConfigMap kube-root-ca.crt',
      async () =>
        (await kubeRequest(admin, 'GET', '/api/v1/namespaces/default/serviceaccounts/default')).status === 200 &&
        (await kubeRequest(admin, 'GET', '/api/v1/namespaces/default/configmaps/kube-root-ca.crt')).status === 200,
      { timeoutMs: 90_000, abort: () => exitedAbort(procs.kcm!)() ?? exitedAbort(procs.scheduler!)() ?? exitedAbort(procs.kwok!)() },
    );
    mark('controllers', phase);
    phase = Date.now();
    const emulator = await ec2;
    if (emulator) mark('ec2-emulator (after controllers)', phase);
    timings.total = (Date.now() - t0) / 1000;
    log(`cluster ready in ${timings.total.toFixed(1)}s`);

    const info: ClusterInfo = {
      baseDir,
      server,
      caFile: paths.ca,
      kubeconfigPath: adminKubeconfig,
      auditLogPath,
      ec2Endpoint: emulator?.endpoint,
      region,
      crdDir: tc.crdDir,
    };
    return {
      ...connectCluster(info),
      timings,
      stopApiServer: async () => {
        await procs.apiserver?.stop();
      },
      startApiServer: async () => {
        if (procs.apiserver?.isRunning()) return;
        spawnApiServer();
        await waitApiServer();
      },
      stop: stopAll,
    };
  } catch (e) {
    await stopAll().catch(() => undefined);
    if (e instanceof LocalClusterError) throw e;
    throw new LocalClusterError(`starting the local cluster failed: ${(e as Error).message}`, { cause: e });
  }
}

async function writePki(baseDir: string): Promise<Paths> {
  const pki = join(baseDir, 'pki');
  mkdirSync(pki, { recursive: true });
  const ca = await createCertificateAuthority('karpenter-operator local cluster CA');
  const write = (name: string, text: string) => writeFileSync(join(pki, name), text, { mode: 0o600 });
  write('ca.crt', ca.certPem);
  write('ca.key', ca.privateKeyPem);
  const leaves: Array<[string, Parameters<typeof ca.issue>[0]]> = [
    [
      'apiserver',
      {
        commonName: 'kube-apiserver',
        usage: 'server',
        dnsNames: ['localhost', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local'],
        ipAddresses: [LOOPBACK, '10.0.0.1'],
      },
    ],
    ['admin', { commonName: ADMIN_USER, organizations: ['system:masters'], usage: 'client' }],
    ['kube-controller-manager', { commonName: 'system:kube-controller-manager', usage: 'client' }],
    ['kube-scheduler', { commonName: 'system:kube-scheduler', usage: 'client' }],
    ['kwok', { commonName: 'system:kwok-controller', organizations: ['system:masters'], usage: 'client' }],
  ];
  await Promise.all(
    leaves.map(async ([name, req]) => {
      const cert = await ca.issue(req);
      write(`${name}.crt`, cert.certPem);
      write(`${name}.key`, cert.privateKeyPem);
    }),
  );
  const sa = await createKeyPair();
  write('sa.key', sa.privateKeyPem);
  write('sa.pub', sa.publicKeyPem);
  return { pki, ca: join(pki, 'ca.crt'), caKey: join(pki, 'ca.key') };
}
