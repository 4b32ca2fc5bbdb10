import {
  DescribeInstanceAttributeCommand,
  DescribeInstancesCommand,
  DescribeInstanceTypesCommand,
  EC2Client,
  type Instance,
} from '@aws-sdk/client-ec2';
import { KubeConfig } from '@kubernetes/client-node';
import type { ClusterClient } from './access.js';
import { KWOK_NODE_ANNOTATION, KWOK_NODE_ANNOTATION_VALUE } from './cluster.js';
import { kubeRequest } from './kube-request.js';
import { fetchServedConfig, pointerOf, servedKubelet, type ServedKubelet } from './ignition.js';
import { createKubeletClientCsr, type KubeletCsr } from './pki.js';
import { getObject, listObjects, type KubeObj } from './resources.js';

/**
 * A simulated RHCOS kubelet for every Karpenter NodeClaim whose instance exists in the EC2 emulator. What a
 * real machine would do between CreateFleet and a Ready node, in order:
 *
 * 1. Read what IMDS tells a kubelet: the instance's private DNS name (the node name, lower-case, no
 *    trailing dot), private IP, zone, instance type.
 * 2. Read the Ignition pointer config the machine boots with (the instance's userData, else its
 *    NodeClass's) and check it merges from the MCS path of its NodeClass's pool, `/config/karpenter-<nc>`.
 * 3. With `machineConfigServer`: fetch that source from the real Machine Config Server as Ignition does
 *    (the pointer's CA, an Ignition 3 `Accept`, retrying while MCS answers 500) and take the registration
 *    taints (`/etc/kubernetes/kubelet.conf`), the node labels (`kubelet.service`) and the bootstrap token
 *    (`/etc/kubernetes/kubeconfig`) from what it serves. Without it: the taints of KubeletConfig
 *    `set-karpenter-taint-<nc>` and a minted node-bootstrapper token. Never hard-coded.
 * 4. Submit a client CSR as `openshift-machine-config-operator/node-bootstrapper` (that token):
 *    CN `system:node:<name>`, O `system:nodes`, no SANs, usages digital signature + client auth.
 * 5. Wait for the approval and the signed certificate, then create the Node *with that certificate*
 *    (NodeRestriction applies): providerID of the NodeClaim, the registration taints, kubelet-settable
 *    labels, capacity; KWOK keeps it Ready from then on.
 * 6. Submit the serving CSR as the node (SANs: its DNS name and IP) and wait for its approval.
 * 7. With `machineConfigServer`, play the machine-config daemon (there is none here): the first boot's
 *    `currentConfig`/`desiredConfig`/`state: Done` annotations from the served rendered config, and later
 *    each `desiredConfig` or `desiredDrain` the node controller sets is taken as applied.
 *
 * Knobs let a test withhold the CSR, also submit forged ones, or delay the Node.
 */
export interface KubeletSimulatorOptions {
  cluster: ClusterClient;
  log?: (line: string) => void;
  pollMs?: number;
  /** KubeletConfig holding `registerWithTaints` for Karpenter's pools; default `set-karpenter-taint-<nodeclass>`. */
  kubeletConfigName?: string;
  /** true: never submit a client CSR for this NodeClaim (the node never joins). `labels`: the NodeClaim's. */
  withholdCsr?: (nodeClaim: string, labels: Record<string, string>) => boolean;
  /**
   * Before the real client CSR, also submit these forged ones for the same instance (each differing from the
   * kubelet's request as it says). `undefined` or `[]`: none.
   */
  forgeCsr?: (nodeClaim: string, nodeName: string) => ForgedCsr[] | undefined;
  /** Delay between the signed client certificate and creating the Node. */
  nodeDelayMs?: (nodeClaim: string) => number;
  /**
   * Where the machines are: the EC2 emulator of `cluster` when absent (a hosted cluster's guest has none of
   * its own; its machines are in the management cluster's account).
   */
  ec2?: ReturnType<ClusterClient['ec2Config']>;
  /**
   * Whether the Ignition pointer's merge source is the one a machine of NodeClass `nodeClass` must boot from;
   * by default the MCS path of its pool, `/config/karpenter-<nodeClass>` (HyperShift's ignition server
   * serves other URLs).
   */
  pointerMatches?: (source: string, nodeClass: string) => boolean;
  /**
   * The `registerWithTaints` the MCO would render into the kubelet; by default read from the KubeletConfig
   * `kubeletConfigName` of `cluster` (HyperShift renders it from a ConfigMap in the HCP namespace instead).
   * `undefined`: not there yet.
   */
  registrationTaints?: () => Promise<unknown[] | undefined>;
  /**
   * Where the real Machine Config Server listens on this machine: the pointer's host name resolves there
   * (step 3). Absent: the KubeletConfig-and-minted-token path.
   */
  machineConfigServer?: { host: string; port: number };
}

/** A client CSR for a machine's node name that the real kubelet would not send. */
export interface ForgedCsr {
  /** Overrides of the kubelet's PKCS#10 request (another CN, an extra organization, SANs). */
  request?: Parameters<typeof createKubeletClientCsr>[1];
  /** `spec.usages`; the kubelet's (digital signature, client auth) when absent. */
  usages?: string[];
  /** Who submits it: the node bootstrapper (default) or a cluster admin, a requester no kubelet bootstraps as. */
  requester?: 'node-bootstrapper' | 'admin';
}

export type KubeletPhase =
  'booting' | 'withheld' | 'client-csr-pending' | 'node-delayed' | 'serving-csr-pending' | 'joined' | 'failed' | 'gone';

export interface SimulatedKubelet {
  nodeClaim: string;
  providerID: string;
  instanceId: string;
  nodeName?: string;
  ip?: string;
  phase: KubeletPhase;
  clientCsr?: string;
  /** The forged CSRs submitted for this machine, in the order `forgeCsr` listed them. */
  forgedCsrs: string[];
  servingCsr?: string;
  /** The taints the kubelet registered the Node with. */
  registeredTaints?: unknown[];
  /** What the machine booted from: the MCS answer's kubelet settings (with `machineConfigServer`). */
  served?: ServedKubelet;
  /** Why the machine did not join (phase `failed`). */
  error?: string;
  /** Milliseconds from first seeing the NodeClaim to each step. */
  timings: Partial<Record<'clientCsrApproved' | 'nodeCreated' | 'servingCsrApproved', number>>;
}

export interface KubeletSimulator {
  kubelets(): SimulatedKubelet[];
  stop(): Promise<void>;
}

const MCO = 'openshift-machine-config-operator';
const BOOTSTRAPPER = 'node-bootstrapper';
const CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client-kubelet';
const CLIENT_USAGES = ['digital signature', 'client auth'];
const SERVING_SIGNER = 'kubernetes.io/kubelet-serving';
const CURRENT_CONFIG = 'machineconfiguration.openshift.io/currentConfig';
const DESIRED_CONFIG = 'machineconfiguration.openshift.io/desiredConfig';
const MCD_STATE = 'machineconfiguration.openshift.io/state';

type NodeClaim = KubeObj & {
  spec?: { nodeClassRef?: { name?: string } };
  status?: { providerID?: string; capacity?: Record<string, string>; allocatable?: Record<string, string> };
};
type Csr = KubeObj & { status?: { certificate?: string; conditions?: Array<{ type: string; status: string }> } };

export function startKubeletSimulator(opts: KubeletSimulatorOptions): KubeletSimulator {
  const log = opts.log ?? (() => undefined);
  const kc = opts.cluster.kubeConfig();
  const ec2 = new EC2Client(opts.ec2 ?? opts.cluster.ec2Config());
  const kubelets = new Map<string, SimulatedKubelet>();
  const tasks = new Set<Promise<void>>();
  let stopped = false;
  let minted: KubeConfig | undefined;

  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  /** Polls until `probe` yields a value; undefined when the simulator stops or the NodeClaim is gone first. */
  const until = async <T>(k: SimulatedKubelet, probe: () => Promise<T | undefined>, intervalMs = 500): Promise<T | undefined> => {
    while (!stopped && k.phase !== 'gone') {
      try {
        const v = await probe();
        if (v !== undefined) return v;
      } catch {
        // the API or emulator is briefly unavailable: try again
      }
      await sleep(intervalMs);
    }
    return undefined;
  };

  const submitCsr = async (as: KubeConfig, csr: KubeletCsr, signerName: string, usages: string[]): Promise<string> => {
    const res = await kubeRequest<Csr>(as, 'POST', '/apis/certificates.k8s.io/v1/certificatesigningrequests', {
      body: {
        apiVersion: 'certificates.k8s.io/v1',
        kind: 'CertificateSigningRequest',
        metadata: { generateName: 'csr-' },
        spec: { request: Buffer.from(csr.csrPem).toString('base64'), signerName, usages },
      },
    });
    if (res.status !== 201) throw new Error(`submitting a ${signerName} CSR: HTTP ${res.status}: ${res.text.slice(0, 300)}`);
    return res.body.metadata.name;
  };
  const certificateOf = async (name: string) => {
    const csr = await getObject<Csr>(kc, 'certificates.k8s.io/v1', 'CertificateSigningRequest', name);
    return csr?.status?.certificate || undefined;
  };

  const join = async (k: SimulatedKubelet, claim: NodeClaim) => {
    const t0 = Date.now();
    // 1. IMDS.
    const instance = await until(k, async () => {
      const r = await ec2.send(new DescribeInstancesCommand({ InstanceIds: [k.instanceId] }));
      const i = r.Reservations?.[0]?.Instances?.[0];
      return i && ['pending', 'running'].includes(i.State?.Name ?? '') ? i : undefined;
    });
    if (!instance) return;
    const nodeName = (instance.PrivateDnsName ?? '').toLowerCase().replace(/\.$/, '');
    const ip = instance.PrivateIpAddress ?? '';
    if (!nodeName || !ip) throw new Error(`instance ${k.instanceId} has no private DNS name or IP`);
    k.nodeName = nodeName;
    k.ip = ip;

    // 2. Ignition pointer.
    const nodeClass = claim.spec?.nodeClassRef?.name ?? '';
    const pool = `/config/karpenter-${nodeClass}`;
    const pointer = await pointerSource(k.instanceId, nodeClass);
    if (opts.pointerMatches ? !opts.pointerMatches(pointer, nodeClass) : !pointer.endsWith(pool))
      throw new Error(
        `the Ignition pointer merges from ${pointer || '(nothing)'}, not ${opts.pointerMatches ? 'the source' : `the pool (${pool})`} of NodeClass ${nodeClass}`,
      );

    // 3. Registration taints: from what MCS serves, else from the KubeletConfig.
    const served = opts.machineConfigServer ? await bootFromMcs(k, nodeClass, opts.machineConfigServer) : undefined;
    if (opts.machineConfigServer && !served) return;
    k.served = served;
    const kcName = opts.kubeletConfigName ?? `set-karpenter-taint-${nodeClass}`;
    const taints = await until(k, async () => {
      if (served) return served.registerWithTaints;
      if (opts.registrationTaints) return opts.registrationTaints();
      const o = await getObject<KubeObj & { spec?: { kubeletConfig?: { registerWithTaints?: unknown[] } } }>(
        kc,
        'machineconfiguration.openshift.io/v1',
        'KubeletConfig',
        kcName,
      );
      return o?.spec?.kubeletConfig?.registerWithTaints;
    });
    if (!taints) return;

    // 4. Client CSR (and the forged one, when asked).
    if (opts.withholdCsr?.(k.nodeClaim, claim.metadata.labels ?? {})) {
      k.phase = 'withheld';
      log(`${k.nodeClaim}: client CSR withheld (${nodeName})`);
      return;
    }
    const bootstrapper = served
      ? bootstrapKubeConfig(served)
      : (minted ??= await opts.cluster.kubeConfigFor(MCO, BOOTSTRAPPER, { expirationSeconds: 48 * 3600 }));
    for (const forged of opts.forgeCsr?.(k.nodeClaim, nodeName) ?? []) {
      const as = forged.requester === 'admin' ? kc : bootstrapper;
      k.forgedCsrs.push(
        await submitCsr(as, await createKubeletClientCsr(nodeName, forged.request), CLIENT_SIGNER, forged.usages ?? CLIENT_USAGES),
      );
      log(`${k.nodeClaim}: forged client CSR ${k.forgedCsrs.at(-1)} for ${nodeName} submitted`);
    }
    const client = await createKubeletClientCsr(nodeName);
    k.clientCsr = await submitCsr(bootstrapper, client, CLIENT_SIGNER, CLIENT_USAGES);
    k.phase = 'client-csr-pending';
    log(`${k.nodeClaim}: client CSR ${k.clientCsr} for ${nodeName} submitted`);

    // 5. The certificate, then the Node as the node.
    const certificate = await until(k, () => certificateOf(k.clientCsr!));
    if (!certificate) return;
    k.timings.clientCsrApproved = Date.now() - t0;
    const delay = opts.nodeDelayMs?.(k.nodeClaim) ?? 0;
    if (delay > 0) {
      k.phase = 'node-delayed';
      await sleep(delay);
    }
    const asNode = new KubeConfig();
    asNode.loadFromOptions({
      clusters: [{ name: 'local', server: opts.cluster.info.server, caFile: opts.cluster.info.caFile }],
      users: [{ name: 'node', certData: certificate, keyData: Buffer.from(client.privateKeyPem).toString('base64') }],
      contexts: [{ name: 'node', cluster: 'local', user: 'node' }],
      currentContext: 'node',
    });
    const node = await nodeObject(k, claim, instance, taints, served?.nodeLabels ?? {});
    k.registeredTaints = taints;
    const created = await kubeRequest(asNode, 'POST', '/api/v1/nodes', { body: node });
    if (created.status !== 201 && created.status !== 409)
      throw new Error(`creating Node ${nodeName} as the node: HTTP ${created.status}: ${created.text.slice(0, 300)}`);
    k.timings.nodeCreated = Date.now() - t0;
    k.phase = 'serving-csr-pending';
    log(`${k.nodeClaim}: Node ${nodeName} registered`);
    // The machine-config daemon's first boot: the served annotations, only on a Node that has none yet.
    if (served && Object.keys(served.nodeAnnotations).length) await daemonAnnotate(nodeName, served.nodeAnnotations, true);

    // 6. Serving CSR.
    const serving = await createKubeletClientCsr(nodeName, { dnsNames: [nodeName], ipAddresses: [ip] });
    k.servingCsr = await submitCsr(asNode, serving, SERVING_SIGNER, ['digital signature', 'server auth']);
    if (!(await until(k, () => certificateOf(k.servingCsr!)))) return;
    k.timings.servingCsrApproved = Date.now() - t0;
    k.phase = 'joined';
    log(`${k.nodeClaim}: serving CSR ${k.servingCsr} approved; ${nodeName} joined`);
  };

  /** Step 3 with the real MCS: the served config, fetched as Ignition fetches it (500 is retried). */
  const bootFromMcs = async (
    k: SimulatedKubelet,
    nodeClass: string,
    mcs: { host: string; port: number },
  ): Promise<ServedKubelet | undefined> => {
    const text = await userDataText(k.instanceId, nodeClass);
    const pointer = pointerOf(text);
    if (!pointer) throw new Error(`the Ignition pointer of ${k.instanceId} names no merge source with a CA`);
    let last = '';
    const cfg = await until(
      k,
      async () => {
        const r = await fetchServedConfig(pointer, mcs);
        if (r.status === 200 && r.config) return r.config;
        if (String(r.status) !== last) log(`${k.nodeClaim}: ${pointer.source}: HTTP ${r.status} (Ignition retries)`);
        last = String(r.status);
        return undefined;
      },
      2000,
    );
    if (!cfg) return undefined;
    const served = servedKubelet(cfg);
    log(`${k.nodeClaim}: booted from ${pointer.source} (${served.renderedConfig ?? 'rendered config unknown'})`);
    return served;
  };

  /**
   * The machine-config daemon's writes to its Node (it runs as its own ServiceAccount, here as admin).
   * `firstBoot`: only when the Node has no `currentConfig` yet, as the daemon does.
   */
  const daemonAnnotate = async (nodeName: string, annotations: Record<string, string>, firstBoot = false): Promise<void> => {
    if (firstBoot) {
      const node = await getObject(kc, 'v1', 'Node', nodeName);
      if (node?.metadata.annotations?.[CURRENT_CONFIG]) return;
    }
    const r = await kubeRequest(kc, 'PATCH', `/api/v1/nodes/${encodeURIComponent(nodeName)}`, {
      body: { metadata: { annotations } },
      contentType: 'application/merge-patch+json',
    });
    if (r.status !== 200)
      throw new Error(`annotating Node ${nodeName} as the machine-config daemon: HTTP ${r.status}: ${r.text.slice(0, 200)}`);
  };

  /** The daemon's updates: a `desiredConfig` the node controller set is taken as applied at once (no reboot here). */
  const playDaemon = async () => {
    const names = new Set([...kubelets.values()].filter((k) => k.served && k.nodeName).map((k) => k.nodeName!));
    if (!names.size) return;
    const nodes = await listObjects(kc, 'v1', 'Node').catch(() => []);
    for (const n of nodes) {
      const a = n.metadata.annotations ?? {};
      if (!names.has(n.metadata.name) || !a[DESIRED_CONFIG] || !a[CURRENT_CONFIG]) continue;
      if (a[DESIRED_CONFIG] === a[CURRENT_CONFIG] && a[MCD_STATE] === 'Done') continue;
      await daemonAnnotate(n.metadata.name, { [CURRENT_CONFIG]: a[DESIRED_CONFIG]!, [MCD_STATE]: 'Done' }).catch(() => undefined);
      log(`Node ${n.metadata.name}: machine-config daemon applied ${a[DESIRED_CONFIG]}`);
    }
  };

  /** The node bootstrapper as the served kubeconfig has it, pointed at this cluster's API server. */
  const bootstrapKubeConfig = (served: ServedKubelet): KubeConfig => {
    const out = new KubeConfig();
    out.loadFromOptions({
      clusters: [{ name: 'local', server: opts.cluster.info.server, caFile: opts.cluster.info.caFile }],
      users: [{ name: 'bootstrap', token: served.bootstrap.token }],
      contexts: [{ name: 'bootstrap', cluster: 'local', user: 'bootstrap' }],
      currentContext: 'bootstrap',
    });
    return out;
  };

  /** `ignition.config.merge[0].source` of what the machine boots with. */
  const pointerSource = async (instanceId: string, nodeClass: string): Promise<string> => {
    const text = await userDataText(instanceId, nodeClass);
    try {
      const cfg = JSON.parse(text) as { ignition?: { config?: { merge?: Array<{ source?: string }> } } };
      return cfg.ignition?.config?.merge?.[0]?.source ?? '';
    } catch {
      return '';
    }
  };

  /** The userData the machine boots with: the instance's, else its NodeClass's (moto keeps fleet userData only sometimes). */
  const userDataText = async (instanceId: string, nodeClass: string): Promise<string> => {
    let b64: string | undefined;
    try {
      b64 = (await ec2.send(new DescribeInstanceAttributeCommand({ InstanceId: instanceId, Attribute: 'userData' }))).UserData?.Value;
    } catch {
      b64 = undefined;
    }
    let text = b64 ? Buffer.from(b64, 'base64').toString('utf8') : '';
    if (!text) {
      const nc = await getObject<KubeObj & { spec?: { userData?: string } }>(kc, 'karpenter.k8s.aws/v1', 'EC2NodeClass', nodeClass);
      text = nc?.spec?.userData ?? '';
    }
    return text;
  };

  const nodeObject = async (
    k: SimulatedKubelet,
    claim: NodeClaim,
    instance: Instance,
    taints: unknown[],
    servedLabels: Record<string, string>,
  ): Promise<Record<string, unknown>> => {
    const type = instance.InstanceType ?? '';
    const info = (await ec2.send(new DescribeInstanceTypesCommand({ InstanceTypes: [type] as never }))).InstanceTypes?.[0];
    const arch = info?.ProcessorInfo?.SupportedArchitectures?.includes('arm64') ? 'arm64' : 'amd64';
    const zone = instance.Placement?.AvailabilityZone ?? '';
    const fromClaim = claim.status?.capacity ?? {};
    const capacity: Record<string, string> = {
      cpu: String(info?.VCpuInfo?.DefaultVCpus ?? fromClaim.cpu ?? '2'),
      memory: info?.MemoryInfo?.SizeInMiB ? `${info.MemoryInfo.SizeInMiB}Mi` : (fromClaim.memory ?? '8Gi'),
      pods: fromClaim.pods ?? '250',
      'ephemeral-storage': fromClaim['ephemeral-storage'] ?? '120Gi',
    };
    const allocatable = { ...capacity, ...(claim.status?.allocatable ?? {}) };
    const name = k.nodeName!;
    return {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name,
        // What the kubelet sets about itself (NodeRestriction refuses the rest, e.g. node-role.kubernetes.io/*).
        labels: {
          'kubernetes.io/arch': arch,
          'kubernetes.io/os': 'linux',
          'beta.kubernetes.io/arch': arch,
          'beta.kubernetes.io/os': 'linux',
          'kubernetes.io/hostname': name.split('.')[0]!,
          'node.kubernetes.io/instance-type': type,
          'beta.kubernetes.io/instance-type': type,
          'topology.kubernetes.io/region': opts.cluster.info.region,
          'topology.kubernetes.io/zone': zone,
          'node.openshift.io/os_id': 'rhcos',
          // The served --node-labels, less what NodeRestriction refuses a kubelet (OpenShift's API server lets
          // node-role.kubernetes.io/worker through; the upstream one here does not).
          ...Object.fromEntries(Object.entries(servedLabels).filter(([key]) => kubeletMaySet(key))),
        },
        annotations: { [KWOK_NODE_ANNOTATION]: KWOK_NODE_ANNOTATION_VALUE },
      },
      spec: { providerID: k.providerID, taints },
      status: {
        addresses: [
          { type: 'InternalIP', address: k.ip },
          { type: 'Hostname', address: name },
          { type: 'InternalDNS', address: name },
        ],
        capacity,
        allocatable,
        nodeInfo: {
          architecture: arch,
          operatingSystem: 'linux',
          osImage: 'Red Hat Enterprise Linux CoreOS (simulated)',
          kubeletVersion: 'v1.36.3',
          containerRuntimeVersion: 'cri-o://1.36.0',
        },
      },
    };
  };

  const poll = async () => {
    const claims = await listObjects<NodeClaim>(kc, 'karpenter.sh/v1', 'NodeClaim').catch(() => undefined);
    if (!claims) return;
    const seen = new Set<string>();
    for (const claim of claims) {
      const uid = String(claim.metadata.uid ?? claim.metadata.name);
      seen.add(uid);
      const providerID = claim.status?.providerID;
      if (kubelets.has(uid) || !providerID || claim.metadata.deletionTimestamp) continue;
      const instanceId = providerID.split('/').pop() ?? '';
      const k: SimulatedKubelet = { nodeClaim: claim.metadata.name, providerID, instanceId, phase: 'booting', forgedCsrs: [], timings: {} };
      kubelets.set(uid, k);
      log(`${k.nodeClaim}: instance ${instanceId} booting`);
      const task = join(k, claim)
        .catch((e: Error) => {
          if (k.phase === 'gone' || stopped) return;
          k.phase = 'failed';
          k.error = e.message;
          log(`${k.nodeClaim}: the machine failed to join: ${e.message}`);
        })
        .finally(() => tasks.delete(task));
      tasks.add(task);
    }
    for (const [uid, k] of kubelets) if (!seen.has(uid)) k.phase = 'gone';
    if (opts.machineConfigServer) await playDaemon();
  };

  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> = Promise.resolve();
  const loop = () => {
    if (stopped) return;
    current = poll().finally(() => {
      if (!stopped) timer = setTimeout(loop, opts.pollMs ?? 1000);
    });
  };
  loop();

  return {
    kubelets: () => [...kubelets.values()].map((k) => ({ ...k, forgedCsrs: [...k.forgedCsrs], timings: { ...k.timings } })),
    stop: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      await current.catch(() => undefined);
      await Promise.all([...tasks]);
      ec2.destroy();
    },
  };
}

/** Whether NodeRestriction lets a kubelet set this label on its own Node (upstream rules). */
export function kubeletMaySet(key: string): boolean {
  const [prefix, name] = key.includes('/') ? [key.slice(0, key.indexOf('/')), key.slice(key.indexOf('/') + 1)] : ['', key];
  if (!name) return false;
  const kubeNamespace = (p: string) => p === 'kubernetes.io' || p.endsWith('.kubernetes.io') || p === 'k8s.io' || p.endsWith('.k8s.io');
  if (!kubeNamespace(prefix)) return true;
  if (prefix === 'kubelet.kubernetes.io' || prefix.endsWith('.kubelet.kubernetes.io')) return true;
  if (prefix === 'node.kubernetes.io' || prefix.endsWith('.node.kubernetes.io')) return true;
  return [
    'kubernetes.io/hostname',
    'kubernetes.io/arch',
    'kubernetes.io/os',
    'beta.kubernetes.io/instance-type',
    'node.kubernetes.io/instance-type',
    'failure-domain.beta.kubernetes.io/region',
    'failure-domain.beta.kubernetes.io/zone',
    'topology.kubernetes.io/region',
    'topology.kubernetes.io/zone',
    'beta.kubernetes.io/arch',
    'beta.kubernetes.io/os',
  ].includes(key);
}
