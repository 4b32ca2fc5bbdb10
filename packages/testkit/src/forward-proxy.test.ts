import { createServer, type Server } from 'node:http';
import { Agent, get } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startForwardProxy, type ForwardProxy } from './forward-proxy.js';
import { LOOPBACK } from './ports.js';

const fetchVia = (url: string, agent: Agent, ca?: string) =>
  new Promise<{ status?: number; body?: string; error?: string }>((resolve) => {
    get(url, { agent, ...(ca ? { ca } : {}) }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    }).on('error', (e: NodeJS.ErrnoException) => resolve({ error: e.code ?? e.message }));
  });

describe('startForwardProxy', () => {
  let upstream: Server;
  let proxy: ForwardProxy;
  beforeAll(async () => {
    upstream = createServer((req, res) => res.end(`upstream saw ${req.method} ${req.url} host=${req.headers.host}`));
    await new Promise<void>((r) => upstream.listen(0, LOOPBACK, () => r()));
    const addr = upstream.address() as { port: number };
    proxy = await startForwardProxy(`http://${LOOPBACK}:${addr.port}`);
  });
  afterAll(async () => {
    await proxy.close();
    await new Promise((r) => upstream.close(r));
  });

  it('reaches the service over TLS through CONNECT, trusting the CA it hands out', async () => {
    const agent = new Agent({ proxyEnv: { HTTPS_PROXY: proxy.url } });
    const r = await fetchVia(`${proxy.endpoint}/?Action=DescribeInstances`, agent, proxy.caPem);
    expect(r.status).toBe(200);
    expect(r.body).toMatch(/^upstream saw GET \/\?Action=DescribeInstances host=127\.0\.0\.1:\d+$/);
    expect(proxy.connects()).toContain('ec2.emulator.invalid:443');
    agent.destroy();
  });

  it('without the proxy the name resolves nowhere; without the CA the certificate is refused', async () => {
    const direct = await fetchVia(`${proxy.endpoint}/`, new Agent(), proxy.caPem);
    expect(direct.error).toMatch(/ENOTFOUND|EAI_AGAIN/);
    const untrusted = await fetchVia(`${proxy.endpoint}/`, new Agent({ proxyEnv: { HTTPS_PROXY: proxy.url } }));
    expect(untrusted.error).toMatch(/UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED|UNABLE_TO_GET_ISSUER_CERT/);
  });

  it('refuses CONNECT to anything else, and plain requests', async () => {
    const other = await fetchVia('https://example.com/', new Agent({ proxyEnv: { HTTPS_PROXY: proxy.url } }));
    expect(other.error ?? `status ${other.status}`).toMatch(/403|tunnel/i);
    expect((await fetch(`${proxy.url}/`)).status).toBe(403);
  });
});
