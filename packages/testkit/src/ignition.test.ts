import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { dataUrlBytes, ignitionFile, pointerOf, servedKubelet, type IgnitionConfig } from './ignition.js';
import { kubeletMaySet } from './kubelet-simulator.js';

const b64 = (s: string | Buffer) => `data:text/plain;charset=utf-8;base64,${Buffer.from(s).toString('base64')}`;
const file = (path: string, text: string) => ({ path, contents: { source: b64(text) } });

/** The shape of what the Machine Config Server serves for a worker-derived pool (only the parts read here). */
const served = (kubeletConf: string, extraFiles: unknown[] = []): IgnitionConfig => ({
  ignition: { version: '3.4.0' },
  storage: {
    files: [
      file('/etc/kubernetes/kubelet.conf', 'kind: KubeletConfiguration\nmaxPods: 250\n'),
      file('/etc/kubernetes/kubelet.conf', kubeletConf),
      file(
        '/etc/machine-config-daemon/node-annotations.json',
        JSON.stringify({ 'machineconfiguration.openshift.io/currentConfig': 'rendered-karpenter-default-abc' }),
      ),
      file(
        '/etc/kubernetes/kubeconfig',
        'apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: Q0E=\n    server: https://api-int.demo.example.com:6443\n  name: local\nusers:\n- name: kubelet\n  user:\n    token: bootstrap-token\n',
      ),
      file('/etc/mcs-machine-config-content.json', JSON.stringify({ metadata: { name: 'rendered-karpenter-default-abc' } })),
      ...(extraFiles as never[]),
    ],
  },
  systemd: {
    units: [
      { name: 'crio.service', contents: '[Service]\n' },
      {
        name: 'kubelet.service',
        contents:
          'ExecStart=/usr/bin/kubelet \\\n  --node-labels=node-role.kubernetes.io/worker,node.openshift.io/os_id=${ID},${CUSTOM_KUBELET_LABELS} \\\n  --v=2\n',
      },
    ],
  },
});

describe('ignition: what a machine reads from the served config', () => {
  it('decodes data URLs: base64, percent-encoded, gzip', () => {
    expect(dataUrlBytes('data:,a%20b').toString()).toBe('a b');
    expect(dataUrlBytes(b64('x')).toString()).toBe('x');
    expect(dataUrlBytes(b64(gzipSync('zipped')), 'gzip').toString()).toBe('zipped');
    expect(() => dataUrlBytes('https://example.com/x')).toThrow(/not a data URL/);
  });

  it('reads the kubelet settings, the last entry of a path winning', () => {
    const s = servedKubelet(
      served('kind: KubeletConfiguration\nregisterWithTaints:\n- key: karpenter.sh/unregistered\n  value: "true"\n  effect: NoExecute\n'),
    );
    expect(s.registerWithTaints).toEqual([{ key: 'karpenter.sh/unregistered', value: 'true', effect: 'NoExecute' }]);
    expect(s.nodeLabels).toEqual({ 'node-role.kubernetes.io/worker': '', 'node.openshift.io/os_id': 'rhcos' });
    expect(s.bootstrap).toEqual({ server: 'https://api-int.demo.example.com:6443', token: 'bootstrap-token', caData: 'Q0E=' });
    expect(s.renderedConfig).toBe('rendered-karpenter-default-abc');
    expect(s.nodeAnnotations).toEqual({ 'machineconfiguration.openshift.io/currentConfig': 'rendered-karpenter-default-abc' });
  });

  it('reports no taint when the kubelet configuration sets none (JSON is read as well)', () => {
    expect(servedKubelet(served('{"kind":"KubeletConfiguration","maxPods":250}')).registerWithTaints).toEqual([]);
  });

  it('names what is missing from a config that cannot boot a kubelet', () => {
    expect(() => servedKubelet({ storage: { files: [] } })).toThrow(/no \/etc\/kubernetes\/kubelet.conf/);
    const noUnit = { ...served('kind: KubeletConfiguration\n'), systemd: { units: [] } };
    expect(() => servedKubelet(noUnit)).toThrow(/no kubelet.service/);
  });

  it('reads the pointer config: its first source and CA', () => {
    const pointer = JSON.stringify({
      ignition: {
        version: '3.2.0',
        config: { merge: [{ source: 'https://api-int.x:22623/config/karpenter-default' }] },
        security: { tls: { certificateAuthorities: [{ source: b64('PEM') }] } },
      },
    });
    expect(pointerOf(pointer)).toEqual({ source: 'https://api-int.x:22623/config/karpenter-default', caPem: 'PEM' });
    expect(pointerOf('#!/bin/bash')).toBeUndefined();
    expect(ignitionFile({}, '/x')).toBeUndefined();
  });

  it('lets a kubelet set only the labels NodeRestriction allows', () => {
    expect(kubeletMaySet('node.openshift.io/os_id')).toBe(true);
    expect(kubeletMaySet('node-role.kubernetes.io/worker')).toBe(false);
    expect(kubeletMaySet('kubernetes.io/hostname')).toBe(true);
    expect(kubeletMaySet('node.kubernetes.io/instance-type')).toBe(true);
    expect(kubeletMaySet('karpenter.sh/nodepool')).toBe(true);
    expect(kubeletMaySet('example.k8s.io/x')).toBe(false);
  });
});
