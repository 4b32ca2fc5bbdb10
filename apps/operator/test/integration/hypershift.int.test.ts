import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  applyObject,
  applyStatus,
  deleteObject,
  getObject,
  kubeRequest,
  listObjects,
  waitFor,
  WRITE_VERBS,
  type ClusterHandle,
  type KubeObj,
} from '@karpenter-operator/testkit';
import { seededWorld, testCluster } from '@karpenter-operator/testkit/vitest';
import { autoNodeComponentsPending } from '@karpenter-operator/topology-hypershift';
import { anIgnitionSecret } from '@karpenter-operator/topology-hypershift/testing';
import { GUEST_OPERATOR_SUBJECT, hostedGuestRbac } from '../../src/manifests/hypershift-rbac.js';
import { conditionOf } from '../support/k8s.js';
import { operatorContainer } from '../support/hypershift-deployment.js';
import {
  AUTONODE,
  HCP_FINALIZER,
  HCP_TYPE,
  hcpPath,
  hostedControlPlane,
  hyperShiftCredentialsSecret,
  ignitionUserData,
  OPERATOR_SA,
  prepareHostedClusters,
  startIgnitionStandIn,
  startOperatorAsHyperShift,
  applyOperatorPod,
  startKarpenterStandIn,
  TERMINATION_ANNOTATION,
} from '../support/hypershift-env.js';
import type { OperatorProcess } from '../support/operator-process.js';
import {
  applyKarpenterNodeClaim,
  crdEstablished,
  csrApproved,
  launchKarpenterInstance,
  RUNTIME_CRDS,
  submitClientCsr,
  waitCsrApproved,
  type LaunchedNode,
} from '../support/scenario.js';

/**
 * HyperShift management-cluster mode with two real API servers: the shared cluster is the management
 * cluster (HostedControlPlane CRD, the EC2 emulator), a second cluster of the same harness is the guest.
 * The operator runs alone, as HyperShift's Deployment has it (no adapter container), as ServiceAccount
 * `clusters-demo/karpenter-operator` under HyperShift's own Role (test/fixtures/hypershift: no Events, no
 * namespaces) on the management side, and as `kube-system/karpenter-operator` in the guest under the RBAC of
 * src/manifests/hypershift-rbac.ts, nothing more.
 */
const NS = 'clusters-demo';
const UID_ANNOTATION = 'hypershift.openshift.io/default-security-context-uid';
const HCP_UID = 1000710000;
/** The control-plane release version HyperShift reports on the HCP (`status.controlPlaneVersion.desired.version`). */
const HCP_VERSION = '4.22.0';
/** The HCP's status as HyperShift reports it once the control plane is up. */
const HCP_STATUS = {
  ready: true,
  initialized: true,
  controlPlaneVersion: { desired: { version: HCP_VERSION, image: 'quay.io/openshift-release-dev/ocp-release:4.22.0-x86_64' } },
};
/** A NodeClaim the user's NodePool `general` has, left alone when AutoNode is turned off. */
const USER_CLAIM = 'hcp-user-claim';
const KARPENTER_TERMINATION = 'karpenter.sh/termination';
const HCP = 'demo';
const SA = OPERATOR_SA;
const HCP_PATH = hcpPath(NS, HCP);
/** The one finalizer on the HCP: HyperShift's own, which HyperShift also resolves itself. */
const FINALIZER = HCP_FINALIZER;
const MGMT_USER = `system:serviceaccount:${NS}:${SA}`;
const GUEST_USER = `system:serviceaccount:${GUEST_OPERATOR_SUBJECT.namespace}:${GUEST_OPERATOR_SUBJECT.name}`;

const mgmt = testCluster();
const world = seededWorld();
let guest: ClusterHandle;
let dir: string;
let op: OperatorProcess;
let guestStoppedAt: Date | undefined;
const started = new Date();
const autoNode = AUTONODE;
let guestKubeconfigPath: string;

/** The HCP of this file, AutoNode on. */
const theHostedControlPlane = () => hostedControlPlane(world, { name: HCP, namespace: NS });

/** The pod HyperShift's Deployment runs the operator in: the operator reads its runAsUser (its Role grants no namespaces). */
const OPERATOR_POD = 'karpenter-operator-6c9f8d7b5-hcp';

/** The operator alone, as HyperShift starts it; the guest counts as gone after 5 s unreachable. */
async function startTheOperator(): Promise<void> {
  op = await startOperatorAsHyperShift(mgmt, world, {
    namespace: NS,
    guestKubeconfigPath,
    podName: OPERATOR_POD,
    env: { GUEST_UNREACHABLE_TIMEOUT: '5s' },
  });
}

/**
 * The Events the operator recorded, from its log: HyperShift's Role grants no Events, so each write is
 * refused and the log carries the Event instead.
 */
const loggedEvents = (p: OperatorProcess = op): Array<{ regarding?: string; type?: string; reason?: string; note?: string }> =>
  p
    .logs()
    .split('\n')
    .flatMap((l) => {
      try {
        const o = JSON.parse(l) as { msg?: string; event?: { regarding?: string; type?: string; reason?: string; note?: string } };
        return o.msg === 'writing a Kubernetes Event failed' && o.event ? [o.event] : [];
      } catch {
        return [];
      }
    });

const hcp = () => getObject(mgmt.kubeConfig(), HCP_TYPE.apiVersion, HCP_TYPE.kind, HCP, NS);
const operand = () => getObject(mgmt.kubeConfig(), 'apps/v1', 'Deployment', 'karpenter', NS);
const finalizers = async () => ((await hcp())?.metadata.finalizers as string[] | undefined) ?? [];
const autoNodeCondition = async () => conditionOf(await hcp(), 'AutoNodeEnabled');
/** The teardown's events about the HCP namespace so far (logged: HyperShift's Role refuses them). */
const teardownEvents = async () =>
  loggedEvents().filter((e) =>
    ['DeletingNodePool', 'DeletingNodeClaim', 'ForcingNodeClaimTermination', 'DeletingOperand', 'TeardownComplete'].includes(
      e.reason ?? '',
    ),
  );
const CPC_API = 'hypershift.openshift.io/v1beta1';
const component = (name: string) => getObject(mgmt.kubeConfig(), CPC_API, 'ControlPlaneComponent', name, NS);
const patchHcp = (body: Record<string, unknown>) =>
  kubeRequest(mgmt.kubeConfig(), 'PATCH', HCP_PATH, { body, contentType: 'application/merge-patch+json' });

const OEC2NC = { apiVersion: 'karpenter.hypershift.openshift.io/v1', kind: 'OpenshiftEC2NodeClass' } as const;
const EC2NC = { apiVersion: 'karpenter.k8s.aws/v1', kind: 'EC2NodeClass' } as const;
const userDataFor = ignitionUserData;
let stopIgnitionStandIn: (() => void) | undefined;

describe('HyperShift: management cluster + guest cluster', () => {
  beforeAll(() => startHostedCluster(HCP_STATUS), 240_000);

  afterAll(stopHostedCluster, 120_000);

  it('AutoNode on: operand in the HCP namespace with the HCP env, CRDs and EC2NodeClass default in the guest, AutoNodeEnabled once rolled out', async () => {
    await waitFor('the operand Deployment in the HCP namespace', async () => (await operand()) !== undefined, {
      timeoutMs: 60_000,
      abort: () => (op.exited() ? op.logs().slice(-3000) : undefined),
    });
    const dep = (await operand())!;
    const container = (dep.spec as { template: { spec: { containers: Array<{ env: Array<{ name: string; value?: string }> }> } } }).template
      .spec.containers[0]!;
    const env = Object.fromEntries(container.env.map((e) => [e.name, e.value]));
    expect(env).toMatchObject({
      DISABLE_LEADER_ELECTION: 'true',
      DISABLE_WEBHOOK: 'true',
      FEATURE_GATES: 'Drift=true',
      CLUSTER_NAME: world.facts.infraId,
      AWS_REGION: world.facts.region,
    });
    expect(env['KUBECONFIG']).toBeTruthy();
    expect((dep.spec as { replicas: number }).replicas).toBe(1);
    // HyperShift's view of the rollout, and the namespace's UID.
    expect(dep.metadata.labels?.['hypershift.openshift.io/managed-by']).toBe('karpenter-operator');
    expect(dep.metadata.annotations?.['release.openshift.io/version']).toBe(HCP_VERSION);
    expect((dep.spec as { template: { spec: { securityContext: { runAsUser?: number } } } }).template.spec.securityContext.runAsUser).toBe(
      HCP_UID,
    );
    // Authenticates as HyperShift's contract has it: HyperShift's Secret, and the token minter from
    // TOKEN_MINTER_IMAGE writing the guest kube-system/karpenter token into the volume the profile names.
    const pod = (
      dep.spec as {
        template: {
          spec: {
            volumes: Array<{ name: string; secret?: { secretName: string } }>;
            initContainers?: Array<{ name: string; image: string; args: string[] }>;
          };
        };
      }
    ).template.spec;
    expect(pod.volumes.map((v) => v.secret?.secretName).filter(Boolean)).toContain('karpenter-credentials');
    const minter = pod.initContainers?.find((c) => c.name === 'token-minter');
    expect(minter?.image).toBe(operatorContainer().env?.find((e) => e.name === 'TOKEN_MINTER_IMAGE')?.value);
    expect(minter?.args).toEqual(
      expect.arrayContaining(['--service-account-namespace=kube-system', '--service-account-name=karpenter', '--token-audience=openshift']),
    );

    await waitFor(
      'the runtime CRDs Established in the guest',
      async () => (await Promise.all(RUNTIME_CRDS.map((n) => crdEstablished(guest, n)))).every(Boolean),
      { timeoutMs: 60_000 },
    );

    const nodeClass = await waitFor(
      'EC2NodeClass default in the guest, from OpenshiftEC2NodeClass default and its ignition Secret',
      async () => (await getObject(guest.kubeConfig(), 'karpenter.k8s.aws/v1', 'EC2NodeClass', 'default')) ?? false,
      { timeoutMs: 60_000 },
    );
    const spec = nodeClass.spec as { userData?: string; amiSelectorTerms?: unknown[]; amiFamily?: string };
    expect(spec.amiSelectorTerms).toEqual([{ id: world.facts.amis.x86_64 }]);
    expect(spec.userData).toContain('ignition');

    await waitFor('AutoNodeEnabled True once the operand rolled out', async () => (await autoNodeCondition())?.status === 'True', {
      timeoutMs: 90_000,
      intervalMs: 500,
    }).catch(async (e: Error) => {
      throw new Error(
        `${e.message}\nstatus: ${JSON.stringify((await hcp())?.status)}\ndeployment: ${JSON.stringify((await operand())?.status)}\nlog:\n${op
          .logs()
          .split('\n')
          .filter((l) => /warn|error|status|AutoNode/i.test(l))
          .slice(-25)
          .join('\n')}`,
      );
    });
    // What HyperShift reads of the rollout: ControlPlaneComponent karpenter, written by the operator for the operand.
    const cpc = await waitFor(
      'ControlPlaneComponent karpenter RolloutComplete=True at the HCP version',
      async () => {
        const c = await component('karpenter');
        return (c?.status as { version?: string } | undefined)?.version === HCP_VERSION &&
          conditionOf(c, 'RolloutComplete')?.status === 'True'
          ? c
          : false;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    ).catch(async (e: Error) => {
      throw new Error(`${e.message}\ncomponent: ${JSON.stringify((await component('karpenter'))?.status)}`);
    });
    expect(conditionOf(cpc, 'RolloutComplete')).toMatchObject({
      reason: 'AsExpected',
      message: 'Deployment karpenter successfully rolled out',
    });
    expect(conditionOf(cpc, 'Available')).toMatchObject({ status: 'True', reason: 'AsExpected' });
    expect(cpc.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'HostedControlPlane', name: HCP })]);
    expect((cpc.status as { resources: unknown[] }).resources).toContainEqual({ group: 'apps', kind: 'Deployment', name: 'karpenter' });
    // HyperShift's AutoNodeEnabled rule for the HostedCluster needs karpenter-operator too, which its
    // control-plane operator writes for the operator's Deployment: written here as it would.
    const components = () => listObjects(mgmt.kubeConfig(), CPC_API, 'ControlPlaneComponent', NS);
    expect(autoNodeComponentsPending(await components())).toBe('waiting for components to be created');
    const cpo = await applyObject(mgmt.kubeConfig(), {
      apiVersion: CPC_API,
      kind: 'ControlPlaneComponent',
      metadata: { name: 'karpenter-operator', namespace: NS },
      spec: {},
    } as KubeObj);
    const at = new Date().toISOString();
    await applyStatus(mgmt.kubeConfig(), {
      ...cpo,
      status: {
        version: HCP_VERSION,
        conditions: [
          {
            type: 'Available',
            status: 'True',
            reason: 'AsExpected',
            message: 'Deployment karpenter-operator is available',
            lastTransitionTime: at,
          },
          {
            type: 'RolloutComplete',
            status: 'True',
            reason: 'AsExpected',
            message: 'Deployment karpenter-operator successfully rolled out',
            lastTransitionTime: at,
          },
        ],
      },
    });
    expect(autoNodeComponentsPending(await components())).toBeUndefined();
    // Converged: an HCP event wakes the status use-case, which writes the component no more.
    const quiet = new Date();
    expect((await patchHcp({ metadata: { annotations: { 'test.karpenter-operator/poke': '1' } } })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 3_000));
    expect(
      mgmt
        .auditEvents({ user: MGMT_USER, verbs: WRITE_VERBS, resource: 'controlplanecomponents', since: quiet })
        .map((e) => `${e.verb} ${e.requestURI}`),
    ).toEqual([]);
    // Only HyperShift's finalizer, which HyperShift can resolve without this operator.
    expect(await finalizers()).toEqual([FINALIZER]);
    // Found in the namespace: HyperShift's Deployment names no HCP.
    expect(
      op
        .logs()
        .split('\n')
        .some((l) => l.includes('"msg":"management-cluster mode"') && l.includes(`"hcp":"${HCP}"`)),
    ).toBe(true);
    // No ClusterOperator in this topology, and nothing of the guest's lands in the management cluster (the
    // shared management cluster may hold Karpenter CRDs from the standalone files: the audit log tells who wrote).
    expect(
      mgmt
        .auditEvents({ user: MGMT_USER, since: started })
        .filter((e) => /clusteroperators|customresourcedefinitions|certificatesigningrequests/.test(e.requestURI)),
    ).toEqual([]);
  });

  it("ControlPlaneComponent karpenter follows the HCP's control-plane version once the operand carries it", async () => {
    const setVersion = async (version: string) => {
      const current = (await hcp())!;
      await applyStatus(mgmt.kubeConfig(), {
        ...current,
        status: {
          ...(current.status as object),
          controlPlaneVersion: { desired: { version, image: `quay.io/example/ocp-release:${version}` } },
        },
      });
    };
    const reported = async () => {
      const c = await component('karpenter');
      return { version: (c?.status as { version?: string } | undefined)?.version, rollout: conditionOf(c, 'RolloutComplete')?.status };
    };
    try {
      await setVersion('4.22.1');
      await waitFor('ControlPlaneComponent karpenter at 4.22.1', async () => (await reported()).version === '4.22.1', {
        timeoutMs: 30_000,
      });
      expect(await reported()).toEqual({ version: '4.22.1', rollout: 'True' });
      expect((await operand())?.metadata.annotations?.['release.openshift.io/version']).toBe('4.22.1');
    } finally {
      await setVersion(HCP_VERSION);
      await waitFor(`ControlPlaneComponent karpenter back at ${HCP_VERSION}`, async () => (await reported()).version === HCP_VERSION, {
        timeoutMs: 30_000,
      });
    }
  });

  it('OpenshiftEC2NodeClass foo -> ignition Secret (HyperShift) -> EC2NodeClass foo with its userData; deleted in that order', async () => {
    const g = guest.kubeConfig();
    const def = await getObject(g, OEC2NC.apiVersion, OEC2NC.kind, 'default');
    expect(def?.spec).toEqual({
      // HyperShift's default: its private subnets by role and cluster tag, its node security group by discovery tag.
      subnetSelectorTerms: [{ tags: { 'kubernetes.io/role/internal-elb': '1', [`kubernetes.io/cluster/${world.facts.infraId}`]: '*' } }],
      securityGroupSelectorTerms: [{ tags: { 'karpenter.sh/discovery': world.facts.infraId } }],
    });
    await applyObject(g, { ...OEC2NC, metadata: { name: 'foo' }, spec: { tags: { team: 'a' } } } as KubeObj);
    const nodeClass = await waitFor(
      'EC2NodeClass foo with the userData of its ignition Secret',
      async () => {
        const o = await getObject(g, EC2NC.apiVersion, EC2NC.kind, 'foo');
        return (o?.spec as { userData?: string } | undefined)?.userData === userDataFor('foo') ? o : false;
      },
      { timeoutMs: 30_000, abort: () => (op.exited() ? op.logs().slice(-3000) : undefined) },
    );
    const foo = (await getObject(g, OEC2NC.apiVersion, OEC2NC.kind, 'foo'))!;
    expect(nodeClass.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: OEC2NC.kind, name: 'foo', uid: foo.metadata.uid, controller: true }),
    ]);
    expect(nodeClass.spec).toMatchObject({ amiSelectorTerms: [{ id: world.facts.amis.x86_64 }], tags: { team: 'a' } });
    expect(foo.metadata.finalizers).toEqual(['hypershift.openshift.io/ec2-nodeclass-finalizer']);
    // The KubeletConfig HyperShift's ignition generator adds: nodes register with Karpenter's taint.
    const taint = await getObject(mgmt.kubeConfig(), 'v1', 'ConfigMap', 'set-karpenter-taint', NS);
    expect((taint?.['data'] as { config?: string } | undefined)?.config).toContain('karpenter.sh/unregistered');

    // The admission policy: the translated EC2NodeClass and OpenshiftEC2NodeClass default refuse direct spec
    // edits; OpenshiftEC2NodeClass foo is the user's, and its EC2NodeClass follows it.
    let attempt = 0;
    const refusedEdit = (path: string) =>
      waitFor(
        `a direct spec edit of ${path} to be refused`,
        async () => {
          // Each kind's own field: one its CRD does not have would be pruned, a no-op the policy lets through.
          const on = attempt++ % 2 === 0;
          const spec = path.includes('openshiftec2nodeclasses') ? { monitoring: on ? 'Detailed' : 'Basic' } : { detailedMonitoring: on };
          const r = await kubeRequest<{ message?: string }>(g, 'PATCH', path, {
            body: { spec },
            contentType: 'application/merge-patch+json',
          });
          return r.status >= 400 ? r : false;
        },
        { timeoutMs: 30_000, intervalMs: 500 },
      );
    for (const path of [
      '/apis/karpenter.k8s.aws/v1/ec2nodeclasses/foo',
      '/apis/karpenter.hypershift.openshift.io/v1/openshiftec2nodeclasses/default',
    ]) {
      const refused = await refusedEdit(path);
      expect(refused.status, path).toBe(403);
      expect(refused.body.message).toMatch(/managed for this hosted cluster/);
    }
    const own = await kubeRequest(g, 'PATCH', '/apis/karpenter.hypershift.openshift.io/v1/openshiftec2nodeclasses/foo', {
      body: { spec: { tags: { team: 'b' } } },
      contentType: 'application/merge-patch+json',
    });
    expect(own.status).toBe(200);
    await waitFor(
      'EC2NodeClass foo to follow its OpenshiftEC2NodeClass',
      async () => ((await getObject(g, EC2NC.apiVersion, EC2NC.kind, 'foo'))?.spec as { tags?: Record<string, string> }).tags?.team === 'b',
      { timeoutMs: 30_000 },
    );

    await deleteObject(g, OEC2NC.apiVersion, OEC2NC.kind, 'foo');
    await waitFor(
      'EC2NodeClass foo, then OpenshiftEC2NodeClass foo gone',
      async () =>
        !(await getObject(g, EC2NC.apiVersion, EC2NC.kind, 'foo')) && !(await getObject(g, OEC2NC.apiVersion, OEC2NC.kind, 'foo')),
      { timeoutMs: 30_000 },
    );
  });

  it('direct spec edits and deletion of the managed EC2NodeClass are refused in the guest (ValidatingAdmissionPolicy); the operator still changes it', async () => {
    const g = guest.kubeConfig();
    const NC_PATH = '/apis/karpenter.k8s.aws/v1/ec2nodeclasses/default';
    // Every attempt changes the spec (the policy lets a no-op update through): an edit that landed before the
    // policy took effect must not turn the next attempts into no-ops.
    let attempt = 0;
    const edit = () =>
      kubeRequest<{ message?: string }>(g, 'PATCH', NC_PATH, {
        body: { spec: { detailedMonitoring: attempt++ % 2 === 0 } },
        contentType: 'application/merge-patch+json',
      });
    const refused = await waitFor(
      'an admin spec edit to be refused',
      async () => {
        const r = await edit();
        return r.status >= 400 ? r : false;
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    // HyperShift's own message, which its e2e matches of a refused update and deletion.
    const hyperShiftRefusal =
      "EC2NodeClass resource can't be created/updated/deleted directly, please use OpenshiftEC2NodeClass resource instead";
    expect(refused.status).toBe(403);
    expect(refused.body.message).toContain(hyperShiftRefusal);
    expect(refused.body.message).toMatch(/managed for this hosted cluster/);
    const del = await kubeRequest<{ message?: string }>(g, 'DELETE', NC_PATH);
    expect(del.status).toBe(403);
    expect(del.body.message).toContain(hyperShiftRefusal);
    // Metadata stays the user's (and Karpenter's).
    const label = await kubeRequest(g, 'PATCH', NC_PATH, {
      body: { metadata: { labels: { team: 'a' } } },
      contentType: 'application/merge-patch+json',
    });
    expect(label.status).toBe(200);
    // The operator is exempt: new ignition content still reaches the NodeClass.
    const userData = '{"ignition":{"version":"3.4.0","config":{"merge":[{"source":"https://ignition.demo:443/ignition?v=2"}]}}}';
    await applyObject(mgmt.kubeConfig(), anIgnitionSecret({ ami: world.facts.amis.x86_64, userData }) as KubeObj);
    await waitFor(
      'the operator to apply the new userData',
      async () =>
        ((await getObject(g, 'karpenter.k8s.aws/v1', 'EC2NodeClass', 'default'))?.spec as { userData?: string } | undefined)?.userData ===
        userData,
      { timeoutMs: 30_000 },
    );
  });

  it('status.autoNode follows NodeClaims and Nodes in the guest', async () => {
    const g = guest.kubeConfig();
    for (const [name, cpu] of [
      ['hcp-claim-a', '4'],
      ['hcp-claim-b', '2'],
    ] as const) {
      await applyObject(g, {
        apiVersion: 'karpenter.sh/v1',
        kind: 'NodeClaim',
        metadata: { name, labels: { 'karpenter.sh/nodepool': 'general' } },
        spec: {
          nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
          requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }],
        },
      } as KubeObj);
      await kubeRequest(g, 'PATCH', `/apis/karpenter.sh/v1/nodeclaims/${name}/status`, {
        body: { status: { nodeName: `node-${name}`, capacity: { cpu } } },
        contentType: 'application/merge-patch+json',
      });
    }
    // Only claim a has a Node so far.
    await applyObject(g, {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'node-hcp-claim-a', labels: { 'karpenter.sh/nodepool': 'general' } },
    } as KubeObj);
    const sameCounts = (a: Record<string, unknown> | undefined, b: Record<string, number>) =>
      a !== undefined && Object.keys(b).every((k) => a[k] === b[k]) && Object.keys(a).length === 3;
    const counts = async () => ((await hcp())!.status as { autoNode?: Record<string, unknown> }).autoNode;
    await waitFor(
      'status.autoNode = 1 node, 2 claims, 4 vCPUs',
      async () => sameCounts(await counts(), { nodeCount: 1, nodeClaimCount: 2, vcpus: 4 }),
      { timeoutMs: 30_000 },
    ).catch(async (e: Error) => {
      throw new Error(
        `${e.message}\nstatus: ${JSON.stringify((await hcp())?.status)}\noperator log:\n${op.logs().split('\n').slice(-15).join('\n')}`,
      );
    });
    await applyObject(g, {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'node-hcp-claim-b', labels: { 'karpenter.sh/nodepool': 'general' } },
    } as KubeObj);
    await waitFor(
      'status.autoNode = 2 nodes, 2 claims, 6 vCPUs',
      async () => sameCounts(await counts(), { nodeCount: 2, nodeClaimCount: 2, vcpus: 6 }),
      { timeoutMs: 30_000 },
    );
    for (const n of ['node-hcp-claim-a', 'node-hcp-claim-b']) await deleteObject(g, 'v1', 'Node', n);
    for (const n of ['hcp-claim-a', 'hcp-claim-b']) await deleteObject(g, 'karpenter.sh/v1', 'NodeClaim', n);
    await waitFor('status.autoNode back to zero', async () => sameCounts(await counts(), { nodeCount: 0, nodeClaimCount: 0, vcpus: 0 }), {
      timeoutMs: 30_000,
    });
  });

  it('a guest client CSR of a NodeClaim with an emulator instance is approved; a forged one stays pending', async () => {
    let node: LaunchedNode | undefined;
    try {
      node = await launchKarpenterInstance(mgmt, world, 'hcp-csr-1', { nodeClaimCluster: guest });
      const good = await submitClientCsr(guest, node.dns);
      const forged = await submitClientCsr(guest, 'ip-10-0-250-250.ec2.internal');
      await waitCsrApproved(guest, good, 30_000);
      await new Promise((r) => setTimeout(r, 2_000));
      expect(await csrApproved(guest, forged)).toBe(false);
    } finally {
      await node?.terminate();
      await deleteObject(guest.kubeConfig(), 'karpenter.sh/v1', 'NodeClaim', 'hcp-csr-1').catch(() => false);
    }
  });

  it('a rotated guest kubeconfig is picked up without a restart, after the old identity is gone', async () => {
    const g = guest.kubeConfig();
    const rotated = { kind: 'ServiceAccount', name: 'karpenter-operator-rotated', namespace: GUEST_OPERATOR_SUBJECT.namespace };
    await applyObject(g, {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: rotated.name, namespace: rotated.namespace },
    } as KubeObj);
    for (const b of hostedGuestRbac().filter((o) => o.kind.endsWith('Binding'))) {
      await applyObject(g, { ...(b as KubeObj), subjects: [{ ...GUEST_OPERATOR_SUBJECT }, rotated] } as KubeObj);
    }
    // As the mounted Secret would change: same path, a token of another identity; then the old one is deleted,
    // which invalidates every token issued to it.
    await guest.writeKubeConfigFor(rotated.namespace, rotated.name, join(dir, 'guest.kubeconfig'), { expirationSeconds: 7200 });
    await deleteObject(g, 'v1', 'ServiceAccount', GUEST_OPERATOR_SUBJECT.name, GUEST_OPERATOR_SUBJECT.namespace);
    const since = new Date();
    // The kubeconfig file is re-read every 10 s; then the operand's ClusterRole, deleted in the guest, comes back.
    await new Promise((r) => setTimeout(r, 11_000));
    await deleteObject(g, 'rbac.authorization.k8s.io/v1', 'ClusterRole', 'karpenter-core');
    await waitFor(
      'the operand ClusterRole re-created in the guest',
      async () => (await getObject(g, 'rbac.authorization.k8s.io/v1', 'ClusterRole', 'karpenter-core')) !== undefined,
      { timeoutMs: 30_000 },
    );
    const rotatedUser = `system:serviceaccount:${rotated.namespace}:${rotated.name}`;
    expect(guest.auditEvents({ user: rotatedUser, since, verbs: ['create', 'patch'], resource: 'clusterroles' }).length).toBeGreaterThan(0);
    expect(op.exited()).toBe(false);
  }, 90_000);

  it("turning AutoNode off with the operator running keeps the user's NodePools and NodeClaims: the operand goes, the finalizer is released", async () => {
    const g = guest.kubeConfig();
    await applyObject(g, {
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodePool',
      metadata: { name: 'general' },
      spec: {
        template: {
          spec: {
            nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
            requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }],
          },
        },
      },
    } as KubeObj);
    // A NodeClaim of that pool as Karpenter keeps it: its finalizer holds it until the instance is gone.
    await applyKarpenterNodeClaim(guest, USER_CLAIM, undefined, [KARPENTER_TERMINATION]);
    expect(await finalizers()).toContain(FINALIZER);
    expect(op.exited()).toBe(false);
    const disabledAt = new Date();
    expect((await patchHcp({ spec: { autoNode: null } })).status).toBe(200);
    await waitFor('the finalizer released', async () => (await finalizers()).length === 0, { timeoutMs: 90_000, intervalMs: 500 });
    await waitFor('ControlPlaneComponent karpenter gone with the operand', async () => !(await component('karpenter')), {
      timeoutMs: 30_000,
    });
    await waitFor(
      'AutoNodeEnabled False/AutoNodeNotConfigured',
      async () => (await autoNodeCondition())?.reason === 'AutoNodeNotConfigured',
      { timeoutMs: 30_000 },
    );
    expect((await autoNodeCondition())?.status).toBe('False');
    expect(await operand()).toBeUndefined();
    const events = await teardownEvents();
    expect(events.map((e) => e.reason)).not.toContain('DeletingNodePool');
    expect(events.map((e) => e.reason)).not.toContain('DeletingNodeClaim');
    expect(events.find((e) => e.reason === 'TeardownComplete')?.note).toBe(
      'The operand is removed; NodePools and NodeClaims are left in place',
    );
    // What the user made stays as it was, as when HyperShift's own operator is turned off.
    const pool = await getObject(g, 'karpenter.sh/v1', 'NodePool', 'general');
    expect(pool?.metadata).not.toHaveProperty('deletionTimestamp');
    const claim = await getObject(g, 'karpenter.sh/v1', 'NodeClaim', USER_CLAIM);
    expect(claim?.metadata).not.toHaveProperty('deletionTimestamp');
    expect(claim?.metadata.annotations ?? {}).not.toHaveProperty(TERMINATION_ANNOTATION);
    expect(await getObject(g, EC2NC.apiVersion, EC2NC.kind, 'default')).toBeDefined();
    expect(await getObject(g, OEC2NC.apiVersion, OEC2NC.kind, 'default')).toBeDefined();
    const karpenterDeletes = guest
      .auditEvents({ since: disabledAt, verbs: ['delete', 'deletecollection'] })
      .filter((e) => ['nodepools', 'nodeclaims', 'ec2nodeclasses', 'openshiftec2nodeclasses'].includes(e.objectRef?.resource ?? ''));
    expect(karpenterDeletes.map((e) => `${e.user.username} ${e.verb} ${e.requestURI}`)).toEqual([]);
    // HyperShift's credentials Secret is HyperShift's to remove.
    expect(await getObject(mgmt.kubeConfig(), 'v1', 'Secret', 'karpenter-credentials', NS)).toBeDefined();
    // The CRDs stay in the guest, as standalone.
    for (const n of RUNTIME_CRDS) expect(await crdEstablished(guest, n)).toBe(true);
  });

  it('AutoNode on again, then the HCP deleted: the NodePools and NodeClaims left by the disable go (forced), then the operand, then the finalizer', async () => {
    const g = guest.kubeConfig();
    expect((await patchHcp({ spec: { autoNode } })).status).toBe(200);
    await waitFor(
      'AutoNode back on: operand and the finalizer',
      async () => (await finalizers()).includes(FINALIZER) && (await operand()) !== undefined,
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    const forced = new Map<string, number>();
    const stopStandIn = startKarpenterStandIn(guest, forced);
    try {
      await deleteObject(mgmt.kubeConfig(), HCP_TYPE.apiVersion, HCP_TYPE.kind, HCP, NS);
      await waitFor('the HCP to be gone', async () => (await hcp()) === undefined, { timeoutMs: 90_000, intervalMs: 500 }).catch(
        async (e: Error) => {
          throw new Error(
            `${e.message}\nfinalizers: ${JSON.stringify(await finalizers())}\noperator log:\n${op.logs().split('\n').slice(-15).join('\n')}`,
          );
        },
      );
    } finally {
      stopStandIn();
    }
    expect(await listObjects(g, 'karpenter.sh/v1', 'NodePool')).toEqual([]);
    expect(await listObjects(g, 'karpenter.sh/v1', 'NodeClaim')).toEqual([]);
    // Forced at once: the stand-in only releases NodeClaims carrying Karpenter's termination-timestamp annotation.
    expect([...forced.keys()]).toEqual([USER_CLAIM]);
    expect(await operand()).toBeUndefined();
    const notes = (await teardownEvents()).filter((e) => e.reason === 'TeardownComplete').map((e) => e.note);
    expect(notes).toContain('NodePools, NodeClaims and the operand are removed');
    expect(op.exited()).toBe(false);
  }, 150_000);

  it('deleting the HCP while the guest API is down releases the finalizer with a Warning event (logged: the Role grants no Events)', async () => {
    const created = await applyObject(mgmt.kubeConfig(), theHostedControlPlane());
    await applyStatus(mgmt.kubeConfig(), { ...created, status: HCP_STATUS });
    await waitFor(
      'AutoNode back on: operand and the finalizer',
      async () => (await finalizers()).includes(FINALIZER) && (await operand()) !== undefined,
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    // A NodeClaim Karpenter would still be terminating when the guest went away.
    await applyObject(guest.kubeConfig(), {
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: { name: 'hcp-stuck', finalizers: ['karpenter.sh/termination'] },
      spec: {
        nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
        requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }],
      },
    } as KubeObj);
    await new Promise((r) => setTimeout(r, 1_000));
    guestStoppedAt = new Date();
    await guest.stopApiServer();
    try {
      await deleteObject(mgmt.kubeConfig(), HCP_TYPE.apiVersion, HCP_TYPE.kind, HCP, NS);
      await waitFor('the HCP to be gone', async () => (await hcp()) === undefined, {
        timeoutMs: 60_000,
        intervalMs: 500,
        abort: () => (op.exited() ? op.logs().slice(-3000) : undefined),
      }).catch(async (e: Error) => {
        throw new Error(
          `${e.message}\nfinalizers: ${JSON.stringify(await finalizers())}\noperator log:\n${op.logs().split('\n').slice(-15).join('\n')}`,
        );
      });
      const events = loggedEvents();
      const warning = events.find((e) => e.reason === 'GuestUnreachable');
      expect(warning, JSON.stringify(events.map((e) => e.reason))).toBeDefined();
      expect(warning?.type).toBe('Warning');
      expect(warning?.regarding).toBe(`HostedControlPlane ${NS}/${HCP}`);
      expect(warning?.note).toMatch(/may be orphaned/);
      expect(op.exited()).toBe(false);
    } finally {
      await guest.startApiServer();
    }
  });

  it('AutoNode disabled as HyperShift does it (the operator gone at once), then the HCP deleted: it goes away once HyperShift removes its finalizer', async () => {
    await applyObject(mgmt.kubeConfig(), theHostedControlPlane());
    await waitFor('the HCP re-created', async () => (await hcp()) !== undefined, { timeoutMs: 30_000 });
    // Up since the start of the file under HyperShift's Role: no 403 made it exit.
    expect(op.exited()).toBe(false);
    await op.stop();
    await startTheOperator();
    await waitFor('the finalizer on the new HCP', async () => (await finalizers()).includes(FINALIZER), {
      timeoutMs: 60_000,
      intervalMs: 500,
    });
    await applyObject(guest.kubeConfig(), {
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodePool',
      metadata: { name: 'left-behind' },
      spec: {
        template: {
          spec: {
            nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
            requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }],
          },
        },
      },
    } as KubeObj);
    // HyperShift deletes the operator's Deployment the moment AutoNode is turned off: nothing of ours runs.
    expect(op.exited()).toBe(false);
    await op.kill();
    expect((await patchHcp({ spec: { autoNode: null } })).status).toBe(200);
    await deleteObject(mgmt.kubeConfig(), HCP_TYPE.apiVersion, HCP_TYPE.kind, HCP, NS);
    // HyperShift's hosted-cluster controller (resolveKarpenterFinalizer) with AutoNode off: it removes its
    // finalizer, and only that one, over the version it read.
    const current = (await hcp())!;
    expect(current.metadata.finalizers).toEqual([FINALIZER]);
    const removed = await kubeRequest(mgmt.kubeConfig(), 'PATCH', HCP_PATH, {
      body: {
        metadata: {
          finalizers: (current.metadata.finalizers as string[]).filter((f) => f !== FINALIZER),
          resourceVersion: current.metadata.resourceVersion,
        },
      },
      contentType: 'application/merge-patch+json',
    });
    expect(removed.status).toBe(200);
    await waitFor('the HCP to be gone', async () => (await hcp()) === undefined, { timeoutMs: 30_000, intervalMs: 500 });
    // The guest's NodePool was left as it was: nobody tore down (as with HyperShift's own operator).
    expect(await getObject(guest.kubeConfig(), 'karpenter.sh/v1', 'NodePool', 'left-behind')).toBeDefined();
    await deleteObject(guest.kubeConfig(), 'karpenter.sh/v1', 'NodePool', 'left-behind');
  });

  it("under HyperShift's Role the operator's only 403s are its two gaps, Events and its namespace, and it never crashed on one", () => {
    const refused = new Set(
      mgmt.auditEvents({ user: MGMT_USER, codes: [403], since: started }).map((e) => `${e.verb} ${e.objectRef?.resource ?? e.requestURI}`),
    );
    expect([...refused].sort()).toEqual(['create events', 'get namespaces']);
    // Each start-up read its UID from its own pod instead; no process exited before the test stopped it
    // (checked before each stop).
    expect(op.logs()).toContain("the operand runs as the UID HyperShift gave this operator's pod");
    // Until the guest API server was stopped: a restarted one refuses requests for a moment while its RBAC
    // caches fill, whoever asks.
    const before = guest
      .auditEvents({ user: GUEST_USER, codes: [403] })
      .filter((e) => !guestStoppedAt || new Date(e.requestReceivedTimestamp) < guestStoppedAt);
    expect(before.map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
  });
});

/**
 * The world of one describe block: the guest cluster, the HCP namespace with HyperShift's RBAC and the HCP
 * with `status`, HyperShift's ignition generator (the stand-in), credentials Secret and the operator's pod
 * object, then the operator as HyperShift starts it. Waits for the namespace of a previous block to be gone first.
 */
async function startHostedCluster(status: Record<string, unknown>): Promise<void> {
  await waitFor('the HCP namespace of a previous block gone', async () => !(await getObject(mgmt.kubeConfig(), 'v1', 'Namespace', NS)), {
    timeoutMs: 120_000,
    intervalMs: 500,
  });
  // As HyperShift annotates it on a management cluster without SCCs: the UID of every HCP pod.
  ({ guest, dir, guestKubeconfigPath } = await prepareHostedClusters(mgmt, {
    namespace: NS,
    namespaceAnnotations: { [UID_ANNOTATION]: String(HCP_UID) },
  }));
  const created = await applyObject(mgmt.kubeConfig(), theHostedControlPlane());
  await applyStatus(mgmt.kubeConfig(), { ...created, status });
  // HyperShift's ignition generator: Secrets for OpenshiftEC2NodeClasses, nothing else.
  stopIgnitionStandIn = startIgnitionStandIn(mgmt, guest, world, NS);
  // What HyperShift's control-plane operator writes from spec.autoNode's role (its karpenter-credentials).
  await applyObject(mgmt.kubeConfig(), hyperShiftCredentialsSecret(NS, autoNode.provisionerConfig.karpenter.aws.roleARN));
  // The operator's own pod, as HyperShift's component framework lays it out on a management cluster without SCCs.
  await applyOperatorPod(mgmt, { namespace: NS, name: OPERATOR_POD, uid: HCP_UID });
  await startTheOperator();
}

/** Stops what `startHostedCluster` started; the HCP and its namespace must not outlive the block on the shared cluster. */
async function stopHostedCluster(): Promise<void> {
  stopIgnitionStandIn?.();
  await op?.stop();
  // The HCP must not outlive this file on the shared cluster.
  await patchHcp({ metadata: { finalizers: null } }).catch(() => undefined);
  await deleteObject(mgmt.kubeConfig(), HCP_TYPE.apiVersion, HCP_TYPE.kind, HCP, NS).catch(() => false);
  await deleteObject(mgmt.kubeConfig(), 'v1', 'Namespace', NS).catch(() => false);
  await guest?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
}

describe('HyperShift: the OpenshiftEC2NodeClass translation owns what it maps and holds userData during a control-plane upgrade', () => {
  const R1 = (theHostedControlPlane().spec as { releaseImage: string }).releaseImage;
  const R2 = 'quay.io/openshift-release-dev/ocp-release:4.23.0-x86_64';
  /** `status.versionStatus` as HyperShift's control-plane operator copies it from the hosted ClusterVersion. */
  const versionStatus = (
    desired: { image: string; version: string },
    history: Array<{ state: string; image: string; version: string }>,
  ) => ({
    desired,
    observedGeneration: 1,
    availableUpdates: null,
    history: history.map((h) => ({
      ...h,
      verified: false,
      startedTime: '2026-12-01T00:00:00Z',
      completionTime: h.state === 'Completed' ? '2026-12-01T01:00:00Z' : null,
    })),
  });
  const at422 = { image: R1, version: '4.22.0' };
  const at423 = { image: R2, version: '4.23.0' };
  const setVersionStatus = async (vs: ReturnType<typeof versionStatus>) => {
    const current = (await hcp())!;
    await applyStatus(mgmt.kubeConfig(), { ...current, status: { ready: true, initialized: true, versionStatus: vs } });
  };
  const specOf = async (kind: 'EC2NodeClass' | 'OpenshiftEC2NodeClass', name: string) => {
    const t = kind === 'EC2NodeClass' ? EC2NC : OEC2NC;
    return (await getObject(guest.kubeConfig(), t.apiVersion, t.kind, name))?.spec as Record<string, unknown> | undefined;
  };
  const nodeClassWrites = (since: Date) =>
    guest
      .auditEvents({ user: GUEST_USER, verbs: WRITE_VERBS, since })
      .filter((e) => ['ec2nodeclasses', 'openshiftec2nodeclasses'].includes(e.objectRef?.resource ?? ''))
      .map((e) => `${e.verb} ${e.requestURI}`);
  const operatorDied = () => (op.exited() ? op.logs().slice(-3000) : undefined);
  let began: Date;

  beforeAll(async () => {
    began = new Date();
    await startHostedCluster({ ready: true, initialized: true, versionStatus: versionStatus(at422, [{ state: 'Completed', ...at422 }]) });
    // Converged: both CRDs served in the guest and EC2NodeClass default translated.
    await waitFor(
      'EC2NodeClass default in the guest',
      async () => (await getObject(guest.kubeConfig(), EC2NC.apiVersion, EC2NC.kind, 'default').catch(() => undefined)) !== undefined,
      { timeoutMs: 90_000, abort: operatorDied },
    );
  }, 240_000);
  afterAll(stopHostedCluster, 120_000);

  it('a field removed from an OpenshiftEC2NodeClass is removed from its EC2NodeClass, and a converged world gets no write', async () => {
    const g = guest.kubeConfig();
    const discovery = [{ tags: { 'karpenter.sh/discovery': world.facts.infraId } }];
    // OpenshiftEC2NodeClass v1 and the EC2NodeClass it becomes.
    const trimmedBdm = [{ deviceName: '/dev/xvda', rootVolume: 'RootVolume', ebs: { volumeSizeGiB: 200, volumeType: 'GP3' } }];
    const trimmedBdmEc2 = [{ deviceName: '/dev/xvda', rootVolume: true, ebs: { volumeSize: '200Gi', volumeType: 'gp3' } }];
    const selectors = {
      subnetSelectorTerms: [{ tags: { 'karpenter.sh/discovery': world.facts.infraId, tier: 'private' } }],
      securityGroupSelectorTerms: [{ tags: { 'karpenter.sh/discovery': world.facts.infraId, role: 'worker' } }],
    };
    const everyField = {
      ...selectors,
      capacityReservationSelectorTerms: [{ ownerID: '123456789012', instanceMatchCriteria: 'Targeted' }],
      ipAddressAssociation: 'Public',
      // red-hat-managed is the HostedCluster's too (value true, no override allowed): its value wins.
      tags: { team: 'a', 'red-hat-managed': 'false' },
      blockDeviceMappings: [{ ...trimmedBdm[0]!, ebs: { ...trimmedBdm[0]!.ebs, iops: 4000 } }],
      instanceStorePolicy: 'RAID0',
      monitoring: 'Detailed',
      metadataOptions: { httpPutResponseHopLimit: 2, httpTokens: 'Required' },
      kubelet: { maxPods: 110, evictionHard: { 'memory.available': '200Mi' } },
    };
    const everyFieldEc2 = {
      ...selectors,
      capacityReservationSelectorTerms: [{ ownerID: '123456789012', instanceMatchCriteria: 'targeted' }],
      associatePublicIPAddress: true,
      blockDeviceMappings: [{ ...trimmedBdmEc2[0]!, ebs: { ...trimmedBdmEc2[0]!.ebs, iops: 4000 } }],
      instanceStorePolicy: 'RAID0',
      detailedMonitoring: true,
      metadataOptions: { httpEndpoint: 'enabled', httpProtocolIPv6: 'disabled', httpPutResponseHopLimit: 2, httpTokens: 'required' },
      kubelet: { maxPods: 110, evictionHard: { 'memory.available': '200Mi' } },
    };
    await applyObject(g, { ...OEC2NC, metadata: { name: 'trimmed' }, spec: everyField } as KubeObj);
    await waitFor(
      'EC2NodeClass trimmed with every field of its OpenshiftEC2NodeClass',
      async () => {
        const spec = await specOf('EC2NodeClass', 'trimmed');
        return spec?.['userData'] === userDataFor('trimmed') && spec['detailedMonitoring'] === true;
      },
      { timeoutMs: 60_000, abort: operatorDied },
    );
    expect(await specOf('EC2NodeClass', 'trimmed')).toMatchObject({ ...everyFieldEc2, tags: { 'red-hat-managed': 'true', team: 'a' } });
    const tagConflict = async () =>
      conditionOf(await getObject(guest.kubeConfig(), OEC2NC.apiVersion, OEC2NC.kind, 'trimmed'), 'AWSResourceTagConflict');
    const conflict = await waitFor('AWSResourceTagConflict on trimmed', async () => (await tagConflict()) ?? false, {
      timeoutMs: 30_000,
      abort: operatorDied,
    });
    expect(conflict).toMatchObject({ status: 'True', reason: 'TagConflictDetected' });
    expect(conflict.message).toContain('red-hat-managed');

    // The user drops fields (server-side apply of the object without them, as `kubectl apply --server-side`),
    // and hands public IPs back to the subnet: SubnetDefault leaves associatePublicIPAddress unset.
    await applyObject(g, {
      ...OEC2NC,
      metadata: { name: 'trimmed' },
      spec: { subnetSelectorTerms: discovery, blockDeviceMappings: trimmedBdm, ipAddressAssociation: 'SubnetDefault' },
    } as KubeObj);
    const gone = ['associatePublicIPAddress', 'instanceStorePolicy', 'detailedMonitoring', 'capacityReservationSelectorTerms'];
    const trimmed = await waitFor(
      'EC2NodeClass trimmed without the dropped fields',
      async () => {
        const spec = await specOf('EC2NodeClass', 'trimmed');
        return spec && gone.every((f) => !(f in spec)) ? spec : false;
      },
      { timeoutMs: 30_000, abort: operatorDied },
    );
    expect(trimmed).toMatchObject({
      subnetSelectorTerms: discovery,
      securityGroupSelectorTerms: discovery,
      blockDeviceMappings: trimmedBdmEc2,
      tags: { 'red-hat-managed': 'true' },
      userData: userDataFor('trimmed'),
    });
    expect(trimmed['blockDeviceMappings']).toEqual(trimmedBdmEc2);
    // metadataOptions and kubelet go back to the provider's defaults.
    expect(trimmed['metadataOptions']).toEqual({
      httpEndpoint: 'enabled',
      httpProtocolIPv6: 'disabled',
      httpPutResponseHopLimit: 1,
      httpTokens: 'required',
    });
    expect(trimmed['kubelet']).not.toHaveProperty('maxPods');
    expect(trimmed['kubelet']).not.toHaveProperty('evictionHard');
    expect(trimmed['tags']).toEqual({ 'red-hat-managed': 'true' });
    // No tags of its own: no tag condition.
    await waitFor('AWSResourceTagConflict gone from trimmed', async () => (await tagConflict()) === undefined, {
      timeoutMs: 30_000,
      abort: operatorDied,
    });

    // Converged: a reconcile of everything, forced by touching the HCP, writes no NodeClass.
    await new Promise((r) => setTimeout(r, 2_000));
    const since = new Date();
    expect((await patchHcp({ metadata: { annotations: { 'test.example.com/poke': String(Date.now()) } } })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 4_000));
    expect(nodeClassWrites(since)).toEqual([]);
  }, 120_000);

  it('while the control plane upgrades, EC2NodeClasses keep their userData and say why; new ones get theirs; applied once it completed', async () => {
    const g = guest.kubeConfig();
    await applyObject(g, { ...OEC2NC, metadata: { name: 'held' }, spec: { tags: { team: 'a' } } } as KubeObj);
    await waitFor(
      'EC2NodeClass held with its userData',
      async () => (await specOf('EC2NodeClass', 'held'))?.['userData'] === userDataFor('held'),
      {
        timeoutMs: 60_000,
        abort: operatorDied,
      },
    );
    expect((await specOf('EC2NodeClass', 'default'))?.['userData']).toBe(userDataFor('default'));

    // HyperShift starts the upgrade to 4.23.0: the HCP asks for it, the control plane is rolling out, and the
    // ignition generator writes the new release's Secrets.
    expect((await patchHcp({ spec: { releaseImage: R2 } })).status).toBe(200);
    await setVersionStatus(
      versionStatus(at423, [
        { state: 'Partial', ...at423 },
        { state: 'Completed', ...at422 },
      ]),
    );
    const newUserData = (name: string) => userDataFor(`${name}&release=4.23.0`);
    for (const name of ['default', 'held']) {
      await applyObject(
        mgmt.kubeConfig(),
        anIgnitionSecret({
          name: `user-data-${name}-4-23-0`,
          nodeClass: name,
          ami: world.facts.amis.x86_64,
          userData: newUserData(name),
        }) as KubeObj,
      );
      // The old release's Secret goes (two created within one second would tie on creationTimestamp).
      await deleteObject(mgmt.kubeConfig(), 'v1', 'Secret', anIgnitionSecret({ nodeClass: name }).metadata.name, NS);
    }
    // Other changes still go through, and a new OpenshiftEC2NodeClass gets its userData.
    await applyObject(g, { ...OEC2NC, metadata: { name: 'held' }, spec: { tags: { team: 'b' } } } as KubeObj);
    // v1 requires a spec with at least one field.
    await applyObject(g, { ...OEC2NC, metadata: { name: 'fresh' }, spec: { monitoring: 'Basic' } } as KubeObj);
    const heldCondition = (name: string) => async () =>
      conditionOf(await getObject(g, OEC2NC.apiVersion, OEC2NC.kind, name), 'UserDataUpToDate') ?? false;
    for (const name of ['held', 'default']) {
      const condition = await waitFor(`OpenshiftEC2NodeClass ${name}: UserDataUpToDate False`, heldCondition(name), {
        timeoutMs: 30_000,
        abort: operatorDied,
      });
      expect(condition).toMatchObject({ status: 'False', reason: 'ControlPlaneUpgrading' });
      expect(condition.message).toContain('from 4.22.0 to 4.23.0');
    }
    await waitFor(
      'EC2NodeClass held with the new tags, EC2NodeClass fresh with its userData',
      async () =>
        ((await specOf('EC2NodeClass', 'held'))?.['tags'] as Record<string, string> | undefined)?.['team'] === 'b' &&
        (await specOf('EC2NodeClass', 'fresh'))?.['userData'] === userDataFor('fresh'),
      { timeoutMs: 30_000, abort: operatorDied },
    );
    for (const name of ['held', 'default']) expect((await specOf('EC2NodeClass', name))?.['userData']).toBe(userDataFor(name));

    // The control plane completed 4.23.0: the new userData applies and the condition goes.
    await setVersionStatus(
      versionStatus(at423, [
        { state: 'Completed', ...at423 },
        { state: 'Completed', ...at422 },
      ]),
    );
    for (const name of ['held', 'default']) {
      await waitFor(
        `EC2NodeClass ${name} with the new release's userData`,
        async () => (await specOf('EC2NodeClass', name))?.['userData'] === newUserData(name),
        {
          timeoutMs: 30_000,
          abort: operatorDied,
        },
      );
      await waitFor(`OpenshiftEC2NodeClass ${name} without UserDataUpToDate`, async () => (await heldCondition(name)()) === false, {
        timeoutMs: 30_000,
      });
    }
    // HyperShift's Role refuses only the Events and the namespace GET; the translation needs neither.
    const refused = mgmt
      .auditEvents({ user: MGMT_USER, codes: [403], since: began })
      .map((e) => `${e.verb} ${e.objectRef?.resource ?? e.requestURI}`)
      .filter((r) => r !== 'create events' && r !== 'get namespaces');
    expect(refused).toEqual([]);
    expect(guest.auditEvents({ user: GUEST_USER, codes: [403] }).map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
    expect(op.exited()).toBe(false);
  }, 150_000);
});
