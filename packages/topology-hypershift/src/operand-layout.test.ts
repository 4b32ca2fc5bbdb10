import {
  isInvalidInputError,
  OperandNames,
  operandScopes,
  planOperand,
  renderOperand,
  type ClusterFacts,
  type KarpenterRequest,
  type KubeObject,
  type OperandCloudConfig,
  type OperandInput,
  type OperatorSettings,
  type PlacedObject,
} from '@karpenter-operator/core';
import { describe, expect, it } from 'vitest';
import { decodeHostedControlPlane } from './hcp.js';
import { hcpDeploymentAnnotations, hcpOperandLayout, hcpRunAsUser } from './operand-layout.js';

const facts = (over: Partial<ClusterFacts> = {}): ClusterFacts => ({
  platform: 'AWS',
  region: 'us-east-2',
  infrastructureName: 'mycluster-x7k2p',
  apiServerInternalURL: 'https://api-int.mycluster.example.com:6443',
  controlPlaneTopology: 'External',
  resourceTags: [],
  ...over,
});
const settings = (over: Partial<OperatorSettings> = {}): OperatorSettings => ({
  namespace: 'clusters-demo',
  releaseVersion: '4.22.0',
  operandImage: 'registry.example.com/karpenter@sha256:abc',
  crdDir: '/crds',
  ...over,
});
const request = (over: Partial<KarpenterRequest> = {}): KarpenterRequest => ({
  owner: {
    apiVersion: 'hypershift.openshift.io/v1beta1',
    kind: 'HostedControlPlane',
    name: 'demo',
    namespace: 'clusters-demo',
    uid: 'uid-hcp',
  },
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
const input = (over: Partial<OperandInput> & Pick<OperandInput, 'layout'>): OperandInput => ({
  namespace: 'clusters-demo',
  facts: facts(),
  settings: settings(),
  request: request(),
  cloud,
  providerRbac,
  credentialsHash: 'hash-1',
  ...over,
});

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

describe('planOperand: HyperShift (management-cluster mode)', () => {
  const HCP_NS = 'clusters-demo';
  const hcp = {
    apiVersion: 'hypershift.openshift.io/v1beta1',
    kind: 'HostedControlPlane',
    name: 'demo',
    namespace: HCP_NS,
    uid: 'uid-hcp',
  };
  const hsInput = (over: Partial<OperandInput> = {}): OperandInput =>
    input({
      namespace: HCP_NS,
      layout: hcpOperandLayout(HCP_NS, over.settings ?? settings()),
      request: request({ owner: hcp }),
      facts: facts({
        infrastructureName: 'demo-4kq9z',
        apiServerInternalURL: 'https://api.demo.example.com:443',
        controlPlaneTopology: 'External',
        region: 'eu-west-1',
      }),
      cloud: { ...cloud, env: [{ name: 'AWS_REGION', value: 'eu-west-1' }, ...cloud.env.slice(1)] },
      providerRbac: [
        providerRbac[0]!,
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'ClusterRoleBinding',
          metadata: { name: 'karpenter' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'karpenter' },
          subjects: [{ kind: 'ServiceAccount', name: 'karpenter', namespace: 'kube-system' }],
        },
      ],
      ...over,
    });
  const id = (p: PlacedObject) => `${p.object.kind} ${p.object.metadata.namespace ?? ''}/${p.object.metadata.name}`;
  const placed = (over: Partial<OperandInput> = {}) => planOperand(hsInput(over));
  const hsEnv = (over: Partial<OperandInput> = {}) => envOf(controller(renderOperand(hsInput(over))));

  it('places each object on its cluster, in apply order', () => {
    expect(placed().map((p) => `${p.cluster}: ${id(p)}`)).toEqual([
      'control: ServiceAccount clusters-demo/karpenter',
      'workload: ServiceAccount kube-system/karpenter',
      'workload: ClusterRole /karpenter-core',
      'workload: ClusterRoleBinding /karpenter-core',
      'workload: Role kube-system/karpenter-dns',
      'workload: RoleBinding kube-system/karpenter-dns',
      'workload: ClusterRole /karpenter',
      'workload: ClusterRoleBinding /karpenter',
      'control: Deployment clusters-demo/karpenter',
    ]);
  });

  it.each([
    { name: 'KUBECONFIG points at the mounted guest kubeconfig', key: 'KUBECONFIG', value: '/etc/karpenter/guest-kubeconfig/kubeconfig' },
    { name: 'webhooks disabled', key: 'DISABLE_WEBHOOK', value: 'true' },
    { name: 'leader election disabled', key: 'DISABLE_LEADER_ELECTION', value: 'true' },
    { name: 'feature gates as HyperShift sets them', key: 'FEATURE_GATES', value: 'Drift=true' },
    { name: 'health probe port', key: 'HEALTH_PROBE_PORT', value: '8081' },
    { name: 'CLUSTER_NAME is the infra ID', key: 'CLUSTER_NAME', value: 'demo-4kq9z' },
    { name: 'AWS_REGION is the HCP region (from the cloud config)', key: 'AWS_REGION', value: 'eu-west-1' },
    { name: 'CLUSTER_ENDPOINT is the guest API', key: 'CLUSTER_ENDPOINT', value: 'https://api.demo.example.com:443' },
    {
      name: 'SYSTEM_NAMESPACE from the downward API',
      key: 'SYSTEM_NAMESPACE',
      value: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } },
    },
  ])('env: $name', ({ key, value }) => {
    expect(hsEnv()[key]).toEqual(value);
  });

  it('sets each env name once', () => {
    const names = (controller(renderOperand(hsInput()))['env'] as Obj[]).map((e) => e['name']);
    expect(names.length).toBe(new Set(names).size);
  });

  it.each([
    {
      name: "guest kubeconfig volume from the default Secret, credentials from HyperShift's Secret",
      over: {},
      path: (o: KubeObject[]) => podSpec(o)['volumes'],
      want: [
        { name: 'provider-creds', secret: { secretName: 'karpenter-credentials' } },
        {
          name: 'guest-kubeconfig',
          secret: { secretName: 'service-network-admin-kubeconfig', items: [{ key: 'kubeconfig', path: 'kubeconfig' }] },
        },
        { name: 'tmp-dir', emptyDir: {} },
      ],
    },
    {
      name: 'guest kubeconfig Secret from settings',
      over: { settings: settings({ guestKubeconfigSecret: 'karpenter-guest-kubeconfig' }) },
      path: (o: KubeObject[]) => (podSpec(o)['volumes'] as Obj[]).find((v) => v['name'] === 'guest-kubeconfig')!['secret'].secretName,
      want: 'karpenter-guest-kubeconfig',
    },
    {
      name: 'guest kubeconfig mounted read-only',
      over: {},
      path: (o: KubeObject[]) => controller(o)['volumeMounts'],
      want: [
        { name: 'provider-creds', mountPath: '/etc/provider', readOnly: true },
        { name: 'guest-kubeconfig', mountPath: '/etc/karpenter/guest-kubeconfig', readOnly: true },
        { name: 'tmp-dir', mountPath: '/tmp' },
      ],
    },
    { name: 'one replica', over: {}, path: (o: KubeObject[]) => deployment(o)['spec'].replicas, want: 1 },
    { name: 'no anti-affinity', over: {}, path: (o: KubeObject[]) => podSpec(o)['affinity']['podAntiAffinity'], want: undefined },
    { name: 'no control-plane nodeSelector', over: {}, path: (o: KubeObject[]) => podSpec(o)['nodeSelector'], want: undefined },
    {
      name: 'no OpenShift control-plane tolerations',
      over: {},
      path: (o: KubeObject[]) => (podSpec(o)['tolerations'] as Obj[]).filter((t) => t['key'].startsWith('node-role.kubernetes.io/')),
      want: [],
    },
    {
      name: 'HyperShift control-plane priority',
      over: {},
      path: (o: KubeObject[]) => podSpec(o)['priorityClassName'],
      want: 'hypershift-control-plane',
    },
    {
      name: 'runs as the HCP-namespace ServiceAccount',
      over: {},
      path: (o: KubeObject[]) => podSpec(o)['serviceAccountName'],
      want: 'karpenter',
    },
    { name: 'Deployment in the HCP namespace', over: {}, path: (o: KubeObject[]) => deployment(o)['metadata'].namespace, want: HCP_NS },
    {
      name: 'no management-workload annotations, credentials hash kept',
      over: {},
      path: (o: KubeObject[]) => deployment(o)['spec'].template.metadata.annotations,
      want: {
        [OperandNames.credentialsHashAnnotation]: 'hash-1',
        'cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes': 'tmp-dir',
      },
    },
    {
      name: 'no Lease Role or binding',
      over: {},
      path: (o: KubeObject[]) => o.filter((x) => x.metadata.name === OperandNames.role && x.kind.startsWith('Role')).length,
      want: 0,
    },
    {
      name: 'init container does not need the guest kubeconfig',
      over: { settings: settings({ operatorImage: 'op:1' }) },
      path: (o: KubeObject[]) => podSpec(o)['initContainers'][0].volumeMounts,
      want: [
        { name: 'provider-creds', mountPath: '/etc/provider', readOnly: true },
        { name: 'tmp-dir', mountPath: '/tmp' },
      ],
    },
  ])('$name', ({ over, path, want }) => {
    expect(path(renderOperand(hsInput(over)))).toEqual(want);
  });

  it.each([
    { name: 'core ClusterRoleBinding', kind: 'ClusterRoleBinding', ref: '/karpenter-core' },
    { name: 'DNS RoleBinding', kind: 'RoleBinding', ref: 'kube-system/karpenter-dns' },
    { name: 'provider ClusterRoleBinding', kind: 'ClusterRoleBinding', ref: '/karpenter' },
  ])('RBAC: $name binds the guest ServiceAccount kube-system/karpenter', ({ kind, ref }) => {
    const b = placed().find((p) => id(p) === `${kind} ${ref}`);
    expect(b?.cluster).toBe('workload');
    expect(b?.object['subjects']).toEqual([{ kind: 'ServiceAccount', name: 'karpenter', namespace: 'kube-system' }]);
  });

  it.each([
    { name: 'guest objects carry no owner reference', pick: (p: PlacedObject) => p.cluster === 'workload', owned: false },
    { name: 'management objects are owned by the HCP', pick: (p: PlacedObject) => p.cluster === 'control', owned: true },
  ])('$name', ({ pick, owned }) => {
    const picked = placed().filter(pick);
    expect(picked.length).toBeGreaterThan(0);
    for (const p of picked) expect(p.object.metadata.ownerReferences !== undefined, id(p)).toBe(owned);
  });

  it('never owns a guest object across clusters, even when namespaces coincide', () => {
    const ownerInKubeSystem = { ...hcp, namespace: 'kube-system' };
    const guest = planOperand(hsInput({ request: request({ owner: ownerInKubeSystem }) })).filter((p) => p.cluster === 'workload');
    expect(guest.filter((p) => p.object.metadata.namespace === 'kube-system').length).toBeGreaterThan(0);
    for (const p of guest) expect(p.object.metadata.ownerReferences, id(p)).toBeUndefined();
  });

  it('identity is the guest kube-system/karpenter', () => {
    expect(hcpOperandLayout(HCP_NS, settings()).apiIdentity).toEqual({ namespace: 'kube-system', name: 'karpenter' });
  });

  it('every ServiceAccount and RBAC object lies in a scope the use-case watches', () => {
    const i = hsInput();
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

  it("owns the tolerations it renders, and no node selector (the HCP's own applies)", () => {
    const paths = placed().find((p) => p.ownedWhole)!.ownedWhole!;
    expect(paths).toContain('spec.template.spec.containers');
    expect(paths.filter((p) => p.endsWith('nodeSelector') || p.endsWith('tolerations'))).toEqual(['spec.template.spec.tolerations']);
  });
});

describe('hcpOperandLayout: the token minter (TOKEN_MINTER_IMAGE)', () => {
  const HCP_NS = 'clusters-demo';
  const MINTER = 'quay.io/example/control-plane-operator:4.22';
  const render = (over: Partial<OperatorSettings> = {}) => {
    const s = settings(over);
    return renderOperand(input({ namespace: HCP_NS, settings: s, layout: hcpOperandLayout(HCP_NS, s) }));
  };
  const minterOf = (objs: KubeObject[]): Obj | undefined =>
    (podSpec(objs)['initContainers'] as Obj[] | undefined)?.find((c) => c['name'] === 'token-minter');
  /** The file a container sees at `path`, by the volume mounted at the longest prefix: `volume:sub/path`. */
  const fileAt = (objs: KubeObject[], c: Obj, path: string): string | undefined => {
    const m = ((c['volumeMounts'] as Obj[]) ?? [])
      .filter((v) => path.startsWith(`${v['mountPath']}/`))
      .sort((a, b) => b['mountPath'].length - a['mountPath'].length)[0];
    if (!m) return undefined;
    const volume = (podSpec(objs)['volumes'] as Obj[]).find((v) => v['name'] === m['name']);
    return volume ? `${m['name']}:${path.slice(m['mountPath'].length + 1)}` : undefined;
  };
  const arg = (c: Obj, flag: string) => (c['args'] as string[]).find((a) => a.startsWith(`--${flag}=`))?.slice(flag.length + 3);

  it('runs as HyperShift runs it: control-plane-operator token-minter for kube-system/karpenter, audience openshift', () => {
    const m = minterOf(render({ tokenMinterImage: MINTER }))!;
    expect(m['image']).toBe(MINTER);
    expect(m['command']).toEqual(['/usr/bin/control-plane-operator', 'token-minter']);
    expect(m['args']).toEqual([
      '--service-account-namespace=kube-system',
      '--service-account-name=karpenter',
      '--token-audience=openshift',
      '--token-file=/var/run/secrets/openshift/serviceaccount/token',
      '--kubeconfig=/etc/karpenter/guest-kubeconfig/kubeconfig',
    ]);
  });

  it("is a sidecar for the pod's life whose startup waits for the token, before any other init container", () => {
    const objs = render({ tokenMinterImage: MINTER, operatorImage: 'op:1' });
    const inits = podSpec(objs)['initContainers'] as Obj[];
    expect(inits.map((c) => c['name'])).toEqual(['token-minter', OperandNames.initContainer]);
    expect(inits[0]!['restartPolicy']).toBe('Always');
    expect(inits[0]!['startupProbe']).toEqual({ exec: { command: ['cat', arg(inits[0]!, 'token-file')] }, failureThreshold: 10 });
    expect(inits[0]!['resources']).toEqual({ requests: { cpu: '10m', memory: '30Mi' } });
  });

  it.each([
    { name: 'Karpenter', pick: (o: KubeObject[]) => controller(o) },
    {
      name: 'the credentials check',
      pick: (o: KubeObject[]) => (podSpec(o)['initContainers'] as Obj[]).find((c) => c['name'] === OperandNames.initContainer)!,
    },
  ])('$name reads the token from the file the minter writes, in a pod-lived volume', ({ pick }) => {
    const objs = render({ tokenMinterImage: MINTER, operatorImage: 'op:1' });
    const m = minterOf(objs)!;
    const tokenFile = arg(m, 'token-file')!;
    const written = fileAt(objs, m, tokenFile);
    expect(written).toBe('serviceaccount-token:token');
    expect(fileAt(objs, pick(objs), tokenFile)).toBe(written);
    expect((podSpec(objs)['volumes'] as Obj[]).find((v) => v['name'] === 'serviceaccount-token')).toEqual({
      name: 'serviceaccount-token',
      emptyDir: {},
    });
  });

  it('reaches the guest through the guest kubeconfig Secret the pod mounts', () => {
    const objs = render({ tokenMinterImage: MINTER, guestKubeconfigSecret: 'my-guest-kubeconfig' });
    const m = minterOf(objs)!;
    const file = fileAt(objs, m, arg(m, 'kubeconfig')!)!;
    const [volumeName, key] = file.split(':');
    const volume = (podSpec(objs)['volumes'] as Obj[]).find((v) => v['name'] === volumeName)!;
    expect(volume['secret'].secretName).toBe('my-guest-kubeconfig');
    expect(volume['secret'].items).toEqual([{ key, path: key }]);
  });

  it("the token path is the one HyperShift's credentials profile names (web_identity_token_file)", () => {
    expect(arg(minterOf(render({ tokenMinterImage: MINTER }))!, 'token-file')).toBe('/var/run/secrets/openshift/serviceaccount/token');
  });

  it('without TOKEN_MINTER_IMAGE: no minter and no token volume (older HyperShift)', () => {
    const objs = render();
    expect(minterOf(objs)).toBeUndefined();
    expect((podSpec(objs)['volumes'] as Obj[]).map((v) => v['name'])).not.toContain('serviceaccount-token');
  });

  it("waits for and mounts HyperShift's credentials Secret karpenter-credentials", () => {
    expect(hcpOperandLayout(HCP_NS, settings()).credentialsSecret).toBe('karpenter-credentials');
    const vols = (podSpec(render())['volumes'] as Obj[]).filter((v) => v['secret']).map((v) => v['secret'].secretName);
    expect(vols).toContain('karpenter-credentials');
    expect(vols).not.toContain('karpenter-cloud-credentials');
  });
});

/** What HyperShift's e2e suite checks of every pod in an HCP namespace, applied to the rendered operand. */
describe('hcpOperandLayout: a conforming hosted-control-plane pod (HyperShift e2e predicates)', () => {
  const HCP_NS = 'clusters-demo';
  const render = (over: Partial<OperatorSettings> = {}) => {
    const s = settings({ tokenMinterImage: 'quay.io/example/cpo:4.22', operatorImage: 'op:1', ...over });
    return renderOperand(input({ namespace: HCP_NS, settings: s, layout: hcpOperandLayout(HCP_NS, s) }));
  };
  const allContainers = (objs: KubeObject[]): Obj[] => [
    ...(podSpec(objs)['initContainers'] as Obj[]),
    ...(podSpec(objs)['containers'] as Obj[]),
  ];
  const template = (objs: KubeObject[]): Obj => deployment(objs)['spec'].template;

  it('EnsureReadOnlyRootFilesystem: every container has a read-only root and /tmp mounted', () => {
    const cs = allContainers(render());
    expect(cs.map((c) => c['name'])).toEqual(['token-minter', 'check-credentials', 'controller']);
    for (const c of cs) {
      expect(c['securityContext'].readOnlyRootFilesystem, c['name']).toBe(true);
      expect(
        (c['volumeMounts'] as Obj[]).some((m) => m['mountPath'] === '/tmp'),
        c['name'],
      ).toBe(true);
    }
  });

  it.each([
    { name: 'with the token minter', over: {}, want: 'serviceaccount-token,tmp-dir' },
    { name: 'without it', over: { tokenMinterImage: undefined }, want: 'tmp-dir' },
  ])('EnsurePodsWithEmptyDirPVsHaveSafeToEvictAnnotations ($name): the annotation names exactly the emptyDir volumes', ({ over, want }) => {
    const objs = render(over);
    const local = (podSpec(objs)['volumes'] as Obj[]).filter((v) => v['emptyDir'] || v['hostPath']).map((v) => v['name']);
    expect(template(objs).metadata.annotations['cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes']).toBe(local.join(','));
    expect(local.join(',')).toBe(want);
  });

  it("tolerates the control-plane and this cluster's dedicated-node taints", () => {
    expect(podSpec(render())['tolerations']).toEqual([
      { key: 'hypershift.openshift.io/control-plane', operator: 'Equal', value: 'true', effect: 'NoSchedule' },
      { key: 'hypershift.openshift.io/cluster', operator: 'Equal', value: HCP_NS, effect: 'NoSchedule' },
    ]);
  });

  it("prefers control-plane nodes, this cluster's twice as much, and the nodes of its HCP's other pods", () => {
    const objs = render();
    const affinity = podSpec(objs)['affinity'];
    const weights = (affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution as Obj[]).map(
      (t) => `${t['preference'].matchExpressions[0].key}=${t['preference'].matchExpressions[0].values[0]}:${t['weight']}`,
    );
    expect(weights).toEqual(['hypershift.openshift.io/control-plane=true:50', `hypershift.openshift.io/cluster=${HCP_NS}:100`]);
    const colocate = affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm;
    expect(colocate.topologyKey).toBe('kubernetes.io/hostname');
    // The pod carries the label it prefers to sit with, so the HCP's pods gather.
    for (const [k, v] of Object.entries(colocate.labelSelector.matchLabels as Record<string, string>))
      expect(template(objs).metadata.labels[k]).toBe(v);
  });

  it('is labelled as HyperShift audits it: app=karpenter, control-plane-component karpenter', () => {
    expect(template(render()).metadata.labels).toMatchObject({
      app: 'karpenter',
      'hypershift.openshift.io/control-plane-component': 'karpenter',
      'hypershift.openshift.io/hosted-control-plane': HCP_NS,
    });
    expect(deployment(render())['spec'].selector).toEqual({ matchLabels: { app: 'karpenter' } });
  });

  it.each([
    { name: 'Karpenter as HyperShift sizes it', pick: (o: KubeObject[]) => controller(o), want: { cpu: '10m', memory: '60Mi' } },
    {
      name: 'the token minter',
      pick: (o: KubeObject[]) => (podSpec(o)['initContainers'] as Obj[])[0]!,
      want: { cpu: '10m', memory: '30Mi' },
    },
  ])('requests: $name, no limits', ({ pick, want }) => {
    expect(pick(render())['resources']).toEqual({ requests: want });
  });

  describe('EnsureSecurityContextUID: the pod runs as the UID of its namespace annotation', () => {
    const namespace = (annotations?: Record<string, string>): KubeObject => ({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: HCP_NS, ...(annotations ? { annotations } : {}) },
    });
    const uidOf = (ns: KubeObject) => {
      const runAsUser = hcpRunAsUser(ns);
      const s = settings({ tokenMinterImage: 'quay.io/example/cpo:4.22', operatorImage: 'op:1' });
      const layout = hcpOperandLayout(HCP_NS, s, runAsUser !== undefined ? { runAsUser } : {});
      return podSpec(renderOperand(input({ namespace: HCP_NS, settings: s, layout })))['securityContext'];
    };

    it.each([
      { name: 'the annotated UID', annotations: { 'hypershift.openshift.io/default-security-context-uid': '1004' }, want: 1004 },
      { name: 'no annotation (an SCC assigns it): none', annotations: undefined, want: undefined },
    ])('$name', ({ annotations, want }) => {
      const sc = uidOf(namespace(annotations));
      expect(sc.runAsUser).toBe(want);
      // Still restricted: the UID is added, nothing taken away.
      expect(sc).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    });

    it.each([
      { name: 'not a number', value: 'abc' },
      { name: 'negative', value: '-1' },
      { name: 'beyond int32', value: '4294967296' },
    ])('a malformed UID ($name) names the namespace and the annotation', ({ value }) => {
      let err: unknown;
      try {
        hcpRunAsUser(namespace({ 'hypershift.openshift.io/default-security-context-uid': value }));
      } catch (e) {
        err = e;
      }
      expect(isInvalidInputError(err) && [err.object, err.field]).toEqual([
        `Namespace ${HCP_NS}`,
        'metadata.annotations[hypershift.openshift.io/default-security-context-uid]',
      ]);
    });
  });

  describe("the rollout HyperShift's component framework sees (checkOperandsRolloutStatus of component karpenter-operator)", () => {
    // HyperShift's predicate, restated: every Deployment of the namespace labelled managed-by=<component>
    // carries release.openshift.io/version equal to the release version being rolled out.
    const rolloutProblems = (deployments: Obj[], component: string, version: string): string[] =>
      deployments
        .filter((d) => d['metadata'].labels?.['hypershift.openshift.io/managed-by'] === component)
        .flatMap((d) => {
          const v = d['metadata'].annotations?.['release.openshift.io/version'];
          if (v === undefined) return [`${d['metadata'].name}: no release.openshift.io/version`];
          return v === version ? [] : [`${d['metadata'].name}: version ${v}, expected ${version}`];
        });
    const renderFor = (controlPlaneVersion: string | undefined) => {
      const s = settings({ tokenMinterImage: 'quay.io/example/cpo:4.22' });
      const annotations = hcpDeploymentAnnotations(controlPlaneVersion);
      return renderOperand(
        input({
          namespace: HCP_NS,
          settings: s,
          layout: hcpOperandLayout(HCP_NS, s),
          request: request(annotations ? { deploymentAnnotations: annotations } : {}),
        }),
      ).filter((o) => o.kind === 'Deployment') as Obj[];
    };

    it('the operand Deployment is one of its operands, at the version the HCP rolls out', () => {
      const ds = renderFor('4.22.3');
      expect(ds.map((d) => d['metadata'].labels['hypershift.openshift.io/managed-by'])).toEqual(['karpenter-operator']);
      expect(rolloutProblems(ds, 'karpenter-operator', '4.22.3')).toEqual([]);
      expect(rolloutProblems(ds, 'karpenter-operator', '4.22.4')).toEqual(['karpenter: version 4.22.3, expected 4.22.4']);
    });

    it('while the HCP reports no version the Deployment says none (the check waits instead of passing on a guess)', () => {
      expect(rolloutProblems(renderFor(undefined), 'karpenter-operator', '4.22.3')).toEqual(['karpenter: no release.openshift.io/version']);
    });

    it('the label and annotation are on the Deployment, not its pods (a version change rolls no pod)', () => {
      const [d] = renderFor('4.22.3');
      expect(d!['spec'].template.metadata.labels['hypershift.openshift.io/managed-by']).toBeUndefined();
      expect(d!['spec'].template.metadata.annotations['release.openshift.io/version']).toBeUndefined();
    });
  });

  it("runs at HyperShift's control-plane priority, one replica", () => {
    const objs = render();
    expect(podSpec(objs)['priorityClassName']).toBe('hypershift-control-plane');
    expect(deployment(objs)['spec'].replicas).toBe(1);
  });
});

describe("the HCP's overrides of its control-plane pods, honoured for the operand", () => {
  const HCP_NS = 'clusters-demo';
  const hcpObject = (spec: Record<string, unknown>, annotations: Record<string, string> = {}): KubeObject => ({
    apiVersion: 'hypershift.openshift.io/v1beta1',
    kind: 'HostedControlPlane',
    metadata: { name: 'demo', namespace: HCP_NS, uid: 'uid-hcp', generation: 1, annotations },
    spec: { infraID: 'demo-x7k2p', platform: { type: 'AWS', aws: { region: 'us-east-2' } }, ...spec },
  });
  const render = (o: KubeObject) => {
    const s = settings({ tokenMinterImage: 'quay.io/example/cpo:4.22' });
    return renderOperand(
      input({
        namespace: HCP_NS,
        settings: s,
        layout: hcpOperandLayout(HCP_NS, s),
        request: request({ podOverrides: decodeHostedControlPlane(o).podOverrides }),
      }),
    );
  };
  const infraToleration = { key: 'node-role.kubernetes.io/infra', operator: 'Exists', effect: 'NoSchedule' };

  it.each([
    {
      name: 'spec.nodeSelector places the pod',
      spec: { nodeSelector: { 'node-role.kubernetes.io/infra': '' } },
      path: (o: KubeObject[]) => podSpec(o)['nodeSelector'],
      want: { 'node-role.kubernetes.io/infra': '' },
    },
    {
      name: "spec.tolerations are added after HyperShift's own",
      spec: { tolerations: [infraToleration] },
      path: (o: KubeObject[]) => (podSpec(o)['tolerations'] as Obj[]).map((t) => t['key']),
      want: ['hypershift.openshift.io/control-plane', 'hypershift.openshift.io/cluster', 'node-role.kubernetes.io/infra'],
    },
    {
      name: 'spec.labels label the pod, the selector label kept',
      spec: { labels: { team: 'a', app: 'other' } },
      path: (o: KubeObject[]) => deployment(o)['spec'].template.metadata.labels,
      want: expect.objectContaining({ team: 'a', app: 'karpenter' }),
    },
    { name: 'no overrides: no node selector', spec: {}, path: (o: KubeObject[]) => podSpec(o)['nodeSelector'], want: undefined },
  ])('$name', ({ spec, path, want }) => {
    expect(path(render(hcpObject(spec)))).toEqual(want);
  });

  it('the control-plane priority-class annotation replaces hypershift-control-plane', () => {
    expect(
      podSpec(render(hcpObject({}, { 'hypershift.openshift.io/control-plane-priority-class': 'my-critical' })))['priorityClassName'],
    ).toBe('my-critical');
  });

  it.each([
    { name: 'Karpenter', container: 'controller', want: { cpu: '250m', memory: '60Mi' } },
    { name: 'the token minter', container: 'token-minter', want: { cpu: '10m', memory: '64Mi' } },
  ])('resource-request-override annotations of Deployment karpenter size $name', ({ container, want }) => {
    const objs = render(
      hcpObject(
        {},
        {
          'resource-request-override.hypershift.openshift.io/karpenter.controller': 'cpu=250m',
          'resource-request-override.hypershift.openshift.io/karpenter.token-minter': 'memory=64Mi',
          'resource-request-override.hypershift.openshift.io/kube-apiserver.kube-apiserver': 'cpu=2',
        },
      ),
    );
    const c = [...(podSpec(objs)['initContainers'] as Obj[]), ...(podSpec(objs)['containers'] as Obj[])].find(
      (x) => x['name'] === container,
    )!;
    expect(c['resources']).toEqual({ requests: want });
  });

  it.each([
    {
      name: 'a malformed request override',
      spec: {},
      annotations: { 'resource-request-override.hypershift.openshift.io/karpenter.controller': 'cpu:1' },
      field: 'metadata.annotations[resource-request-override.hypershift.openshift.io/karpenter.controller]',
    },
    { name: 'a toleration that is not an object', spec: { tolerations: ['x'] }, annotations: {}, field: 'spec.tolerations[0]' },
    {
      name: 'a node selector value that is not a string',
      spec: { nodeSelector: { a: 1 } },
      annotations: {},
      field: 'spec.nodeSelector[a]',
    },
  ])('names the field of $name', ({ spec, annotations, field }) => {
    let err: unknown;
    try {
      decodeHostedControlPlane(hcpObject(spec, annotations as Record<string, string>));
    } catch (e) {
      err = e;
    }
    expect(isInvalidInputError(err) && err.field).toBe(field);
  });
});
