import { describe, expect, it } from 'vitest';
import { silentLogger, TopologyId, type Reconciler, type Topology } from '@karpenter-operator/core';
import { FakeClock, MemoryClusterStore, RecordingEvents, RecordingMetrics } from '@karpenter-operator/core/testing';
import { parseConfig } from './config.js';
import { buildContainer, ReconcilersId } from './container.js';
import { loadOpenshiftNodeClassCrd } from './hosted-controllers.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AUTONODE_STATUS_CONTROLLER,
  HCP_FINALIZER_CONTROLLER,
  NODECLASS_POLICY_CONTROLLER,
  OPENSHIFT_NODECLASS_CONTROLLER,
  OPENSHIFT_NODECLASS_CRD,
} from '@karpenter-operator/topology-hypershift/sidecar';

const env = { RELEASE_VERSION: '4.22.0', KARPENTER_IMAGE_AWS: 'quay.io/k:1' };
const hostedEnv = {
  ...env,
  MANAGEMENT_CLUSTER: 'true',
  CLUSTER_NAME: 'demo',
  CLUSTER_ENDPOINT: 'https://api.demo:6443',
  PLATFORM: 'AWS',
  REGION: 'us-east-1',
  HCP_NAME: 'demo',
};

const crd = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: OPENSHIFT_NODECLASS_CRD } };
const hostedControllers = {
  guestCalls: { probeGuest: async () => {}, selfSubjectReview: async () => ({ status: { userInfo: { username: 'u' } } }) },
  openshiftNodeClassCrd: crd,
};

function build(argv: string[], e: Record<string, string>, withGuest: boolean) {
  const parsed = parseConfig(argv, e, { crdDir: '/crds' });
  if (!parsed.ok) throw new Error(parsed.errors.join('; '));
  const control = new MemoryClusterStore();
  const guest = new MemoryClusterStore();
  const c = buildContainer({
    config: parsed.config,
    platform: 'AWS',
    store: control,
    ...(withGuest ? { guestStore: guest, hostedControllers } : {}),
    events: new RecordingEvents(),
    logger: silentLogger,
    metrics: new RecordingMetrics(),
    clock: new FakeClock(),
  });
  return { c, control, guest };
}

describe('buildContainer', () => {
  it('standalone: one store, every use-case including the node-lifecycle three', () => {
    const { c, control } = build(['--namespace=openshift-karpenter'], env, false);
    const topology = c.get<Topology>(TopologyId);
    expect(topology.name).toBe('standalone');
    expect(topology.controlStore).toBe(control);
    expect(topology.workloadStore).toBe(control);
    const names = c.get<Reconciler[]>(ReconcilersId).map((r) => r.name);
    expect(names).toEqual(
      expect.arrayContaining(['ec2nodeclass.default', 'machineconfigpool.node-config', 'certificatesigningrequest.node-identity']),
    );
  });

  it('management-cluster mode: the HyperShift topology over both stores; no MachineConfigPools and no default NodeClass (the hosted controllers write it)', () => {
    const { c, control, guest } = build(['--namespace=clusters-demo', '--guest-kubeconfig=/g/kubeconfig'], hostedEnv, true);
    const topology = c.get<Topology>(TopologyId);
    expect(topology.name).toBe('hypershift');
    expect(topology.controlStore).toBe(control);
    expect(topology.workloadStore).toBe(guest);
    expect(topology.statusObject).toMatchObject({ kind: 'HostedControlPlane', namespace: 'clusters-demo', name: 'demo' });
    const names = c.get<Reconciler[]>(ReconcilersId).map((r) => r.name);
    expect(names).toContain('certificatesigningrequest.node-identity');
    expect(names).not.toContain('ec2nodeclass.default');
    expect(names).not.toContain('machineconfigpool.node-config');
  });

  it('management-cluster mode runs the hosted controllers itself, once each: HyperShift deploys no adapter container', () => {
    const { c } = build(['--namespace=clusters-demo', '--guest-kubeconfig=/g/kubeconfig'], hostedEnv, true);
    const names = c.get<Reconciler[]>(ReconcilersId).map((r) => r.name);
    const hosted = [AUTONODE_STATUS_CONTROLLER, HCP_FINALIZER_CONTROLLER, OPENSHIFT_NODECLASS_CONTROLLER, NODECLASS_POLICY_CONTROLLER];
    for (const n of hosted)
      expect(
        names.filter((x) => x === n),
        n,
      ).toHaveLength(1);
    // Standalone has none of them.
    const standalone = build(['--namespace=openshift-karpenter'], env, false)
      .c.get<Reconciler[]>(ReconcilersId)
      .map((r) => r.name);
    expect(standalone.filter((n) => hosted.includes(n))).toEqual([]);
  });

  it('management-cluster mode from an image without the OpenshiftEC2NodeClass CRD: the other hosted controllers, no translation', () => {
    const parsed = parseConfig(['--namespace=clusters-demo', '--guest-kubeconfig=/g/kubeconfig'], hostedEnv, { crdDir: '/crds' });
    if (!parsed.ok) throw new Error(parsed.errors.join('; '));
    const c = buildContainer({
      config: parsed.config,
      platform: 'AWS',
      store: new MemoryClusterStore(),
      guestStore: new MemoryClusterStore(),
      hostedControllers: { guestCalls: hostedControllers.guestCalls },
      events: new RecordingEvents(),
      logger: silentLogger,
      metrics: new RecordingMetrics(),
      clock: new FakeClock(),
    });
    const names = c.get<Reconciler[]>(ReconcilersId).map((r) => r.name);
    expect(names).toEqual(expect.arrayContaining([AUTONODE_STATUS_CONTROLLER, HCP_FINALIZER_CONTROLLER]));
    expect(names.filter((n) => [OPENSHIFT_NODECLASS_CONTROLLER, NODECLASS_POLICY_CONTROLLER].includes(n))).toEqual([]);
  });

  it('the OpenshiftEC2NodeClass CRD of an image without one is undefined, not a start-up crash', () => {
    expect(loadOpenshiftNodeClassCrd(join(tmpdir(), 'ko-no-such-crd-dir'))).toBeUndefined();
  });

  it('management-cluster mode without the guest calls and the CRD is a start-up error', () => {
    const parsed = parseConfig(['--namespace=clusters-demo', '--guest-kubeconfig=/g/kubeconfig'], hostedEnv, { crdDir: '/crds' });
    if (!parsed.ok) throw new Error(parsed.errors.join('; '));
    expect(() =>
      buildContainer({
        config: parsed.config,
        platform: 'AWS',
        store: new MemoryClusterStore(),
        guestStore: new MemoryClusterStore(),
        events: new RecordingEvents(),
        logger: silentLogger,
        metrics: new RecordingMetrics(),
        clock: new FakeClock(),
      }),
    ).toThrow(/guest calls/);
  });

  it('management-cluster mode: every watch on the management cluster is in the HCP namespace (HyperShift grants a Role there, nothing cluster-wide)', () => {
    const { c } = build(['--namespace=clusters-demo', '--guest-kubeconfig=/g/kubeconfig'], hostedEnv, true);
    const control = c
      .get<Reconciler[]>(ReconcilersId)
      .flatMap((r) =>
        r.watches.filter((w) => w.cluster === 'control').map((w) => ({ reconciler: r.name, kind: w.type.kind, namespace: w.namespace })),
      );
    expect(control.length).toBeGreaterThan(0);
    expect(control.filter((w) => w.namespace !== 'clusters-demo')).toEqual([]);
  });

  it('management-cluster mode without the guest store is a start-up error, not a half-wired operator', () => {
    expect(() => build(['--namespace=clusters-demo', '--guest-kubeconfig=/g/kubeconfig'], hostedEnv, false)).toThrow(/guest cluster store/);
  });
});
