import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiException, KubeConfig } from '@kubernetes/client-node';
import { RecordingMetrics } from '@karpenter-operator/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { useTokenFileAuth } from './kube-config.js';
import { ClientNodeTransport, createKubeTransport, isWriteFencedError, type KubeRequest } from './transport.js';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A tiny HTTP server standing in for the API server: real sockets, real client-node request path. */
let server: Server;
let kc: KubeConfig;
const seen: Seen[] = [];
let handler: (req: IncomingMessage, res: ServerResponse, body: string) => void = () => {};

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      handler(req, res, body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'u', token: 'secret-token' }],
    contexts: [{ name: 'c', cluster: 'c', user: 'u' }],
    currentContext: 'c',
  });
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const json = (res: ServerResponse, code: number, body: unknown) => {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

describe('ClientNodeTransport (real HTTP)', () => {
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
    const t = new ClientNodeTransport(kc);
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

  it('reports a refused watch as an error with the status code', async () => {
    handler = (_req, res) => json(res, 403, { kind: 'Status', message: 'forbidden', code: 403 });
    const t = new ClientNodeTransport(kc);
    const err = await new Promise<unknown>((resolve) => {
      t.watch({ kind: 'Node', path: '/api/v1/nodes', query: {}, onEvent: () => {}, onDone: resolve }).catch(resolve);
    });
    expect((err as { statusCode?: number }).statusCode).toBe(403);
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
    // Without one, the fetch library's own (so the option is what sets it).
    seen.length = 0;
    handler = (_req, res) => json(res, 200, {});
    await new ClientNodeTransport(kc).request({ verb: 'get', kind: 'Node', method: 'GET', path: '/api/v1/nodes/x' });
    expect(seen[0]!.headers['user-agent']).not.toMatch(/karpenter-operator/);
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

  describe('a ServiceAccount token rotated under it (401)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'transport-token-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));
    const tokenPath = join(dir, 'token');
    /** In-cluster shape: the token comes from a file (client-node's `tokenFile` auth provider), put under `TokenFileAuth`. */
    const inCluster = () => {
      const { port } = server.address() as AddressInfo;
      const k = new KubeConfig();
      k.loadFromOptions({
        clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
        users: [{ name: 'sa', authProvider: { name: 'tokenFile', config: { tokenFile: tokenPath } } }],
        contexts: [{ name: 'c', cluster: 'c', user: 'sa' }],
        currentContext: 'c',
      });
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
      const t = new ClientNodeTransport(k, { onUnauthorized: () => auth.refresh() });
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
      const t = new ClientNodeTransport(k, { onUnauthorized: () => auth.refresh() });
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
      const t = new ClientNodeTransport(k, { onUnauthorized: () => auth.refresh() });
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
