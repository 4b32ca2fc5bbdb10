import { beforeEach, describe, expect, it } from 'vitest';
import type { ClusterFacts, KarpenterRequest, OperatorSettings } from '../../model/cluster.js';
import { refOf, Types, type KubeObject } from '../../model/kube.js';
import { Names } from '../../model/names.js';
import { silentLogger } from '../../ports/logger.js';
import type { Topology } from '../../ports/topology.js';
import { FakeCloudProvider, MemoryClusterStore, RecordingEvents, twoClusterOperandLayout } from '../../testing/index.js';
import { standaloneOperandLayout } from '../../topology/standalone.js';
import { OperandReconciler } from './operand.js';

const HCP_NS = 'clusters-demo';
const hcpRef = { apiVersion: 'hypershift.openshift.io/v1beta1', kind: 'HostedControlPlane', name: 'demo', namespace: HCP_NS };
const request: KarpenterRequest = {
  owner: { ...hcpRef, uid: 'uid-hcp' },
  generation: 1,
  logLevel: 'info',
  deleting: false,
  finalizers: [],
};
const facts: ClusterFacts = {
  platform: 'AWS',
  region: 'eu-west-1',
  infrastructureName: 'demo-4kq9z',
  apiServerInternalURL: 'https://api.demo.example.com:443',
  controlPlaneTopology: 'External',
  resourceTags: [],
};
const settings: OperatorSettings = { namespace: HCP_NS, releaseVersion: '4.22.0', operandImage: 'quay.io/karpenter:1', crdDir: '/x' };

const establishedCrd = (name: string): KubeObject => ({
  ...Types.CustomResourceDefinition,
  metadata: { name },
  spec: {},
  status: { conditions: [{ type: 'Established', status: 'True' }] },
});
const crds = ['nodepools.karpenter.sh', 'nodeclaims.karpenter.sh', 'ec2nodeclasses.karpenter.k8s.aws'].map(establishedCrd);
const credentials: KubeObject = {
  ...Types.Secret,
  metadata: { name: Names.credentialsSecret, namespace: HCP_NS },
  data: { credentials: 'YQ==' },
};
const providerRbac = (namespace: string): KubeObject[] => [
  {
    ...Types.ClusterRole,
    metadata: { name: 'karpenter' },
    rules: [{ apiGroups: ['karpenter.k8s.aws'], resources: ['ec2nodeclasses'], verbs: ['get'] }],
  },
  {
    ...Types.ClusterRoleBinding,
    metadata: { name: 'karpenter' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'karpenter' },
    subjects: [{ kind: 'ServiceAccount', name: 'karpenter', namespace }],
  },
];

/** The provider the real one would be: its bindings name the ServiceAccount in the namespace it is asked for. */
class NamespacedRbacCloud extends FakeCloudProvider {
  override operandRbac(namespace: string): KubeObject[] {
    super.operandRbac(namespace);
    return providerRbac(namespace);
  }
}

/** A two-cluster topology as HyperShift's is, without the HCP decoding (not core's concern). */
function twoClusters(management: MemoryClusterStore, guest: MemoryClusterStore, name: Topology['name'] = 'hypershift'): Topology {
  return {
    name,
    controlStore: management,
    workloadStore: guest,
    operandNamespace: HCP_NS,
    readRequest: async () => request,
    clusterFacts: async () => facts,
    reportStatus: async () => {},
    watches: [],
    statusObject: hcpRef,
    teardownFinalizer: 'hypershift.openshift.io/karpenter-finalizer',
    operandLayout() {
      return name === 'standalone' ? standaloneOperandLayout(this.operandNamespace) : twoClusterOperandLayout(this.operandNamespace);
    },
  };
}

const ids = (store: MemoryClusterStore, kinds: string[]) =>
  store
    .all()
    .filter((o) => kinds.includes(o.kind))
    .map((o) => `${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`)
    .sort();

describe('deployment.operand on two clusters (HyperShift)', () => {
  let management: MemoryClusterStore;
  let guest: MemoryClusterStore;
  let cloud: NamespacedRbacCloud;
  let events: RecordingEvents;
  let reconciler: OperandReconciler;
  const operandKinds = ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'Deployment'];

  beforeEach(() => {
    management = new MemoryClusterStore([credentials]);
    guest = new MemoryClusterStore(crds);
    cloud = new NamespacedRbacCloud({ crds });
    events = new RecordingEvents();
    reconciler = new OperandReconciler({ topology: twoClusters(management, guest), cloud, settings, events, logger: silentLogger });
  });

  it('converges in one pass and writes nothing on the second', async () => {
    await reconciler.reconcile();
    expect(management.writes.length).toBeGreaterThan(0);
    expect(guest.writes.length).toBeGreaterThan(0);
    management.clearWrites();
    guest.clearWrites();
    await reconciler.reconcile();
    expect(management.writes).toEqual([]);
    expect(guest.writes).toEqual([]);
  });

  it.each([
    {
      name: 'management: the Deployment and the ServiceAccount it runs as, in the HCP namespace',
      store: () => management,
      want: ['Deployment clusters-demo/karpenter', 'ServiceAccount clusters-demo/karpenter'],
    },
    {
      name: 'guest: the identity ServiceAccount and all RBAC, no Lease Role',
      store: () => guest,
      want: [
        'ClusterRole /karpenter',
        'ClusterRole /karpenter-core',
        'ClusterRoleBinding /karpenter',
        'ClusterRoleBinding /karpenter-core',
        'Role kube-system/karpenter-dns',
        'RoleBinding kube-system/karpenter-dns',
        'ServiceAccount kube-system/karpenter',
      ],
    },
  ])('$name', async ({ store, want }) => {
    await reconciler.reconcile();
    expect(ids(store(), operandKinds)).toEqual(want);
  });

  it('applies a binding only once its role exists, so a fresh cluster converges in one pass', async () => {
    // As the API server does for a binder without the `bind` verb: a binding to a missing role is refused.
    // Roles are stored a macrotask later, so a binding sent in the same wave as its role would find none.
    class RoleCheckingStore extends MemoryClusterStore {
      override async apply<T extends KubeObject = KubeObject>(desired: T, options?: Parameters<MemoryClusterStore['apply']>[1]) {
        if (desired.kind === 'Role' || desired.kind === 'ClusterRole') await new Promise((r) => setTimeout(r, 5));
        if (desired.kind === 'RoleBinding' || desired.kind === 'ClusterRoleBinding') {
          const roleRef = desired['roleRef'] as { kind: string; name: string };
          const namespace = roleRef.kind === 'Role' ? desired.metadata.namespace : undefined;
          const role = await this.get({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: roleRef.kind, name: roleRef.name, namespace });
          if (!role) throw new Error(`${desired.kind} ${desired.metadata.name}: ${roleRef.kind} ${roleRef.name} not found`);
        }
        return super.apply(desired, options);
      }
    }
    const checkingGuest = new RoleCheckingStore(crds);
    const r = new OperandReconciler({ topology: twoClusters(management, checkingGuest), cloud, settings, events, logger: silentLogger });
    await r.reconcile();
    expect(ids(checkingGuest, ['ClusterRoleBinding', 'RoleBinding'])).toEqual([
      'ClusterRoleBinding /karpenter',
      'ClusterRoleBinding /karpenter-core',
      'RoleBinding kube-system/karpenter-dns',
    ]);
    expect(ids(management, ['Deployment'])).toEqual(['Deployment clusters-demo/karpenter']);
  });

  it('stops at a wave that fails: no Deployment without its permissions; the next pass finishes', async () => {
    // A binding the API server refuses (e.g. a webhook or quota): the pass fails before the workloads.
    let refuse = true;
    class RefusingStore extends MemoryClusterStore {
      override async apply<T extends KubeObject = KubeObject>(desired: T, options?: Parameters<MemoryClusterStore['apply']>[1]) {
        if (refuse && desired.kind === 'ClusterRoleBinding') throw new Error(`ClusterRoleBinding ${desired.metadata.name}: refused`);
        return super.apply(desired, options);
      }
    }
    const refusingGuest = new RefusingStore(crds);
    const r = new OperandReconciler({ topology: twoClusters(management, refusingGuest), cloud, settings, events, logger: silentLogger });
    await expect(r.reconcile()).rejects.toThrow(/ClusterRoleBinding karpenter(-core)?: refused/);
    expect(ids(refusingGuest, ['ClusterRole', 'ServiceAccount'])).toEqual([
      'ClusterRole /karpenter',
      'ClusterRole /karpenter-core',
      'ServiceAccount kube-system/karpenter',
    ]);
    expect(ids(management, ['Deployment'])).toEqual([]);
    refuse = false;
    await r.reconcile();
    expect(ids(management, ['Deployment'])).toEqual(['Deployment clusters-demo/karpenter']);
    expect(ids(refusingGuest, ['ClusterRoleBinding'])).toEqual(['ClusterRoleBinding /karpenter', 'ClusterRoleBinding /karpenter-core']);
  });

  it('asks the provider for RBAC bound to the guest identity', async () => {
    await reconciler.reconcile();
    expect(cloud.callsOf('operandRbac').map((c) => c.args)).toEqual([['kube-system']]);
    const binding = await guest.get({ ...Types.ClusterRoleBinding, name: 'karpenter' });
    expect(binding?.['subjects']).toEqual([{ kind: 'ServiceAccount', name: 'karpenter', namespace: 'kube-system' }]);
  });

  it('puts no owner reference on guest objects and owns the management ones', async () => {
    await reconciler.reconcile();
    for (const o of guest.all().filter((x) => operandKinds.includes(x.kind)))
      expect(o.metadata.ownerReferences, `${o.kind} ${o.metadata.name}`).toBeUndefined();
    for (const o of management.all().filter((x) => operandKinds.includes(x.kind))) {
      expect(o.metadata.ownerReferences, `${o.kind} ${o.metadata.name}`).toEqual([
        { apiVersion: hcpRef.apiVersion, kind: hcpRef.kind, name: hcpRef.name, uid: 'uid-hcp', controller: true, blockOwnerDeletion: true },
      ]);
    }
  });

  it('restores a deleted guest ClusterRole on the guest only, then is quiet', async () => {
    await reconciler.reconcile();
    guest.remove({ ...Types.ClusterRole, name: 'karpenter-core' });
    management.clearWrites();
    guest.clearWrites();
    await reconciler.reconcile();
    expect(guest.writes.map((w) => `${w.verb} ${w.ref.kind} ${w.ref.name}`)).toEqual(['apply ClusterRole karpenter-core']);
    expect(management.writes).toEqual([]);
    guest.clearWrites();
    await reconciler.reconcile();
    expect(guest.writes).toEqual([]);
  });

  it('removes a foreign container and env var with one write and a Warning, keeps a foreign annotation, then is quiet', async () => {
    await reconciler.reconcile();
    const ref = { ...Types.Deployment, name: Names.operandDeployment, namespace: HCP_NS };
    const dep = (await management.get(ref))!;
    type Pod = { containers: Array<{ name: string; env?: Array<{ name: string; value?: string }> }> };
    const edited = structuredClone(dep);
    const pod = (edited.spec as { template: { spec: Pod } }).template.spec;
    pod.containers[0]!.env!.push({ name: 'HTTPS_PROXY', value: 'http://evil.example.com:3128' });
    pod.containers.push({ name: 'sidecar' });
    edited.metadata.annotations = { 'team.example.com/note': 'mine' };
    management.seed(edited);
    management.clearWrites();
    events.events.length = 0;

    await reconciler.reconcile();
    expect(management.writes.map((w) => `${w.verb} ${w.ref.kind} ${w.ref.name}`)).toEqual(['apply Deployment karpenter']);
    const after = (await management.get(ref))!;
    expect((after.spec as { template: { spec: Pod } }).template.spec).toEqual((dep.spec as { template: { spec: Pod } }).template.spec);
    expect(after.metadata.annotations).toEqual({ 'team.example.com/note': 'mine' });
    const warning = events.events.find((e) => e.reason === 'ForeignEntriesRemoved');
    expect(warning).toMatchObject({ type: 'Warning' });
    expect(warning?.message).toContain('spec.template.spec.containers[sidecar]');
    expect(warning?.message).toContain('spec.template.spec.containers[controller].env[HTTPS_PROXY]');
    expect(warning?.message).not.toContain('evil.example.com');

    management.clearWrites();
    await reconciler.reconcile();
    expect(management.writes).toEqual([]);
  });

  it('records OperandApplied once, when the Deployment is created', async () => {
    await reconciler.reconcile();
    await reconciler.reconcile();
    expect(events.events.map((e) => e.reason)).toEqual(['OperandApplied']);
  });

  it('waits for the credentials Secret on the management cluster', async () => {
    management.remove(refOf(credentials));
    await reconciler.reconcile();
    expect(management.writes).toEqual([]);
    expect(guest.writes).toEqual([]);
  });
});

describe('deployment.operand watches', () => {
  const managed = { [Names.managedLabel]: 'true' };
  const watchesOf = (name: Topology['name']) =>
    new OperandReconciler({
      topology: {
        ...twoClusters(new MemoryClusterStore(), new MemoryClusterStore(), name),
        operandNamespace: name === 'standalone' ? 'openshift-karpenter' : HCP_NS,
      },
      cloud: new FakeCloudProvider(),
      settings,
      events: new RecordingEvents(),
      logger: silentLogger,
    }).watches.filter((w) => w.labels?.[Names.managedLabel] === 'true' && w.type.kind !== 'CustomResourceDefinition');

  it.each([
    {
      name: 'standalone: as before (one cluster; the Lease Role in the operand namespace)',
      topology: 'standalone' as const,
      want: [
        { type: Types.ServiceAccount, cluster: 'control', namespace: 'openshift-karpenter', labels: managed },
        { type: Types.Role, namespace: 'openshift-karpenter', labels: managed },
        { type: Types.Role, namespace: 'kube-system', labels: managed },
        { type: Types.RoleBinding, namespace: 'openshift-karpenter', labels: managed },
        { type: Types.RoleBinding, namespace: 'kube-system', labels: managed },
        { type: Types.ClusterRole, labels: managed },
        { type: Types.ClusterRoleBinding, labels: managed },
        { type: Types.PodDisruptionBudget, cluster: 'control', namespace: 'openshift-karpenter', labels: managed },
      ],
    },
    {
      name: 'HyperShift: the pod ServiceAccount on management, the rest on the guest, no Lease Role',
      topology: 'hypershift' as const,
      want: [
        { type: Types.ServiceAccount, cluster: 'control', namespace: HCP_NS, labels: managed },
        { type: Types.ServiceAccount, namespace: 'kube-system', labels: managed },
        { type: Types.Role, namespace: 'kube-system', labels: managed },
        { type: Types.RoleBinding, namespace: 'kube-system', labels: managed },
        { type: Types.ClusterRole, labels: managed },
        { type: Types.ClusterRoleBinding, labels: managed },
      ],
    },
  ])('$name', ({ topology, want }) => {
    expect(watchesOf(topology)).toEqual(want);
  });
});

describe('deployment.operand: the CR settings (standalone)', () => {
  const owner = { apiVersion: 'autoscaling.openshift.io/v1alpha1', kind: 'Karpenter', name: 'default', uid: 'uid-k' };
  let current: KarpenterRequest;
  let store: MemoryClusterStore;
  let reconciler: OperandReconciler;
  const standalone = (): Topology => ({
    ...twoClusters(store, store, 'standalone'),
    operandNamespace: 'openshift-karpenter',
    readRequest: async () => current,
    clusterFacts: async () => ({ ...facts, controlPlaneTopology: 'HighlyAvailable' }),
    statusObject: { apiVersion: 'config.openshift.io/v1', kind: 'ClusterOperator', name: 'karpenter' },
  });
  const pdb = { ...Types.PodDisruptionBudget, namespace: 'openshift-karpenter', name: 'karpenter' };
  const deploymentRef = { ...Types.Deployment, namespace: 'openshift-karpenter', name: 'karpenter' };

  beforeEach(() => {
    current = { owner, generation: 1, logLevel: 'info', deleting: false, finalizers: [] };
    store = new MemoryClusterStore([...crds, { ...credentials, metadata: { ...credentials.metadata, namespace: 'openshift-karpenter' } }]);
    reconciler = new OperandReconciler({
      topology: standalone(),
      cloud: new FakeCloudProvider({ crds }),
      settings: { ...settings, namespace: 'openshift-karpenter' },
      events: new RecordingEvents(),
      logger: silentLogger,
    });
  });

  it('a settings change is one Deployment write, then nothing', async () => {
    await reconciler.reconcile();
    store.clearWrites();
    current = { ...current, generation: 2, settings: { batchMaxDuration: '30s' } };
    await reconciler.reconcile();
    expect(store.writes.map((w) => `${w.verb} ${w.ref.kind}`)).toEqual(['apply Deployment']);
    store.clearWrites();
    await reconciler.reconcile();
    expect(store.writes).toEqual([]);
  });

  it('two replicas bring a PodDisruptionBudget; one removes it, once', async () => {
    await reconciler.reconcile();
    expect(await store.get(pdb)).toBeDefined();
    current = { ...current, generation: 2, replicas: 1 };
    await reconciler.reconcile();
    expect(await store.get(pdb)).toBeUndefined();
    expect(((await store.get(deploymentRef))?.spec as { replicas: number }).replicas).toBe(1);
    store.clearWrites();
    await reconciler.reconcile();
    expect(store.writes).toEqual([]);
  });

  it("leaves a PodDisruptionBudget of the same name that is not the operator's", async () => {
    current = { ...current, replicas: 1 };
    await store.apply({ ...pdb, metadata: { name: pdb.name, namespace: pdb.namespace }, spec: { maxUnavailable: 0 } });
    await reconciler.reconcile();
    expect(await store.get(pdb)).toBeDefined();
  });
});
