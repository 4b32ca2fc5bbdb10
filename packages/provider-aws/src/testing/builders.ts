/**
 * Test builders for OpenShift-on-AWS cluster objects (house rule 11). Test-only: not exported from the
 * package index.
 */
import { mergePatch } from '@karpenter-operator/core/testing';
import type { ClusterFacts, DiscoveryInput, KubeObject } from '@karpenter-operator/core';

export const INFRA_ID = 'mycluster-x7k2p';
export const REGION = 'us-east-1';

export const pointerUserData = (pool = 'worker'): string =>
  JSON.stringify({
    ignition: {
      config: { merge: [{ source: `https://api-int.mycluster.example.com:22623/config/${pool}` }] },
      security: { tls: { certificateAuthorities: [{ source: 'data:text/plain;charset=utf-8;base64,LS0tLS1CRUdJTi0tLS0t' }] } },
      version: '3.2.0',
    },
  });

export function aFacts(overrides: Partial<ClusterFacts> = {}): ClusterFacts {
  return {
    platform: 'AWS',
    region: REGION,
    infrastructureName: INFRA_ID,
    apiServerInternalURL: 'https://api-int.mycluster.example.com:6443',
    controlPlaneTopology: 'HighlyAvailable',
    resourceTags: [],
    ...overrides,
  };
}

/** The providerSpec an OpenShift installer writes for a worker MachineSet in `zone`. */
export function aProviderSpec(zone = 'us-east-1a'): Record<string, unknown> {
  return {
    apiVersion: 'machine.openshift.io/v1beta1',
    kind: 'AWSMachineProviderConfig',
    ami: { id: 'ami-0amd64aaaa' },
    blockDevices: [{ ebs: { encrypted: true, iops: 0, kmsKey: { arn: '' }, volumeSize: 120, volumeType: 'gp3' } }],
    credentialsSecret: { name: 'aws-cloud-credentials' },
    deviceIndex: 0,
    iamInstanceProfile: { id: `${INFRA_ID}-worker-profile` },
    instanceType: 'm6i.xlarge',
    metadata: { creationTimestamp: null },
    metadataServiceOptions: {},
    placement: { availabilityZone: zone, region: REGION },
    securityGroups: [
      { filters: [{ name: 'tag:Name', values: [`${INFRA_ID}-node`] }] },
      { filters: [{ name: 'tag:Name', values: [`${INFRA_ID}-lb`] }] },
    ],
    subnet: { filters: [{ name: 'tag:Name', values: [`${INFRA_ID}-subnet-private-${zone}`] }] },
    tags: [{ name: `kubernetes.io/cluster/${INFRA_ID}`, value: 'owned' }],
    userDataSecret: { name: 'worker-user-data' },
  };
}

export interface MachineSetOverrides {
  name?: string;
  zone?: string;
  role?: string;
  nodeLabels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** Merge-patched into the providerSpec (`null` deletes a field; lists replace). */
  providerSpec?: Record<string, unknown>;
  /** Replaces the providerSpec value entirely (malformed input). */
  rawProviderSpec?: unknown;
}

export function aMachineSet(o: MachineSetOverrides = {}): KubeObject {
  const zone = o.zone ?? 'us-east-1a';
  const name = o.name ?? `${INFRA_ID}-worker-${zone}`;
  const role = o.role ?? 'worker';
  const value = 'rawProviderSpec' in o ? o.rawProviderSpec : mergePatch(aProviderSpec(zone), o.providerSpec ?? {});
  return {
    apiVersion: 'machine.openshift.io/v1beta1',
    kind: 'MachineSet',
    metadata: {
      name,
      namespace: 'openshift-machine-api',
      labels: { 'machine.openshift.io/cluster-api-cluster': INFRA_ID },
      ...(o.annotations ? { annotations: o.annotations } : {}),
    },
    spec: {
      replicas: 1,
      selector: { matchLabels: { 'machine.openshift.io/cluster-api-machineset': name } },
      template: {
        metadata: {
          labels: {
            'machine.openshift.io/cluster-api-cluster': INFRA_ID,
            'machine.openshift.io/cluster-api-machine-role': role,
            'machine.openshift.io/cluster-api-machine-type': role,
            'machine.openshift.io/cluster-api-machineset': name,
          },
        },
        spec: {
          metadata: o.nodeLabels ? { labels: o.nodeLabels } : {},
          providerSpec: { value },
        },
      },
    },
  };
}

export function aUserDataSecret(o: { name?: string; userData?: string; as?: 'data' | 'stringData' } = {}): KubeObject {
  const userData = o.userData ?? pointerUserData();
  const body =
    o.as === 'stringData'
      ? { stringData: { userData } }
      : { data: { userData: Buffer.from(userData).toString('base64'), disableTemplating: 'dHJ1ZQ==' } };
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: o.name ?? 'worker-user-data', namespace: 'openshift-machine-api' },
    type: 'Opaque',
    ...body,
  };
}

/** ConfigMap `coreos-bootimages` with `images[arch][region] = ami`. */
export function aBootImagesConfigMap(images: Record<string, Record<string, string>>): KubeObject {
  const architectures = Object.fromEntries(
    Object.entries(images).map(([arch, regions]) => [
      arch,
      {
        artifacts: {},
        images: {
          aws: { regions: Object.fromEntries(Object.entries(regions).map(([r, image]) => [r, { release: '9.6.20250101-0', image }])) },
        },
      },
    ]),
  );
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'coreos-bootimages', namespace: 'openshift-machine-config-operator' },
    data: { releaseVersion: '4.21.0', stream: JSON.stringify({ stream: 'rhcos-9.6', architectures }) },
  };
}

export function aDiscoveryInput(o: Partial<DiscoveryInput> = {}): DiscoveryInput {
  return {
    facts: aFacts(),
    machineSets: [aMachineSet()],
    secrets: [aUserDataSecret()],
    maxPods: 250,
    ...o,
  };
}
