import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { RejectedError, silentLogger, Types, type KubeObject } from '@karpenter-operator/core';
import { RecordingMetrics } from '@karpenter-operator/core/testing';
import { waitFor } from '@karpenter-operator/testkit';
import { testCluster } from '@karpenter-operator/testkit/vitest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKubeCluster, createKubeTransport, LeaderElector, type KubeCluster } from '@karpenter-operator/kube-runtime';

const NS = 'kube-store-it';
const ADMIN = 'testkit-admin';

/** A TCP proxy in front of the API server that can cut, stall or refuse connections (TLS passes through). */
class FaultyProxy {
  private readonly server: Server;
  private readonly pairs = new Set<[Socket, Socket]>();
  private readonly stalled = new Set<[Socket, Socket]>();
  refusing = false;
  constructor(private readonly target: { host: string; port: number }) {
    this.server = createServer((client) => {
      if (this.refusing) return client.destroy();
      const upstream = connect(this.target.port, this.target.host);
      const pair: [Socket, Socket] = [client, upstream];
      this.pairs.add(pair);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        this.pairs.delete(pair);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      client.pipe(upstream);
      upstream.pipe(client);
    });
  }
  async start(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return `https://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  /** Connection reset on every open connection. */
  reset(): void {
    for (const [c, u] of this.pairs) {
      c.resetAndDestroy();
      u.destroy();
    }
  }
  /** Existing connections stay open but carry nothing more (a half-open connection); new ones work. */
  stall(): void {
    for (const [c, u] of this.pairs) {
      c.unpipe(u);
      u.unpipe(c);
      c.pause();
      u.pause();
      this.stalled.add([c, u]);
    }
    this.pairs.clear();
  }
  async close(): Promise<void> {
    this.refusing = true;
    this.reset();
    for (const [c, u] of this.stalled) {
      c.destroy();
      u.destroy();
    }
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

function withServer(kc: KubeConfig, server: string): KubeConfig {
  const out = new KubeConfig();
  out.loadFromOptions({
    clusters: kc.getClusters().map((c) => ({ ...c, server })),
    users: kc.getUsers(),
    contexts: kc.getContexts(),
    currentContext: kc.getCurrentContext(),
  });
  return out;
}

const target = (server: string) => {
  const u = new URL(server);
  return { host: u.hostname, port: Number(u.port) };
};

const configMap = (name: string, data: Record<string, unknown>): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: NS, labels: { 'kube-store-it': 'yes' } },
  data,
});

const deployment = (name: string, image: string): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace: NS },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: name } },
    template: {
      metadata: { labels: { app: name } },
      spec: { containers: [{ name: 'main', image, resources: { requests: { cpu: '100m', memory: '64Mi' } } }] },
    },
  },
});

const counter = (metrics: RecordingMetrics, verb: string, kind: string) =>
  metrics.counters.get(`karpenter_operator_api_requests_total{kind=${kind},verb=${verb}}`) ?? 0;

describe('KubeClusterStore against a real API server', () => {
  let admin: KubeConfig;
  let kube: KubeCluster;
  let metrics: RecordingMetrics;

  beforeAll(async () => {
    const cluster = testCluster();
    admin = cluster.kubeConfig();
    await cluster.ensureServiceAccount(NS, 'default');
    metrics = new RecordingMetrics();
    kube = createKubeCluster(admin, { metrics, logger: silentLogger });
    kube.informers.informerFor({ type: Types.ConfigMap, namespace: NS }).start();
    kube.informers.informerFor({ type: Types.Deployment, namespace: NS }).start();
    await Promise.all(kube.informers.all().map((i) => i.waitForSync()));
  });
  afterAll(async () => {
    await kube?.informers.stop();
  });

  it('applies once, and a second apply of the same desired state sends nothing (counted and audited)', async () => {
    const since = new Date(Date.now() - 1_000);
    const before = counter(metrics, 'apply', 'Deployment') + counter(metrics, 'apply', 'ConfigMap');

    const cm = await kube.store.apply(configMap('settings', { level: 'info' }));
    const dep = await kube.store.apply(deployment('app', 'registry.example.com/app:1'));
    expect([cm.changed, dep.changed]).toEqual([true, true]);
    expect(dep.object?.metadata).not.toHaveProperty('managedFields');
    // Read-your-writes: the cache has it the moment apply returns.
    expect((await kube.store.get({ ...Types.Deployment, namespace: NS, name: 'app' }))?.metadata.uid).toBe(dep.object?.metadata.uid);

    const again = await Promise.all([
      kube.store.apply(configMap('settings', { level: 'info' })),
      kube.store.apply(deployment('app', 'registry.example.com/app:1')),
    ]);
    expect(again.map((r) => r.changed)).toEqual([false, false]);
    expect(counter(metrics, 'apply', 'Deployment') + counter(metrics, 'apply', 'ConfigMap') - before).toBe(2);

    // The API server saw exactly one apply per object.
    const patches = await waitFor('the applies in the audit log', () => {
      const ev = testCluster()
        .auditEvents({ user: ADMIN, verbs: ['patch'], namespace: NS, since })
        .filter((e) => ['configmaps', 'deployments'].includes(e.objectRef?.resource ?? ''));
      return ev.length >= 2 ? ev : undefined;
    });
    await new Promise((r) => setTimeout(r, 1_000));
    const all = testCluster()
      .auditEvents({ user: ADMIN, verbs: ['patch'], namespace: NS, since })
      .filter((e) => ['configmaps', 'deployments'].includes(e.objectRef?.resource ?? ''));
    expect(all.map((e) => `${e.objectRef?.resource}/${e.objectRef?.name}`).sort()).toEqual(['configmaps/settings', 'deployments/app']);
    expect(patches.every((e) => e.requestURI.includes('fieldManager=karpenter-operator'))).toBe(true);

    // A real change is applied; the watch then delivers the same version and nothing more is sent.
    const changed = await kube.store.apply(deployment('app', 'registry.example.com/app:2'));
    expect(changed.changed).toBe(true);
    const informer = kube.informers.informerFor({ type: Types.Deployment, namespace: NS });
    await waitFor(
      'the watch to catch up with the write',
      () => BigInt(informer.lastResourceVersion || '0') >= BigInt(changed.object!.metadata.resourceVersion!),
    );
    expect((await kube.store.apply(deployment('app', 'registry.example.com/app:2'))).changed).toBe(false);
  });

  it('maps a server-side validation failure to RejectedError with the server message', async () => {
    const err = (await kube.store.apply(configMap('Not_A_Valid_Name', { a: 'b' })).catch((e: unknown) => e)) as Error;
    expect(`${err.name}: ${err.message}`).toMatch(new RegExp(`^RejectedError: applying ConfigMap ${NS}/Not_A_Valid_Name: .*Invalid value`));
    expect(err).toBeInstanceOf(RejectedError);
  });

  it('createIfAbsent, patch, delete against the real server, skipping what the cache shows done', async () => {
    const created = await kube.store.createIfAbsent(configMap('defaults', { a: '1' }));
    expect(created.changed).toBe(true);
    expect((await kube.store.createIfAbsent(configMap('defaults', { a: 'changed' }))).changed).toBe(false);
    const ref = { ...Types.ConfigMap, namespace: NS, name: 'defaults' };
    expect((await kube.store.patch(ref, { metadata: { annotations: { x: 'y' } } })).changed).toBe(true);
    expect((await kube.store.patch(ref, { metadata: { annotations: { x: 'y' } } })).changed).toBe(false);
    expect(await kube.store.delete(ref)).toBe(true);
    expect(await kube.store.delete(ref)).toBe(false);
    await waitFor('the deletion to reach the cache', async () => (await kube.store.get(ref)) === undefined);
  });
});

describe('Informer recovery', () => {
  it('recovers from connection resets and from a stalled (half-open) watch', { timeout: 60_000 }, async () => {
    const cluster = testCluster();
    const admin = cluster.kubeConfig();
    await cluster.ensureServiceAccount(NS, 'default');
    const proxy = new FaultyProxy(target(admin.getCurrentCluster()!.server));
    const proxied = withServer(admin, await proxy.start());
    const metrics = new RecordingMetrics();
    const kube = createKubeCluster(proxied, {
      metrics,
      logger: silentLogger,
      informer: { staleAfterMs: 3_000, backoff: { baseMs: 200, capMs: 1_000, jitter: 0.2 } },
    });
    const direct = createKubeCluster(admin, { metrics: new RecordingMetrics(), logger: silentLogger });
    const informer = kube.informers.informerFor({ type: Types.ConfigMap, namespace: NS, labels: { 'kube-store-it': 'yes' } });
    direct.informers.informerFor({ type: Types.ConfigMap, namespace: NS }).start();
    informer.start();
    try {
      await informer.waitForSync();
      await direct.informers.all()[0]!.waitForSync();
      const seen = (name: string) => informer.get(name, NS) !== undefined;

      // The watch is established once it delivers an event.
      await direct.store.apply(configMap('before-reset', { v: '1' }));
      await waitFor('the informer to see a change through its watch', () => seen('before-reset'), { timeoutMs: 15_000 });
      const watches = () => counter(metrics, 'watch', 'ConfigMap');
      const watchesBefore = watches();
      proxy.reset();
      await direct.store.apply(configMap('after-reset', { v: '1' }));
      await waitFor('the informer to see a change made after the reset', () => seen('after-reset'), { timeoutMs: 15_000 });
      // client-node reports a reset stream as a plain end; the informer re-watches from its resource version.
      expect(watches()).toBeGreaterThan(watchesBefore);
      expect(counter(metrics, 'list', 'ConfigMap')).toBe(1);

      proxy.stall();
      await direct.store.apply(configMap('after-stall', { v: '1' }));
      await waitFor('the informer to see a change made while its watch was stalled', () => seen('after-stall'), { timeoutMs: 15_000 });
      expect(metrics.counters.get('karpenter_operator_informer_restarts_total{kind=ConfigMap,reason=stale}') ?? 0).toBeGreaterThanOrEqual(
        1,
      );
    } finally {
      await kube.informers.stop();
      await direct.informers.stop();
      await proxy.close();
    }
  });
});

describe('Leader election with two electors', () => {
  it('exactly one leads; when the leader is cut off it stops leading before the other takes over', async () => {
    const cluster = testCluster();
    const admin = cluster.kubeConfig();
    await cluster.ensureServiceAccount(NS, 'default');
    const proxyA = new FaultyProxy(target(admin.getCurrentCluster()!.server));
    const aConfig = withServer(admin, await proxyA.start());
    const timing = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 500 };
    const log: Array<{ at: number; what: string }> = [];
    const make = (identity: string, kc: KubeConfig) =>
      new LeaderElector({
        transport: createKubeTransport(kc, { metrics: new RecordingMetrics() }),
        namespace: NS,
        name: 'kube-store-it-lease',
        identity,
        timing,
        onStartedLeading: () => log.push({ at: Date.now(), what: `${identity} started` }),
        onStoppedLeading: () => log.push({ at: Date.now(), what: `${identity} stopped` }),
      });
    const a = make('a', aConfig);
    const b = make('b', admin);
    try {
      a.start();
      await waitFor('a to lead', () => a.isLeader(), { timeoutMs: 10_000 });
      b.start();
      await new Promise((r) => setTimeout(r, 4_000)); // longer than a lease duration: a keeps renewing
      expect([a.isLeader(), b.isLeader()]).toEqual([true, false]);

      proxyA.refusing = true;
      proxyA.reset();
      const cutAt = Date.now();
      await waitFor('b to take over', () => b.isLeader(), { timeoutMs: 15_000 });
      const aStopped = log.find((l) => l.what === 'a stopped');
      const bStarted = log.find((l) => l.what === 'b started');
      expect(aStopped).toBeDefined();
      expect(aStopped!.at).toBeLessThan(bStarted!.at);
      expect(bStarted!.at - cutAt).toBeLessThanOrEqual(timing.leaseDurationMs + 2 * timing.retryPeriodMs * 2.2 + 1_000);

      // A graceful stop releases the lease: a new elector takes over without waiting for expiry.
      await b.stop();
      const c = make('c', admin);
      const releasedAt = Date.now();
      c.start();
      await waitFor('c to lead after the release', () => c.isLeader(), { timeoutMs: 10_000 });
      expect(Date.now() - releasedAt).toBeLessThan(timing.leaseDurationMs);
      await c.stop();
    } finally {
      await a.stop();
      await b.stop();
      await proxyA.close();
    }
  });
});
