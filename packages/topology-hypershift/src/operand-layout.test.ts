import {
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
import { hcpOperandLayout } from './operand-layout.js';

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
  owner: { apiVersion: 'hypershift.openshift.io/v1beta1', kind: 'HostedControlPlane', name: 'demo', namespace: 'clusters-demo', uid: 'uid-hcp' },
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
  const hcp = { apiVersion: 'hypershift.openshift.io/v1beta1', kind: 'HostedControlPlane', name: 'demo', namespace: HCP_NS, uid: 'uid-hcp' };
  const hsInput = (over: Partial<OperandInput> = {}): OperandInput =>
    input({
      namespace: HCP_NS,
      layout: hcpOperandLayout(HCP_NS, over.settings ?? settings()),
      request: request({ owner: hcp }),
      facts: facts({ infrastructureName: 'demo-4kq9z', apiServerInternalURL: 'https://api.demo.example.com:443', controlPlaneTopology: 'External', region: 'eu-west-1' }),
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
    { name: 'SYSTEM_NAMESPACE from the downward API', key: 'SYSTEM_NAMESPACE', value: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } } },
  ])('env: $name', ({ key, value }) => {
    expect(hsEnv()[key]).toEqual(value);
  });

  it('sets each env name once', () => {
    const names = (controller(renderOperand(hsInput()))['env'] as Obj[]).map((e) => e['name']);
    expect(names.length).toBe(new Set(names).size);
  });

  it.each([
    { name: 'guest kubeconfig volume from the default Secret, credentials from HyperShift\'s Secret', over: {}, path: (o: KubeObject[]) => podSpec(o)['volumes'], want: [
      { name: 'provider-creds', secret: { secretName: 'karpenter-credentials' } },
      { name: 'guest-kubeconfig', secret: { secretName: 'service-network-admin-kubeconfig', items: [{ key: 'kubeconfig', path: 'kubeconfig' }] } },
    ] },
    { name: 'guest kubeconfig Secret from settings', over: { settings: settings({ guestKubeconfigSecret: 'karpenter-guest-kubeconfig' }) }, path: (o: KubeObject[]) => (podSpec(o)['volumes'] as Obj[]).find((v) => v['name'] === 'guest-kubeconfig')!['secret'].secretName, want: 'karpenter-guest-kubeconfig' },
    { name: 'guest kubeconfig mounted read-only', over: {}, path: (o: KubeObject[]) => controller(o)['volumeMounts'], want: [
      { name: 'provider-creds', mountPath: '/etc/provider', readOnly: true },
      { name: 'guest-kubeconfig', mountPath: '/etc/karpenter/guest-kubeconfig', readOnly: true },
    ] },
    { name: 'one replica', over: {}, path: (o: KubeObject[]) => deployment(o)['spec'].replicas, want: 1 },
    { name: 'no anti-affinity', over: {}, path: (o: KubeObject[]) => podSpec(o)['affinity'], want: undefined },
    { name: 'no control-plane nodeSelector', over: {}, path: (o: KubeObject[]) => podSpec(o)['nodeSelector'], want: undefined },
    { name: 'no control-plane tolerations', over: {}, path: (o: KubeObject[]) => podSpec(o)['tolerations'], want: undefined },
    { name: 'HyperShift control-plane priority', over: {}, path: (o: KubeObject[]) => podSpec(o)['priorityClassName'], want: 'hypershift-control-plane' },
    { name: 'runs as the HCP-namespace ServiceAccount', over: {}, path: (o: KubeObject[]) => podSpec(o)['serviceAccountName'], want: 'karpenter' },
    { name: 'Deployment in the HCP namespace', over: {}, path: (o: KubeObject[]) => deployment(o)['metadata'].namespace, want: HCP_NS },
    { name: 'no management-workload annotations, credentials hash kept', over: {}, path: (o: KubeObject[]) => deployment(o)['spec'].template.metadata.annotations, want: { [OperandNames.credentialsHashAnnotation]: 'hash-1' } },
    { name: 'no Lease Role or binding', over: {}, path: (o: KubeObject[]) => o.filter((x) => x.metadata.name === OperandNames.role && x.kind.startsWith('Role')).length, want: 0 },
    { name: 'init container does not need the guest kubeconfig', over: { settings: settings({ operatorImage: 'op:1' }) }, path: (o: KubeObject[]) => podSpec(o)['initContainers'][0].volumeMounts, want: [{ name: 'provider-creds', mountPath: '/etc/provider', readOnly: true }] },
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
        (s) => s.type.kind === p.object.kind && s.type.apiVersion === p.object.apiVersion && s.cluster === p.cluster && (s.namespace === undefined || s.namespace === p.object.metadata.namespace),
      );
      expect(covered, `${p.cluster}: ${id(p)}`).toBe(true);
    }
  });

  it('leaves placement to the HCP namespace: nothing of it owned whole', () => {
    const paths = placed().find((p) => p.ownedWhole)!.ownedWhole!;
    expect(paths).toContain('spec.template.spec.containers');
    expect(paths.filter((p) => p.endsWith('nodeSelector') || p.endsWith('tolerations'))).toEqual([]);
  });

});


describe('hcpOperandLayout: the token minter (TOKEN_MINTER_IMAGE)', () => {
  const HCP_NS = 'clusters-demo';
  const MINTER = 'quay.io/example/control-plane-operator:4.22';
  const render = (over: Partial<OperatorSettings> = {}) => {
    const s = settings(over);
    return renderOperand(input({ namespace: HCP_NS, settings: s, layout: hcpOperandLayout(HCP_NS, s) }));
  };
  const minterOf = (objs: KubeObject[]): Obj | undefined => (podSpec(objs)['initContainers'] as Obj[] | undefined)?.find((c) => c['name'] === 'token-minter');
  /** The file a container sees at `path`, by the volume mounted at the longest prefix: `volume:sub/path`. */
  const fileAt = (objs: KubeObject[], c: Obj, path: string): string | undefined => {
    const m = ((c['volumeMounts'] as Obj[]) ?? []).filter((v) => path.startsWith(`${v['mountPath']}/`)).sort((a, b) => b['mountPath'].length - a['mountPath'].length)[0];
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

  it('is a sidecar for the pod\'s life whose startup waits for the token, before any other init container', () => {
    const objs = render({ tokenMinterImage: MINTER, operatorImage: 'op:1' });
    const inits = podSpec(objs)['initContainers'] as Obj[];
    expect(inits.map((c) => c['name'])).toEqual(['token-minter', OperandNames.initContainer]);
    expect(inits[0]!['restartPolicy']).toBe('Always');
    expect(inits[0]!['startupProbe']).toEqual({ exec: { command: ['cat', arg(inits[0]!, 'token-file')] }, failureThreshold: 10 });
    expect(inits[0]!['resources']).toEqual({ requests: { cpu: '10m', memory: '30Mi' } });
  });

  it.each([
    { name: 'Karpenter', pick: (o: KubeObject[]) => controller(o) },
    { name: 'the credentials check', pick: (o: KubeObject[]) => (podSpec(o)['initContainers'] as Obj[]).find((c) => c['name'] === OperandNames.initContainer)! },
  ])('$name reads the token from the file the minter writes, in a pod-lived volume', ({ pick }) => {
    const objs = render({ tokenMinterImage: MINTER, operatorImage: 'op:1' });
    const m = minterOf(objs)!;
    const tokenFile = arg(m, 'token-file')!;
    const written = fileAt(objs, m, tokenFile);
    expect(written).toBe('serviceaccount-token:token');
    expect(fileAt(objs, pick(objs), tokenFile)).toBe(written);
    expect((podSpec(objs)['volumes'] as Obj[]).find((v) => v['name'] === 'serviceaccount-token')).toEqual({ name: 'serviceaccount-token', emptyDir: {} });
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

  it('the token path is the one HyperShift\'s credentials profile names (web_identity_token_file)', () => {
    expect(arg(minterOf(render({ tokenMinterImage: MINTER }))!, 'token-file')).toBe('/var/run/secrets/openshift/serviceaccount/token');
  });

  it('without TOKEN_MINTER_IMAGE: no minter and no token volume (older HyperShift)', () => {
    const objs = render();
    expect(minterOf(objs)).toBeUndefined();
    expect((podSpec(objs)['volumes'] as Obj[]).map((v) => v['name'])).not.toContain('serviceaccount-token');
  });

  it('waits for and mounts HyperShift\'s credentials Secret karpenter-credentials', () => {
    expect(hcpOperandLayout(HCP_NS, settings()).credentialsSecret).toBe('karpenter-credentials');
    const vols = (podSpec(render())['volumes'] as Obj[]).filter((v) => v['secret']).map((v) => v['secret'].secretName);
    expect(vols).toContain('karpenter-credentials');
    expect(vols).not.toContain('karpenter-cloud-credentials');
  });
});
