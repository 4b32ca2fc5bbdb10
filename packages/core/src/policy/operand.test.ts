import { describe, expect, it } from 'vitest';
import type { ClusterFacts, KarpenterRequest, LogLevel, OperatorSettings } from '../model/cluster.js';
import type { KubeObject } from '../model/kube.js';
import { Names } from '../model/names.js';
import type { OperandCloudConfig } from '../ports/cloud-provider.js';
import { twoClusterOperandLayout } from '../testing/layouts.js';
import { standaloneOperandLayout } from '../topology/standalone.js';
import { OperandNames, type OperandInput } from './operand-layout.js';
import { operandScopes, planOperand, renderOperand, type PlacedObject } from './operand.js';
import { isSubset } from './subset.js';

const facts = (over: Partial<ClusterFacts> = {}): ClusterFacts => ({
  platform: 'AWS',
  region: 'us-east-2',
  infrastructureName: 'mycluster-x7k2p',
  apiServerInternalURL: 'https://api-int.mycluster.example.com:6443',
  controlPlaneTopology: 'HighlyAvailable',
  resourceTags: [],
  ...over,
});
const settings = (over: Partial<OperatorSettings> = {}): OperatorSettings => ({
  namespace: 'openshift-karpenter',
  releaseVersion: '4.22.0',
  operandImage: 'registry.example.com/karpenter@sha256:abc',
  crdDir: '/crds',
  ...over,
});
const request = (over: Partial<KarpenterRequest> = {}): KarpenterRequest => ({
  owner: { apiVersion: 'autoscaling.openshift.io/v1alpha1', kind: 'Karpenter', name: 'default', uid: 'uid-karpenter' },
  generation: 3,
  logLevel: 'info',
  deleting: false,
  finalizers: [],
  ...over,
});
const cloud: OperandCloudConfig = {
  env: [
    { name: 'AWS_REGION', value: 'us-east-2' },
    { name: 'AWS_SHARED_CREDENTIALS_FILE', value: '/etc/provider/credentials' },
  ],
  volumes: [{ name: 'provider-creds', secret: { secretName: 'karpenter-cloud-credentials' } }],
  volumeMounts: [{ name: 'provider-creds', mountPath: '/etc/provider', readOnly: true }],
  credentialsSecret: 'karpenter-cloud-credentials',
};
const providerRbac: KubeObject[] = [
  { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'karpenter' }, rules: [] },
];
const input = (over: Partial<OperandInput> = {}): OperandInput => ({
  namespace: 'openshift-karpenter',
  facts: facts(),
  settings: settings(),
  request: request(),
  cloud,
  providerRbac,
  credentialsHash: 'hash-1',
  layout: standaloneOperandLayout(over.namespace ?? 'openshift-karpenter'),
  ...over,
});

const twoClusterLayout = twoClusterOperandLayout;

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const deployment = (objs: KubeObject[]): Obj => {
  const d = objs.find((o) => o.kind === 'Deployment');
  if (!d) throw new Error('no Deployment rendered');
  return d as Obj;
};
const podSpec = (objs: KubeObject[]): Obj => deployment(objs)['spec'].template.spec;
const controller = (objs: KubeObject[]): Obj => podSpec(objs)['containers'][0];
const envOf = (c: Obj): Record<string, unknown> =>
  Object.fromEntries((c['env'] as Obj[]).map((e) => [e['name'], e['value'] ?? e['valueFrom']]));

describe('renderOperand: images', () => {
  it.each([
    {
      name: 'settings only',
      images: undefined,
      operand: 'registry.example.com/karpenter@sha256:abc',
      operator: 'registry.example.com/op:1',
    },
    {
      name: 'request overrides both',
      images: { operand: 'quay.io/o/k:2', operator: 'quay.io/o/op:2' },
      operand: 'quay.io/o/k:2',
      operator: 'quay.io/o/op:2',
    },
    {
      name: 'request overrides the operand only',
      images: { operand: 'quay.io/o/k:3' },
      operand: 'quay.io/o/k:3',
      operator: 'registry.example.com/op:1',
    },
  ])('$name', ({ images, operand, operator }) => {
    const objs = renderOperand(
      input({ settings: settings({ operatorImage: 'registry.example.com/op:1' }), request: request(images ? { images } : {}) }),
    );
    expect(controller(objs)['image']).toBe(operand);
    expect(podSpec(objs)['initContainers'][0]['image']).toBe(operator);
  });
});

describe('renderOperand: objects', () => {
  it('renders the operand objects in apply order, Deployment last', () => {
    const ids = renderOperand(input()).map((o) => `${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`);
    expect(ids).toEqual([
      'ServiceAccount openshift-karpenter/karpenter',
      'ClusterRole /karpenter-core',
      'ClusterRoleBinding /karpenter-core',
      'Role openshift-karpenter/karpenter',
      'RoleBinding openshift-karpenter/karpenter',
      'Role kube-system/karpenter-dns',
      'RoleBinding kube-system/karpenter-dns',
      'ClusterRole /karpenter',
      'PodDisruptionBudget openshift-karpenter/karpenter',
      'Deployment openshift-karpenter/karpenter',
    ]);
  });

  it.each([
    {
      name: 'every object carries app and managed labels',
      check: (o: KubeObject) => isSubset({ app: 'karpenter', [Names.managedLabel]: 'true' }, o.metadata.labels),
    },
    {
      name: 'every object is controlled by the Karpenter CR with blockOwnerDeletion',
      check: (o: KubeObject) =>
        isSubset(
          [
            {
              apiVersion: 'autoscaling.openshift.io/v1alpha1',
              kind: 'Karpenter',
              name: 'default',
              uid: 'uid-karpenter',
              controller: true,
              blockOwnerDeletion: true,
            },
          ],
          o.metadata.ownerReferences,
        ),
    },
    {
      name: 'bindings name the operand ServiceAccount',
      check: (o: KubeObject) =>
        !o.kind.endsWith('Binding') ||
        isSubset([{ kind: 'ServiceAccount', name: 'karpenter', namespace: 'openshift-karpenter' }], o['subjects']),
    },
    {
      name: 'bindings reference a role of their own name',
      check: (o: KubeObject) => !o.kind.endsWith('Binding') || (o['roleRef'] as Obj)['name'] === o.metadata.name,
    },
  ])('$name', ({ check }) => {
    for (const o of renderOperand(input())) expect(check(o), `${o.kind} ${o.metadata.name}`).toBe(true);
  });

  it('owns only objects in the owner namespace of its own cluster when the owner is namespaced (two clusters)', () => {
    const owner = { apiVersion: 'example.com/v1', kind: 'ControlPlane', name: 'cp', namespace: 'clusters-a', uid: 'u1' };
    const objs = renderOperand(input({ namespace: 'clusters-a', layout: twoClusterLayout('clusters-a'), request: request({ owner }) }));
    const owned = objs.filter((o) => o.metadata.ownerReferences).map((o) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`);
    expect(owned).toEqual(['ServiceAccount clusters-a/karpenter', 'Deployment clusters-a/karpenter']);
  });

  it.each([
    {
      name: 'core role writes nodeclaims finalizers',
      role: 'karpenter-core',
      rule: { apiGroups: ['karpenter.sh'], resources: ['nodeclaims/finalizers', 'nodepools/finalizers'], verbs: ['update'] },
    },
    { name: 'core role evicts pods', role: 'karpenter-core', rule: { apiGroups: [''], resources: ['pods/eviction'], verbs: ['create'] } },
    {
      name: 'lease role updates only the leader lease',
      role: 'karpenter',
      rule: {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        verbs: ['patch', 'update'],
        resourceNames: ['karpenter-leader-election'],
      },
    },
    {
      name: 'dns role reads kube-dns',
      role: 'karpenter-dns',
      rule: { apiGroups: [''], resources: ['services'], verbs: ['get'], resourceNames: ['kube-dns'] },
    },
  ])('$name', ({ role, rule }) => {
    const r = renderOperand(input()).find((o) => (o.kind === 'ClusterRole' || o.kind === 'Role') && o.metadata.name === role);
    expect(r?.['rules']).toContainEqual(rule);
  });

  it('includes the provider RBAC without changing its rules', () => {
    const rules = [{ apiGroups: ['karpenter.k8s.aws'], resources: ['ec2nodeclasses'], verbs: ['get'] }];
    const objs = renderOperand(input({ providerRbac: [{ ...providerRbac[0]!, rules }] }));
    expect(objs.find((o) => o.metadata.name === 'karpenter' && o.kind === 'ClusterRole')?.['rules']).toEqual(rules);
  });

  it('is pure: rendering twice gives equal objects and leaves the inputs alone', () => {
    const i = input();
    const before = structuredClone(i);
    const a = renderOperand(i);
    controller(a)['env'].push({ name: 'MUTATED' });
    expect(renderOperand(i)).not.toEqual(a);
    expect(i).toEqual(before);
  });
});

describe('renderOperand: Deployment', () => {
  it.each([
    {
      name: 'SYSTEM_NAMESPACE from the downward API',
      key: 'SYSTEM_NAMESPACE',
      value: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } },
      over: {},
    },
    { name: 'CLUSTER_NAME is the infra ID', key: 'CLUSTER_NAME', value: 'mycluster-x7k2p', over: {} },
    { name: 'CLUSTER_NAME override', key: 'CLUSTER_NAME', value: 'other', over: { settings: settings({ clusterNameOverride: 'other' }) } },
    {
      name: 'CLUSTER_ENDPOINT is the internal API URL',
      key: 'CLUSTER_ENDPOINT',
      value: 'https://api-int.mycluster.example.com:6443',
      over: {},
    },
    {
      name: 'CLUSTER_ENDPOINT override',
      key: 'CLUSTER_ENDPOINT',
      value: 'https://x:6443',
      over: { settings: settings({ clusterEndpointOverride: 'https://x:6443' }) },
    },
    {
      name: "CPU_REQUESTS: the controller container's CPU request in millicores (downward API)",
      key: 'CPU_REQUESTS',
      value: { resourceFieldRef: { containerName: 'controller', resource: 'requests.cpu', divisor: '1m' } },
      over: {},
    },
    {
      name: "MEMORY_LIMIT: the controller container's memory limit in bytes (downward API)",
      key: 'MEMORY_LIMIT',
      value: { resourceFieldRef: { containerName: 'controller', resource: 'limits.memory', divisor: '1' } },
      over: {},
    },
    { name: 'webhooks disabled', key: 'DISABLE_WEBHOOK', value: 'true', over: {} },
    { name: 'health probe port', key: 'HEALTH_PROBE_PORT', value: '8081', over: {} },
    { name: 'metrics port', key: 'METRICS_PORT', value: '8080', over: {} },
    { name: 'cloud env passed through', key: 'AWS_SHARED_CREDENTIALS_FILE', value: '/etc/provider/credentials', over: {} },
  ])('env: $name', ({ key, value, over }) => {
    expect(envOf(controller(renderOperand(input(over))))[key]).toEqual(value);
  });

  it.each([
    { name: 'debug', level: 'debug' as LogLevel },
    { name: 'info', level: 'info' as LogLevel },
    { name: 'error', level: 'error' as LogLevel },
  ])('logLevel $name becomes LOG_LEVEL and --log-level', ({ level }) => {
    const c = controller(renderOperand(input({ request: request({ logLevel: level }) })));
    expect(envOf(c)['LOG_LEVEL']).toBe(level);
    expect(c['args']).toEqual([`--log-level=${level}`]);
  });

  it.each([
    {
      name: 'container drops ALL capabilities',
      path: (o: KubeObject[]) => controller(o)['securityContext'].capabilities,
      want: { drop: ['ALL'] },
    },
    {
      name: 'container: no privilege escalation',
      path: (o: KubeObject[]) => controller(o)['securityContext'].allowPrivilegeEscalation,
      want: false,
    },
    {
      name: 'container: read-only root filesystem',
      path: (o: KubeObject[]) => controller(o)['securityContext'].readOnlyRootFilesystem,
      want: true,
    },
    {
      name: 'pod: runAsNonRoot and RuntimeDefault seccomp only',
      path: (o: KubeObject[]) => podSpec(o)['securityContext'],
      want: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
    },
    {
      name: 'requests 1 CPU / 1Gi, no limits',
      path: (o: KubeObject[]) => controller(o)['resources'],
      want: { requests: { cpu: '1', memory: '1Gi' } },
    },
    {
      name: 'ports metrics and http',
      path: (o: KubeObject[]) => controller(o)['ports'].map((p: Obj) => `${p['name']}:${p['containerPort']}`),
      want: ['metrics:8080', 'http:8081'],
    },
    {
      name: 'liveness /healthz',
      path: (o: KubeObject[]) => controller(o)['livenessProbe'].httpGet,
      want: { path: '/healthz', port: 'http' },
    },
    {
      name: 'readiness /readyz',
      path: (o: KubeObject[]) => controller(o)['readinessProbe'].httpGet,
      want: { path: '/readyz', port: 'http' },
    },
    { name: 'image from settings', path: (o: KubeObject[]) => controller(o)['image'], want: 'registry.example.com/karpenter@sha256:abc' },
    {
      name: 'credentials, the bound ServiceAccount token (STS) and the trusted CA bundle mounted read-only',
      path: (o: KubeObject[]) => controller(o)['volumeMounts'],
      want: [
        { name: 'provider-creds', mountPath: '/etc/provider', readOnly: true },
        { name: 'bound-sa-token', mountPath: '/var/run/secrets/openshift/serviceaccount', readOnly: true },
        { name: 'trusted-ca-bundle', mountPath: '/etc/pki/ca-trust/extracted/pem', readOnly: true },
      ],
    },
    {
      name: 'credentials volume, a projected token for the audience openshift, the injected trusted CA bundle (optional) as the system store',
      path: (o: KubeObject[]) => podSpec(o)['volumes'],
      want: [
        { name: 'provider-creds', secret: { secretName: 'karpenter-cloud-credentials' } },
        {
          name: 'bound-sa-token',
          projected: { sources: [{ serviceAccountToken: { audience: 'openshift', expirationSeconds: 3600, path: 'token' } }] },
        },
        {
          name: 'trusted-ca-bundle',
          configMap: { name: 'karpenter-trusted-ca-bundle', items: [{ key: 'ca-bundle.crt', path: 'tls-ca-bundle.pem' }], optional: true },
        },
      ],
    },

    { name: 'system-node-critical', path: (o: KubeObject[]) => podSpec(o)['priorityClassName'], want: 'system-node-critical' },
    { name: 'grace period 10 s', path: (o: KubeObject[]) => podSpec(o)['terminationGracePeriodSeconds'], want: 10 },
    { name: 'runs as the operand ServiceAccount', path: (o: KubeObject[]) => podSpec(o)['serviceAccountName'], want: 'karpenter' },
    {
      name: 'control-plane nodeSelector',
      path: (o: KubeObject[]) => podSpec(o)['nodeSelector'],
      want: { 'node-role.kubernetes.io/control-plane': '' },
    },
    {
      name: 'tolerates master and control-plane NoSchedule; fails over from a lost node in 120 s',
      path: (o: KubeObject[]) => podSpec(o)['tolerations'],
      want: [
        { key: 'node-role.kubernetes.io/master', operator: 'Exists', effect: 'NoSchedule' },
        { key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' },
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 120 },
        { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 120 },
      ],
    },
    { name: 'two replicas', path: (o: KubeObject[]) => deployment(o)['spec'].replicas, want: 2 },
    {
      name: 'preferred anti-affinity by hostname',
      path: (o: KubeObject[]) => podSpec(o)['affinity'].podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm,
      want: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { app: 'karpenter' } } },
    },
    {
      name: 'selector matches the pod labels',
      path: (o: KubeObject[]) => [deployment(o)['spec'].selector.matchLabels, deployment(o)['spec'].template.metadata.labels],
      want: [{ app: 'karpenter' }, { app: 'karpenter' }],
    },
    {
      name: 'management workload annotation',
      path: (o: KubeObject[]) => deployment(o)['spec'].template.metadata.annotations['target.workload.openshift.io/management'],
      want: '{"effect": "PreferredDuringScheduling"}',
    },
    {
      name: 'credentials hash on the pod template',
      path: (o: KubeObject[]) => deployment(o)['spec'].template.metadata.annotations[OperandNames.credentialsHashAnnotation],
      want: 'hash-1',
    },
    { name: 'no init container without an operator image', path: (o: KubeObject[]) => podSpec(o)['initContainers'], want: undefined },
  ])('$name', ({ path, want }) => {
    expect(path(renderOperand(input()))).toEqual(want);
  });

  it('the credentials check mounts the token and the CA bundle too (it reads the same credentials file, calls the same API)', () => {
    const init = podSpec(renderOperand(input({ settings: settings({ operatorImage: 'op:1' }) })))['initContainers'][0];
    expect(init.volumeMounts.map((m: { name: string }) => m.name)).toEqual(['provider-creds', 'bound-sa-token', 'trusted-ca-bundle']);
  });

  it('the cluster-wide proxy goes to both containers; Node in the check is told to read the system CA store', () => {
    const proxyEnv = [
      { name: 'HTTPS_PROXY', value: 'http://proxy.example.com:3128' },
      { name: 'NO_PROXY', value: '.cluster.local,169.254.169.254' },
    ];
    const spec = podSpec(renderOperand(input({ settings: settings({ operatorImage: 'op:1', proxyEnv }) })));
    const env = (c: Obj) => (c['env'] as Array<{ name: string; value?: string }>).filter((e) => /PROXY|NODE_OPTIONS/.test(e.name));
    expect(env(spec['containers'][0])).toEqual(proxyEnv);
    expect(env(spec['initContainers'][0])).toEqual([...proxyEnv, { name: 'NODE_OPTIONS', value: '--use-system-ca' }]);
    const without = podSpec(renderOperand(input({ settings: settings({ operatorImage: 'op:1' }) })));
    expect(env(without['containers'][0])).toEqual([]);
  });

  it('sets no fixed UID, GID or fsGroup anywhere', () => {
    const text = JSON.stringify(renderOperand(input({ settings: settings({ operatorImage: 'op:1' }) })));
    expect(text).not.toMatch(/runAsUser|runAsGroup|fsGroup|"limits"/);
  });

  it.each([
    { name: 'hash changes the pod template', a: 'hash-1', b: 'hash-2', equal: false },
    { name: 'same hash, same pod template', a: 'hash-1', b: 'hash-1', equal: true },
    { name: 'no hash yet, no annotation', a: undefined, b: undefined, equal: true },
  ])('credentials rotation: $name', ({ a, b, equal }) => {
    const ta = deployment(renderOperand(input({ credentialsHash: a })))['spec'].template;
    const tb = deployment(renderOperand(input({ credentialsHash: b })))['spec'].template;
    expect(JSON.stringify(ta) === JSON.stringify(tb)).toBe(equal);
    if (a === undefined) expect(ta.metadata.annotations[OperandNames.credentialsHashAnnotation]).toBeUndefined();
  });

  it.each([
    { name: 'single-node control plane runs one replica without anti-affinity', topology: 'SingleReplica', replicas: 1, affinity: false },
    { name: 'highly available control plane runs two', topology: 'HighlyAvailable', replicas: 2, affinity: true },
  ])('$name', ({ topology, replicas, affinity }) => {
    const objs = renderOperand(input({ facts: facts({ controlPlaneTopology: topology }) }));
    expect(deployment(objs)['spec'].replicas).toBe(replicas);
    expect(podSpec(objs)['affinity'] !== undefined).toBe(affinity);
  });

  it('runs a credentials check before the controller when the operator image is known', () => {
    const objs = renderOperand(input({ settings: settings({ operatorImage: 'quay.io/op:1' }) }));
    const [init] = podSpec(objs)['initContainers'] as Obj[];
    expect(init).toMatchObject({ name: 'check-credentials', image: 'quay.io/op:1', args: ['check-credentials'] });
    expect(init!['volumeMounts']).toEqual(controller(objs)['volumeMounts']);
    expect(envOf(init!)['AWS_REGION']).toBe('us-east-2');
    expect(init!['securityContext']).toEqual(controller(objs)['securityContext']);
  });

  it('a layout without placement leaves out the control-plane selector and tolerations', () => {
    const owner = { apiVersion: 'example.com/v1', kind: 'ControlPlane', name: 'cp', namespace: 'clusters-a', uid: 'u1' };
    const objs = renderOperand(input({ namespace: 'clusters-a', layout: twoClusterLayout('clusters-a'), request: request({ owner }) }));
    expect(podSpec(objs)['nodeSelector']).toBeUndefined();
    expect(podSpec(objs)['tolerations']).toBeUndefined();
    expect(deployment(objs)['metadata'].namespace).toBe('clusters-a');
  });
});

describe('planOperand: layouts', () => {
  const id = (p: PlacedObject) => `${p.object.kind} ${p.object.metadata.namespace ?? ''}/${p.object.metadata.name}`;

  it.each([
    { name: 'standalone', make: () => input({ providerRbac: [] }) },
    { name: 'two clusters', make: () => input({ namespace: 'ns-a', layout: twoClusterLayout('ns-a') }) },
  ])('$name: every ServiceAccount, RBAC and PodDisruptionBudget object lies in a scope the use-case watches', ({ make }) => {
    const i = make();
    const scopes = operandScopes(i.layout);
    for (const p of planOperand(i).filter((x) => x.object.kind !== 'Deployment')) {
      const covered = scopes.some(
        (s) =>
          s.type.kind === p.object.kind &&
          s.type.apiVersion === p.object.apiVersion &&
          s.cluster === p.cluster &&
          (s.namespace === undefined || s.namespace === p.object.metadata.namespace),
      );
      expect(covered, `${p.cluster}: ${id(p)}`).toBe(true);
    }
  });

  it.each([
    { name: 'standalone: no KUBECONFIG', key: 'KUBECONFIG' },
    { name: 'standalone: Karpenter elects a leader', key: 'DISABLE_LEADER_ELECTION' },
    { name: 'standalone: Karpenter default feature gates', key: 'FEATURE_GATES' },
  ])('env: $name', ({ key }) => {
    expect(envOf(controller(renderOperand(input())))[key]).toBeUndefined();
  });

  it("a layout naming its credentials Secret points the provider's credentials volume at it, other volumes kept", () => {
    const c = { ...cloud, volumes: [...cloud.volumes, { name: 'other', secret: { secretName: 'other' } }] };
    const objs = renderOperand(
      input({ cloud: c, layout: { ...standaloneOperandLayout('openshift-karpenter'), credentialsSecret: 'host-credentials' } }),
    );
    expect((podSpec(objs)['volumes'] as Obj[]).filter((v) => v['secret']).map((v) => `${v['name']}=${v['secret'].secretName}`)).toEqual([
      'provider-creds=host-credentials',
      'other=other',
    ]);
  });

  it('standalone: identity is the operand ServiceAccount', () => {
    expect(standaloneOperandLayout('openshift-karpenter').apiIdentity).toEqual({ namespace: 'openshift-karpenter', name: 'karpenter' });
  });

  it('standalone places everything but the Deployment and its ServiceAccount on the workload cluster (one cluster there)', () => {
    const control = planOperand(input())
      .filter((p) => p.cluster === 'control')
      .map(id);
    expect(control).toEqual([
      'ServiceAccount openshift-karpenter/karpenter',
      'PodDisruptionBudget openshift-karpenter/karpenter',
      'Deployment openshift-karpenter/karpenter',
    ]);
  });
});

describe('planOperand: what is owned whole', () => {
  const ownedOf = (i: OperandInput) => planOperand(i).filter((p) => p.ownedWhole !== undefined);

  it.each([
    { name: 'standalone: placement included', layout: standaloneOperandLayout('openshift-karpenter'), placement: true },
    { name: 'two clusters: placement left to the namespace', layout: twoClusterLayout('openshift-karpenter'), placement: false },
  ])('$name', ({ layout, placement }) => {
    const owned = ownedOf(input({ layout }));
    expect(owned.map((p) => p.object.kind)).toEqual(['Deployment']);
    const paths = owned[0]!.ownedWhole!;
    expect(paths).toEqual(
      expect.arrayContaining([
        'spec.template.spec.containers',
        'spec.template.spec.containers[].env',
        'spec.template.spec.containers[].envFrom',
        'spec.template.spec.initContainers',
        'spec.template.spec.initContainers[].env',
        'spec.template.spec.volumes',
      ]),
    );
    expect(paths.includes('spec.template.spec.nodeSelector')).toBe(placement);
    expect(paths.includes('spec.template.spec.tolerations')).toBe(placement);
    // Metadata stays merged: others' labels and annotations are theirs.
    expect(paths.some((p) => p.includes('metadata'))).toBe(false);
  });
});

describe('renderOperand: the Karpenter CR settings', () => {
  const tuned = (over: Partial<KarpenterRequest>, i: Partial<OperandInput> = {}) => renderOperand(input({ request: request(over), ...i }));
  it.each([
    { name: 'no settings: Karpenter defaults (no settings env)', over: {}, want: {} },
    {
      name: 'batching window',
      over: { settings: { batchIdleDuration: '2s', batchMaxDuration: '30s' } },
      want: { BATCH_IDLE_DURATION: '2s', BATCH_MAX_DURATION: '30s' },
    },
    {
      name: 'feature gates in Karpenter order',
      over: { settings: { featureGates: { SpotToSpotConsolidation: true, NodeRepair: true } } },
      want: { FEATURE_GATES: 'NodeRepair=true,SpotToSpotConsolidation=true' },
    },
    {
      name: 'interruption queue',
      over: { settings: { interruptionQueue: 'mycluster-karpenter' } },
      want: { INTERRUPTION_QUEUE: 'mycluster-karpenter' },
    },
    { name: 'empty interruption queue: handling off, no env', over: { settings: { interruptionQueue: '' } }, want: {} },
    {
      name: 'memory overhead and reserved ENIs',
      over: { settings: { vmMemoryOverheadPercent: 0.1, reservedENIs: 2 } },
      want: { VM_MEMORY_OVERHEAD_PERCENT: '0.1', RESERVED_ENIS: '2' },
    },
    {
      name: 'zero values are still set',
      over: { settings: { vmMemoryOverheadPercent: 0, reservedENIs: 0 } },
      want: { VM_MEMORY_OVERHEAD_PERCENT: '0', RESERVED_ENIS: '0' },
    },
  ])('env: $name', ({ over, want }) => {
    const env = envOf(controller(tuned(over)));
    const names = [
      'BATCH_IDLE_DURATION',
      'BATCH_MAX_DURATION',
      'FEATURE_GATES',
      'INTERRUPTION_QUEUE',
      'VM_MEMORY_OVERHEAD_PERCENT',
      'RESERVED_ENIS',
    ];
    expect(Object.fromEntries(names.filter((n) => env[n] !== undefined).map((n) => [n, env[n]]))).toEqual(want);
    expect(controller(tuned(over))['args']).toEqual(['--log-level=info']);
  });

  it('log level goes to both the env and the flag', () => {
    const c = controller(tuned({ logLevel: 'debug' }));
    expect([envOf(c)['LOG_LEVEL'], c['args']]).toEqual(['debug', ['--log-level=debug']]);
  });

  it("a layout's feature gates stand unless the request sets gates", () => {
    const hs = {
      namespace: 'clusters-x',
      layout: { ...twoClusterLayout('clusters-x'), featureGates: 'Drift=true' },
      request: request({
        owner: { apiVersion: 'hypershift.openshift.io/v1beta1', kind: 'HostedControlPlane', name: 'x', namespace: 'clusters-x', uid: 'u' },
      }),
    };
    expect(envOf(controller(renderOperand(input(hs))))['FEATURE_GATES']).toBe('Drift=true');
    const gated = renderOperand(input({ ...hs, request: { ...hs.request, settings: { featureGates: { NodeRepair: true } } } }));
    expect((controller(gated)['env'] as Obj[]).filter((e) => e['name'] === 'FEATURE_GATES')).toEqual([
      { name: 'FEATURE_GATES', value: 'NodeRepair=true' },
    ]);
  });

  it.each([
    { name: 'default: two replicas, a PDB', over: {}, topo: 'HighlyAvailable', replicas: 2, pdb: true },
    { name: 'default on SingleReplica: one, no PDB', over: {}, topo: 'SingleReplica', replicas: 1, pdb: false },
    { name: 'spec.replicas 3', over: { replicas: 3 }, topo: 'HighlyAvailable', replicas: 3, pdb: true },
    { name: 'spec.replicas 1 on HA: no PDB', over: { replicas: 1 }, topo: 'HighlyAvailable', replicas: 1, pdb: false },
    { name: 'spec.replicas 2 wins on SingleReplica', over: { replicas: 2 }, topo: 'SingleReplica', replicas: 2, pdb: true },
  ])('replicas: $name', ({ over, topo, replicas, pdb }) => {
    const objs = tuned(over, { facts: facts({ controlPlaneTopology: topo }) });
    expect(deployment(objs)['spec'].replicas).toBe(replicas);
    const budget = objs.find((o) => o.kind === 'PodDisruptionBudget');
    expect(budget !== undefined).toBe(pdb);
    if (budget) expect(budget['spec']).toEqual({ maxUnavailable: 1, selector: { matchLabels: { app: 'karpenter' } } });
    expect(podSpec(objs)['affinity'] !== undefined).toBe(replicas > 1);
  });

  it('two clusters (no leader election) stay at one replica, whatever the request says', () => {
    const objs = renderOperand(
      input({ namespace: 'clusters-a', layout: twoClusterLayout('clusters-a'), request: request({ replicas: 3 }) }),
    );
    expect(deployment(objs)['spec'].replicas).toBe(1);
    expect(objs.some((o) => o.kind === 'PodDisruptionBudget')).toBe(false);
  });

  it.each([
    { name: 'default requests', over: {}, want: { requests: { cpu: '1', memory: '1Gi' } } },
    {
      name: 'CR resources replace the default, canonical',
      over: { resources: { requests: { cpu: '1500m', memory: '1024Mi' }, limits: { memory: 2147483648 } } },
      want: { requests: { cpu: '1500m', memory: '1Gi' }, limits: { memory: '2147483648' } },
    },
    { name: 'limits only', over: { resources: { limits: { cpu: 2 } } }, want: { limits: { cpu: '2' } } },
  ] as Array<{ name: string; over: Partial<KarpenterRequest>; want: unknown }>)('resources: $name', ({ over, want }) => {
    expect(controller(tuned(over))['resources']).toEqual(want);
  });

  // What the kubelet resolves each resourceFieldRef env var to: the named container's own resource.
  it.each([
    { name: 'default requests, no memory limit', over: {}, want: { CPU_REQUESTS: '1', MEMORY_LIMIT: undefined } },
    {
      name: 'CR requests and memory limit',
      over: { resources: { requests: { cpu: '2500m' }, limits: { memory: '2Gi' } } },
      want: { CPU_REQUESTS: '2500m', MEMORY_LIMIT: '2Gi' },
    },
    { name: 'CR limits only', over: { resources: { limits: { memory: '3Gi' } } }, want: { CPU_REQUESTS: undefined, MEMORY_LIMIT: '3Gi' } },
  ] as Array<{ name: string; over: Partial<KarpenterRequest>; want: Record<string, string | undefined> }>)(
    "CPU_REQUESTS and MEMORY_LIMIT read the controller container's resources: $name",
    ({ over, want }) => {
      const objs = tuned(over);
      const containers = podSpec(objs)['containers'] as Obj[];
      const resolved: Record<string, string | undefined> = {};
      for (const e of controller(objs)['env'] as Obj[]) {
        const ref = (e['valueFrom'] as { resourceFieldRef?: { containerName: string; resource: string } } | undefined)?.resourceFieldRef;
        if (!ref) continue;
        const target = containers.find((c) => c['name'] === ref.containerName);
        expect(target, `container ${ref.containerName} of ${String(e['name'])}`).toBeDefined();
        const [kind, resource] = ref.resource.split('.') as [string, string];
        resolved[e['name'] as string] = (target!['resources'] as Record<string, Record<string, string>>)[kind]?.[resource];
      }
      expect(resolved).toEqual(want);
      // No CPU request at all: the variable is left out (the kubelet would give "0", below Karpenter's default).
      expect('CPU_REQUESTS' in resolved).toBe(want['CPU_REQUESTS'] !== undefined);
    },
  );
});
