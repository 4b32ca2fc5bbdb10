import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { coversRules, silentLogger, TopologyId, type Topology } from '@karpenter-operator/core';
import { FakeClock, MemoryClusterStore, RecordingEvents, RecordingMetrics } from '@karpenter-operator/core/testing';
import { HCP_KARPENTER_FINALIZER, HostedControlPlaneType, soleHostedControlPlaneName } from '@karpenter-operator/topology-hypershift';
import { aHostedControlPlane } from '@karpenter-operator/topology-hypershift/testing';
import { parseConfig, UNKNOWN_RELEASE_VERSION, type OperatorConfig } from '../../src/config.js';
import { buildContainer } from '../../src/container.js';
import { operatorManagementRules } from '../../src/manifests/hypershift-rbac.js';
import { containerStart, hypershiftObjects, operatorContainer, secretFileAt } from '../support/hypershift-deployment.js';

/**
 * HyperShift's contract for starting this operator, from its rendered Deployment and Role
 * (test/fixtures/hypershift/karpenter-operator.yaml): the operator accepts exactly what HyperShift passes and
 * derives the right facts from it; what HyperShift's Role lacks for it is named here and in the README.
 */
const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');
const objects = hypershiftObjects();
const container = operatorContainer(objects);
const pod = { namespace: objects.deployment.metadata.namespace, name: 'karpenter-operator-6c9f8d7b5-x2kqz' };
const start = containerStart(container, pod);

function parsed(): OperatorConfig {
  const r = parseConfig(start.argv.slice(1), start.env, { crdDir: '/crds' });
  if (!r.ok) throw new Error(`HyperShift's Deployment is refused: ${r.errors.join('; ')}`);
  return r.config;
}

describe("HyperShift's karpenter-operator Deployment", () => {
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

  it("HyperShift's Role, bound to the Deployment's ServiceAccount, holds what the operator needs on the management cluster except Events", () => {
    const { role, roleBinding, deployment } = objects;
    expect(roleBinding.roleRef.name).toBe(role.metadata.name);
    expect(roleBinding.subjects).toContainEqual({ kind: 'ServiceAccount', name: deployment.spec.template.spec.serviceAccountName });
    const { missing } = coversRules(role.rules, operatorManagementRules({ leaderElect: parsed().leaderElect }));
    // HyperShift grants no Events: the operator's Events on the HCP and the operand are dropped (403) until it
    // does (README, "What HyperShift must change").
    expect(missing).toEqual([
      { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create'] },
      { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['patch'] },
    ]);
  });
});
