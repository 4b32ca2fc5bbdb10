import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import { connect as connectTcp, createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { ApiException, KubeConfig } from '@kubernetes/client-node';
import { RecordingMetrics } from '@karpenter-operator/core/testing';
import { createCertificateAuthority, type CertificateAuthority } from '@karpenter-operator/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isConnectionFailure } from './errors.js';
import { useTokenFileAuth } from './kube-config.js';
import { LineSplitter, ParseTurns } from './response-body.js';
import { createKubeTransport, isWriteFencedError, NodeHttpTransport, type KubeRequest, type KubeWatchRequest } from './transport.js';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
  /** CN of the client certificate the connection presented. */
  clientCn: string | undefined;
}

/** A tiny HTTPS server standing in for the API server: real TLS with a CA of its own, real sockets. */
let server: Server;
let ca: CertificateAuthority;
let kc: KubeConfig;
const seen: Seen[] = [];
const sockets = new Set<Socket>();
let connections = 0;
let handler: (req: IncomingMessage, res: ServerResponse, body: string) => void = () => {};
const b64 = (s: string) => Buffer.from(s).toString('base64');

/** A kubeconfig for the test server: its CA, a client certificate of the same CA, and `user`. */
function kubeconfigFor(user: Record<string, unknown>, caPem = ca.certPem, proxyUrl?: string): KubeConfig {
  const { port } = server.address() as AddressInfo;
  const k = new KubeConfig();
  k.loadFromOptions({
    clusters: [{ name: 'c', server: `https://127.0.0.1:${port}`, caData: b64(caPem), ...(proxyUrl ? { proxyUrl } : {}) }],
    users: [{ name: 'u', ...user }],
    contexts: [{ name: 'c', cluster: 'c', user: 'u' }],
    currentContext: 'c',
  });
  return k;
}

beforeAll(async () => {
  ca = await createCertificateAuthority('transport test CA', 1);
  const leaf = await ca.issue({ commonName: '127.0.0.1', ipAddresses: ['127.0.0.1'], usage: 'server', validDays: 1 });
  const client = await ca.issue({ commonName: 'operator', usage: 'client', validDays: 1 });
  server = createServer(
    { key: leaf.privateKeyPem, cert: leaf.certPem, ca: ca.certPem, requestCert: true, rejectUnauthorized: false },
    (req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const cert = (req.socket as TLSSocket).getPeerCertificate();
        seen.push({ method: req.method!, url: req.url!, headers: req.headers, body, clientCn: cert?.subject?.CN as string | undefined });
        handler(req, res, body);
      });
    },
  );
  server.on('secureConnection', (s: Socket) => {
    connections++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  kc = kubeconfigFor({ token: 'secret-token', certData: b64(client.certPem), keyData: b64(client.privateKeyPem) });
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise<void>((r) => server.close(() => r()));
});

const json = (res: ServerResponse, code: number, body: unknown) => {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

/** Runs one watch to its end: the events seen and what `onDone` received (and how often). */
function watchToEnd(t: NodeHttpTransport, extra: Partial<KubeWatchRequest> = {}) {
  const events: [string, unknown][] = [];
  const dones: unknown[] = [];
  const done = new Promise<unknown>((resolve) => {
    void t
      .watch({
        kind: 'Node',
        path: '/api/v1/nodes',
        query: {},
        onEvent: (type, obj) => events.push([type, obj]),
        onDone: (e) => {
          dones.push(e);
          resolve(e);
        },
        ...extra,
      })
      .catch(resolve);
  });
  return { events, dones, done };
}

describe('NodeHttpTransport (real HTTPS)', () => {
  it('sends JSON with the content type, query and bearer token, and returns the parsed body', async () => {
    handler = (_req, res, body) => json(res, 200, { ...JSON.parse(body), metadata: { name: 'x', resourceVersion: '7' } });
    seen.length = 0;
    const metrics = new RecordingMetrics();
    const t = createKubeTransport(kc, { metrics });
    const out = await t.request<{ metadata: { resourceVersion: string }; spec: unknown }>({
      verb: 'apply',
      kind: 'Deployment',
      method: 'PATCH',
      path: '/apis/apps/v1/namespaces/ns/deployments/x',
      query: { fieldManager: 'karpenter-operator', force: true, skipped: undefined },
      body: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'x' }, spec: { replicas: 2 } },
      contentType: 'application/apply-patch+yaml',
    });
    expect(out.metadata.resourceVersion).toBe('7');
    expect(out.spec).toEqual({ replicas: 2 });
    expect(seen[0]).toMatchObject({
      method: 'PATCH',
      url: '/apis/apps/v1/namespaces/ns/deployments/x?fieldManager=karpenter-operator&force=true',
      headers: { 'content-type': 'application/apply-patch+yaml', authorization: 'Bearer secret-token' },
      clientCn: 'operator',
    });
    expect(JSON.parse(seen[0]!.body)).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'x' },
      spec: { replicas: 2 },
    });
    expect(metrics.counters.get('karpenter_operator_api_requests_total{kind=Deployment,verb=apply}')).toBe(1);
  });

  it('throws ApiException with the code and the parsed Status body, and counts the error', async () => {
    handler = (_req, res) => json(res, 422, { kind: 'Status', message: 'spec.replicas: Invalid value', code: 422 });
    const metrics = new RecordingMetrics();
    const t = createKubeTransport(kc, { metrics });
    const err = await t
      .request({ verb: 'create', kind: 'NodePool', method: 'POST', path: '/apis/karpenter.sh/v1/nodepools', body: {} })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiException);
    expect((err as ApiException<{ message: string }>).code).toBe(422);
    expect((err as ApiException<{ message: string }>).body.message).toBe('spec.replicas: Invalid value');
    expect(metrics.counters.get('karpenter_operator_api_request_errors_total{code=422,kind=NodePool,verb=create}')).toBe(1);
  });

  it('streams watch events and reports the end of the stream', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a', resourceVersion: '2' } } }) + '\n');
      res.write(JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '3' } } }) + '\n');
      setTimeout(() => res.end(), 20);
    };
    seen.length = 0;
    const events: string[] = [];
    const t = new NodeHttpTransport(kc);
    const done = new Promise<unknown>((resolve) => {
      void t
        .watch({
          kind: 'Node',
          path: '/api/v1/nodes',
          query: { resourceVersion: '1', allowWatchBookmarks: true },
          onEvent: (type, obj) => events.push(`${type}:${(obj as { metadata: { resourceVersion: string } }).metadata.resourceVersion}`),
          onDone: resolve,
        })
        .catch(resolve);
    });
    expect(await done).toBeNull();
    expect(events).toEqual(['ADDED:2', 'BOOKMARK:3']);
    expect(seen[0]!.url).toBe('/api/v1/nodes?watch=true&resourceVersion=1&allowWatchBookmarks=true');
  });

  it('calls onActivity as each watch chunk arrives, before its events, and as each response ends', async () => {
    const log: string[] = [];
    const t = new NodeHttpTransport(kc, { onActivity: () => log.push('activity') });
    handler = (_req, res) => json(res, 200, { metadata: { name: 'x' } });
    await t.request({ verb: 'get', kind: 'Node', method: 'GET', path: '/api/v1/nodes/x' });
    expect(log).toEqual(['activity']);
    log.length = 0;
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a', resourceVersion: '2' } } }) + '\n');
      setTimeout(() => {
        res.write(JSON.stringify({ type: 'MODIFIED', object: { metadata: { name: 'a', resourceVersion: '3' } } }) + '\n');
        res.end();
      }, 30);
    };
    const w = watchToEnd(t, { onEvent: (type) => log.push(type) });
    expect(await w.done).toBeNull();
    expect(log).toEqual(['activity', 'ADDED', 'activity', 'MODIFIED']);
  });

  it('reports a refused watch as an error with the status code', async () => {
    handler = (_req, res) => json(res, 403, { kind: 'Status', message: 'forbidden', code: 403 });
    const t = new NodeHttpTransport(kc);
    const err = await new Promise<unknown>((resolve) => {
      t.watch({ kind: 'Node', path: '/api/v1/nodes', query: {}, onEvent: () => {}, onDone: resolve }).catch(resolve);
    });
    expect((err as { statusCode?: number }).statusCode).toBe(403);
    expect((err as { body?: { message?: string } }).body?.message).toBe('forbidden');
  });

  it('names itself with the User-Agent it is given, on requests and on watches', async () => {
    const userAgent = 'karpenter-operator/4.22.0 (karpenter-operator-7d9f-x2v)';
    seen.length = 0;
    const t = createKubeTransport(kc, { metrics: new RecordingMetrics(), userAgent });
    handler = (_req, res) => json(res, 200, { metadata: { name: 'x' } });
    await t.request({ verb: 'get', kind: 'Node', method: 'GET', path: '/api/v1/nodes/x' });
    await t.request({ verb: 'create', kind: 'Event', method: 'POST', path: '/apis/events.k8s.io/v1/namespaces/ns/events', body: {} });
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end();
    };
    await new Promise<unknown>((resolve) => {
      void t.watch({ kind: 'Node', path: '/api/v1/nodes', query: {}, onEvent: () => {}, onDone: resolve }).catch(resolve);
    });
    expect(seen.map((r) => [r.method, r.headers['user-agent'], r.headers.authorization])).toEqual([
      ['GET', userAgent, 'Bearer secret-token'],
      ['POST', userAgent, 'Bearer secret-token'],
      ['GET', userAgent, 'Bearer secret-token'],
    ]);
    // Without one, none (so the option is what sets it).
    seen.length = 0;
    handler = (_req, res) => json(res, 200, {});
    await new NodeHttpTransport(kc).request({ verb: 'get', kind: 'Node', method: 'GET', path: '/api/v1/nodes/x' });
    expect(seen[0]!.headers['user-agent']).toBeUndefined();
  });

  it('a fence refuses writes before they are sent (WriteFencedError), never reads; the metrics wrapper forwards it', async () => {
    handler = (_req, res) => json(res, 200, {});
    const metrics = new RecordingMetrics();
    const t = createKubeTransport(kc, { metrics });
    const asked: string[] = [];
    let open = false;
    t.fence!((req: KubeRequest) => {
      asked.push(`${req.method} ${req.path}`);
      return open ? undefined : 'this replica does not lead';
    });
    seen.length = 0;
    const patch = {
      verb: 'apply',
      kind: 'Deployment',
      method: 'PATCH',
      path: '/apis/apps/v1/namespaces/ns/deployments/x',
      body: {},
    } as const;
    const err = await t.request(patch).catch((e: unknown) => e);
    expect(isWriteFencedError(err)).toBe(true);
    expect((err as Error).message).toBe('not sent: PATCH /apis/apps/v1/namespaces/ns/deployments/x: this replica does not lead');
    await t.request({ verb: 'get', kind: 'Deployment', method: 'GET', path: '/apis/apps/v1/namespaces/ns/deployments/x' });
    expect(seen.map((r) => r.method)).toEqual(['GET']);
    open = true;
    await t.request(patch);
    expect(seen.map((r) => r.method)).toEqual(['GET', 'PATCH']);
    expect(asked).toEqual(['PATCH /apis/apps/v1/namespaces/ns/deployments/x', 'PATCH /apis/apps/v1/namespaces/ns/deployments/x']);
    expect(metrics.counters.get('karpenter_operator_api_request_errors_total{code=0,kind=Deployment,verb=apply}')).toBe(1);
  });

  it('keeps the connection alive: sequential requests share one TLS connection', async () => {
    handler = (_req, res) => json(res, 200, {});
    const t = new NodeHttpTransport(kubeconfigFor({ token: 'keep-alive' }));
    const before = connections;
    for (let i = 0; i < 3; i++) await t.request({ verb: 'get', kind: 'Node', method: 'GET', path: '/api/v1/nodes/x' });
    expect(connections - before).toBe(1);
  });

  it('a read on a kept-alive connection the server drops is sent once more on a new one; a write is not', async () => {
    const used = new WeakSet<object>();
    let dropReused = true;
    handler = (req, res) => {
      if (dropReused && used.has(req.socket)) return req.socket.destroy(); // closed as the request arrived
      used.add(req.socket);
      json(res, 200, { ok: true });
    };
    const t = new NodeHttpTransport(kubeconfigFor({ token: 'reuse' }));
    const get = { verb: 'get', kind: 'Node', method: 'GET', path: '/api/v1/nodes/x' } as const;
    await t.request(get);
    seen.length = 0;
    expect(await t.request(get)).toEqual({ ok: true });
    expect(seen).toHaveLength(2); // the dropped one, then the one sent again
    const put = { verb: 'update', kind: 'Node', method: 'PUT', path: '/api/v1/nodes/x', body: {} } as const;
    seen.length = 0;
    const err = await t.request(put).catch((e: unknown) => e);
    expect((err as { code?: string }).code).toBe('ECONNRESET');
    expect(seen).toHaveLength(1);
    dropReused = false;
  });

  it('refuses a server whose certificate is not signed by the kubeconfig CA, with the TLS error', async () => {
    const other = await createCertificateAuthority('another CA', 1);
    const t = new NodeHttpTransport(kubeconfigFor({ token: 'x' }, other.certPem));
    seen.length = 0;
    const err = await t.request({ verb: 'get', kind: 'Node', method: 'GET', path: '/api/v1/nodes/x' }).catch((e: unknown) => e);
    expect((err as { code?: string }).code).toMatch(/CERT|SIGNATURE|ISSUER/);
    expect(seen).toHaveLength(0);
  });

  it('gives up on a request without a complete response within requestTimeoutMs (TimeoutError)', async () => {
    const pending: ServerResponse[] = [];
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"partial":'); // and nothing more
      pending.push(res);
    };
    const t = new NodeHttpTransport(kc, { requestTimeoutMs: 200 });
    const err = await t.request({ verb: 'get', kind: 'Node', method: 'GET', path: '/api/v1/nodes/slow' }).catch((e: unknown) => e);
    for (const r of pending) r.destroy();
    expect((err as Error).name).toBe('TimeoutError');
    expect((err as Error).message).toBe('GET /api/v1/nodes/slow: no complete response within 200 ms');
  });

  it('a non-JSON error body is kept as text', async () => {
    handler = (_req, res) => {
      res.writeHead(503, { 'content-type': 'text/plain' });
      res.end('upstream connect error');
    };
    const err = await new NodeHttpTransport(kc)
      .request({ verb: 'get', kind: 'Node', method: 'GET', path: '/api/v1/nodes/x' })
      .catch((e: unknown) => e);
    expect((err as ApiException<unknown>).code).toBe(503);
    expect((err as ApiException<unknown>).body).toBe('upstream connect error');
  });

  it('decodes watch events split anywhere across chunks, multi-byte characters included, and passes ERROR events', async () => {
    const events = [
      { type: 'ADDED', object: { metadata: { name: 'caf\u00e9-\u2603', resourceVersion: '2' } } },
      { type: 'MODIFIED', object: { metadata: { name: 'b', resourceVersion: '3' }, data: 'x'.repeat(70_000) } },
      { type: 'ERROR', object: { kind: 'Status', code: 410, message: 'too old resource version: 1 (3)' } },
    ];
    const bytes = Buffer.from(events.map((e) => JSON.stringify(e)).join('\n') + '\n');
    // Cut inside the first event's multi-byte characters, inside JSON, right at a newline, and into one-byte pieces.
    const snowman = bytes.indexOf(Buffer.from('\u2603'));
    const cuts = [5, snowman + 1, snowman + 2, bytes.indexOf(0x0a) + 1, bytes.indexOf(0x0a) + 3, bytes.length - 40];
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      let at = 0;
      const next = (i: number) => {
        const end = i < cuts.length ? cuts[i]! : bytes.length;
        res.write(bytes.subarray(at, end));
        at = end;
        if (end < bytes.length) setTimeout(() => next(i + 1), 5);
        else res.end();
      };
      next(0);
    };
    const w = watchToEnd(new NodeHttpTransport(kc));
    expect(await w.done).toBeNull();
    expect(w.events).toEqual(events.map((e) => [e.type, e.object]));
  });

  it('an onEvent that throws ends the watch with its error, once, and nothing after it is delivered', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(['ADDED', 'MODIFIED', 'DELETED'].map((type) => JSON.stringify({ type, object: {} })).join('\n') + '\n');
    };
    const seenTypes: string[] = [];
    const w = watchToEnd(new NodeHttpTransport(kc), {
      onEvent: (type) => {
        seenTypes.push(type);
        if (type === 'MODIFIED') throw new Error('handler failed');
      },
    });
    expect(((await w.done) as Error).message).toBe('handler failed');
    expect(seenTypes).toEqual(['ADDED', 'MODIFIED']);
    expect(w.dones).toHaveLength(1);
  });

  it('a watch with nothing received for watchInactivityTimeoutMs ends with a TimeoutError, once', async () => {
    const open: ServerResponse[] = [];
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '9' } } }) + '\n');
      open.push(res);
    };
    const w = watchToEnd(new NodeHttpTransport(kc, { watchInactivityTimeoutMs: 300 }));
    const err = await w.done;
    expect((err as Error).name).toBe('TimeoutError');
    expect(w.events.map(([type]) => type)).toEqual(['BOOKMARK']);
    // The connection was closed on our side: the server sees its response closed.
    await expect.poll(() => open.every((r) => r.destroyed || r.writableEnded || r.socket === null), { timeout: 10_000 }).toBe(true);
    expect(w.dones).toHaveLength(1);
  });

  it('abort() closes the stream and calls onDone once (AbortError); a server that cuts the stream is an error', async () => {
    const open: ServerResponse[] = [];
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a' } } }) + '\n');
      open.push(res);
    };
    const t = new NodeHttpTransport(kc);
    let handleResolved: (h: { abort(): void }) => void = () => {};
    const gotHandle = new Promise<{ abort(): void }>((r) => (handleResolved = r));
    const events: string[] = [];
    const dones: unknown[] = [];
    const finished = new Promise<void>((resolve) => {
      void t
        .watch({
          kind: 'Node',
          path: '/api/v1/nodes',
          query: {},
          onEvent: (type) => events.push(type),
          onDone: (e) => {
            dones.push(e);
            resolve();
          },
        })
        .then(handleResolved);
    });
    const handle = await gotHandle;
    await expect.poll(() => events, { timeout: 10_000 }).toEqual(['ADDED']);
    handle.abort();
    handle.abort();
    await finished;
    expect(dones).toHaveLength(1);
    expect((dones[0] as Error).name).toBe('AbortError');
    await expect.poll(() => open[0]!.destroyed || open[0]!.socket === null, { timeout: 10_000 }).toBe(true);

    // The server side goes away mid-stream (its process dies): an error, not a clean end.
    open.length = 0;
    const cut = watchToEnd(t);
    await expect.poll(() => open.length, { timeout: 10_000 }).toBe(1);
    open[0]!.socket!.destroy();
    const err = await cut.done;
    expect(err).toBeInstanceOf(Error);
    expect(cut.events.map(([type]) => type)).toEqual(['ADDED']);
    expect(cut.dones).toHaveLength(1);
  });

  it('a server that accepts the TCP connection but never completes TLS fails requests and watches with CONNECT_TIMEOUT', async () => {
    const silent = createNetServer((s) => s.on('error', () => {}));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const { port } = silent.address() as AddressInfo;
    try {
      const k = kubeconfigFor({ token: 'x' });
      k.clusters = [{ ...k.clusters[0]!, server: `https://127.0.0.1:${port}` }];
      const t = new NodeHttpTransport(k, { connectTimeoutMs: 200 });
      const err = await t.request({ verb: 'get', kind: 'Node', method: 'GET', path: '/api/v1/nodes/x' }).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'CONNECT_TIMEOUT', message: 'GET /api/v1/nodes/x: no connection within 200 ms' });
      expect(isConnectionFailure(err)).toBe(true);
      const w = watchToEnd(t);
      expect(await w.done).toMatchObject({ code: 'CONNECT_TIMEOUT' });
    } finally {
      silent.close();
    }
  });

  it('a watch to an unreachable server ends with the connection error in onDone', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((r) => probe.close(() => r()));
    const k = kubeconfigFor({ token: 'x' });
    k.clusters = [{ ...k.clusters[0]!, server: `https://127.0.0.1:${port}` }];
    const order: string[] = [];
    await new NodeHttpTransport(k)
      .watch({
        kind: 'Node',
        path: '/api/v1/nodes',
        query: {},
        onEvent: () => {},
        onDone: (e) => order.push(`onDone ${(e as { code?: string }).code}`),
      })
      .then(() => order.push('resolved'));
    // Resolved only after it failed: a caller takes a resolved watch for a server that answered.
    expect(order).toEqual(['onDone ECONNREFUSED', 'resolved']);
  });

  it('a watch resolves once the server has answered 200, before any event', async () => {
    let release!: () => void;
    const answered = new Promise<void>((r) => (release = r));
    const responses: ServerResponse[] = [];
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.flushHeaders();
      responses.push(res);
      release();
    };
    let serverAnswered = false;
    void answered.then(() => (serverAnswered = true));
    const h = await new NodeHttpTransport(kc).watch({
      kind: 'Node',
      path: '/api/v1/nodes',
      query: {},
      onEvent: () => {},
      onDone: () => {},
    });
    expect(serverAnswered).toBe(true);
    h.abort();
    for (const r of responses) r.destroy();
  });

  it("reaches the server through the cluster's proxy-url (HTTP CONNECT): requests and watches, client certificate and token", async () => {
    const tunnels: string[] = [];
    const proxySockets = new Set<Socket>();
    const proxy = createHttpServer();
    proxy.on('connection', (s: Socket) => {
      proxySockets.add(s);
      s.on('close', () => proxySockets.delete(s));
    });
    proxy.on('connect', (req: IncomingMessage, downstream: Socket, head: Buffer) => {
      tunnels.push(req.url!);
      const [host, port] = req.url!.split(':');
      const upstream = connectTcp(Number(port), host!, () => {
        downstream.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        upstream.write(head);
        upstream.pipe(downstream).pipe(upstream);
      });
      proxySockets.add(upstream);
      upstream.on('error', () => downstream.destroy());
      downstream.on('error', () => upstream.destroy());
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    try {
      const { port: proxyPort } = proxy.address() as AddressInfo;
      const client = await ca.issue({ commonName: 'through-proxy', usage: 'client', validDays: 1 });
      const t = new NodeHttpTransport(
        kubeconfigFor(
          { token: 'proxied-token', certData: b64(client.certPem), keyData: b64(client.privateKeyPem) },
          ca.certPem,
          `http://127.0.0.1:${proxyPort}`,
        ),
      );
      handler = (req, res) => {
        if (!req.url!.includes('watch=true')) return json(res, 200, { kind: 'Node', metadata: { name: 'n1' } });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'n1', resourceVersion: '5' } } }) + '\n');
      };
      seen.length = 0;
      const got = await t.request<{ metadata: { name: string } }>({ verb: 'get', kind: 'Node', method: 'GET', path: '/api/v1/nodes/n1' });
      expect(got.metadata.name).toBe('n1');
      const w = watchToEnd(t);
      expect(await w.done).toBeNull();
      expect(w.events).toEqual([['ADDED', { metadata: { name: 'n1', resourceVersion: '5' } }]]);
      const { port } = server.address() as AddressInfo;
      expect(tunnels.length).toBeGreaterThanOrEqual(1);
      expect(new Set(tunnels)).toEqual(new Set([`127.0.0.1:${port}`]));
      expect(seen.map((x) => [x.url, x.clientCn, x.headers.authorization])).toEqual([
        ['/api/v1/nodes/n1', 'through-proxy', 'Bearer proxied-token'],
        ['/api/v1/nodes?watch=true', 'through-proxy', 'Bearer proxied-token'],
      ]);
    } finally {
      for (const s of proxySockets) s.destroy();
      await new Promise<void>((r) => proxy.close(() => r()));
    }
  });

  it('a client certificate rotated on disk is presented on the next new connection; the old connection is closed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'transport-rotate-'));
    const keepAliveTimeout = server.keepAliveTimeout;
    try {
      const certFile = join(dir, 'tls.crt');
      const keyFile = join(dir, 'tls.key');
      const first = await ca.issue({ commonName: 'operator-a', usage: 'client', validDays: 1 });
      const second = await ca.issue({ commonName: 'operator-b', usage: 'client', validDays: 1 });
      writeFileSync(certFile, first.certPem);
      writeFileSync(keyFile, first.privateKeyPem);
      const served: Socket[] = [];
      handler = (req, res) => {
        served.push(req.socket);
        json(res, 200, {});
      };
      // Longer than the test: the old connection may only close because the transport closed it.
      server.keepAliveTimeout = 120_000;
      const t = new NodeHttpTransport(kubeconfigFor({ certFile, keyFile }));
      const get = { verb: 'get', kind: 'Node', method: 'GET', path: '/api/v1/nodes/rotate' } as const;
      seen.length = 0;
      await t.request(get);
      const oldConnection = served[0]!;
      const oldClosed = new Promise<void>((r) => (oldConnection.destroyed ? r() : oldConnection.once('close', () => r())));
      writeFileSync(certFile, second.certPem);
      writeFileSync(keyFile, second.privateKeyPem);
      // Several at once: those that took the old agent while one of them replaced it must not send on it.
      await Promise.all([1, 2, 3, 4].map(() => t.request(get)));
      expect(seen.map((x) => x.clientCn)).toEqual(['operator-a', ...Array<string>(4).fill('operator-b')]);
      // The replaced agent's idle connection, made with the old certificate, is closed rather than left open.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        oldClosed,
        new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('the old connection is still open after 15 s')), 15_000))),
      ]).finally(() => clearTimeout(timer));
      await t.request(get); // and the new agent is kept, its connection alive
      expect(seen.map((x) => x.clientCn)).toEqual(['operator-a', ...Array<string>(5).fill('operator-b')]);
      expect(served.slice(1, 5)).toContain(served[5]);
      expect(served[5]!.destroyed).toBe(false);
    } finally {
      server.keepAliveTimeout = keepAliveTimeout;
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a read that times out on a kept-alive connection is not sent again', async () => {
    const pending: ServerResponse[] = [];
    let slow = false;
    handler = (_req, res) => {
      if (!slow) return json(res, 200, {});
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"partial":');
      pending.push(res);
    };
    const t = new NodeHttpTransport(kubeconfigFor({ token: 'timeout-once' }), { requestTimeoutMs: 200 });
    const get = { verb: 'get', kind: 'Node', method: 'GET', path: '/api/v1/nodes/slow-again' } as const;
    await t.request(get); // opens the connection the next request reuses
    slow = true;
    seen.length = 0;
    const err = await t.request(get).catch((e: unknown) => e);
    for (const r of pending) r.destroy();
    expect((err as Error).name).toBe('TimeoutError');
    expect(seen).toHaveLength(1);
  });

  describe('a ServiceAccount token rotated under it (401)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'transport-token-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));
    const tokenPath = join(dir, 'token');
    /** In-cluster shape: the token comes from a file (client-node's `tokenFile` auth provider), put under `TokenFileAuth`. */
    const inCluster = () => {
      const k = kubeconfigFor({ authProvider: { name: 'tokenFile', config: { tokenFile: tokenPath } } });
      const auth = useTokenFileAuth(k)!;
      return { k, auth };
    };
    let accepted = '';
    const onlyAccepted = (req: IncomingMessage, res: ServerResponse) =>
      req.headers.authorization === `Bearer ${accepted}`
        ? json(res, 200, { metadata: { name: 'x' } })
        : json(res, 401, { kind: 'Status', message: 'Unauthorized', code: 401 });
    const get = { verb: 'get', kind: 'Node', method: 'GET', path: '/api/v1/nodes/x' } as const;

    it('re-reads the token file on 401 and sends the request once more with the new token', async () => {
      writeFileSync(tokenPath, 'token-1\n');
      accepted = 'token-1';
      handler = onlyAccepted;
      const { k, auth } = inCluster();
      const t = new NodeHttpTransport(k, { onUnauthorized: () => auth.refresh() });
      seen.length = 0;
      await t.request(get);
      // The kubelet rotates the token; the old one is refused from now on.
      writeFileSync(tokenPath, 'token-2\n');
      accepted = 'token-2';
      await t.request(get);
      expect(seen.map((r) => r.headers.authorization)).toEqual(['Bearer token-1', 'Bearer token-1', 'Bearer token-2']);
    });

    it('a 401 with an unchanged token fails at once, without a second request', async () => {
      writeFileSync(tokenPath, 'revoked');
      accepted = 'something-else';
      handler = onlyAccepted;
      const { k, auth } = inCluster();
      const t = new NodeHttpTransport(k, { onUnauthorized: () => auth.refresh() });
      seen.length = 0;
      const err = await t.request(get).catch((e: unknown) => e);
      expect((err as ApiException<unknown>).code).toBe(401);
      expect(seen).toHaveLength(1);
    });

    it('a watch refused with 401 re-reads the token for its next attempt', async () => {
      writeFileSync(tokenPath, 'token-1');
      accepted = 'token-1';
      handler = onlyAccepted;
      const { k, auth } = inCluster();
      const t = new NodeHttpTransport(k, { onUnauthorized: () => auth.refresh() });
      await t.request(get);
      writeFileSync(tokenPath, 'token-2');
      accepted = 'token-2';
      handler = (req, res) => {
        if (req.headers.authorization !== `Bearer ${accepted}`) return json(res, 401, { kind: 'Status', code: 401 });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end();
      };
      const watchOnce = () =>
        new Promise<unknown>((resolve) => {
          void t.watch({ kind: 'Node', path: '/api/v1/nodes', query: {}, onEvent: () => {}, onDone: resolve }).catch(resolve);
        });
      expect(((await watchOnce()) as { statusCode?: number }).statusCode).toBe(401);
      expect(await watchOnce()).toBeNull();
    });
  });
});

describe('ParseTurns', () => {
  /** The order in which `takes` are granted, against a `setImmediate` (the end of this loop turn) queued first. */
  async function grantOrder(turns: ParseTurns, sizes: number[]): Promise<string[]> {
    const order: string[] = [];
    const turnEnd = new Promise<void>((r) => setImmediate(() => (order.push('turn end'), r())));
    await Promise.all([turnEnd, ...sizes.map((n, i) => turns.take(n).then(() => order.push(`body ${i}`)))]);
    return order;
  }

  it('grants small bodies in the same turn', async () => {
    expect(await grantOrder(new ParseTurns(100), [10, 20, 30])).toEqual(['body 0', 'body 1', 'body 2', 'turn end']);
  });

  it('grants a body that does not fit beside the others in a later turn', async () => {
    expect(await grantOrder(new ParseTurns(100), [80, 80, 10])).toEqual(['body 0', 'body 2', 'turn end', 'body 1']);
  });

  it("holds a response's parse until its turn", async () => {
    const asked: number[] = [];
    let grant!: () => void;
    const turns = new ParseTurns(100);
    turns.take = (bytes: number) => {
      asked.push(bytes);
      return new Promise<void>((r) => (grant = r));
    };
    handler = (_req, res) => json(res, 200, { metadata: { name: 'held' } });
    const t = new NodeHttpTransport(kc, { parseTurns: turns });
    let answer: unknown;
    const sent = t.request({ verb: 'get', kind: 'Node', method: 'GET', path: '/api/v1/nodes/held' }).then((r) => (answer = r));
    while (!asked.length) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, 20));
    expect(answer).toBeUndefined();
    expect(asked).toEqual([JSON.stringify({ metadata: { name: 'held' } }).length]);
    grant();
    await sent;
    expect(answer).toEqual({ metadata: { name: 'held' } });
  });

  it('grants a body larger than a turn at once when the turn is unused, alone', async () => {
    expect(await grantOrder(new ParseTurns(100), [500, 500])).toEqual(['body 0', 'turn end', 'body 1']);
  });
});

describe('LineSplitter', () => {
  it('yields complete lines only, joins lines across chunks and flushes the last one at the end', () => {
    const lines: string[] = [];
    const split = new LineSplitter((l) => lines.push(l));
    split.push(Buffer.from('{"a":1}\n{"b"'));
    expect(lines).toEqual(['{"a":1}']);
    split.push(Buffer.from(':2}\n\n{"c":3}'));
    expect(lines).toEqual(['{"a":1}', '{"b":2}']);
    split.end();
    expect(lines).toEqual(['{"a":1}', '{"b":2}', '{"c":3}']);
  });
});
