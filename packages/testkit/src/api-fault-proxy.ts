import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { LOOPBACK } from './ports.js';

/**
 * What the proxy does to a request:
 * - `none`: forwards it (watches included: the response is streamed);
 * - `throttle`: answers as an overloaded kube-apiserver does (API Priority and Fairness): HTTP 429, a
 *   `Status` with reason `TooManyRequests`, and `Retry-After: <seconds>` (default 1);
 * - `unavailable`: the API server is gone, as during a kube-apiserver rollout: setting it drops every open
 *   connection (watches included), and each request that arrives meanwhile has its connection reset.
 */
export type ApiFault = { kind: 'none' } | { kind: 'throttle'; retryAfterSeconds?: number } | { kind: 'unavailable' };

export interface ApiProxiedRequest {
  /** Arrival order, from 1. */
  seq: number;
  method: string;
  /** Path and query. */
  url: string;
  userAgent?: string;
  fault: ApiFault['kind'];
  receivedAt: number;
  /** HTTP status sent to the client (for a forwarded watch: once its headers arrived; 0: connection reset by `unavailable`). */
  status?: number;
}

export interface ApiFaultProxy {
  /** `http://127.0.0.1:<port>`: the `server` of a kubeconfig (bearer-token users only: TLS ends here). */
  readonly url: string;
  /** Applies `fault` to requests that arrive from now on; open watches are left alone, except by `unavailable`. */
  setFault(fault: ApiFault): void;
  /** Every request seen, oldest first (the last 10,000). */
  requests(): ApiProxiedRequest[];
  /** Stops listening and drops every open connection, watches included. */
  close(): Promise<void>;
}

const LOG_MAX = 10_000;

/**
 * A fault-injecting HTTP proxy in front of a kube-apiserver, on 127.0.0.1: plain HTTP to the client, TLS
 * (verified with `caFile`) to the API server, headers (the bearer token, User-Agent) passed through. The
 * fault is mutable while it runs, and every request is logged, so a test can see what a client sent during
 * an overload and when it came back.
 */
export async function startApiFaultProxy(upstream: string, caFile: string, options: { now?: () => number } = {}): Promise<ApiFaultProxy> {
  const target = new URL(upstream);
  const ca = readFileSync(caFile);
  const now = options.now ?? Date.now;
  let fault: ApiFault = { kind: 'none' };
  let seq = 0;
  const log: ApiProxiedRequest[] = [];

  const throttle = (res: ServerResponse, entry: ApiProxiedRequest, retryAfterSeconds: number): void => {
    const body = JSON.stringify({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'Too many requests, please try again later.',
      reason: 'TooManyRequests',
      details: { retryAfterSeconds },
      code: 429,
    });
    entry.status = 429;
    res.writeHead(429, {
      'content-type': 'application/json',
      'retry-after': String(retryAfterSeconds),
      'content-length': Buffer.byteLength(body),
    });
    res.end(body);
  };

  const forward = (req: IncomingMessage, res: ServerResponse, entry: ApiProxiedRequest): void => {
    const headers = { ...req.headers, host: target.host };
    const up = httpsRequest({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers, ca }, (upRes) => {
      entry.status = upRes.statusCode ?? 502;
      res.writeHead(entry.status, upRes.headers);
      upRes.pipe(res);
    });
    up.on('error', (e) => {
      if (res.headersSent) res.destroy();
      else {
        entry.status = 502;
        res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(`proxy: upstream error: ${e.message}`);
      }
    });
    res.on('close', () => {
      if (!res.writableFinished) up.destroy();
    });
    req.pipe(up);
  };

  const server = createServer((req, res) => {
    const current = fault;
    const entry: ApiProxiedRequest = {
      seq: ++seq,
      method: req.method ?? 'GET',
      url: req.url ?? '/',
      fault: current.kind,
      receivedAt: now(),
    };
    const ua = req.headers['user-agent'];
    if (ua) entry.userAgent = ua;
    log.push(entry);
    if (log.length > LOG_MAX) log.splice(0, log.length - LOG_MAX);
    if (current.kind === 'throttle') {
      req.resume();
      return throttle(res, entry, current.retryAfterSeconds ?? 1);
    }
    if (current.kind === 'unavailable') {
      entry.status = 0;
      req.socket.destroy();
      return;
    }
    forward(req, res, entry);
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, LOOPBACK, () => resolve());
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return {
    url: `http://${LOOPBACK}:${port}`,
    setFault(next) {
      fault = next;
      if (next.kind === 'unavailable') server.closeAllConnections();
    },
    requests: () => log.map((e) => ({ ...e })),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
