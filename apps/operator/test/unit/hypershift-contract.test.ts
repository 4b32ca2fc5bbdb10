import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  CloudProviderId,
  coversRules,
  OperandReconciler,
  silentLogger,
  StatusBoard,
  StatusReconciler,
  TopologyId,
  Types,
  type CloudProvider,
  type KubeObject,
  type OperatorSettings,
  type Reconciler,
  type Topology,
} from '@karpenter-operator/core';
import { FakeClock, MemoryClusterStore, RecordingEvents, RecordingMetrics } from '@karpenter-operator/core/testing';
import {
  autoNodeComponentsPending,
  ControlPlaneComponentType,
  HCP_KARPENTER_FINALIZER,
  HostedControlPlaneType,
  soleHostedControlPlaneName,
} from '@karpenter-operator/topology-hypershift';
import { KARPENTER_AWS_CRDS_DIR } from '@karpenter-operator/provider-aws/testing';
import { aHostedControlPlane } from '@karpenter-operator/topology-hypershift/testing';
import { DEFAULT_ADDRESSES, parseAddress, parseConfig, UNKNOWN_RELEASE_VERSION, type OperatorConfig } from '../../src/config.js';
import { buildContainer, ReconcilersId, SettingsId } from '../../src/container.js';
import { loadOpenshiftNodeClassCrd } from '../../src/hosted-controllers.js';
import { operatorManagementRules } from '../../src/manifests/hypershift-rbac.js';
import { containerStart, hypershiftObjects, operatorContainer, secretFileAt } from '../support/hypershift-deployment.js';

/**
 * HyperShift's contract for starting this operator, from its rendered Deployment and Role
 * (test/fixtures/hypershift/karpenter-operator.yaml): the operator accepts exactly what HyperShift passes and
 * derives the right facts from it; what HyperShift's Role lacks for it is named here and in docs/hypershift.md.
 */
const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');
const objects = hypershiftObjects();
const container = operatorContainer(objects);
const pod = { namespace: objects.deployment.metadata.namespace, name: 'karpenter-operator-6c9f8d7b5-x2kqz' };
const start = containerStart(container, pod);

/** What run.ts passes for the hosted controllers: the guest calls (unused here) and the CRD the build bundles. */
const hostedControllers = {
  guestCalls: { probeGuest: async () => {}, selfSubjectReview: async () => ({}) },
  openshiftNodeClassCrd: loadOpenshiftNodeClassCrd(join(repo, 'generated/crds/karpenter-hypershift')),
};

function parsed(): OperatorConfig {
  const r = parseConfig(start.argv.slice(1), start.env, { crdDir: '/crds' });
  if (!r.ok) throw new Error(`HyperShift's Deployment is refused: ${r.errors.join('; ')}`);
  return r.config;
}

describe("HyperShift's karpenter-operator Deployment", () => {
  it("is scraped by HyperShift's PodMonitor karpenter-operator: its pods, its metrics port, plain HTTP at /metrics", () => {
    const { podMonitor, deployment } = objects;
    expect(podMonitor.spec.namespaceSelector.matchNames).toEqual([deployment.metadata.namespace]);
    for (const [k, v] of Object.entries(podMonitor.spec.selector.matchLabels)) expect(deployment.spec.template.metadata.labels[k]).toBe(v);
    const [endpoint] = podMonitor.spec.podMetricsEndpoints;
    const port = container.ports?.find((p) => p.name === endpoint!.port);
    expect(port, `no container port named ${endpoint!.port}`).toBeDefined();
    const config = parsed();
    // What the operator serves under HyperShift's args: unauthenticated HTTP metrics on that port.
    expect(config.metricsBindAddress.port).toBe(port!.containerPort);
    expect(config.metricsSecure).toBe(false);
    expect(endpoint!.scheme ?? 'http').toBe('http');
    expect(endpoint!.path ?? '/metrics').toBe('/metrics');
  });

  it('runs /usr/bin/karpenter-operator, which the operator image ships (images/operator.Containerfile)', async () => {
    expect(start.argv[0]).toBe('/usr/bin/karpenter-operator');
    const { images } = (await import(join(repo, 'tools/image/runtime-tree.mjs'))) as {
      images: Record<string, { bin?: Record<string, string> }>;
    };
    expect(Object.keys(images['operator']!.bin ?? {})).toContain(start.argv[0]);
  });

  it('sets no RELEASE_VERSION, names no HCP, and is accepted as management-cluster mode', () => {
    expect(start.env['RELEASE_VERSION']).toBeUndefined();
    expect(start.env['HCP_NAME']).toBeUndefined();
    expect(start.argv.slice(1)).toEqual(['--target-kubeconfig=/mnt/kubeconfig/target-kubeconfig', `--namespace=${pod.namespace}`]);
    const config = parsed();
    expect(config).toMatchObject({
      namespace: pod.namespace,
      managementCluster: true,
      guestKubeconfig: '/mnt/kubeconfig/target-kubeconfig',
      clusterName: 'demo-x7k2p',
      clusterEndpoint: 'https://api.demo.example.com:443',
      platform: 'AWS',
      region: 'us-east-1',
      operandImageAws: 'quay.io/example/aws-karpenter-provider-aws:4.22',
      awsSharedCredentialsFile: '/etc/provider/credentials',
      releaseVersion: UNKNOWN_RELEASE_VERSION,
      leaderElect: false,
      podName: pod.name,
    });
    expect(config.hcpName).toBeUndefined();
  });

  it('the files the operator reads are the Secrets HyperShift mounts, and metrics listen on the declared port', () => {
    const config = parsed();
    expect(secretFileAt(objects, container, config.guestKubeconfig!)).toEqual({ secret: 'hcco-kubeconfig', key: 'kubeconfig' });
    expect(secretFileAt(objects, container, config.awsSharedCredentialsFile!)).toEqual({
      secret: 'karpenter-credentials',
      key: 'credentials',
    });
    expect(container.ports?.find((p) => p.name === 'metrics')?.containerPort).toBe(config.metricsBindAddress.port);
  });

  it('runs no adapter container: the operator and the token minter, with the prober as init container', () => {
    const spec = objects.deployment.spec.template.spec as { containers: Array<{ name: string }>; initContainers?: Array<{ name: string }> };
    expect(spec.containers.map((c) => c.name)).toEqual(['karpenter-operator', 'cloud-token-minter']);
    expect((spec.initContainers ?? []).map((c) => c.name)).toEqual(['availability-prober']);
  });

  it('so the operator runs the hosted controllers itself: OpenshiftEC2NodeClass default, its EC2NodeClass, status.autoNode, the finalizer release', () => {
    const config = parsed();
    const c = buildContainer({
      config: { ...config, hcpName: 'demo' },
      platform: config.platform!,
      store: new MemoryClusterStore(),
      guestStore: new MemoryClusterStore(),
      hostedControllers,
      events: new RecordingEvents(),
      logger: silentLogger,
      metrics: new RecordingMetrics(),
      clock: new FakeClock(),
    });
    expect(c.get<Reconciler[]>(ReconcilersId).map((r) => r.name)).toEqual(
      expect.arrayContaining([
        'hostedcontrolplane.autonode-status',
        'hostedcontrolplane.finalizer',
        'openshiftec2nodeclass.translate',
        'validatingadmissionpolicy.managed-nodeclass',
      ]),
    );
  });

  it("the operator's ports collide with no port of HyperShift's pod, nor with the sidecar adapter's defaults", () => {
    const config = parsed();
    const own = [config.metricsBindAddress.port, config.healthProbeBindAddress.port];
    expect(new Set(own).size).toBe(2);
    const spec = objects.deployment.spec.template.spec as {
      containers: Array<{ name: string; ports?: Array<{ containerPort: number }> }>;
      initContainers?: Array<{ name: string; ports?: Array<{ containerPort: number }> }>;
    };
    // Declared by the other containers of the pod (they share its network namespace).
    const others = [...spec.containers, ...(spec.initContainers ?? [])]
      .filter((c) => c.name !== container.name)
      .flatMap((c) => (c.ports ?? []).map((p) => p.containerPort));
    expect(own.filter((p) => others.includes(p))).toEqual([]);
    // The operator's own declared ports are the ones it listens on, nothing undeclared beyond health.
    expect((container.ports ?? []).map((p) => p.containerPort)).toEqual([config.metricsBindAddress.port]);
    const adapter = [DEFAULT_ADDRESSES.adapter.metrics, DEFAULT_ADDRESSES.adapter.health].map((a) => parseAddress('x', a, []).port);
    expect(adapter).toEqual([8082, 8083]);
    expect(own.filter((p) => adapter.includes(p))).toEqual([]);
  });

  it('derives the facts from the one HCP of the namespace, whose name differs from CLUSTER_NAME (the infra ID)', async () => {
    const config = parsed();
    const management = new MemoryClusterStore([
      aHostedControlPlane({
        metadata: { name: 'demo', namespace: pod.namespace },
        spec: { infraID: config.clusterName, platform: { aws: { region: config.region } } },
      }),
    ]);
    const hcpName = soleHostedControlPlaneName(await management.list(HostedControlPlaneType, { namespace: pod.namespace }), pod.namespace);
    expect(hcpName).not.toBe(config.clusterName);
    const c = buildContainer({
      config: { ...config, hcpName },
      platform: config.platform!,
      store: management,
      guestStore: new MemoryClusterStore(),
      hostedControllers,
      events: new RecordingEvents(),
      logger: silentLogger,
      metrics: new RecordingMetrics(),
      clock: new FakeClock(),
    });
    const topology = c.get<Topology>(TopologyId);
    expect(await topology.clusterFacts()).toMatchObject({
      platform: 'AWS',
      infrastructureName: 'demo-x7k2p',
      apiServerInternalURL: 'https://api.demo.example.com:443',
      region: 'us-east-1',
      controlPlaneTopology: 'External',
    });
    expect((await topology.readRequest())?.owner).toMatchObject({ kind: 'HostedControlPlane', namespace: pod.namespace, name: 'demo' });
    expect(topology.statusObject.name).toBe('demo');
    // The only finalizer the operator puts on the HCP is the one HyperShift resolves itself.
    expect(topology.teardownFinalizer).toBe(HCP_KARPENTER_FINALIZER);
  });

  describe('the operand the operator renders under that Deployment', () => {
    type PodSpec = {
      securityContext: { runAsUser?: number };
      containers: Array<{ name: string; env: Array<{ name: string; value?: string }> }>;
    };
    type OperandDeployment = KubeObject & { spec: { template: { spec: PodSpec } } };
    const HCP_VERSION = '4.22.3';
    const operand = async (runAsUser?: number) => {
      const config = parsed();
      const management = new MemoryClusterStore([
        aHostedControlPlane({
          metadata: { name: 'demo', namespace: pod.namespace },
          spec: { infraID: config.clusterName, platform: { aws: { region: config.region } } },
          status: { controlPlaneVersion: { desired: { version: HCP_VERSION, image: 'quay.io/example/release@sha256:1' } } },
        }),
        // HyperShift's credentials Secret: the operand waits for it.
        { ...Types.Secret, metadata: { name: 'karpenter-credentials', namespace: pod.namespace }, data: { credentials: 'eA==' } },
      ]);
      const guest = new MemoryClusterStore();
      const c = buildContainer({
        config: { ...config, hcpName: 'demo', crdDir: KARPENTER_AWS_CRDS_DIR },
        ...(runAsUser !== undefined ? { hostedRunAsUser: runAsUser } : {}),
        platform: config.platform!,
        store: management,
        guestStore: guest,
        hostedControllers,
        events: new RecordingEvents(),
        logger: silentLogger,
        metrics: new RecordingMetrics(),
        clock: new FakeClock(),
      });
      const cloud = c.get<CloudProvider>(CloudProviderId);
      // The runtime CRDs, Established in the guest: the operand waits for them.
      for (const crd of cloud.crds()) {
        await guest.apply({ ...crd, status: { conditions: [{ type: 'Established', status: 'True' }] } });
      }
      const reconciler = new OperandReconciler({
        topology: c.get<Topology>(TopologyId),
        cloud,
        settings: c.get<OperatorSettings>(SettingsId),
        events: new RecordingEvents(),
        logger: silentLogger,
      });
      await reconciler.reconcile();
      const d = await management.get<OperandDeployment>({
        ...Types.Deployment,
        namespace: pod.namespace,
        name: 'karpenter',
      });
      if (!d) throw new Error('no operand Deployment rendered');
      return d;
    };

    it("carries HyperShift's proxy variables, NO_PROXY keeping kube-apiserver (the guest API through its Service)", async () => {
      const d = await operand();
      const controller = d.spec.template.spec.containers.find((x) => x.name === 'controller')!;
      const proxy = Object.fromEntries(controller.env.filter((e) => e.name.endsWith('_PROXY')).map((e) => [e.name, e.value]));
      expect(proxy).toEqual({
        HTTP_PROXY: start.env['HTTP_PROXY'],
        HTTPS_PROXY: start.env['HTTPS_PROXY'],
        NO_PROXY: start.env['NO_PROXY'],
      });
      expect(proxy['NO_PROXY']!.split(',')).toContain('kube-apiserver');
    });

    it("is labelled managed by component karpenter-operator and annotated with the HCP's control-plane version", async () => {
      const d = await operand();
      expect(d.metadata.labels?.['hypershift.openshift.io/managed-by']).toBe('karpenter-operator');
      expect(d.metadata.annotations?.['release.openshift.io/version']).toBe(HCP_VERSION);
    });

    it.each([
      { name: 'the UID of the HCP namespace', runAsUser: 1004, want: 1004 },
      { name: 'none where the SCC assigns it', runAsUser: undefined, want: undefined },
    ])('runs as $name', async ({ runAsUser, want }) => {
      const d = await operand(runAsUser);
      expect(d.spec.template.spec.securityContext.runAsUser).toBe(want);
    });

    it("is reported as ControlPlaneComponent karpenter: RolloutComplete and the HCP's version once rolled out, then no write", async () => {
      const config = parsed();
      const management = new MemoryClusterStore([
        aHostedControlPlane({
          metadata: { name: 'demo', namespace: pod.namespace },
          spec: { infraID: config.clusterName, platform: { aws: { region: config.region } } },
          status: { controlPlaneVersion: { desired: { version: HCP_VERSION, image: 'quay.io/example/release@sha256:1' } } },
        }),
        { ...Types.Secret, metadata: { name: 'karpenter-credentials', namespace: pod.namespace }, data: { credentials: 'eA==' } },
      ]);
      const guest = new MemoryClusterStore();
      const c = buildContainer({
        config: { ...config, hcpName: 'demo', crdDir: KARPENTER_AWS_CRDS_DIR },
        hostedKinds: { podMonitor: false, capiCluster: false, controlPlaneComponent: true },
        platform: config.platform!,
        store: management,
        guestStore: guest,
        hostedControllers,
        events: new RecordingEvents(),
        logger: silentLogger,
        metrics: new RecordingMetrics(),
        clock: new FakeClock(),
      });
      const cloud = c.get<CloudProvider>(CloudProviderId);
      for (const crd of cloud.crds()) await guest.apply({ ...crd, status: { conditions: [{ type: 'Established', status: 'True' }] } });
      const deps = { topology: c.get<Topology>(TopologyId), cloud, settings: c.get<OperatorSettings>(SettingsId) };
      const operandReconciler = new OperandReconciler({ ...deps, events: new RecordingEvents(), logger: silentLogger });
      const status = new StatusReconciler({ ...deps, board: new StatusBoard() });
      expect(status.watches).toContainEqual(expect.objectContaining({ type: ControlPlaneComponentType, namespace: pod.namespace }));
      const cpcRef = { ...ControlPlaneComponentType, namespace: pod.namespace, name: 'karpenter' };
      type Cpc = {
        version?: string;
        conditions: Array<{ type: string; status: string }>;
        resources: Array<{ kind: string; name: string }>;
      };
      const cpc = async () => (await management.get(cpcRef))?.status as Cpc | undefined;
      const rolloutComplete = async () => (await cpc())?.conditions.find((x) => x.type === 'RolloutComplete')?.status;

      await operandReconciler.reconcile();
      await status.reconcile();
      expect(await rolloutComplete()).toBe('False');
      expect((await cpc())?.version).toBeUndefined();

      // The Deployment controller rolls it out.
      const dep = (await management.get({ ...Types.Deployment, namespace: pod.namespace, name: 'karpenter' }))!;
      management.seed({
        ...dep,
        status: {
          observedGeneration: dep.metadata.generation,
          replicas: 1,
          updatedReplicas: 1,
          readyReplicas: 1,
          availableReplicas: 1,
          conditions: [{ type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable', message: '' }],
        },
      });
      await status.reconcile();
      expect(await rolloutComplete()).toBe('True');
      expect((await cpc())?.version).toBe(HCP_VERSION);
      // What the operator applies for the operand in the HCP namespace.
      expect((await cpc())?.resources).toEqual([
        { group: '', kind: 'ServiceAccount', name: 'karpenter' },
        { group: 'apps', kind: 'Deployment', name: 'karpenter' },
      ]);
      expect(autoNodeComponentsPending([(await management.get(cpcRef))!])).toBe('waiting for components to be created');

      management.clearWrites();
      await operandReconciler.reconcile();
      await status.reconcile();
      expect(management.writes).toEqual([]);
    });
  });

  it("HyperShift's Role, bound to the Deployment's ServiceAccount, holds what the operator needs on the management cluster except Events and its namespace", () => {
    const { role, roleBinding, deployment } = objects;
    expect(roleBinding.roleRef.name).toBe(role.metadata.name);
    expect(roleBinding.subjects).toContainEqual({ kind: 'ServiceAccount', name: deployment.spec.template.spec.serviceAccountName });
    const { missing } = coversRules(role.rules, operatorManagementRules({ leaderElect: parsed().leaderElect }));
    // HyperShift grants no Events: the operator's Events on the HCP and the operand are dropped (403) until it
    // does; nor the GET of its own namespace: the operand then runs without the namespace's UID, logged at
    // start-up (docs/hypershift.md, "What HyperShift must change").
    expect(missing).toEqual([
      { apiGroups: [''], resources: ['namespaces'], verbs: ['get'] },
      { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create'] },
      { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['patch'] },
    ]);
  });
});
