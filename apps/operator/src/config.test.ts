import { describe, expect, it } from 'vitest';
import { parseConfig } from './config.js';

const env = { RELEASE_VERSION: '4.22.0', KARPENTER_IMAGE_AWS: 'quay.io/k:1' };
const d = { crdDir: '/crds' };

describe('parseConfig', () => {
  it('reads the reference flags and env', () => {
    const r = parseConfig(['--namespace', 'openshift-karpenter', '--leader-elect', '--metrics-bind-address=127.0.0.1:9090'], { ...env, CLUSTER_NAME: 'x' }, d);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.config).toMatchObject({
      namespace: 'openshift-karpenter',
      leaderElect: true,
      metricsBindAddress: { host: '127.0.0.1', port: 9090 },
      healthProbeBindAddress: { host: '0.0.0.0', port: 8081 },
      releaseVersion: '4.22.0',
      clusterName: 'x',
      managementCluster: false,
      crdDir: '/crds',
    });
  });

  it.each([
    { name: 'namespace missing', argv: [], env, expect: ['--namespace is required'] },
    { name: 'release missing', argv: ['--namespace=a'], env: {}, expect: ['RELEASE_VERSION is required'] },
    { name: 'MANAGEMENT_CLUSTER not strict', argv: ['--namespace=a'], env: { ...env, MANAGEMENT_CLUSTER: 'yes' }, expect: ['MANAGEMENT_CLUSTER must be "true" or "false"'] },
    {
      name: 'management cluster lists every missing setting at once',
      argv: ['--namespace=a'],
      env: { ...env, MANAGEMENT_CLUSTER: 'true' },
      expect: ['CLUSTER_NAME is required', 'CLUSTER_ENDPOINT is required', 'PLATFORM is required', 'REGION is required', '--guest-kubeconfig is required'],
    },
    { name: 'AWS without operand image', argv: ['--namespace=a'], env: { RELEASE_VERSION: '1', PLATFORM: 'AWS' }, expect: ['KARPENTER_IMAGE_AWS is required'] },
    { name: 'unknown flag', argv: ['--namespace=a', '--bogus'], env, expect: ['unknown flag --bogus'] },
    { name: 'bad address', argv: ['--namespace=a', '--metrics-bind-address=nope'], env, expect: ['--metrics-bind-address must be [host]:port'] },
    { name: 'flag without value', argv: ['--namespace'], env, expect: ['flag --namespace needs a value'] },
  ])('$name', ({ argv, env: e, expect: wanted }) => {
    const r = parseConfig(argv, e, d);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    for (const w of wanted) expect(r.errors.some((x) => x.startsWith(w)), `${w} in ${JSON.stringify(r.errors)}`).toBe(true);
  });
});
