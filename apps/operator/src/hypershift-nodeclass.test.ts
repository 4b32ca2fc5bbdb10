import { describe, expect, it } from 'vitest';
import { Types, type KubeObject } from '@karpenter-operator/core';
import { MemoryClusterStore, RecordingEvents } from '@karpenter-operator/core/testing';
import {
  EC2NODECLASS_CRD,
  OPENSHIFT_NODECLASS_CRD,
  OpenshiftEC2NodeClassType,
  OpenshiftNodeClassReconciler,
} from '@karpenter-operator/topology-hypershift/sidecar';
import { aHostedControlPlane, anIgnitionSecret, HCP_NAME, HCP_NAMESPACE, INFRA_ID } from '@karpenter-operator/topology-hypershift/testing';
import { providerFor } from './providers.js';

const established = (name: string): KubeObject => ({
  ...Types.CustomResourceDefinition,
  metadata: { name },
  status: { conditions: [{ type: 'Established', status: 'True' }] },
});

// As hosted-controllers.ts wires it: OpenshiftEC2NodeClasses and their ignition Secrets translated by
// topology-hypershift, rendered by the AWS provider, the one renderer the standalone default NodeClass uses too.
describe('HyperShift NodeClasses through the AWS provider', () => {
  it('carry the OpenShift kubelet reservations and drop reserved tags, like the standalone NodeClass', async () => {
    const cloud = providerFor('AWS', { crdDir: '' });
    const tags = [
      { key: 'red-hat-managed', value: 'true' },
      { key: `kubernetes.io/cluster/${INFRA_ID}`, value: 'owned' },
    ];
    const hcp = aHostedControlPlane({ spec: { platform: { aws: { resourceTags: tags } } } });
    const management = new MemoryClusterStore([hcp, anIgnitionSecret({ userData: '{"ignition":{"version":"3.4.0"}}', ami: 'ami-0aaa' })]);
    const guest = new MemoryClusterStore([established(EC2NODECLASS_CRD), established(OPENSHIFT_NODECLASS_CRD)]);
    const r = new OpenshiftNodeClassReconciler({
      management,
      guest,
      namespace: HCP_NAMESPACE,
      hcpName: HCP_NAME,
      events: new RecordingEvents(),
      cloud,
      crd: established(OPENSHIFT_NODECLASS_CRD),
      now: () => '2026-01-01T00:00:00Z',
    });
    await r.reconcile('*'); // OpenshiftEC2NodeClass default
    await r.reconcile('*'); // ... and its EC2NodeClass
    expect(await guest.get({ ...OpenshiftEC2NodeClassType, name: 'default' })).toBeDefined();
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
      instanceProfile: 'demo-x7k2p-worker',
      subnetSelectorTerms: [{ tags: { 'kubernetes.io/role/internal-elb': '1', [`kubernetes.io/cluster/${INFRA_ID}`]: '*' } }],
      securityGroupSelectorTerms: [{ tags: { 'karpenter.sh/discovery': INFRA_ID } }],
    });
    expect(spec.tags).toEqual({ 'red-hat-managed': 'true' });
  });
});
