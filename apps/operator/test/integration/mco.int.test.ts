import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  aNodePool,
  aPoolWorkload,
  applyObject,
  deleteObject,
  fetchServedConfig,
  getObject,
  ignitionFile,
  karpenterBinary,
  listObjects,
  loadToolchain,
  pointerOf,
  servedKubelet,
  startOpenShiftAwsCluster,
  startRealOperand,
  type ClusterHandle,
  type IgnitionConfig,
  type KubeObj,
  type MachineConfigOperator,
  type RealOperand,
} from '@karpenter-operator/testkit';
import { eventuallyWith } from '../support/eventually.js';
import { conditionOf, type Cond } from '../support/k8s.js';
import { installManifests, REPO, startOperator, type OperatorProcess } from '../support/operator-process.js';
import { applyKarpenterAndCredentials, isConverged, KARPENTER } from '../support/scenario.js';

/**
 * The real Machine Config Operator in the loop: machine-config-controller (MCC) and machine-config-server (MCS)
 * built from MCO's Go module (`npm run setup`) render and serve the pools the operator creates, and a machine
 * the real Karpenter launches boots from what MCS serves. A cluster of its own (MCO's controllers would
 * otherwise act on every other file's pools).
 *
 * Time bounds are several times what a loaded two-core machine needed: MCO up 25 s, a new pool rendered with
 * its taint 10–20 s, Karpenter up and its NodeClass Ready 110–150 s, pending pod → Running 15–40 s.
 */
const MC_API = 'machineconfiguration.openshift.io/v1';
const NC = ['karpenter.k8s.aws/v1', 'EC2NodeClass'] as const;
const NODECLAIM = ['karpenter.sh/v1', 'NodeClaim'] as const;
const TAINT = { key: 'karpenter.sh/unregistered', value: 'true', effect: 'NoExecute' };
const SECOND = 'second';
const POOL = 'mco-e2e';
const WORKLOAD_NS = 'mco-e2e';

type Pool = KubeObj & {
  spec?: { configuration?: { name?: string; source?: Array<{ name?: string }> } };
  status?: { configuration?: { name?: string; source?: Array<{ name?: string }> }; conditions?: Cond[] };
};
type MachineConfig = KubeObj & { spec?: { config?: IgnitionConfig } };
type WithConditions = KubeObj & { status?: { conditions?: Cond[]; providerID?: string; nodeName?: string } };

let cluster: ClusterHandle;
let mco: MachineConfigOperator;
let op: OperatorProcess | undefined;
let operand: RealOperand | undefined;
let runnerDir: string | undefined;
const kc = () => cluster.kubeConfig();
const harnessLog: string[] = [];

async function diagnostics(): Promise<string> {
  const pools = await listObjects<Pool>(kc(), MC_API, 'MachineConfigPool').catch(() => [] as Pool[]);
  const claims = await listObjects<WithConditions>(kc(), ...NODECLAIM).catch(() => [] as WithConditions[]);
  return [
    `pools: ${pools.map((p) => `${p.metadata.name} spec=${p.spec?.configuration?.name ?? '-'} status=${p.status?.configuration?.name ?? '-'} [${(p.status?.configuration?.source ?? []).map((s) => s.name).join(',')}]`).join('\n  ')}`,
    `NodeClaims: ${claims.map((c) => `${c.metadata.name} ${(c.status?.conditions ?? []).map((x) => `${x.type}=${x.status}`).join(' ')}`).join('\n  ') || 'none'}`,
    `kubelets: ${JSON.stringify(operand?.kubelets.kubelets().map((k) => ({ claim: k.nodeClaim, phase: k.phase, error: k.error })) ?? [])}`,
    `harness:\n${harnessLog.slice(-20).join('\n')}`,
    `operator log:\n${op?.logs().split('\n').slice(-20).join('\n') ?? ''}`,
  ].join('\n');
}

const eventually = eventuallyWith({ processes: [{ name: 'operator', get: () => op }], diagnostics });

const userDataOf = async (nc: string) =>
  (await getObject<KubeObj & { spec?: { userData?: string } }>(kc(), ...NC, nc))?.spec?.userData ?? '';

/** `registerWithTaints` of the kubelet configuration a MachineConfig writes (`undefined`: it writes none). */
function kubeletTaintsOf(mc: MachineConfig | undefined): unknown[] | undefined {
  const text = mc?.spec?.config ? ignitionFile(mc.spec.config, '/etc/kubernetes/kubelet.conf') : undefined;
  if (text === undefined) return undefined;
  return (parseYaml(text) as { registerWithTaints?: unknown[] } | null)?.registerWithTaints ?? [];
}

/** The pool's rendered configuration once it lists `mc` in its source. */
async function renderedWith(pool: string, mc: string, timeoutMs: number): Promise<{ name: string; source: string[] }> {
  return eventually(
    `MachineConfigPool ${pool} rendered by MCC from ${mc}`,
    async () => {
      const p = await getObject<Pool>(kc(), MC_API, 'MachineConfigPool', pool);
      const c = p?.status?.configuration;
      const source = (c?.source ?? []).map((s) => s.name ?? '');
      return c?.name?.startsWith(`rendered-${pool}-`) && source.includes(mc) ? { name: c.name, source } : undefined;
    },
    timeoutMs,
  );
}

describe('the real Machine Config Operator renders and serves the Karpenter pools', () => {
  beforeAll(async () => {
    const binary = karpenterBinary(loadToolchain());
    const started = await startOpenShiftAwsCluster({ machineConfig: 'real' });
    cluster = started.cluster;
    mco = started.mco!;
    await installManifests(cluster);
    op = await startOperator(cluster, {
      name: 'karpenter-operator-mco',
      leaderElect: false,
      env: {
        OPERATOR_IMAGE: 'quay.io/openshift/origin-karpenter-operator:test',
        OPERAND_AWS_ENDPOINT_URL_EC2: cluster.info.ec2Endpoint!,
        AWS_ENDPOINT_URL_SQS: cluster.info.ec2Endpoint!,
      },
    });
    await applyKarpenterAndCredentials(cluster, {});
    await eventually('convergence', async () => isConverged(cluster), 180_000);
    runnerDir = mkdtempSync(join(tmpdir(), 'ko-mco-operand-'));
    operand = startRealOperand({
      cluster,
      karpenterBinary: binary,
      operatorEntry: join(REPO, 'apps/operator/dist/main.js'),
      baseDir: runnerDir,
      log: (l) => harnessLog.push(`${new Date().toISOString()} ${l}`),
      kubelets: { machineConfigServer: mco.server },
    });
    await applyObject(kc(), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: WORKLOAD_NS } });
  }, 420_000);

  afterAll(async () => {
    await deleteObject(kc(), 'v1', 'Namespace', WORKLOAD_NS).catch(() => false);
    await deleteObject(kc(), 'karpenter.sh/v1', 'NodePool', POOL).catch(() => false);
    await operand?.stop();
    await op?.stop();
    await cluster?.stop();
    if (runnerDir) rmSync(runnerDir, { recursive: true, force: true });
  }, 180_000);

  it('KubeletConfig set-karpenter-taint-default: Success, its MachineConfig taints pool karpenter-default only', async () => {
    const kcObj = await eventually(
      'KubeletConfig set-karpenter-taint-default synced by MCC (Success)',
      async () => {
        const o = await getObject<WithConditions>(kc(), MC_API, 'KubeletConfig', 'set-karpenter-taint-default');
        return o?.status?.conditions?.at(-1)?.type === 'Success' && o.status.conditions.at(-1)?.status === 'True' ? o : undefined;
      },
      120_000,
    );
    expect(kcObj.metadata.finalizers).toContain('99-karpenter-default-generated-kubelet');
    const mc = await getObject<MachineConfig>(kc(), MC_API, 'MachineConfig', '99-karpenter-default-generated-kubelet');
    expect(mc, 'MachineConfig 99-karpenter-default-generated-kubelet').toBeDefined();
    expect(mc!.metadata.labels?.['machineconfiguration.openshift.io/role']).toBe('karpenter-default');
    expect(kubeletTaintsOf(mc)).toContainEqual(TAINT);
    // The worker pool's kubelet configurations (MCO's own and generated ones) register no Karpenter taint.
    const workerKubelet = (await listObjects<MachineConfig>(kc(), MC_API, 'MachineConfig')).filter(
      (m) => m.metadata.labels?.['machineconfiguration.openshift.io/role'] === 'worker' && kubeletTaintsOf(m) !== undefined,
    );
    expect(workerKubelet.length).toBeGreaterThan(0);
    for (const m of workerKubelet) expect(JSON.stringify(kubeletTaintsOf(m)), m.metadata.name).not.toContain(TAINT.key);
  }, 180_000);

  it('pool karpenter-default is rendered by MCC from the worker MachineConfigs and the taint MachineConfig', async () => {
    const r = await renderedWith('karpenter-default', '99-karpenter-default-generated-kubelet', 120_000);
    expect(r.source).toEqual(expect.arrayContaining(['00-worker', '01-worker-kubelet', '01-worker-container-runtime']));
    // MCC names rendered configs by the MD5 of their content.
    expect(r.name).toMatch(/^rendered-karpenter-default-[0-9a-f]{32}$/);
    const worker = await getObject<Pool>(kc(), MC_API, 'MachineConfigPool', 'worker');
    expect((worker?.status?.configuration?.source ?? []).map((s) => s.name)).not.toContain('99-karpenter-default-generated-kubelet');
  }, 180_000);

  it('MCS serves the pool to the NodeClass pointer: Ignition 3 with the taint, 2.2 without Accept, 500 for an unknown pool', async () => {
    const userData = await eventually(
      'EC2NodeClass default pointing at /config/karpenter-default',
      async () => {
        const u = await userDataOf('default');
        return u.includes('/config/karpenter-default"') ? u : undefined;
      },
      120_000,
    );
    const pointer = pointerOf(userData);
    expect(pointer, 'an Ignition pointer config in userData').toBeDefined();
    const v3 = await fetchServedConfig(pointer!, mco.server);
    expect(v3.status, v3.body.slice(0, 300)).toBe(200);
    expect(v3.config?.ignition?.version).toMatch(/^3\./);
    const served = servedKubelet(v3.config!);
    expect(served.registerWithTaints).toContainEqual(TAINT);
    expect(served.nodeLabels).toHaveProperty('node-role.kubernetes.io/worker');
    expect(served.bootstrap.token.length).toBeGreaterThan(0);

    const v2 = await fetchServedConfig(pointer!, mco.server, { accept: null });
    expect(v2.status).toBe(200);
    expect(v2.config?.ignition?.version).toBe('2.2.0');

    const unknown = await fetchServedConfig(
      { ...pointer!, source: pointer!.source.replace(/\/config\/[^/]+$/, '/config/karpenter-nosuch') },
      mco.server,
    );
    expect(unknown.status).toBe(500);
  }, 180_000);

  it('a second NodeClass made later: its pool renders with its own taint before its userData points there', async () => {
    const base = (await getObject<KubeObj & { spec: Record<string, unknown> }>(kc(), ...NC, 'default'))!.spec;
    const { userData: _drop, ...spec } = base;
    // Watch the NodeClass from the moment it exists: it must never point at a pool whose served config lacks the taint.
    const seen: { status: number; taints: unknown[] }[] = [];
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const u = await userDataOf(SECOND).catch(() => '');
        const p = pointerOf(u);
        if (p?.source.endsWith(`/config/karpenter-${SECOND}`) && seen.length === 0) {
          const r = await fetchServedConfig(p, mco.server).catch((e: Error) => ({ status: 0, body: e.message, config: undefined }));
          const taints = r.config ? servedKubelet(r.config).registerWithTaints : [];
          seen.push({ status: r.status, taints: taints ?? [] });
        }
        await new Promise((res) => setTimeout(res, 200));
      }
    })();
    await applyObject(kc(), { apiVersion: NC[0], kind: NC[1], metadata: { name: SECOND }, spec });
    try {
      const r = await renderedWith(`karpenter-${SECOND}`, `99-karpenter-${SECOND}-generated-kubelet`, 180_000);
      expect(r.source).toContain('00-worker');
      await eventually(
        `EC2NodeClass ${SECOND} pointing at /config/karpenter-${SECOND}`,
        async () => (await userDataOf(SECOND)).includes(`/config/karpenter-${SECOND}"`),
        120_000,
      );
      await eventually('the watcher to have fetched the first served config', async () => seen.length >= 1, 30_000);
    } finally {
      watching = false;
      await watch;
    }
    expect(seen[0], 'what MCS served when the NodeClass first pointed at the pool').toEqual({ status: 200, taints: [TAINT] });
    const generated = await getObject<MachineConfig>(kc(), MC_API, 'MachineConfig', `99-karpenter-${SECOND}-generated-kubelet`);
    expect(kubeletTaintsOf(generated)).toContainEqual(TAINT);
  }, 400_000);

  it('the real Karpenter launches a node of the second NodeClass; it boots from MCS, registers tainted, joins, the pod runs', async () => {
    await eventually(
      'two operand replicas running the real controller',
      async () => operand!.runner.replicas().filter((r) => r.state === 'running').length === 2,
      360_000,
    );
    await eventually(
      `EC2NodeClass ${SECOND} Ready`,
      async () => conditionOf(await getObject<WithConditions>(kc(), ...NC, SECOND), 'Ready')?.status === 'True',
      360_000,
    );
    const userDataBefore = { default: await userDataOf('default'), second: await userDataOf(SECOND) };
    await applyObject(kc(), aNodePool(POOL, { arch: 'amd64', nodeClass: SECOND, instanceTypes: ['m6i.large', 'm5.large'] }));
    await applyObject(kc(), aPoolWorkload('inflate', WORKLOAD_NS, { pool: POOL, replicas: 1, cpu: '1', memory: '1Gi' }));
    const ready = await eventually(
      'a NodeClaim of the pool Registered, Initialized and Ready',
      async () =>
        (await listObjects<WithConditions>(kc(), ...NODECLAIM)).find(
          (c) =>
            c.metadata.labels?.['karpenter.sh/nodepool'] === POOL &&
            ['Registered', 'Initialized', 'Ready'].every((t) => conditionOf(c, t)?.status === 'True'),
        ),
      480_000,
    );
    const sim = operand!.kubelets.kubelets().find((k) => k.nodeClaim === ready.metadata.name)!;
    expect(sim.served, 'the machine booted from what MCS served').toBeDefined();
    expect(sim.served!.renderedConfig ?? '').toMatch(new RegExp(`^rendered-karpenter-${SECOND}-`));
    expect(sim.registeredTaints).toContainEqual(TAINT);
    const csr = await getObject<WithConditions>(kc(), 'certificates.k8s.io/v1', 'CertificateSigningRequest', sim.clientCsr!);
    expect(conditionOf(csr, 'Approved')?.status).toBe('True');
    await eventually(
      'the pod Running on the new node',
      async () => {
        const pods = await listObjects<KubeObj & { spec: { nodeName?: string }; status?: { phase?: string } }>(
          kc(),
          'v1',
          'Pod',
          WORKLOAD_NS,
          'app=inflate',
        );
        return pods.some((p) => p.spec.nodeName === ready.status!.nodeName && p.status?.phase === 'Running');
      },
      180_000,
    );
    // MCC's certificate rotation ran before the operator copied the pointer; nothing rewrote it since, and no
    // NodeClaim is drifted.
    await new Promise((r) => setTimeout(r, 20_000));
    expect({ default: await userDataOf('default'), second: await userDataOf(SECOND) }).toEqual(userDataBefore);
    const drifted = (await listObjects<WithConditions>(kc(), ...NODECLAIM)).filter((c) => conditionOf(c, 'Drifted')?.status === 'True');
    expect(drifted.map((c) => c.metadata.name)).toEqual([]);
  }, 1_200_000);

  it('a NodeClass, its NodePool and a pending pod made at once: nothing launches before MCS serves its pool, the first machine joins', async () => {
    const third = 'third';
    const pool3 = 'mco-at-once';
    const hold = [{ tags: { 'karpenter-operator.openshift.io/awaiting-machineconfigpool': `karpenter-${third}` } }];
    const base = (await getObject<KubeObj & { spec: Record<string, unknown> }>(kc(), ...NC, 'default'))!.spec;
    const { userData: _drop, ...spec } = base;
    // What the NodeClass and the pool's NodeClaims looked like, from the moment they were made.
    let heldSeen = 0;
    const claimsSeen = new Set<string>();
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const nc = await getObject<KubeObj & { spec?: { amiSelectorTerms?: unknown } }>(kc(), ...NC, third).catch(() => undefined);
        if (JSON.stringify(nc?.spec?.amiSelectorTerms) === JSON.stringify(hold)) heldSeen++;
        const claims = await listObjects<WithConditions>(kc(), ...NODECLAIM, undefined, `karpenter.sh/nodepool=${pool3}`).catch(
          () => [] as WithConditions[],
        );
        for (const c of claims) claimsSeen.add(c.metadata.name);
        await new Promise((res) => setTimeout(res, 250));
      }
    })();
    const started = Date.now();
    await Promise.all([
      applyObject(kc(), { apiVersion: NC[0], kind: NC[1], metadata: { name: third }, spec }),
      applyObject(kc(), aNodePool(pool3, { arch: 'amd64', nodeClass: third, instanceTypes: ['m6i.large', 'm5.large'] })),
      applyObject(kc(), aPoolWorkload('at-once', WORKLOAD_NS, { pool: pool3, replicas: 1, cpu: '1', memory: '1Gi' })),
    ]);
    try {
      // Without the hold, the first machine boots /config/worker, registers untainted, is refused and is only
      // replaced after Karpenter's 15-minute registration TTL: this bound is well inside that.
      const ready = await eventually(
        `a NodeClaim of ${pool3} Registered and Ready`,
        async () =>
          (await listObjects<WithConditions>(kc(), ...NODECLAIM, undefined, `karpenter.sh/nodepool=${pool3}`)).find((c) =>
            ['Registered', 'Ready'].every((t) => conditionOf(c, t)?.status === 'True'),
          ),
        600_000,
      );
      const joinedS = (Date.now() - started) / 1000;
      const sim = operand!.kubelets.kubelets().find((k) => k.nodeClaim === ready.metadata.name)!;
      expect(sim.served!.renderedConfig ?? '', 'the machine booted from its own pool').toMatch(new RegExp(`^rendered-karpenter-${third}-`));
      expect(sim.registeredTaints).toContainEqual(TAINT);
      expect(await userDataOf(third)).toContain(`/config/karpenter-${third}"`);
      expect(heldSeen, `EC2NodeClass ${third} observed held while MCC rendered its pool`).toBeGreaterThan(0);
      expect([...claimsSeen], `NodeClaims of ${pool3}: only the one that joined`).toEqual([ready.metadata.name]);
      console.log(
        `[mco] NodeClass+NodePool+pod at once: joined in ${joinedS.toFixed(1)} s, held for ${heldSeen} observations, ${claimsSeen.size} NodeClaim`,
      );
    } finally {
      watching = false;
      await watch;
      await deleteObject(kc(), 'apps/v1', 'Deployment', 'at-once', WORKLOAD_NS).catch(() => false);
      await deleteObject(kc(), 'karpenter.sh/v1', 'NodePool', pool3).catch(() => false);
    }
  }, 900_000);

  /** `MachineConfigPoolsReady` of the Karpenter CR and ClusterOperator `karpenter`'s Degraded, once `ok` holds for both. */
  async function poolsReport(what: string, ok: (ready: Cond | undefined, degraded: Cond | undefined) => boolean) {
    return eventually(
      what,
      async () => {
        const cr = await getObject<WithConditions>(kc(), KARPENTER.apiVersion, KARPENTER.kind, 'default');
        const co = await getObject<WithConditions>(kc(), 'config.openshift.io/v1', 'ClusterOperator', 'karpenter');
        const ready = conditionOf(cr, 'MachineConfigPoolsReady');
        const degraded = conditionOf(co, 'Degraded');
        return ok(ready, degraded) ? { ready: ready!, degraded: degraded! } : undefined;
      },
      180_000,
    );
  }

  it("a MachineConfig MCC cannot render into the second pool: the NodeClass keeps its userData, the CR and ClusterOperator name the pool and MCC's words", async () => {
    const before = await userDataOf(SECOND);
    const bad = {
      apiVersion: MC_API,
      kind: 'MachineConfig',
      metadata: { name: '50-bad-kernel', labels: { 'machineconfiguration.openshift.io/role': `karpenter-${SECOND}` } },
      spec: { kernelType: 'bogus', config: { ignition: { version: '3.2.0' } } },
    };
    await applyObject(kc(), bad);
    try {
      const r = await poolsReport(
        `MachineConfigPoolsReady=False (MachineConfigPoolRenderDegraded) and ClusterOperator Degraded`,
        (ready, degraded) => ready?.status === 'False' && ready.reason === 'MachineConfigPoolRenderDegraded' && degraded?.status === 'True',
      );
      expect(r.ready.message).toContain(`karpenter-${SECOND}`);
      expect(r.ready.message).toContain('kernelType=bogus is invalid');
      expect(r.degraded.message).toContain(`karpenter-${SECOND}`);
      expect(await userDataOf(SECOND)).toBe(before);
    } finally {
      await deleteObject(kc(), MC_API, 'MachineConfig', bad.metadata.name);
    }
    await poolsReport(
      'MachineConfigPoolsReady=True and not Degraded once the MachineConfig is gone',
      (ready, degraded) => ready?.status === 'True' && degraded?.status === 'False',
    );
    expect(await userDataOf(SECOND)).toBe(before);
  }, 400_000);

  it('an admin KubeletConfig on the second pool without the taint is reported as overriding it; repeating the taint is accepted', async () => {
    const before = await userDataOf(SECOND);
    const admin = (taints: unknown[] | undefined) => ({
      apiVersion: MC_API,
      kind: 'KubeletConfig',
      metadata: { name: 'admin-max-pods' },
      spec: {
        machineConfigPoolSelector: { matchLabels: { [`pools.operator.machineconfiguration.openshift.io/karpenter-${SECOND}`]: '' } },
        kubeletConfig: { maxPods: 200, ...(taints ? { registerWithTaints: taints } : {}) },
      },
    });
    await applyObject(kc(), admin(undefined));
    try {
      const r = await poolsReport(
        'MachineConfigPoolsReady=False (RegistrationTaintOverridden)',
        (ready, degraded) => ready?.status === 'False' && ready.reason === 'RegistrationTaintOverridden' && degraded?.status === 'True',
      );
      // MCC names the second KubeletConfig's MachineConfig with a suffix: it sorts after the operator's.
      expect(r.ready.message).toContain(`99-karpenter-${SECOND}-generated-kubelet-1`);
      expect(r.ready.message).toContain('KubeletConfig admin-max-pods');
      expect(await userDataOf(SECOND)).toBe(before);

      // As docs/node-configuration.md says: an admin KubeletConfig for Karpenter pools repeats the taint.
      await applyObject(kc(), admin([TAINT]));
      await poolsReport(
        'MachineConfigPoolsReady=True once the admin KubeletConfig repeats the taint',
        (ready, degraded) => ready?.status === 'True' && degraded?.status === 'False',
      );
      // The operator reads the KubeletConfig's spec; MCC regenerates its MachineConfig from it a moment later.
      await eventually(
        `MachineConfig 99-karpenter-${SECOND}-generated-kubelet-1 registering the taint`,
        async () => {
          const mc = await getObject<MachineConfig>(kc(), MC_API, 'MachineConfig', `99-karpenter-${SECOND}-generated-kubelet-1`);
          return (kubeletTaintsOf(mc) ?? []).some((t) => {
            const x = t as Record<string, unknown>;
            return x['key'] === TAINT.key && x['value'] === TAINT.value && x['effect'] === TAINT.effect;
          });
        },
        120_000,
      );
    } finally {
      await deleteObject(kc(), MC_API, 'KubeletConfig', 'admin-max-pods').catch(() => false);
    }
    expect(await userDataOf(SECOND)).toBe(before);
  }, 400_000);
});
