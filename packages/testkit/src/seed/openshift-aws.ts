import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  AuthorizeSecurityGroupIngressCommand,
  CreateSecurityGroupCommand,
  CreateSubnetCommand,
  CreateVpcCommand,
  DescribeSecurityGroupsCommand,
  DescribeSubnetsCommand,
  DescribeVpcsCommand,
  EC2Client,
  type Tag,
} from '@aws-sdk/client-ec2';
import type { ClusterClient } from '../access.js';
import {
  KWOK_NODE_ANNOTATION,
  KWOK_NODE_ANNOTATION_VALUE,
  startCluster,
  type ClusterHandle,
  type StartClusterOptions,
} from '../cluster.js';
import { ec2ClientConfig, iamCall, type MotoAmi } from '../ec2-emulator.js';
import { applyObject, applyStatus, installCrds, listObjects, type KubeObj } from '../resources.js';
import { startMachineConfigOperator, type MachineConfigOperator } from '../mco.js';
import { startMachineConfigRenderer } from '../mco-standin.js';
import { waitFor } from '../wait.js';

/**
 * A small OpenShift 4.22 cluster on AWS, as the operator finds it: one declarative description (the
 * facts below) and builders that turn it into cluster objects and emulator resources. Tests assert on
 * the exported facts, never on copies of them.
 */
export interface OpenShiftAwsFacts {
  infraId: string;
  clusterDomain: string;
  region: string;
  zones: string[];
  apiServerURL: string;
  apiServerInternalURI: string;
  /** Machine Config Server URL the worker pointer config merges from. */
  mcsWorkerConfigURL: string;
  version: string;
  releaseImage: string;
  clusterID: string;
  resourceTags: Array<{ key: string; value: string }>;
  /** `kubernetes.io/cluster/<infraId>`: value `owned` on everything the installer created. */
  clusterTagKey: string;
  vpc: { name: string; cidr: string };
  privateSubnets: Array<{ zone: string; name: string; cidr: string }>;
  publicSubnets: Array<{ zone: string; name: string; cidr: string }>;
  securityGroups: { node: string; lb: string };
  workerRole: string;
  instanceProfile: string;
  /** RHCOS boot images by CoreOS architecture name. */
  amis: { x86_64: string; aarch64: string };
  rhcosRelease: string;
  workerInstanceType: string;
  controlPlaneInstanceType: string;
  workerMachineSets: string[];
  controlPlaneNodes: Array<{ name: string; zone: string; ip: string; instanceId: string }>;
  workerNodes: Array<{ name: string; zone: string; ip: string; instanceId: string; machineSet: string }>;
  featureSet: string;
  enabledFeatureGates: string[];
  userDataSecret: string;
}

const INFRA_ID = 'demo-x7k2p';
const ZONES = ['us-east-1a', 'us-east-1b', 'us-east-1c'];
const nodeName = (ip: string) => `ip-${ip.replace(/\./g, '-')}.ec2.internal`;

export const openShiftAws: OpenShiftAwsFacts = {
  infraId: INFRA_ID,
  clusterDomain: 'demo.example.com',
  region: 'us-east-1',
  zones: ZONES,
  apiServerURL: 'https://api.demo.example.com:6443',
  apiServerInternalURI: 'https://api-int.demo.example.com:6443',
  mcsWorkerConfigURL: 'https://api-int.demo.example.com:22623/config/worker',
  version: '4.22.0',
  releaseImage: 'quay.io/openshift-release-dev/ocp-release@sha256:6c1f1b0e5e1d9a6b0f3c2d4e5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b',
  clusterID: '3f2c9a4e-7b1d-4c8e-9f0a-5d6b7c8e9f01',
  resourceTags: [
    { key: 'owner', value: 'platform-team' },
    { key: 'cost-center', value: 'cc-1234' },
  ],
  clusterTagKey: `kubernetes.io/cluster/${INFRA_ID}`,
  vpc: { name: `${INFRA_ID}-vpc`, cidr: '10.0.0.0/16' },
  privateSubnets: ZONES.map((zone, i) => ({ zone, name: `${INFRA_ID}-subnet-private-${zone}`, cidr: `10.0.${128 + 16 * i}.0/20` })),
  publicSubnets: ZONES.map((zone, i) => ({ zone, name: `${INFRA_ID}-subnet-public-${zone}`, cidr: `10.0.${16 * i}.0/20` })),
  securityGroups: { node: `${INFRA_ID}-node`, lb: `${INFRA_ID}-lb` },
  workerRole: `${INFRA_ID}-worker-role`,
  instanceProfile: `${INFRA_ID}-worker-profile`,
  amis: { x86_64: 'ami-0c5b2a1e9d3f47a61', aarch64: 'ami-0e8d7f6c5b4a39281' },
  rhcosRelease: '9.6.20260201-0',
  workerInstanceType: 'm6i.xlarge',
  controlPlaneInstanceType: 'm6i.2xlarge',
  workerMachineSets: ZONES.map((zone) => `${INFRA_ID}-worker-${zone}`),
  controlPlaneNodes: ZONES.map((zone, i) => {
    const ip = `10.0.${130 + 16 * i}.10`;
    return { name: nodeName(ip), zone, ip, instanceId: `i-0c0ffee00000000${i}a` };
  }),
  workerNodes: ZONES.map((zone, i) => {
    const ip = `10.0.${131 + 16 * i}.20`;
    return { name: nodeName(ip), zone, ip, instanceId: `i-0beef000000000${i}0b`, machineSet: `${INFRA_ID}-worker-${zone}` };
  }),
  featureSet: 'DevPreviewNoUpgrade',
  enabledFeatureGates: ['KarpenterOperator', 'AWSClusterHostedDNS', 'MachineAPIMigration'],
  userDataSecret: 'worker-user-data',
};

const MACHINE_API = 'openshift-machine-api';
const MCO = 'openshift-machine-config-operator';
export const SEED_FIELD_MANAGER = 'testkit-seed';

// ---------------------------------------------------------------------------------------------------
// Builders. Each returns a fresh object; `status`, where present, is written through the subresource.

export function aNamespace(name: string, labels: Record<string, string> = {}): KubeObj {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } };
}

export function anInfrastructure(f: OpenShiftAwsFacts = openShiftAws): KubeObj {
  return {
    apiVersion: 'config.openshift.io/v1',
    kind: 'Infrastructure',
    metadata: { name: 'cluster' },
    spec: { cloudConfig: { name: '' }, platformSpec: { type: 'AWS', aws: {} } },
    status: {
      infrastructureName: f.infraId,
      platform: 'AWS',
      platformStatus: { type: 'AWS', aws: { region: f.region, resourceTags: f.resourceTags } },
      etcdDiscoveryDomain: '',
      apiServerURL: f.apiServerURL,
      apiServerInternalURI: f.apiServerInternalURI,
      controlPlaneTopology: 'HighlyAvailable',
      infrastructureTopology: 'HighlyAvailable',
      cpuPartitioning: 'None',
    },
  };
}

export function aClusterVersion(f: OpenShiftAwsFacts = openShiftAws): KubeObj {
  const at = '2026-02-01T10:00:00Z';
  return {
    apiVersion: 'config.openshift.io/v1',
    kind: 'ClusterVersion',
    metadata: { name: 'version' },
    spec: { clusterID: f.clusterID, channel: `stable-${f.version.split('.').slice(0, 2).join('.')}` },
    status: {
      desired: { version: f.version, image: f.releaseImage },
      history: [
        {
          state: 'Completed',
          startedTime: at,
          completionTime: '2026-02-01T10:40:00Z',
          version: f.version,
          image: f.releaseImage,
          verified: false,
        },
      ],
      observedGeneration: 1,
      versionHash: 'x7k2pHash01=',
      availableUpdates: null,
      capabilities: {
        enabledCapabilities: ['CloudCredential', 'MachineAPI', 'baremetal'],
        knownCapabilities: ['CloudCredential', 'MachineAPI', 'baremetal'],
      },
      conditions: [
        { type: 'Available', status: 'True', lastTransitionTime: at, reason: 'AsExpected', message: `Done applying ${f.version}` },
        { type: 'Failing', status: 'False', lastTransitionTime: at, reason: 'AsExpected', message: '' },
        { type: 'Progressing', status: 'False', lastTransitionTime: at, reason: 'AsExpected', message: `Cluster version is ${f.version}` },
      ],
    },
  };
}

/**
 * Every gate the Machine Config Operator's controller asks about (library-go panics on a gate the FeatureGate
 * does not list); all off here, so it neither rewrites the MachineSets' boot images nor runs on-cluster builds.
 */
export const MCO_FEATURE_GATES = [
  'MachineConfigNodes',
  'ManagedBootImages',
  'ManagedBootImagesAWS',
  'NodeDisruptionPolicy',
  'OnClusterBuild',
  'PinnedImages',
  'SigstoreImageVerification',
];

export function aFeatureGate(f: OpenShiftAwsFacts = openShiftAws): KubeObj {
  return {
    apiVersion: 'config.openshift.io/v1',
    kind: 'FeatureGate',
    metadata: { name: 'cluster' },
    spec: { featureSet: f.featureSet },
    status: {
      featureGates: [
        {
          version: f.version,
          enabled: f.enabledFeatureGates.map((name) => ({ name })),
          disabled: ['ClusterAPIInstall', ...MCO_FEATURE_GATES].map((name) => ({ name })),
        },
      ],
    },
  };
}

export interface NodeSpecInput {
  name: string;
  zone: string;
  ip: string;
  instanceId: string;
  role: 'control-plane' | 'worker';
  instanceType?: string;
  arch?: 'amd64' | 'arm64';
  machine?: string;
}

/** A Node as an RHCOS kubelet on EC2 registers it, simulated by KWOK (the annotation). */
export function aNode(n: NodeSpecInput, f: OpenShiftAwsFacts = openShiftAws): KubeObj {
  const controlPlane = n.role === 'control-plane';
  const instanceType = n.instanceType ?? (controlPlane ? f.controlPlaneInstanceType : f.workerInstanceType);
  const arch = n.arch ?? 'amd64';
  const roleLabels: Record<string, string> = controlPlane
    ? { 'node-role.kubernetes.io/master': '', 'node-role.kubernetes.io/control-plane': '' }
    : { 'node-role.kubernetes.io/worker': '' };
  const cpu = controlPlane ? '8' : '4';
  const memory = controlPlane ? '32Gi' : '16Gi';
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: n.name,
      labels: {
        'kubernetes.io/arch': arch,
        'beta.kubernetes.io/arch': arch,
        'kubernetes.io/os': 'linux',
        'beta.kubernetes.io/os': 'linux',
        'kubernetes.io/hostname': n.name.split('.')[0]!,
        'node.kubernetes.io/instance-type': instanceType,
        'beta.kubernetes.io/instance-type': instanceType,
        'topology.kubernetes.io/region': f.region,
        'topology.kubernetes.io/zone': n.zone,
        'node.openshift.io/os_id': 'rhcos',
        ...roleLabels,
      },
      annotations: {
        [KWOK_NODE_ANNOTATION]: KWOK_NODE_ANNOTATION_VALUE,
        ...(n.machine ? { 'machine.openshift.io/machine': `${MACHINE_API}/${n.machine}` } : {}),
        'machineconfiguration.openshift.io/state': 'Done',
      },
    },
    spec: {
      providerID: `aws:///${n.zone}/${n.instanceId}`,
      ...(controlPlane
        ? {
            taints: [
              { key: 'node-role.kubernetes.io/master', effect: 'NoSchedule' },
              { key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' },
            ],
          }
        : {}),
    },
    status: {
      addresses: [
        { type: 'InternalIP', address: n.ip },
        { type: 'Hostname', address: n.name },
        { type: 'InternalDNS', address: n.name },
      ],
      capacity: { cpu, memory, pods: '250', 'ephemeral-storage': '125293548Ki' },
      allocatable: {
        cpu: controlPlane ? '7500m' : '3500m',
        memory: controlPlane ? '31Gi' : '15Gi',
        pods: '250',
        'ephemeral-storage': '114396791822',
      },
    },
  };
}

/** The AWS providerSpec of a worker MachineSet, as the installer writes it (filters, not ids). */
export function anAwsProviderSpec(
  zone: string,
  f: OpenShiftAwsFacts = openShiftAws,
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  const subnet = f.privateSubnets.find((s) => s.zone === zone);
  if (!subnet) throw new Error(`no private subnet in zone ${zone}`);
  return {
    apiVersion: 'machine.openshift.io/v1beta1',
    kind: 'AWSMachineProviderConfig',
    ami: { id: f.amis.x86_64 },
    blockDevices: [{ ebs: { encrypted: true, iops: 0, kmsKey: { arn: '' }, volumeSize: 120, volumeType: 'gp3' } }],
    credentialsSecret: { name: 'aws-cloud-credentials' },
    deviceIndex: 0,
    iamInstanceProfile: { id: f.instanceProfile },
    instanceType: f.workerInstanceType,
    metadata: { creationTimestamp: null },
    metadataServiceOptions: { authentication: 'Required' },
    placement: { availabilityZone: zone, region: f.region },
    securityGroups: [
      { filters: [{ name: 'tag:Name', values: [f.securityGroups.node] }] },
      { filters: [{ name: 'tag:Name', values: [f.securityGroups.lb] }] },
    ],
    subnet: { filters: [{ name: 'tag:Name', values: [subnet.name] }] },
    tags: [{ name: f.clusterTagKey, value: 'owned' }],
    userDataSecret: { name: f.userDataSecret },
    ...overrides,
  };
}

export function aWorkerMachineSet(
  zone: string,
  f: OpenShiftAwsFacts = openShiftAws,
  opts: { name?: string; replicas?: number; providerSpec?: Record<string, unknown> } = {},
): KubeObj {
  const name = opts.name ?? `${f.infraId}-worker-${zone}`;
  const replicas = opts.replicas ?? 1;
  const selector = { 'machine.openshift.io/cluster-api-cluster': f.infraId, 'machine.openshift.io/cluster-api-machineset': name };
  return {
    apiVersion: 'machine.openshift.io/v1beta1',
    kind: 'MachineSet',
    metadata: {
      name,
      namespace: MACHINE_API,
      labels: { 'machine.openshift.io/cluster-api-cluster': f.infraId },
      annotations: {
        'machine.openshift.io/vCPU': '4',
        'machine.openshift.io/memoryMb': '16384',
        'capacity.cluster-autoscaler.kubernetes.io/labels': 'kubernetes.io/arch=amd64',
      },
    },
    spec: {
      replicas,
      selector: { matchLabels: selector },
      template: {
        metadata: {
          labels: {
            ...selector,
            'machine.openshift.io/cluster-api-machine-role': 'worker',
            'machine.openshift.io/cluster-api-machine-type': 'worker',
          },
        },
        spec: { lifecycleHooks: {}, metadata: {}, providerSpec: { value: opts.providerSpec ?? anAwsProviderSpec(zone, f) } },
      },
    },
    status: { replicas, fullyLabeledReplicas: replicas, readyReplicas: replicas, availableReplicas: replicas, observedGeneration: 1 },
  };
}

/** The RHCOS pointer config: merge the pool's config from the MCS, trusting its CA. */
export function workerPointerConfig(caPem: string, f: OpenShiftAwsFacts = openShiftAws): string {
  return JSON.stringify({
    ignition: {
      config: { merge: [{ source: f.mcsWorkerConfigURL }] },
      security: {
        tls: { certificateAuthorities: [{ source: `data:text/plain;charset=utf-8;base64,${Buffer.from(caPem).toString('base64')}` }] },
      },
      version: '3.2.0',
    },
  });
}

export function aWorkerUserDataSecret(caPem: string, f: OpenShiftAwsFacts = openShiftAws): KubeObj {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: f.userDataSecret, namespace: MACHINE_API },
    type: 'Opaque',
    data: {
      userData: Buffer.from(workerPointerConfig(caPem, f)).toString('base64'),
      disableTemplating: Buffer.from('true').toString('base64'),
    },
  };
}

/** CoreOS stream metadata as the MCO publishes it (`architectures.<arch>.images.aws.regions.<region>.image`). */
export function coreosStream(f: OpenShiftAwsFacts = openShiftAws): Record<string, unknown> {
  const arch = (image: string) => ({
    artifacts: {},
    images: { aws: { regions: { [f.region]: { release: f.rhcosRelease, image } } } },
    'rhel-coreos-extensions': {},
  });
  return {
    stream: 'rhcos-9.6',
    metadata: { 'last-modified': '2026-02-01T00:00:00Z', generator: 'plume cosa2stream 0.17.0' },
    architectures: { x86_64: arch(f.amis.x86_64), aarch64: arch(f.amis.aarch64) },
  };
}

export function aBootImagesConfigMap(f: OpenShiftAwsFacts = openShiftAws): KubeObj {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'coreos-bootimages', namespace: MCO, labels: { 'machineconfiguration.openshift.io/bootimage': '' } },
    data: { releaseVersion: f.version, stream: JSON.stringify(coreosStream(f)) },
  };
}

export function aMachineConfigPool(role: 'master' | 'worker'): KubeObj {
  return {
    apiVersion: 'machineconfiguration.openshift.io/v1',
    kind: 'MachineConfigPool',
    metadata: {
      name: role,
      labels: { 'machineconfiguration.openshift.io/mco-built-in': '', [`pools.operator.machineconfiguration.openshift.io/${role}`]: '' },
    },
    spec: {
      machineConfigSelector: { matchLabels: { 'machineconfiguration.openshift.io/role': role } },
      nodeSelector: { matchLabels: { [`node-role.kubernetes.io/${role}`]: '' } },
      paused: false,
    },
  };
}

/** The MCO's node-bootstrapper ServiceAccount and the bindings that let it (and nodes) file CSRs. */
export function nodeBootstrapperObjects(): KubeObj[] {
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'node-bootstrapper', namespace: MCO } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'system-bootstrap-node-bootstrapper' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:node-bootstrapper' },
      subjects: [{ kind: 'ServiceAccount', name: 'node-bootstrapper', namespace: MCO }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'system-bootstrap-node-renewal' },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: 'system:certificates.k8s.io:certificatesigningrequests:selfnodeclient',
      },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:nodes' }],
    },
  ];
}

/** Every cluster object of the world, in apply order (namespaces first). */
export function openShiftAwsObjects(caPem: string, f: OpenShiftAwsFacts = openShiftAws): KubeObj[] {
  return [
    aNamespace(MACHINE_API, { 'openshift.io/cluster-monitoring': 'true' }),
    aNamespace(MCO, { 'openshift.io/cluster-monitoring': 'true' }),
    aNamespace('openshift-cloud-credential-operator'),
    aNamespace('openshift-config'),
    aNamespace('openshift-config-managed'),
    anInfrastructure(f),
    aClusterVersion(f),
    aFeatureGate(f),
    ...f.controlPlaneNodes.map((n) => aNode({ ...n, role: 'control-plane' }, f)),
    ...f.workerNodes.map((n) => aNode({ ...n, role: 'worker', machine: `${n.machineSet}-abcde` }, f)),
    ...f.zones.map((z) => aWorkerMachineSet(z, f)),
    aWorkerUserDataSecret(caPem, f),
    aBootImagesConfigMap(f),
    ...nodeBootstrapperObjects(),
    aMachineConfigPool('master'),
    aMachineConfigPool('worker'),
  ];
}

/** The RHCOS images for the emulator's AMI catalogue (`startCluster({ amis })`). */
export function rhcosAmis(f: OpenShiftAwsFacts = openShiftAws): MotoAmi[] {
  const ami = (id: string, arch: 'x86_64' | 'arm64'): MotoAmi => ({
    ami_id: id,
    name: `rhcos-${f.rhcosRelease.replace(/-0$/, '')}-0-${arch}`,
    description: `OpenShift 4.22 ${arch} RHCOS ${f.rhcosRelease}`,
    owner_id: '531415883065',
    public: true,
    virtualization_type: 'hvm',
    architecture: arch,
    state: 'available',
    image_type: 'machine',
    hypervisor: 'xen',
    root_device_name: '/dev/xvda',
    root_device_type: 'ebs',
    sriov: 'simple',
  });
  return [ami(f.amis.x86_64, 'x86_64'), ami(f.amis.aarch64, 'arm64')];
}

// ---------------------------------------------------------------------------------------------------
// Seeding.

export interface SeededEc2 {
  vpcId: string;
  /** Private subnet id by zone. */
  privateSubnetIds: Record<string, string>;
  publicSubnetIds: Record<string, string>;
  securityGroupIds: { node: string; lb: string };
  instanceProfileArn: string;
}

export interface SeededWorld {
  facts: OpenShiftAwsFacts;
  ec2?: SeededEc2;
}

const CRD_GROUPS_SEEDED = ['openshift', 'cco', 'hypershift', 'management'];

/** The CRD files of one group directory (`openshift`, `karpenter`, `hypershift`, `management`, `cco`). */
export function crdFiles(crdDir: string, group: string): string[] {
  const names = readdirSafe(join(crdDir, group));
  return names.filter((n) => n.endsWith('.yaml')).map((n) => join(crdDir, group, n));
}

function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir).sort();
  } catch {
    throw new Error(`CRD directory ${dir} is missing: run \`npm run setup\``);
  }
}

/**
 * Applies the world idempotently: the OpenShift, CredentialsRequest and HyperShift CRDs (not
 * Karpenter's: the operator installs those), the cluster objects (spec, then status), waits for the
 * simulated nodes to be Ready, and seeds the EC2 emulator when the cluster has one.
 */
export async function seedCluster(cluster: ClusterClient, f: OpenShiftAwsFacts = openShiftAws): Promise<SeededWorld> {
  const kc = cluster.kubeConfig();
  await installCrds(
    kc,
    CRD_GROUPS_SEEDED.flatMap((g) => crdFiles(cluster.info.crdDir, g)),
  );
  const caPem = readFileSync(cluster.info.caFile, 'utf8');
  const objects = openShiftAwsObjects(caPem, f);
  const seedOne = async (obj: KubeObj) => {
    // The whole object: a Node keeps its status on create (as a kubelet registers), so KWOK initialises
    // it from our capacity and addresses; elsewhere the status subresource drops it, hence the second write.
    await applyObject(kc, obj, { fieldManager: SEED_FIELD_MANAGER });
    if (obj.status !== undefined) await applyStatus(kc, obj, { fieldManager: SEED_FIELD_MANAGER });
  };
  // Namespaces first; nothing else depends on anything but its namespace.
  await Promise.all(objects.filter((o) => o.kind === 'Namespace').map(seedOne));
  await Promise.all(objects.filter((o) => o.kind !== 'Namespace').map(seedOne));
  const nodeNames = [...f.controlPlaneNodes, ...f.workerNodes].map((n) => n.name);
  await waitFor(
    `simulated nodes ${nodeNames.join(', ')} to be Ready`,
    async () => {
      const nodes = await listObjects<KubeObj & { status?: { conditions?: Array<{ type: string; status: string }> } }>(kc, 'v1', 'Node');
      const ready = new Set(
        nodes.filter((n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).map((n) => n.metadata.name),
      );
      return nodeNames.every((n) => ready.has(n));
    },
    { timeoutMs: 60_000, intervalMs: 500 },
  );
  const ec2 = cluster.info.ec2Endpoint ? await seedEc2(cluster.info.ec2Endpoint, f) : undefined;
  return { facts: f, ec2 };
}

const tags = (name: string, f: OpenShiftAwsFacts, extra: Tag[] = []): Tag[] => [
  { Key: 'Name', Value: name },
  { Key: f.clusterTagKey, Value: 'owned' },
  ...f.resourceTags.map((t) => ({ Key: t.key, Value: t.value })),
  ...extra,
];

/** Creates (or finds) the VPC, subnets, security groups and instance profile of the world in the emulator. */
export async function seedEc2(endpoint: string, f: OpenShiftAwsFacts = openShiftAws): Promise<SeededEc2> {
  const ec2 = new EC2Client(ec2ClientConfig(endpoint, f.region));
  try {
    const byName = [{ Name: 'tag:Name', Values: [f.vpc.name] }];
    let vpcId = (await ec2.send(new DescribeVpcsCommand({ Filters: byName }))).Vpcs?.[0]?.VpcId;
    if (!vpcId) {
      const res = await ec2.send(
        new CreateVpcCommand({ CidrBlock: f.vpc.cidr, TagSpecifications: [{ ResourceType: 'vpc', Tags: tags(f.vpc.name, f) }] }),
      );
      vpcId = res.Vpc!.VpcId!;
    }
    const subnet = async (s: { zone: string; name: string; cidr: string }, role: Tag) => {
      const found = (
        await ec2.send(
          new DescribeSubnetsCommand({
            Filters: [
              { Name: 'tag:Name', Values: [s.name] },
              { Name: 'vpc-id', Values: [vpcId!] },
            ],
          }),
        )
      ).Subnets?.[0];
      if (found?.SubnetId) return found.SubnetId;
      const res = await ec2.send(
        new CreateSubnetCommand({
          VpcId: vpcId,
          CidrBlock: s.cidr,
          AvailabilityZone: s.zone,
          TagSpecifications: [{ ResourceType: 'subnet', Tags: tags(s.name, f, [role]) }],
        }),
      );
      return res.Subnet!.SubnetId!;
    };
    const privateSubnetIds: Record<string, string> = {};
    for (const s of f.privateSubnets) privateSubnetIds[s.zone] = await subnet(s, { Key: 'kubernetes.io/role/internal-elb', Value: '1' });
    const publicSubnetIds: Record<string, string> = {};
    for (const s of f.publicSubnets) publicSubnetIds[s.zone] = await subnet(s, { Key: 'kubernetes.io/role/elb', Value: '1' });
    const group = async (name: string, description: string) => {
      const found = (
        await ec2.send(
          new DescribeSecurityGroupsCommand({
            Filters: [
              { Name: 'group-name', Values: [name] },
              { Name: 'vpc-id', Values: [vpcId!] },
            ],
          }),
        )
      ).SecurityGroups?.[0];
      if (found?.GroupId) return found.GroupId;
      const res = await ec2.send(
        new CreateSecurityGroupCommand({
          GroupName: name,
          Description: description,
          VpcId: vpcId,
          TagSpecifications: [{ ResourceType: 'security-group', Tags: tags(name, f) }],
        }),
      );
      return res.GroupId!;
    };
    const node = await group(f.securityGroups.node, 'Cluster node group');
    const lb = await group(f.securityGroups.lb, 'Cluster load balancer group');
    await ec2
      .send(
        new AuthorizeSecurityGroupIngressCommand({
          GroupId: node,
          IpPermissions: [{ IpProtocol: 'tcp', FromPort: 10250, ToPort: 10250, UserIdGroupPairs: [{ GroupId: node }] }],
        }),
      )
      .catch((e: Error) => {
        if (e.name !== 'InvalidPermission.Duplicate') throw e;
      });
    const instanceProfileArn = await seedInstanceProfile(endpoint, f);
    return { vpcId, privateSubnetIds, publicSubnetIds, securityGroupIds: { node, lb }, instanceProfileArn };
  } finally {
    ec2.destroy();
  }
}

async function seedInstanceProfile(endpoint: string, f: OpenShiftAwsFacts): Promise<string> {
  const arn = (xml: string) => /<Arn>([^<]+)<\/Arn>/.exec(xml)?.[1] ?? '';
  try {
    return arn(await iamCall(endpoint, 'GetInstanceProfile', { InstanceProfileName: f.instanceProfile }));
  } catch (e) {
    if ((e as { code?: string }).code !== 'NoSuchEntity') throw e;
  }
  const assume = JSON.stringify({
    Version: '2012-10-17',
    Statement: [{ Effect: 'Allow', Principal: { Service: 'ec2.amazonaws.com' }, Action: 'sts:AssumeRole' }],
  });
  await iamCall(endpoint, 'CreateRole', { RoleName: f.workerRole, AssumeRolePolicyDocument: assume, Path: '/' });
  const created = await iamCall(endpoint, 'CreateInstanceProfile', { InstanceProfileName: f.instanceProfile, Path: '/' });
  await iamCall(endpoint, 'AddRoleToInstanceProfile', { InstanceProfileName: f.instanceProfile, RoleName: f.workerRole });
  return arn(created);
}

/** `startCluster` with the world's AMI catalogue, then `seedCluster`. */
export interface OpenShiftAwsClusterOptions extends StartClusterOptions {
  /**
   * What renders MachineConfigPools and serves their configs: the stand-in (default: pools rendered at once,
   * no server) or the real machine-config-controller and machine-config-server (`mco.ts`).
   */
  machineConfig?: 'stand-in' | 'real';
}

export async function startOpenShiftAwsCluster(
  opts: OpenShiftAwsClusterOptions = {},
  f: OpenShiftAwsFacts = openShiftAws,
): Promise<{ cluster: ClusterHandle; world: SeededWorld; mco?: MachineConfigOperator }> {
  const { machineConfig = 'stand-in', ...clusterOpts } = opts;
  const cluster = await startCluster({ region: f.region, amis: rhcosAmis(f), ...clusterOpts });
  try {
    const t = Date.now();
    const world = await seedCluster(cluster, f);
    (cluster.timings as Record<string, number>).seed = (Date.now() - t) / 1000;
    const log = opts.log ? (l: string) => opts.log!(`mco: ${l}`) : undefined;
    let stopMco: () => Promise<void> | void;
    let mco: MachineConfigOperator | undefined;
    if (machineConfig === 'real') {
      const t1 = Date.now();
      mco = await startMachineConfigOperator(cluster, { baseDir: join(cluster.info.baseDir, 'mco'), facts: f, log });
      (cluster.timings as Record<string, number>).mco = (Date.now() - t1) / 1000;
      stopMco = mco.stop;
    } else {
      // The MCO's render step (the operator points a NodeClass only at a rendered pool).
      stopMco = startMachineConfigRenderer(cluster, { log });
    }
    const stop = cluster.stop.bind(cluster);
    return {
      cluster: Object.assign(cluster, {
        stop: async () => {
          await stopMco();
          await stop();
        },
      }),
      world,
      ...(mco ? { mco } : {}),
    };
  } catch (e) {
    await cluster.stop();
    throw e;
  }
}
