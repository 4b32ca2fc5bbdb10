import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { loadKubeConfig, TokenFileAuth, WatchedKubeConfig } from './kube-config.js';

const kubeconfig = (server: string, context = 'c', user = 'u') => `apiVersion: v1
kind: Config
clusters:
- name: ${context}
  cluster:
    server: ${server}
users:
- name: ${user}
  user:
    token: t-${user}
contexts:
- name: ${context}
  context:
    cluster: ${context}
    user: ${user}
current-context: ${context}
`;

const dir = mkdtempSync(join(tmpdir(), 'kubeconfig-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

describe('loadKubeConfig', () => {
  const a = file('a.yaml', kubeconfig('https://a.example:6443', 'a', 'ua'));
  const b = file('b.yaml', kubeconfig('https://b.example:6443', 'b', 'ub'));
  const broken = file('broken.yaml', 'clusters: [');

  it.each([
    { name: '--kubeconfig wins over KUBECONFIG', kubeconfig: a, env: { KUBECONFIG: b }, server: 'https://a.example:6443' },
    {
      name: 'KUBECONFIG',
      kubeconfig: undefined,
      env: { KUBECONFIG: b, KUBERNETES_SERVICE_HOST: '10.0.0.1' },
      server: 'https://b.example:6443',
    },
    {
      name: 'KUBECONFIG list: the first current-context wins',
      kubeconfig: undefined,
      env: { KUBECONFIG: `${a}${delimiter}${b}` },
      server: 'https://a.example:6443',
    },
  ])('$name', ({ kubeconfig: k, env, server }) => {
    expect(loadKubeConfig({ kubeconfig: k, env }).config.getCurrentCluster()?.server).toBe(server);
  });

  it.each([
    { name: 'nothing configured', kubeconfig: undefined, env: {}, error: /pass --kubeconfig, set KUBECONFIG, or run in a pod/ },
    { name: 'missing file', kubeconfig: join(dir, 'nope.yaml'), env: {}, error: /--kubeconfig .*nope\.yaml/ },
    { name: 'unparsable file', kubeconfig: broken, env: {}, error: /--kubeconfig .*broken\.yaml/ },
  ])('fails clearly: $name', ({ kubeconfig: k, env, error }) => {
    expect(() => loadKubeConfig({ kubeconfig: k, env })).toThrow(error);
  });
});

describe('in-cluster ServiceAccount token', () => {
  it('is read from the token file, and again on demand (a 401 after rotation)', async () => {
    const prefix = join(dir, 'pod');
    const saDir = join(prefix, 'var/run/secrets/kubernetes.io/serviceaccount');
    mkdirSync(saDir, { recursive: true });
    writeFileSync(join(saDir, 'token'), 'token-1');
    writeFileSync(join(saDir, 'ca.crt'), '');
    const loaded = loadKubeConfig({
      env: { KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' },
      inClusterPathPrefix: prefix,
    });
    expect(loaded.source).toBe('in-cluster');
    const bearer = async () => {
      const opts: { headers?: Record<string, string> } = {};
      await loaded.config.applyToHTTPSOptions(opts);
      return opts.headers?.['Authorization'];
    };
    expect(await bearer()).toBe('Bearer token-1');
    writeFileSync(join(saDir, 'token'), 'token-2');
    // Cached until refreshed (the periodic re-read is a minute).
    expect(await bearer()).toBe('Bearer token-1');
    expect(loaded.refreshCredentials?.()).toBe(true);
    expect(await bearer()).toBe('Bearer token-2');
    expect(loaded.refreshCredentials?.()).toBe(false);
  });

  it('re-reads the file once its last read is a minute old', async () => {
    let now = 0;
    let content = 'a';
    const auth = new TokenFileAuth(
      '/token',
      () => now,
      () => content,
    );
    const header = async () => {
      const opts: { headers?: Record<string, unknown> } = {};
      await auth.applyAuthentication({ name: 'u' }, opts);
      return opts.headers?.['Authorization'];
    };
    expect(await header()).toBe('Bearer a');
    content = 'b';
    now = 60_000;
    expect(await header()).toBe('Bearer a');
    now = 60_001;
    expect(await header()).toBe('Bearer b');
    const failing = new TokenFileAuth(
      '/token',
      () => now,
      () => {
        throw new Error('EACCES');
      },
    );
    expect(failing.refresh()).toBe(false);
  });
});

describe('WatchedKubeConfig', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('re-reads the file and switches to a changed, valid kubeconfig; keeps the last one otherwise', async () => {
    let content = kubeconfig('https://guest-1:6443');
    const w = new WatchedKubeConfig('/etc/guest/kubeconfig', { pollMs: 1_000, readFile: async () => content });
    const changes: string[] = [];
    w.onChange((kc) => changes.push(kc.getCurrentCluster()!.server));
    await w.start();
    expect(w.current().getCurrentCluster()?.server).toBe('https://guest-1:6443');
    await vi.advanceTimersByTimeAsync(3_000);
    expect(changes).toEqual([]);
    content = kubeconfig('https://guest-2:6443');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(changes).toEqual(['https://guest-2:6443']);
    expect(w.current().getCurrentCluster()?.server).toBe('https://guest-2:6443');
    content = 'not: [valid';
    await vi.advanceTimersByTimeAsync(1_000);
    expect(w.current().getCurrentCluster()?.server).toBe('https://guest-2:6443');
    w.stop();
    content = kubeconfig('https://guest-3:6443');
    await vi.advanceTimersByTimeAsync(5_000);
    expect(changes).toEqual(['https://guest-2:6443']);
  });

  it('fails to start when the file cannot be read', async () => {
    const w = new WatchedKubeConfig('/missing', {
      readFile: async () => {
        throw new Error('ENOENT');
      },
    });
    await expect(w.start()).rejects.toThrow(/reading the kubeconfig \/missing: ENOENT/);
  });
});
