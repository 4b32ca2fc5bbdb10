import { describe, expect, it } from 'vitest';
import { Types, type KubeObject } from '@karpenter-operator/core';
import { MemoryClusterStore, RecordingEvents } from '@karpenter-operator/core/testing';
import { EC2NODECLASS_CRD, HcpDefaultNodeClassReconciler } from '@karpenter-operator/topology-hypershift/sidecar';
import { aHostedControlPlane, anIgnitionSecret, HCP_NAME, HCP_NAMESPACE, INFRA_ID } from '@karpenter-operator/topology-hypershift/testing';
import { providerFor } from './providers.js';

// The sidecar as adapter-main wires it: the HCP's ignition Secrets decoded by topology-hypershift, rendered by
// the AWS provider, the one renderer the standalone default NodeClass uses too.
describe('HyperShift default NodeClass through the AWS provider', () => {
  it('carries the OpenShift kubelet reservations and drops reserved tags, like the standalone NodeClass', async () => {
    const cloud = providerFor('AWS', { crdDir: '' });
    const tags = [
      { key: 'red-hat-managed', value: 'true' },
      { key: `kubernetes.io/cluster/${INFRA_ID}`, value: 'owned' },
    ];
    const hcp = aHostedControlPlane({ spec: { platform: { aws: { resourceTags: tags } } } });
    const management = new MemoryClusterStore([hcp, anIgnitionSecret({ userData: '{"ignition":{"version":"3.4.0"}}', ami: 'ami-0aaa' })]);
    const guest = new MemoryClusterStore([{ ...Types.CustomResourceDefinition, metadata: { name: EC2NODECLASS_CRD } } as KubeObject]);
    const r = new HcpDefaultNodeClassReconciler({
      management,
      guest,
      namespace: HCP_NAMESPACE,
      hcpName: HCP_NAME,
      events: new RecordingEvents(),
      cloud,
    });
    await r.reconcile();
    expect(r.problem()).toBeUndefined();
    const nc = await guest.get({ ...cloud.nodeClassType, name: 'default' });
    const spec = nc?.spec as Record<string, unknown>;
    expect(spec.kubelet).toEqual({
      systemReserved: { cpu: '500m', memory: '1Gi', 'ephemeral-storage': '1Gi' },
      kubeReserved: { cpu: '0', memory: '0', 'ephemeral-storage': '0' },
    });
    expect(spec).toMatchObject({
      amiFamily: 'Custom',
      amiSelectorTerms: [{ id: 'ami-0aaa' }],
      userData: '{"ignition":{"version":"3.4.0"}}',
    });
    expect(spec.tags).toEqual({ 'red-hat-managed': 'true' });
  });
});
