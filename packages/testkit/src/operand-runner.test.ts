import { describe, expect, it } from 'vitest';
import { availableParallelism, totalmem } from 'node:os';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lostLeaderElection } from './operand-runner.js';
import { fieldRef, resourceFieldRef, rewriteArg, rewriteFileContents, rewriteMountPaths } from './pod-spec.js';

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

describe("resourceFieldRef: a container's resources as the kubelet gives them", () => {
  const controller = { name: 'controller', resources: { requests: { cpu: '1500m', memory: '1Gi' }, limits: { memory: '2Gi' } } };
  const sidecar = { name: 'sidecar', resources: { requests: { cpu: '10m' } } };
  const withContainers = { ...pod, spec: { ...pod.spec, containers: [controller, sidecar] } };
  it.each([
    { name: 'CPU request in millicores', ref: { containerName: 'controller', resource: 'requests.cpu', divisor: '1m' }, want: '1500' },
    {
      name: 'CPU request in whole CPUs rounds up',
      ref: { containerName: 'controller', resource: 'requests.cpu', divisor: '1' },
      want: '2',
    },
    {
      name: 'memory limit in bytes',
      ref: { containerName: 'controller', resource: 'limits.memory', divisor: '1' },
      want: String(2 * 2 ** 30),
    },
    { name: 'divisor 0 means 1', ref: { containerName: 'controller', resource: 'limits.memory', divisor: '0' }, want: String(2 * 2 ** 30) },
    { name: 'memory limit in Mi', ref: { containerName: 'controller', resource: 'limits.memory', divisor: '1Mi' }, want: '2048' },
    { name: 'another container by name', ref: { containerName: 'sidecar', resource: 'requests.cpu', divisor: '1m' }, want: '10' },
    { name: 'an unset request is 0', ref: { containerName: 'sidecar', resource: 'requests.memory' }, want: '0' },
    {
      name: "an unset memory limit is the node's memory",
      ref: { containerName: 'sidecar', resource: 'limits.memory' },
      want: String(totalmem()),
    },
    {
      name: "an unset CPU limit is the node's CPUs",
      ref: { containerName: 'sidecar', resource: 'limits.cpu', divisor: '1m' },
      want: String(availableParallelism() * 1000),
    },
    { name: 'no container name: the container itself', ref: { resource: 'requests.cpu', divisor: '1m' }, want: '10' },
  ])('$name', ({ ref, want }) => {
    expect(resourceFieldRef(withContainers, sidecar, ref)).toBe(want);
  });

  it('a container the pod lacks fails naming it', () => {
    expect(() => resourceFieldRef(withContainers, sidecar, { containerName: 'nope', resource: 'requests.cpu' })).toThrow(/nope/);
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

describe('paths under mount paths in args and volume files point at the local copies', () => {
  const mounts = new Map([
    ['serviceaccount-token', '/tmp/pod/volumes/serviceaccount-token'],
    ['guest-kubeconfig', '/tmp/pod/volumes/guest-kubeconfig'],
  ]);
  const minter = {
    volumeMounts: [
      { name: 'guest-kubeconfig', mountPath: '/etc/karpenter/guest-kubeconfig' },
      { name: 'serviceaccount-token', mountPath: '/var/run/secrets/openshift/serviceaccount' },
    ],
  };

  it.each([
    {
      arg: '--token-file=/var/run/secrets/openshift/serviceaccount/token',
      want: '--token-file=/tmp/pod/volumes/serviceaccount-token/token',
    },
    { arg: '--kubeconfig=/etc/karpenter/guest-kubeconfig/kubeconfig', want: '--kubeconfig=/tmp/pod/volumes/guest-kubeconfig/kubeconfig' },
    { arg: '/var/run/secrets/openshift/serviceaccount/token', want: '/tmp/pod/volumes/serviceaccount-token/token' },
    { arg: '--token-audience=openshift', want: '--token-audience=openshift' },
    { arg: '--other=/etc/karpenter/guest-kubeconfig-other/x', want: '--other=/etc/karpenter/guest-kubeconfig-other/x' },
  ])('arg $arg', ({ arg, want }) => {
    expect(rewriteArg(arg, minter, mounts)).toBe(want);
  });

  it("an AWS profile's web_identity_token_file names the token volume's copy; binary files stay", () => {
    const dir = mkdtempSync(join(tmpdir(), 'runner-test-'));
    try {
      const profile =
        '[default]\n\trole_arn = arn:aws:iam::1:role/r\n\tweb_identity_token_file = /var/run/secrets/openshift/serviceaccount/token\n';
      writeFileSync(join(dir, 'credentials'), profile);
      const binary = Buffer.from([0, 1, ...Buffer.from('/var/run/secrets/openshift/serviceaccount/token')]);
      writeFileSync(join(dir, 'blob'), binary);
      rewriteFileContents(dir, minter.volumeMounts, mounts);
      expect(readFileSync(join(dir, 'credentials'), 'utf8')).toBe(
        profile.replace('/var/run/secrets/openshift/serviceaccount/token', '/tmp/pod/volumes/serviceaccount-token/token'),
      );
      expect(readFileSync(join(dir, 'blob'))).toEqual(binary);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a controller exit from a lost leader lease is told apart from a crash', () => {
  it("finds controller-runtime's log line and panic", () => {
    expect(
      lostLeaderElection(
        [
          '{"level":"INFO","time":"2026-12-04T10:00:00Z","message":"successfully acquired lease openshift-karpenter/karpenter-leader-election"}',
          'E1204 10:01:00.000000 1 leaderelection.go:441] Failed to renew lease openshift-karpenter/karpenter-leader-election: timed out',
          '{"level":"ERROR","time":"2026-12-04T10:01:00Z","message":"error received after stop sequence was engaged","error":"leader election lost"}',
          'panic: leader election lost',
        ].join('\n'),
      ),
    ).toBe(true);
  });

  it('a real crash (panic, auth error) or a run that only renewed its lease is not one', () => {
    expect(
      lostLeaderElection('{"level":"INFO","message":"successfully acquired lease openshift-karpenter/karpenter-leader-election"}'),
    ).toBe(false);
    expect(lostLeaderElection('panic: runtime error: invalid memory address or nil pointer dereference')).toBe(false);
    expect(
      lostLeaderElection(
        '{"level":"ERROR","message":"ec2 api connectivity check failed","error":"operation error EC2: DescribeInstanceTypes, https response error StatusCode: 403, AuthFailure"}',
      ),
    ).toBe(false);
    expect(lostLeaderElection('')).toBe(false);
  });
});
