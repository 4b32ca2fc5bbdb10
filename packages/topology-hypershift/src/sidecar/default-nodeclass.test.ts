import { Types, type KubeObject, type NodeClassSource } from '@karpenter-operator/core';
import { MemoryClusterStore, RecordingEvents } from '@karpenter-operator/core/testing';
import { describe, expect, it } from 'vitest';
import { HcpAnnotations } from '../hcp.js';
import { EC2NODECLASS_CRD, HcpDefaultNodeClassReconciler } from './default-nodeclass.js';

const NS = 'clusters-demo';
const hcp: KubeObject = {
  apiVersion: 'hypershift.openshift.io/v1beta1',
  kind: 'HostedControlPlane',
  metadata: { name: 'demo', namespace: NS, uid: 'u1', annotations: { [HcpAnnotations.defaultInstanceProfile]: 'demo-worker' } },
  spec: {
    infraID: 'demo-x',
    autoNode: {
      provisionerConfig: { name: 'Karpenter', karpenter: { platform: 'AWS', aws: { roleARN: 'arn:aws:iam::123456789012:role/k' } } },
    },
  },
};
const crd: KubeObject = { ...Types.CustomResourceDefinition, metadata: { name: EC2NODECLASS_CRD } };
const secret = (name: string, value: string | undefined, ami = 'ami-0abc'): KubeObject => ({
  ...Types.Secret,
  metadata: {
    name,
    namespace: NS,
    creationTimestamp: '2026-01-01T00:00:00Z',
    labels: { 'hypershift.openshift.io/managed-by-karpenter': 'true', 'hypershift.openshift.io/ami': ami },
    annotations: { 'hypershift.openshift.io/nodePool': `${NS}/default-karpenter` },
  },
  data: value === undefined ? {} : { value: Buffer.from(value).toString('base64') },
});
const EC2NodeClass = { apiVersion: 'karpenter.k8s.aws/v1', kind: 'EC2NodeClass' } as const;
// The provider's rendering is tested in provider-aws (and wired for real in apps/operator); here only that the
// source reaches it and the result is applied.
const cloud = {
  nodeClassType: EC2NodeClass,
  renderNodeClass: (s: NodeClassSource) => ({
    object: {
      ...EC2NodeClass,
      metadata: { name: 'default' },
      spec: { amiFamily: 'Custom', amiSelectorTerms: s.imageSelectorTerms, userData: s.userData, instanceProfile: s.instanceProfile },
    },
    protectedSpec: {},
  }),
};
const defaultRef = { ...EC2NodeClass, name: 'default' };

describe('HcpDefaultNodeClassReconciler', () => {
  it('waits for the CRD, then applies default from the ignition Secret, and writes nothing on a second reconcile', async () => {
    const management = new MemoryClusterStore([hcp, secret('ign-1', '{"ignition":{}}')]);
    const guest = new MemoryClusterStore();
    const events = new RecordingEvents();
    const r = new HcpDefaultNodeClassReconciler({ management, guest, namespace: NS, hcpName: 'demo', events, cloud });
    expect((await r.reconcile()).requeueAfterMs).toBeGreaterThan(0);
    expect(guest.writes).toEqual([]);
    guest.seed(crd);
    await r.reconcile();
    const nc = await guest.get(defaultRef);
    expect(nc?.spec).toMatchObject({
      amiFamily: 'Custom',
      userData: '{"ignition":{}}',
      amiSelectorTerms: [{ id: 'ami-0abc' }],
      instanceProfile: 'demo-worker',
    });
    guest.clearWrites();
    await r.reconcile();
    expect(guest.writes).toEqual([]);
    expect(r.problem()).toBeUndefined();
  });

  it('an invalid Secret is a Warning naming the Secret and field, never a throw; a fix recovers', async () => {
    const management = new MemoryClusterStore([hcp, secret('ign-bad', undefined)]);
    const guest = new MemoryClusterStore([crd]);
    const events = new RecordingEvents();
    const r = new HcpDefaultNodeClassReconciler({ management, guest, namespace: NS, hcpName: 'demo', events, cloud });
    await expect(r.reconcile()).resolves.toEqual({});
    expect(r.problem()).toMatch(/Secret clusters-demo\/ign-bad/);
    expect(r.problem()).toMatch(/data\.value/);
    expect(events.events.filter((e) => e.type === 'Warning')).toHaveLength(1);
    await r.reconcile();
    expect(events.events.filter((e) => e.type === 'Warning')).toHaveLength(1);
    expect(guest.writes).toEqual([]);
    management.seed(secret('ign-bad', 'fixed'));
    await r.reconcile();
    expect(r.problem()).toBeUndefined();
    expect((await guest.get(defaultRef))?.spec).toMatchObject({ userData: 'fixed' });
  });
});
