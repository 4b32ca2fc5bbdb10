import { describe, expect, it } from 'vitest';
import { DEFAULT_ADDRESSES, parseAddress, parseConfig, UNKNOWN_RELEASE_VERSION } from './config.js';

const env = { RELEASE_VERSION: '4.22.0', KARPENTER_IMAGE_AWS: 'quay.io/k:1' };
const d = { crdDir: '/crds' };

describe('parseConfig', () => {
  it('reads the reference flags and env', () => {
    const r = parseConfig(
      ['--namespace', 'openshift-karpenter', '--leader-elect', '--metrics-bind-address=127.0.0.1:9090'],
      { ...env, CLUSTER_NAME: 'x' },
      d,
    );
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
    { name: 'release missing', argv: ['--namespace=a'], env: {}, expect: ['RELEASE_VERSION is required (unless MANAGEMENT_CLUSTER=true)'] },
    {
      name: 'both spellings of the guest kubeconfig',
      argv: ['--namespace=a', '--target-kubeconfig=/a', '--guest-kubeconfig=/b'],
      env,
      expect: ['--target-kubeconfig and --guest-kubeconfig are the same flag'],
    },
    {
      name: 'an alias is still a flag that needs a value',
      argv: ['--namespace=a', '--target-kubeconfig'],
      env,
      expect: ['flag --target-kubeconfig needs a value'],
    },
    {
      name: 'MANAGEMENT_CLUSTER not strict',
      argv: ['--namespace=a'],
      env: { ...env, MANAGEMENT_CLUSTER: 'yes' },
      expect: ['MANAGEMENT_CLUSTER must be "true" or "false"'],
    },
    {
      name: 'management cluster lists every missing setting at once',
      argv: ['--namespace=a'],
      env: { ...env, MANAGEMENT_CLUSTER: 'true' },
      expect: [
        'CLUSTER_NAME is required',
        'CLUSTER_ENDPOINT is required',
        'PLATFORM is required',
        'REGION is required',
        '--guest-kubeconfig (or --target-kubeconfig) is required',
      ],
    },
    {
      name: 'AWS without operand image',
      argv: ['--namespace=a'],
      env: { RELEASE_VERSION: '1', PLATFORM: 'AWS' },
      expect: ['KARPENTER_IMAGE_AWS is required'],
    },
    { name: 'unknown flag', argv: ['--namespace=a', '--bogus'], env, expect: ['unknown flag --bogus'] },
    {
      name: 'bad address',
      argv: ['--namespace=a', '--metrics-bind-address=nope'],
      env,
      expect: ['--metrics-bind-address must be [host]:port'],
    },
    { name: 'flag without value', argv: ['--namespace'], env, expect: ['flag --namespace needs a value'] },
    {
      name: 'one leader-election timing without the others',
      argv: ['--namespace=a', '--leader-elect-lease-duration=15s'],
      env,
      expect: ['--leader-elect-lease-duration, --leader-elect-renew-deadline, --leader-elect-retry-period go together'],
    },
    {
      name: 'a leader-election timing that is no duration',
      argv: ['--namespace=a', '--leader-elect-lease-duration=15', '--leader-elect-renew-deadline=10s', '--leader-elect-retry-period=2s'],
      env,
      expect: ['--leader-elect-lease-duration must be a positive duration such as 15s or 500ms, got "15"'],
    },
    {
      name: 'leader-election timings out of order',
      argv: ['--namespace=a', '--leader-elect-lease-duration=10s', '--leader-elect-renew-deadline=15s', '--leader-elect-retry-period=2s'],
      env,
      expect: ['leader-election timings: leaseDuration must be greater than renewDeadline'],
    },
  ])('$name', ({ argv, env: e, expect: wanted }) => {
    const r = parseConfig(argv, e, d);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    for (const w of wanted)
      expect(
        r.errors.some((x) => x.startsWith(w)),
        `${w} in ${JSON.stringify(r.errors)}`,
      ).toBe(true);
  });

  const hosted = {
    MANAGEMENT_CLUSTER: 'true',
    CLUSTER_NAME: 'demo-x7k2p',
    CLUSTER_ENDPOINT: 'https://api.demo:6443',
    PLATFORM: 'AWS',
    REGION: 'us-east-1',
    KARPENTER_IMAGE_AWS: 'quay.io/k:1',
  };

  it.each([
    {
      name: '--target-kubeconfig=FILE (HyperShift)',
      argv: ['--target-kubeconfig=/mnt/kubeconfig/target-kubeconfig', '--namespace=clusters-demo'],
    },
    {
      name: '--target-kubeconfig FILE',
      argv: ['--target-kubeconfig', '/mnt/kubeconfig/target-kubeconfig', '--namespace', 'clusters-demo'],
    },
    {
      name: '--guest-kubeconfig (this project)',
      argv: ['--guest-kubeconfig=/mnt/kubeconfig/target-kubeconfig', '--namespace=clusters-demo'],
    },
  ])('management-cluster mode: $name is the guest kubeconfig', ({ argv }) => {
    const r = parseConfig(argv, hosted, d);
    expect(r.ok && r.config.guestKubeconfig).toBe('/mnt/kubeconfig/target-kubeconfig');
  });

  it('management-cluster mode without RELEASE_VERSION names the unknown version; with it, that one; standalone still requires it', () => {
    const argv = ['--target-kubeconfig=/k', '--namespace=clusters-demo'];
    const without = parseConfig(argv, hosted, d);
    expect(without.ok && without.config.releaseVersion).toBe(UNKNOWN_RELEASE_VERSION);
    const withVersion = parseConfig(argv, { ...hosted, RELEASE_VERSION: '4.22.1' }, d);
    expect(withVersion.ok && withVersion.config.releaseVersion).toBe('4.22.1');
    expect(parseConfig(['--namespace=a'], { KARPENTER_IMAGE_AWS: 'quay.io/k:1' }, d).ok).toBe(false);
  });

  it('leader-election timings: none by default (the topology decides at start-up); all three from flags', () => {
    const none = parseConfig(['--namespace=a', '--leader-elect'], env, d);
    expect(none.ok && none.config.leaderElectionTiming).toBeUndefined();
    const given = parseConfig(
      [
        '--namespace=a',
        '--leader-elect',
        '--leader-elect-lease-duration=1m30s',
        '--leader-elect-renew-deadline=10s',
        '--leader-elect-retry-period',
        '500ms',
      ],
      env,
      d,
    );
    expect(given.ok && given.config.leaderElectionTiming).toEqual({ leaseDurationMs: 90_000, renewDeadlineMs: 10_000, retryPeriodMs: 500 });
  });

  it('the pod name comes from POD_NAME, else MY_NAME (HyperShift), else HOSTNAME', () => {
    const name = (e: Record<string, string>) => {
      const r = parseConfig(['--namespace=a'], { ...env, ...e }, d);
      return r.ok ? r.config.podName : undefined;
    };
    expect(name({ POD_NAME: 'p', MY_NAME: 'm', HOSTNAME: 'h' })).toBe('p');
    expect(name({ MY_NAME: 'm', HOSTNAME: 'h' })).toBe('m');
    expect(name({ HOSTNAME: 'h' })).toBe('h');
  });
});

describe('default listen addresses', () => {
  it('the operator and the sidecar adapter never collide in one pod', () => {
    const ports = Object.values(DEFAULT_ADDRESSES)
      .flatMap((a) => [a.metrics, a.health])
      .map((v) => parseAddress('x', v, []).port);
    expect(ports.length).toBe(4);
    expect(new Set(ports).size).toBe(4);
  });

  it('the operator listens where it did when no flag is given', () => {
    const r = parseConfig(['--namespace=a'], env, d);
    expect(r.ok && [r.config.metricsBindAddress.port, r.config.healthProbeBindAddress.port]).toEqual([8080, 8081]);
  });
});
