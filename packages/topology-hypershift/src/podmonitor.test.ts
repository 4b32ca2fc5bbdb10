import { describe, expect, it } from 'vitest';
import { operandPodLabels, type KarpenterRequest, type KubeObject } from '@karpenter-operator/core';
import { FakeClock, MemoryClusterStore, RecordingEvents } from '@karpenter-operator/core/testing';
import { HCP_KARPENTER_FINALIZER, HostedControlPlaneType } from './hcp.js';
import { HyperShiftTopology } from './hypershift-topology.js';
import { OperandPodMonitorReconciler, PodMonitorType, renderOperandPodMonitor } from './podmonitor.js';
import { aHostedControlPlane, HCP_NAME, HCP_NAMESPACE, INFRA_ID } from './testing/builders.js';

const CLUSTER_ID = '5f8c2a3e-1b7d-4c9e-9a61-0d2f3b4c5e6f';
const REF = { ...PodMonitorType, namespace: HCP_NAMESPACE, name: 'karpenter' };
const request: KarpenterRequest = {
  owner: { ...HostedControlPlaneType, namespace: HCP_NAMESPACE, name: HCP_NAME, uid: 'hcp-uid-1' },
  generation: 1,
  logLevel: 'info',
  deleting: false,
  finalizers: [],
};

describe('renderOperandPodMonitor', () => {
  it("is HyperShift's PodMonitor karpenter: the operand's pods of the HCP namespace, port metrics over http, _id on targets and samples", () => {
    const pm = renderOperandPodMonitor({ namespace: HCP_NAMESPACE, clusterID: CLUSTER_ID, request });
    const id = { targetLabel: '_id', action: 'replace', replacement: CLUSTER_ID };
    expect(pm).toMatchObject({
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'PodMonitor',
      metadata: { name: 'karpenter', namespace: HCP_NAMESPACE },
    });
    expect(pm.spec).toEqual({
      namespaceSelector: { matchNames: [HCP_NAMESPACE] },
      selector: { matchLabels: { app: 'karpenter' } },
      podMetricsEndpoints: [
        { port: 'metrics', path: '/metrics', interval: '30s', scheme: 'http', relabelings: [id], metricRelabelings: [id] },
      ],
    });
    // It selects exactly the operand's pods (the labels the operand Deployment's template carries).
    expect((pm.spec as { selector: { matchLabels: unknown } }).selector.matchLabels).toEqual(operandPodLabels());
    expect(pm.metadata.ownerReferences).toEqual([
      { ...HostedControlPlaneType, name: HCP_NAME, uid: 'hcp-uid-1', controller: true, blockOwnerDeletion: true },
    ]);
  });

  it('an HCP without spec.clusterID gets the empty replacement HyperShift writes then', () => {
    const pm = renderOperandPodMonitor({ namespace: HCP_NAMESPACE, clusterID: undefined, request });
    const ep = (pm.spec as { podMetricsEndpoints: Array<{ relabelings: Array<{ replacement: string }> }> }).podMetricsEndpoints[0]!;
    expect(ep.relabelings[0]!.replacement).toBe('');
  });
});

function setup(hcp: KubeObject, served = true) {
  const management = new MemoryClusterStore([hcp]);
  const topology = new HyperShiftTopology({
    management,
    guest: new MemoryClusterStore(),
    namespace: HCP_NAMESPACE,
    hcpName: HCP_NAME,
    clock: new FakeClock(),
    env: { clusterName: INFRA_ID, clusterEndpoint: 'https://api.demo.example.com:443', platform: 'AWS' },
  });
  const events = new RecordingEvents();
  const reconciler = new OperandPodMonitorReconciler({ topology, events, served });
  return { management, events, reconciler };
}

const withClusterID = () => aHostedControlPlane({ spec: { clusterID: CLUSTER_ID } });
const endpoints = (o: KubeObject | undefined) => (o?.spec as { podMetricsEndpoints: Array<Record<string, unknown>> }).podMetricsEndpoints;

describe('OperandPodMonitorReconciler', () => {
  it('creates PodMonitor karpenter while AutoNode is on, then writes nothing', async () => {
    const { management, reconciler } = setup(withClusterID());
    await reconciler.reconcile();
    const pm = await management.get(REF);
    expect(endpoints(pm)[0]!['relabelings']).toEqual([{ targetLabel: '_id', action: 'replace', replacement: CLUSTER_ID }]);
    management.clearWrites();
    await reconciler.reconcile();
    expect(management.writes).toEqual([]);
    expect(reconciler.watches).toContainEqual({
      type: PodMonitorType,
      cluster: 'control',
      namespace: HCP_NAMESPACE,
      fieldSelector: 'metadata.name=karpenter',
    });
  });

  it.each([
    { name: 'deleted', drift: async (s: MemoryClusterStore) => s.remove(REF) },
    {
      name: 'another port and a foreign selector label',
      drift: async (s: MemoryClusterStore) => {
        const o = (await s.get(REF))!;
        s.seed({
          ...o,
          spec: {
            ...(o.spec as object),
            selector: { matchLabels: { app: 'karpenter', extra: 'x' } },
            podMetricsEndpoints: [{ port: 'http', path: '/metrics' }],
          },
        });
      },
    },
  ])('repairs drift: $name', async ({ drift }) => {
    const { management, reconciler } = setup(withClusterID());
    await reconciler.reconcile();
    const want = structuredClone((await management.get(REF))!.spec);
    await drift(management);
    await reconciler.reconcile();
    expect((await management.get(REF))?.spec).toEqual(want);
  });

  it('leaves it alone during a teardown and deletes it once AutoNode is off and the finalizer gone', async () => {
    const on = setup(aHostedControlPlane({ metadata: { finalizers: [HCP_KARPENTER_FINALIZER] } }));
    await on.reconciler.reconcile();
    on.management.seed(aHostedControlPlane({ spec: { autoNode: null }, metadata: { finalizers: [HCP_KARPENTER_FINALIZER] } }));
    on.management.clearWrites();
    await on.reconciler.reconcile();
    expect(on.management.writes).toEqual([]);
    expect(await on.management.get(REF)).toBeDefined();
    on.management.seed(aHostedControlPlane({ spec: { autoNode: null }, metadata: { finalizers: [] } }));
    await on.reconciler.reconcile();
    expect(await on.management.get(REF)).toBeUndefined();
  });

  it('when PodMonitor is not served: one Warning event on the HCP naming the kind, no write, no watch of it', async () => {
    const { management, events, reconciler } = setup(withClusterID(), false);
    await reconciler.reconcile();
    await reconciler.reconcile();
    expect(events.events.map((e) => [e.type, e.reason])).toEqual([['Warning', 'PodMonitorNotServed']]);
    expect(events.events[0]!.message).toContain('monitoring.coreos.com/v1');
    expect(events.events[0]!.regarding).toMatchObject({ kind: 'HostedControlPlane', name: HCP_NAME });
    expect(management.writes).toEqual([]);
    expect(reconciler.watches.map((w) => w.type.kind)).toEqual(['HostedControlPlane']);
  });

  it('a malformed HCP is left to the status use-case: no write, no throw', async () => {
    const { management, reconciler } = setup(aHostedControlPlane({ spec: { clusterID: 7 } }));
    await expect(reconciler.reconcile()).resolves.toEqual({});
    expect(management.writes).toEqual([]);
  });
});
