import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { CreateTagsCommand, DeleteTagsCommand, EC2Client } from '@aws-sdk/client-ec2';
import {
  aNodePool,
  aPoolWorkload,
  applyObject,
  deleteObject,
  getObject,
  instancesOfPool,
  karpenterBinary,
  kubeconfigText,
  kubeRequest,
  listObjects,
  loadToolchain,
  startHostedRealOperand,
  waitFor,
  type ClusterHandle,
  type KubeObj,
  type RealOperand,
} from '@karpenter-operator/testkit';
import { seededWorld, testCluster } from '@karpenter-operator/testkit/vitest';
import { GUEST_OPERATOR_SUBJECT } from '../../src/manifests/hypershift-rbac.js';
import { eventuallyWith } from '../support/eventually.js';
import { conditionOf, type Cond } from '../support/k8s.js';
import { operatorContainer } from '../support/hypershift-deployment.js';
import {
  AUTONODE,
  createHostedControlPlane,
  HCP_TYPE,
  hcpPath,
  hostedControlPlane,
  hyperShiftCredentialsSecret,
  ignitionUserData,
  OPERATOR_SA,
  prepareHostedClusters,
  startIgnitionStandIn,
  startOperatorAsHyperShift,
} from '../support/hypershift-env.js';
import { ensureBuilt, REPO, type OperatorProcess } from '../support/operator-process.js';

/**
 * HyperShift end to end with the real Karpenter: the operand Deployment the operator renders in the HCP
 * namespace of the management cluster runs as processes (the real karpenter-provider-aws controller and a
 * stand-in for HyperShift's token minter, the runner's one fake being which program stands for which image),
 * authenticates to the EC2 emulator through STS AssumeRoleWithWebIdentity with HyperShift's
 * `karpenter-credentials` profile and the token the minter keeps for the guest's `kube-system/karpenter`,
 * and provisions a node that joins the GUEST cluster through CSRs the operator approves there.
 *
 * What HyperShift writes in production the test writes: the HCP, `karpenter-credentials`, the ignition
 * Secrets (a stand-in that reacts only to OpenshiftEC2NodeClass) and the guest kubeconfig Secret
 * `service-network-admin-kubeconfig`. HyperShift's is an admin kubeconfig; this one authenticates as the
 * guest's `kube-system/karpenter`, so that every request Karpenter makes is checked against the RBAC the
 * operator applied in the guest. The one grant the test adds is what the admin kubeconfig gives the token
 * minter: creating that ServiceAccount's own token.
 *
 * Time bounds are several times what a two-core machine needed (the whole file 65-72 s; the setup 11 s, its
 * guest cluster 8 s; the operand pod running 2 s, 81 s under load; EC2NodeClass default Ready 9-12 s; NodeClaim Launched 2 s, Ready 1-2 s; the
 * pod Running 1-2 s; the NodePool's node and instance gone 13-18 s).
 */
const NS = 'clusters-e2e';
const HCP = 'e2e';
const MGMT_USER = `system:serviceaccount:${NS}:${OPERATOR_SA}`;
const GUEST_OPERATOR_USER = `system:serviceaccount:${GUEST_OPERATOR_SUBJECT.namespace}:${GUEST_OPERATOR_SUBJECT.name}`;
const KARPENTER_SA = { namespace: 'kube-system', name: 'karpenter' };
const KARPENTER_USER = `system:serviceaccount:${KARPENTER_SA.namespace}:${KARPENTER_SA.name}`;
const GUEST_KUBECONFIG_SECRET = 'service-network-admin-kubeconfig';
const POOL = 'hcp-e2e';
const INSTANCE_TYPES = ['m6i.large', 'm6i.xlarge', 'm5.large', 'm5.xlarge'];
const WORKLOAD_NS = 'hcp-e2e-workload';
const NC = ['karpenter.k8s.aws/v1', 'EC2NodeClass'] as const;
const NODECLAIM = ['karpenter.sh/v1', 'NodeClaim'] as const;
const TOKEN_MINTER_IMAGE = operatorContainer().env!.find((e) => e.name === 'TOKEN_MINTER_IMAGE')!.value!;

const mgmt = testCluster();
const world = seededWorld();
let guest: ClusterHandle | undefined;
let dir: string | undefined;
let runnerDir: string | undefined;
let op: OperatorProcess | undefined;
let operand: RealOperand | undefined;
let stopIgnition: (() => void) | undefined;
const started = new Date();
const harnessLog: string[] = [];
const note = (line: string) => harnessLog.push(`${new Date().toISOString()} ${line}`);
/** How long each step took, printed at the end (for the time bounds). */
const took: Record<string, number> = {};

type WithConditions = KubeObj & { status?: { conditions?: Cond[]; providerID?: string; nodeName?: string } };
const g = () => guest!.kubeConfig();
const condTrue = (o: WithConditions | undefined, type: string) => conditionOf(o, type)?.status === 'True';

async function diagnostics(): Promise<string> {
  const claims = await listObjects<WithConditions>(g(), ...NODECLAIM).catch(() => [] as WithConditions[]);
  const nc = await getObject<WithConditions>(g(), ...NC, 'default').catch(() => undefined);
  return [
    `EC2NodeClass default: ${JSON.stringify({ spec: nc?.spec, status: nc?.status })}`,
    `NodeClaims: ${claims.map((c) => `${c.metadata.name} ${(c.status?.conditions ?? []).map((x) => `${x.type}=${x.status}`).join(' ')}`).join('; ') || 'none'}`,
    `kubelets: ${JSON.stringify(operand?.kubelets.kubelets().map((k) => ({ claim: k.nodeClaim, phase: k.phase, error: k.error })) ?? [])}`,
    `harness log:\n${harnessLog.slice(-25).join('\n')}`,
    `operand crashes: ${JSON.stringify(operand?.runner.crashes().map((c) => ({ container: c.container, exitCode: c.exitCode, tail: c.logTail.slice(-600) })) ?? [])}`,
    `operand logs:\n${operand?.runner.logTails(25) ?? '(not started)'}`,
    `operator log tail:\n${op?.logs().split('\n').slice(-10).join('\n') ?? ''}`,
  ].join('\n');
}

/** Runs one step of the setup, recording how long it took under `what` (for the time bounds). */
async function timed<T>(what: string, step: () => Promise<T>): Promise<T> {
  const t0 = Date.now();
  const v = await step();
  took[what] = Math.round((Date.now() - t0) / 1000);
  return v;
}

/** `waitFor` whose failure carries the diagnostics; records how long it took under `what`. */
const eventually = eventuallyWith({
  processes: [{ name: 'operator', get: () => op }],
  diagnostics,
  took,
});

/**
 * `service-network-admin-kubeconfig` as HyperShift writes it in the HCP namespace (key `kubeconfig`, the guest
 * API server, its CA inline), authenticating as the guest's kube-system/karpenter (see above).
 */
async function writeGuestKubeconfigSecret(): Promise<void> {
  const token = await guest!.tokenFor(KARPENTER_SA.namespace, KARPENTER_SA.name, { expirationSeconds: 7200 });
  const text = kubeconfigText({ server: guest!.info.server, caFile: guest!.info.caFile, user: { token }, name: 'karpenter' });
  const doc = JSON.parse(text) as { clusters: Array<{ cluster: Record<string, string> }> };
  const cluster = doc.clusters[0]!.cluster;
  cluster['certificate-authority-data'] = readFileSync(guest!.info.caFile).toString('base64');
  delete cluster['certificate-authority'];
  await applyObject(mgmt.kubeConfig(), {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: GUEST_KUBECONFIG_SECRET, namespace: NS },
    type: 'Opaque',
    data: { kubeconfig: Buffer.from(JSON.stringify(doc)).toString('base64') },
  } as KubeObj);
}

/** What HyperShift's admin kubeconfig lets the token minter do: create the token of kube-system/karpenter. */
async function grantMinterItsToken(): Promise<void> {
  const name = 'e2e-token-minter';
  await applyObject(g(), {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name, namespace: KARPENTER_SA.namespace },
    rules: [{ apiGroups: [''], resources: ['serviceaccounts/token'], resourceNames: [KARPENTER_SA.name], verbs: ['create'] }],
  } as KubeObj);
  await applyObject(g(), {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name, namespace: KARPENTER_SA.namespace },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: [{ kind: 'ServiceAccount', ...KARPENTER_SA }],
  } as KubeObj);
}

/** The registration taints of ConfigMap `set-karpenter-taint` in the HCP namespace (its KubeletConfig), as the machines get them. */
async function registrationTaints(): Promise<unknown[] | undefined> {
  const cm = await getObject<KubeObj & { data?: { config?: string } }>(mgmt.kubeConfig(), 'v1', 'ConfigMap', 'set-karpenter-taint', NS);
  if (!cm?.data?.config) return undefined;
  const cfg = parseYaml(cm.data.config) as { spec?: { kubeletConfig?: { registerWithTaints?: unknown[] } } };
  return cfg.spec?.kubeletConfig?.registerWithTaints;
}

/**
 * HyperShift's AWS infrastructure carries `karpenter.sh/discovery: <infraID>` on the guest's node security
 * group, which OpenshiftEC2NodeClass `default` selects by: the seeded world (an OpenShift cluster's) gets that
 * tag, and loses it again after this file. Its subnets are selected as seeded: the private ones carry the
 * internal load-balancer role and the cluster tag, as HyperShift's do.
 */
async function tagDiscovery(add: boolean): Promise<void> {
  const ec2 = new EC2Client(mgmt.ec2Config());
  try {
    const Resources = [world.ec2!.securityGroupIds.node];
    const Tags = [{ Key: 'karpenter.sh/discovery', Value: world.facts.infraId }];
    if (add) await ec2.send(new CreateTagsCommand({ Resources, Tags }));
    else await ec2.send(new DeleteTagsCommand({ Resources, Tags }));
  } finally {
    ec2.destroy();
  }
}

/** The claims of a JWT (no verification: the API server minted it). */
function jwtClaims(token: string): { sub?: string; aud?: string[] } {
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as { sub?: string; aud?: string[] };
}

const nodeClaimsOfPool = async () =>
  (await listObjects<WithConditions>(g(), ...NODECLAIM)).filter((c) => c.metadata.labels?.['karpenter.sh/nodepool'] === POOL);

describe('HyperShift end to end: a pending pod in the guest becomes a Ready node, with the real Karpenter', () => {
  beforeAll(async () => {
    const t0 = Date.now();
    const binary = karpenterBinary(loadToolchain());
    await timed('setup: operator bundle built', async () => ensureBuilt());
    await waitFor('the HCP namespace of a previous run gone', async () => !(await getObject(mgmt.kubeConfig(), 'v1', 'Namespace', NS)), {
      timeoutMs: 120_000,
      intervalMs: 500,
    });
    await tagDiscovery(true);
    let guestKubeconfigPath: string;
    ({ guest, dir, guestKubeconfigPath } = await timed('setup: guest cluster started', () =>
      prepareHostedClusters(mgmt, { namespace: NS, managementRole: 'project' }),
    ));
    await timed('setup: HostedControlPlane created', () =>
      createHostedControlPlane(mgmt, hostedControlPlane(world, { name: HCP, namespace: NS }), '4.22.0'),
    );
    stopIgnition = startIgnitionStandIn(mgmt, guest, world, NS);
    await applyObject(mgmt.kubeConfig(), hyperShiftCredentialsSecret(NS));
    op = await timed('setup: operator started', () =>
      startOperatorAsHyperShift(mgmt, world, { namespace: NS, guestKubeconfigPath, name: 'hcp-e2e-operator' }),
    );
    // Karpenter's guest identity is the operator's to create; the kubeconfig for it is HyperShift's to write.
    await eventually(
      'ServiceAccount kube-system/karpenter in the guest',
      async () => (await getObject(g(), 'v1', 'ServiceAccount', KARPENTER_SA.name, KARPENTER_SA.namespace)) !== undefined,
      120_000,
    );
    await grantMinterItsToken();
    await writeGuestKubeconfigSecret();
    runnerDir = mkdtempSync(join(tmpdir(), 'ko-hcp-e2e-'));
    operand = startHostedRealOperand({
      management: mgmt,
      guest,
      namespace: NS,
      karpenterBinary: binary,
      operatorEntry: join(REPO, 'apps/operator/dist/main.js'),
      tokenMinterImage: TOKEN_MINTER_IMAGE,
      baseDir: runnerDir,
      log: note,
      kubelets: {
        registrationTaints,
        // HyperShift's ignition server, not the MCS: the pointer its generator wrote for the machine's NodeClass.
        pointerMatches: (source, nodeClass) => source === JSON.parse(ignitionUserData(nodeClass)).ignition.config.merge[0].source,
      },
    });
    await applyObject(g(), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: WORKLOAD_NS } });
    took['setup (beforeAll)'] = Math.round((Date.now() - t0) / 1000);
  }, 900_000);

  afterAll(async () => {
    // Each step on its own: a setup that failed part-way leaves some of these undefined, and what it did
    // create (the discovery tags on the shared world first) must still go.
    const failed: string[] = [];
    const step = async (what: string, run: () => Promise<unknown> | unknown) => {
      try {
        await run();
      } catch (e) {
        failed.push(`${what}: ${(e as Error).message}`);
      }
    };
    if (guest) await step('deleting the NodePool', () => deleteObject(g(), 'karpenter.sh/v1', 'NodePool', POOL));
    await step('stopping the operand', () => operand?.stop());
    await step('stopping the ignition stand-in', () => stopIgnition?.());
    await step('stopping the operator', () => op?.stop());
    await step('removing the finalizers of the HCP', () =>
      kubeRequest(mgmt.kubeConfig(), 'PATCH', hcpPath(NS, HCP), {
        body: { metadata: { finalizers: null } },
        contentType: 'application/merge-patch+json',
      }),
    );
    await step('deleting the HCP', () => deleteObject(mgmt.kubeConfig(), HCP_TYPE.apiVersion, HCP_TYPE.kind, HCP, NS));
    await step('deleting the HCP namespace', () => deleteObject(mgmt.kubeConfig(), 'v1', 'Namespace', NS));
    await step('removing the discovery tags', () => tagDiscovery(false));
    await step('stopping the guest cluster', () => guest?.stop());
    await step('removing the guest directory', () => dir && rmSync(dir, { recursive: true, force: true }));
    await step('removing the runner directory', () => {
      if (runnerDir && process.env.KO_KEEP_CLUSTER !== '1') rmSync(runnerDir, { recursive: true, force: true });
    });
    console.log(`hypershift-e2e step durations (s): ${JSON.stringify(took)}`);
    // Reported, not thrown: a failed cleanup step must not hide the tests' own outcome.
    if (failed.length) console.warn(`hypershift-e2e cleanup steps failed:\n${failed.join('\n')}`);
  }, 180_000);

  it('the operand in the HCP namespace runs the real Karpenter beside the token minter, authenticates through STS, and EC2NodeClass default is Ready', async () => {
    const replica = await eventually(
      'the operand pod running the real controller after its token minter started',
      async () => operand!.runner.replicas().find((r) => r.state === 'running'),
      480_000,
    );
    // The minter's token: the guest's kube-system/karpenter, audience openshift, in the shared token volume.
    const tokenFile = join(runnerDir!, 'pods', replica.pod, 'volumes', 'serviceaccount-token', 'token');
    const claims = jwtClaims(readFileSync(tokenFile, 'utf8'));
    expect(claims.sub).toBe(KARPENTER_USER);
    expect(claims.aud).toEqual(['openshift']);
    // The guest API server saw the minter's TokenRequest as kube-system/karpenter.
    expect(
      guest!
        .auditEvents({ user: KARPENTER_USER, since: started })
        .some((e) => e.verb === 'create' && e.requestURI.endsWith('/serviceaccounts/karpenter/token')),
    ).toBe(true);
    const nc = await eventually(
      'EC2NodeClass default Ready in the guest (subnets, security groups, AMIs, instance profile resolved by Karpenter)',
      async () => {
        const o = await getObject<WithConditions>(g(), ...NC, 'default');
        return condTrue(o, 'Ready') ? o : undefined;
      },
      300_000,
    );
    expect((nc.status?.conditions ?? []).filter((c) => c.status !== 'True').map((c) => c.type)).toEqual([]);
    expect((nc.spec as { userData?: string }).userData).toBe(ignitionUserData('default'));
    // Karpenter holds no AWS keys: its only way to the EC2 API is the web-identity profile of karpenter-credentials.
    const now = operand!.runner.replicas().find((r) => r.state === 'running' && r.pid);
    expect(now, 'the controller still running').toBeDefined();
    const env = readFileSync(`/proc/${now!.pid!}/environ`, 'utf8').split('\0');
    expect(env.filter((e) => /^AWS_(ACCESS_KEY_ID|SECRET_ACCESS_KEY|SESSION_TOKEN|ROLE_ARN|WEB_IDENTITY_TOKEN_FILE)=/.test(e))).toEqual([]);
    const credsFile = env.find((e) => e.startsWith('AWS_SHARED_CREDENTIALS_FILE='))!.split('=')[1]!;
    expect(readFileSync(credsFile, 'utf8')).toContain(
      `web_identity_token_file = ${join(runnerDir!, 'pods', now!.pod, 'volumes', 'serviceaccount-token', 'token')}`,
    );
    // The STS exchange happened at the emulator: a session of the AutoNode role the profile names.
    const data = (await (await fetch(`${mgmt.info.ec2Endpoint!}/moto-api/data.json`)).json()) as {
      sts?: { AssumedRole?: Array<{ role_arn: string }> };
    };
    expect((data.sts?.AssumedRole ?? []).map((r) => r.role_arn)).toContain(AUTONODE.provisionerConfig.karpenter.aws.roleARN);
  }, 700_000);

  it('a pending pod in the guest becomes Running on a node Karpenter launched and the operator let join', async () => {
    await applyObject(g(), aNodePool(POOL, { arch: 'amd64', instanceTypes: INSTANCE_TYPES }));
    await applyObject(g(), aPoolWorkload('inflate', WORKLOAD_NS, { pool: POOL, replicas: 1, cpu: '1', memory: '1Gi' }));
    const launched = await eventually(
      'a NodeClaim of the pool Launched',
      async () => (await nodeClaimsOfPool()).find((c) => c.status?.providerID && condTrue(c, 'Launched')),
      300_000,
    );
    const instanceId = launched.status!.providerID!.split('/').pop()!;
    expect((await instancesOfPool(mgmt, POOL)).map((i) => i.InstanceId)).toContain(instanceId);
    const ready = await eventually(
      'the NodeClaim Registered, Initialized and Ready',
      async () => {
        const c = await getObject<WithConditions>(g(), ...NODECLAIM, launched.metadata.name);
        return c && ['Registered', 'Initialized', 'Ready'].every((t) => condTrue(c, t)) ? c : undefined;
      },
      300_000,
    );
    const nodeName = ready.status!.nodeName!;
    const sim = await eventually(
      'the simulated kubelet joined (client and serving CSRs approved)',
      async () => operand!.kubelets.kubelets().find((k) => k.nodeClaim === launched.metadata.name && k.phase === 'joined'),
      120_000,
    );
    expect(sim.nodeName).toBe(nodeName);
    // The operator approved both CSRs in the guest.
    for (const name of [sim.clientCsr!, sim.servingCsr!]) {
      const csr = await getObject<KubeObj & { status?: { conditions?: Cond[] } }>(
        g(),
        'certificates.k8s.io/v1',
        'CertificateSigningRequest',
        name,
      );
      expect(conditionOf(csr, 'Approved')?.status, `CSR ${name}`).toBe('True');
    }
    const approvals = guest!
      .auditEvents({ user: GUEST_OPERATOR_USER, since: started })
      .filter((e) => e.objectRef?.resource === 'certificatesigningrequests' && e.objectRef.subresource === 'approval');
    expect(approvals.length).toBeGreaterThanOrEqual(2);
    const node = await getObject<
      KubeObj & { spec?: { providerID?: string; taints?: Array<{ key: string }> }; status?: { conditions?: Cond[] } }
    >(g(), 'v1', 'Node', nodeName);
    expect(node?.spec?.providerID).toBe(launched.status!.providerID);
    expect(conditionOf(node, 'Ready')?.status).toBe('True');
    await eventually(
      'the workload pod Running on the new node',
      async () =>
        (
          await listObjects<KubeObj & { spec: { nodeName?: string }; status?: { phase?: string } }>(
            g(),
            'v1',
            'Pod',
            WORKLOAD_NS,
            'app=inflate',
          )
        ).some((p) => p.spec.nodeName === nodeName && p.status?.phase === 'Running'),
      120_000,
    );
    // HyperShift's view: the HCP counts the node Karpenter launched.
    await eventually(
      'status.autoNode of the HCP counting the node',
      async () => {
        const hcp = await getObject(mgmt.kubeConfig(), HCP_TYPE.apiVersion, HCP_TYPE.kind, HCP, NS);
        return ((hcp?.['status'] as { autoNode?: { nodeCount?: number } } | undefined)?.autoNode?.nodeCount ?? 0) >= 1;
      },
      120_000,
    );
  }, 900_000);

  it('deleting the NodePool removes its node and terminates its instance', async () => {
    // The previous test's node and instance are there to remove.
    expect((await nodeClaimsOfPool()).length).toBeGreaterThan(0);
    expect((await instancesOfPool(mgmt, POOL)).length).toBeGreaterThan(0);
    await deleteObject(g(), 'karpenter.sh/v1', 'NodePool', POOL);
    await eventually(
      'no NodeClaim, Node or running instance of the pool left',
      async () =>
        (await nodeClaimsOfPool()).length === 0 &&
        (await listObjects(g(), 'v1', 'Node', undefined, `karpenter.sh/nodepool=${POOL}`)).length === 0 &&
        (await instancesOfPool(mgmt, POOL)).length === 0,
      300_000,
    );
  }, 400_000);

  it('no 403 for the operator, Karpenter or the token minter, on either cluster; no operand crash', () => {
    const refused = (c: ClusterHandle | typeof mgmt, user: string) =>
      c.auditEvents({ user, codes: [403], since: started }).map((e) => `${user}: ${e.verb} ${e.requestURI}`);
    expect(refused(mgmt, MGMT_USER)).toEqual([]);
    expect(refused(guest!, GUEST_OPERATOR_USER)).toEqual([]);
    expect(refused(guest!, KARPENTER_USER)).toEqual([]);
    // Karpenter did act on the guest as kube-system/karpenter (so the check above covers its requests).
    expect(
      guest!.auditEvents({ user: KARPENTER_USER, since: started, verbs: ['create'] }).some((e) => e.objectRef?.resource === 'nodeclaims'),
    ).toBe(true);
    // A controller that lost its leader lease (renewal starved on a loaded machine) exits and is restarted,
    // as in a cluster: not a crash of the program. Every other exit is (panic, auth error, bad flag...).
    const crashes = operand!.runner.crashes();
    const lostLease = crashes.filter((c) => c.leaderElectionLost);
    if (lostLease.length) console.warn(`hypershift-e2e: Karpenter lost its leader lease ${lostLease.length} time(s) and was restarted`);
    expect(crashes.filter((c) => !c.leaderElectionLost).map((c) => `${c.container}: ${String(c.exitCode)}\n${c.logTail}`)).toEqual([]);
  });
});
