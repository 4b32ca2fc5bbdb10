import { describe, expect, it } from 'vitest';
import { fieldRef, rewriteMountPaths } from './operand-runner.js';

const pod = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'karpenter-7d9f-abcde', namespace: 'openshift-karpenter', uid: 'u-1', labels: { app: 'karpenter' } },
  spec: { nodeName: 'ip-10-0-130-10.ec2.internal', serviceAccountName: 'karpenter', containers: [] },
};

describe('fieldRef', () => {
  it.each([
    { name: 'pod name', path: 'metadata.name', want: 'karpenter-7d9f-abcde' },
    { name: 'namespace', path: 'metadata.namespace', want: 'openshift-karpenter' },
    { name: 'uid', path: 'metadata.uid', want: 'u-1' },
    { name: 'node', path: 'spec.nodeName', want: 'ip-10-0-130-10.ec2.internal' },
    { name: 'service account', path: 'spec.serviceAccountName', want: 'karpenter' },
    { name: 'label', path: "metadata.labels['app']", want: 'karpenter' },
    { name: 'pod IP is loopback', path: 'status.podIP', want: '127.0.0.1' },
  ])('$name', ({ path, want }) => {
    expect(fieldRef(pod, path)).toBe(want);
  });

  it('an unsupported field fails naming it', () => {
    expect(() => fieldRef(pod, 'status.hostIPs')).toThrow(/status\.hostIPs/);
  });
});

describe('rewriteMountPaths', () => {
  const container = {
    volumeMounts: [
      { name: 'provider-creds', mountPath: '/etc/provider' },
      { name: 'kc', mountPath: '/etc/kc/', subPath: 'kubeconfig' },
    ],
  };
  const mounts = new Map([
    ['provider-creds', '/tmp/pod/volumes/provider-creds'],
    ['kc', '/tmp/pod/volumes/kc'],
  ]);
  it.each([
    { name: 'file under a mount', value: '/etc/provider/credentials', want: '/tmp/pod/volumes/provider-creds/credentials' },
    { name: 'the mount itself', value: '/etc/provider', want: '/tmp/pod/volumes/provider-creds' },
    { name: 'a sibling prefix is not a mount', value: '/etc/providers/x', want: '/etc/providers/x' },
    { name: 'subPath mount', value: '/etc/kc', want: '/tmp/pod/volumes/kc/kubeconfig' },
    { name: 'plain value', value: 'us-east-1', want: 'us-east-1' },
  ])('$name', ({ value, want }) => {
    expect(rewriteMountPaths(value, container, mounts)).toBe(want);
  });
});
