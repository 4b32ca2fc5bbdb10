import { mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import type { AddressInfo, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PeerCertificate, TLSSocket } from 'node:tls';
import { silentLogger, type Labels, type Metrics } from '@karpenter-operator/core';
import { afterEach, describe, expect, it } from 'vitest';
import type { KubeRequest, KubeTransport } from '@karpenter-operator/kube-runtime';
import { SelfSignedMetricsCertMetric, startSecureMetricsServer } from './secure-metrics.js';
import { selfSignedCertificate } from './serving-cert.js';

/** Every token is valid and every user may get /metrics. */
const allowAll: KubeTransport = {
  request: async <T>(req: KubeRequest) =>
    (req.kind === 'TokenReview' ? { status: { authenticated: true, user: { username: 'scraper' } } } : { status: { allowed: true } }) as T,
  watch: () => Promise.reject(new Error('no watches')),
};

class Gauges implements Metrics {
  readonly values = new Map<string, number>();
  inc(): void {}
  observe(): void {}
  set(name: string, value: number, _labels?: Labels): void {
    this.values.set(name, value);
  }
}

function get(port: number, token?: string): Promise<{ status: number; body: string; cert: PeerCertificate }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/metrics',
        agent: false,
        rejectUnauthorized: false,
        headers: token ? { authorization: `Bearer ${token}` } : {},
      },
      (res) => {
        let body = '';
        const cert = (res.socket as TLSSocket).getPeerCertificate();
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, cert }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function start(certDir: string, metrics: Metrics): Promise<number> {
  const server = await startSecureMetricsServer(
    {
      host: '127.0.0.1',
      port: 0,
      certDir,
      hostnames: ['metrics.test.svc'],
      reloadIntervalMs: 100,
      transport: allowAll,
      clock: { now: () => Date.now() },
      logger: silentLogger,
      metrics,
    },
    { healthy: () => true, ready: () => ({ ok: true, detail: 'ok' }), metrics: async () => 'up 1\n' },
  );
  servers.push(server);
  return (server.address() as AddressInfo).port;
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('startSecureMetricsServer', () => {
  it('serves a self-signed certificate until the serving certificate appears, then that one, without a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'metrics-tls-'));
    const gauges = new Gauges();
    const port = await start(dir, gauges);
    const before = await get(port, 't');
    expect(before.status).toBe(200);
    expect(before.cert.subject.CN).toBe('metrics.test.svc');
    expect(gauges.values.get(SelfSignedMetricsCertMetric)).toBe(1);

    // service-ca writes the Secret (the kubelet swaps the mounted files in at once).
    const issued = await selfSignedCertificate(['issued.by.service-ca']);
    writeFileSync(join(dir, 'tls.key.tmp'), issued.key);
    writeFileSync(join(dir, 'tls.crt.tmp'), issued.cert);
    renameSync(join(dir, 'tls.key.tmp'), join(dir, 'tls.key'));
    renameSync(join(dir, 'tls.crt.tmp'), join(dir, 'tls.crt'));
    await until('the issued certificate to be served', async () => (await get(port, 't')).cert.subject.CN === 'issued.by.service-ca');
    expect(gauges.values.get(SelfSignedMetricsCertMetric)).toBe(0);
  });

  it('refuses a scrape without a token with 401 over TLS', async () => {
    const port = await start(mkdtempSync(join(tmpdir(), 'metrics-tls-')), new Gauges());
    const r = await get(port);
    expect(r.status).toBe(401);
    expect(r.body).not.toContain('up 1');
  });
});
