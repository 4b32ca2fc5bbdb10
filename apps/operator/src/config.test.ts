import { describe, expect, it } from 'vitest';
import { DEFAULT_ADDRESSES, parseAdapterConfig, parseAddress, parseConfig, UNKNOWN_RELEASE_VERSION } from './config.js';

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
    { name: 'flag followed by another flag', argv: ['--namespace', '--leader-elect'], env, expect: ['flag --namespace needs a value'] },
    { name: 'an argument that is no flag', argv: ['--namespace=a', 'extra'], env, expect: ['unexpected argument "extra"'] },
    {
      name: 'a boolean flag with a value that is no boolean',
      argv: ['--namespace=a', '--leader-elect=yes'],
      env,
      expect: ['--leader-elect must be "true" or "false"'],
    },
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

  it.each([
    { name: 'bare', argv: ['--leader-elect', '--metrics-secure'], want: [true, true] },
    { name: '=true', argv: ['--leader-elect=true', '--metrics-secure=true'], want: [true, true] },
    { name: '=false', argv: ['--leader-elect=false', '--metrics-secure=false'], want: [false, false] },
    { name: 'absent', argv: [], want: [false, false] },
  ])('boolean flags as Go spells them: $name', ({ argv, want }) => {
    const r = parseConfig(['--namespace=a', ...argv], env, d);
    expect(r.ok && [r.config.leaderElect, r.config.metricsSecure]).toEqual(want);
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

describe('parseAdapterConfig', () => {
  it('reads the flags, with `run` first or not, and the defaults', () => {
    for (const argv of [
      ['--namespace=clusters-a', '--guest-kubeconfig', '/k', '--hcp-name=a'],
      ['run', '--namespace', 'clusters-a', '--guest-kubeconfig=/k', '--hcp-name', 'a'],
    ]) {
      const r = parseAdapterConfig(argv);
      expect(r.ok && r.config).toEqual({
        namespace: 'clusters-a',
        guestKubeconfig: '/k',
        hcpName: 'a',
        metrics: { host: '0.0.0.0', port: 8082 },
        health: { host: '0.0.0.0', port: 8083 },
        unreachableAfterMs: 300_000,
        runControllers: false,
      });
    }
  });

  it('runs no controllers unless --run-controllers says so: the operator runs them in management-cluster mode', () => {
    const on = parseAdapterConfig(['--namespace=a', '--guest-kubeconfig=/k', '--run-controllers']);
    expect(on.ok && on.config.runControllers).toBe(true);
    const off = parseAdapterConfig(['--namespace=a', '--guest-kubeconfig=/k']);
    expect(off.ok && off.config.runControllers).toBe(false);
  });

  it('reads --guest-unreachable-timeout with the duration parser of the operator', () => {
    const r = parseAdapterConfig(['--namespace=a', '--guest-kubeconfig=/k', '--guest-unreachable-timeout=1m30s']);
    expect(r.ok && r.config.unreachableAfterMs).toBe(90_000);
  });

  it.each([
    { name: 'unknown flag', argv: ['--namespace=a', '--guest-kubeconfig=/k', '--bogus'], want: ['unknown flag --bogus'] },
    { name: 'flag without value', argv: ['--namespace=a', '--guest-kubeconfig'], want: ['flag --guest-kubeconfig needs a value'] },
    {
      name: 'bad duration',
      argv: ['--namespace=a', '--guest-kubeconfig=/k', '--guest-unreachable-timeout=5'],
      want: ['--guest-unreachable-timeout must be a positive duration such as 15s or 500ms, got "5"'],
    },
    { name: 'nothing given', argv: [], want: ['--namespace is required', '--guest-kubeconfig is required'] },
  ])('refuses, naming the flag: $name', ({ argv, want }) => {
    const r = parseAdapterConfig(argv);
    expect(!r.ok && r.errors).toEqual(want);
  });

  it('--help is help, not an error', () => {
    const r = parseAdapterConfig(['--namespace=a', '--help']);
    expect(!r.ok && r.help).toBe(true);
  });
});
