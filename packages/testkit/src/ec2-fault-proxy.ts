import { randomUUID } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { LOOPBACK } from './ports.js';

/**
 * What the proxy does to a request its fault applies to:
 * - `none`: forwards it;
 * - `throttle`: answers as EC2 does when it throttles (HTTP 400, `<Response><Errors><Error><Code>`), the
 *   codes taken in turn (default `RequestLimitExceeded`);
 * - `5xx`: answers a server error (default 503 `Unavailable`; EC2 also uses 500 `InternalError`);
 * - `hang`: never answers; the request stays open until the client gives up or the proxy closes;
 * - `slow`: forwards it after `ms`.
 */
export type Ec2Fault =
  | { kind: 'none' }
  | { kind: 'throttle'; codes?: string[]; status?: number }
  | { kind: '5xx'; status?: number; code?: string }
  | { kind: 'hang' }
  | { kind: 'slow'; ms: number };

export interface ProxiedRequest {
  /** Arrival order, from 1. */
  seq: number;
  /** The EC2 Action (form-encoded body, else the query string), `unknown` when absent. */
  action: string;
  /** `amz-sdk-invocation-id`: the same on every attempt of one SDK call. */
  invocationId?: string;
  /** From `amz-sdk-request: attempt=N; max=M`. */
  attempt?: number;
  maxAttempts?: number;
  /**
   * The instance IDs a DescribeInstances asked about: its `InstanceId.N` parameters and the values of its
   * `instance-id` filters (absent when it named none).
   */
  instanceIds?: string[];
  /** The fault applied to this request. */
  fault: Ec2Fault['kind'];
  receivedAt: number;
  /** When the answer was sent, or when the client closed the connection without one. */
  endedAt?: number;
  /** HTTP status sent to the client. */
  status?: number;
  /** The client closed the connection before the proxy answered. */
  abandoned: boolean;
}

export interface Ec2FaultProxy {
  /** `http://127.0.0.1:<port>`: give it to the client as its EC2 endpoint. */
  readonly url: string;
  /**
   * Applies `fault` from now on to requests for `actions` (every Action when omitted); other Actions are
   * forwarded. Requests already held (hanging, slowed) keep the fault they got.
   */
  setFault(fault: Ec2Fault, options?: { actions?: string[] }): void;
  /** Every request seen, oldest first (the last 10,000). */
  requests(): ProxiedRequest[];
  /** Requests per Action that arrived in `[since, until)` (epoch ms; default: all). */
  countsByAction(since?: number, until?: number): Record<string, number>;
  /** Stops listening and drops every open connection, hanging ones included. */
  close(): Promise<void>;
}

export interface Ec2FaultProxyOptions {
  /** Port on 127.0.0.1 (default: one the OS picks). */
  port?: number;
  /** Clock for the request log (default `Date.now`). */
  now?: () => number;
}

const LOG_MAX = 10_000;

/** EC2's error body (the Query protocol's `Response/Errors/Error`). */
export function ec2ErrorXml(code: string, message: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>${code}</Code><Message>${message}</Message></Error></Errors><RequestID>${randomUUID()}</RequestID></Response>`;
}

function headerOf(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** `InstanceId.N` and `Filter.N.Value.M` of the `Filter.N.Name=instance-id` filters, from a Query-protocol body. */
export function instanceIdsOf(body: string): string[] | undefined {
  const params = new URLSearchParams(body);
  const ids: string[] = [];
  const idFilters = new Set<string>();
  for (const [k, v] of params) {
    if (/^InstanceId\.\d+$/.test(k)) ids.push(v);
    const f = /^Filter\.(\d+)\.Name$/.exec(k);
    if (f && v === 'instance-id') idFilters.add(f[1]!);
  }
  for (const [k, v] of params) {
    const m = /^Filter\.(\d+)\.Value\.\d+$/.exec(k);
    if (m && idFilters.has(m[1]!)) ids.push(v);
  }
  return ids.length ? ids : undefined;
}

function actionOf(req: IncomingMessage, body: string): string {
  const fromBody = new URLSearchParams(body).get('Action');
  if (fromBody) return fromBody;
  const fromQuery = new URL(req.url ?? '/', 'http://proxy').searchParams.get('Action');
  return fromQuery ?? 'unknown';
}

/**
 * A fault-injecting HTTP proxy in front of an EC2 endpoint (the emulator), on 127.0.0.1: the fault is
 * mutable while it runs, optionally only for some Actions, and every request is logged with its Action and
 * the SDK's invocation id and attempt number, so a test can count calls and retries per lookup.
 */
export async function startEc2FaultProxy(upstream: string, options: Ec2FaultProxyOptions = {}): Promise<Ec2FaultProxy> {
  const target = new URL(upstream);
  const now = options.now ?? Date.now;
  let current: { fault: Ec2Fault; actions?: Set<string> } = { fault: { kind: 'none' } };
  let throttleTurn = 0;
  let seq = 0;
  const log: ProxiedRequest[] = [];

  const answer = (res: ServerResponse, entry: ProxiedRequest, status: number, body: string): void => {
    if (res.destroyed) return;
    entry.status = status;
    res.writeHead(status, { 'content-type': 'text/xml;charset=UTF-8', 'content-length': Buffer.byteLength(body) });
    res.end(body, () => (entry.endedAt = now()));
  };

  const forward = (req: IncomingMessage, res: ServerResponse, body: Buffer, entry: ProxiedRequest): void => {
    if (res.destroyed) return;
    const up = httpRequest(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
      (upRes) => {
        entry.status = upRes.statusCode ?? 502;
        res.writeHead(entry.status, upRes.headers);
        upRes.pipe(res);
        upRes.on('end', () => (entry.endedAt = now()));
      },
    );
    up.on('error', (e) => {
      // Once the upstream's headers went out, an error can only cut the response short.
      if (res.headersSent) res.destroy();
      else answer(res, entry, 502, ec2ErrorXml('ProxyUpstreamError', e.message));
    });
    res.on('close', () => {
      if (!res.writableFinished) up.destroy();
    });
    up.end(body);
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const text = body.toString('utf8');
      const action = actionOf(req, text);
      const fault = !current.actions || current.actions.has(action) ? current.fault : ({ kind: 'none' } as const);
      const entry: ProxiedRequest = { seq: ++seq, action, fault: fault.kind, receivedAt: now(), abandoned: false };
      const invocationId = headerOf(req, 'amz-sdk-invocation-id');
      if (invocationId) entry.invocationId = invocationId;
      const instanceIds = action === 'DescribeInstances' ? instanceIdsOf(text) : undefined;
      if (instanceIds) entry.instanceIds = instanceIds;
      const m = /attempt=(\d+);\s*max=(\d+)/.exec(headerOf(req, 'amz-sdk-request') ?? '');
      if (m) {
        entry.attempt = Number(m[1]);
        entry.maxAttempts = Number(m[2]);
      }
      log.push(entry);
      if (log.length > LOG_MAX) log.splice(0, log.length - LOG_MAX);
      res.on('close', () => {
        if (res.writableFinished) return;
        entry.abandoned = true;
        entry.endedAt = now();
      });
      switch (fault.kind) {
        case 'none':
          return forward(req, res, body, entry);
        case 'throttle': {
          const codes = fault.codes?.length ? fault.codes : ['RequestLimitExceeded'];
          const code = codes[throttleTurn++ % codes.length]!;
          return answer(
            res,
            entry,
            fault.status ?? 400,
            ec2ErrorXml(code, code === 'RequestLimitExceeded' ? 'Request limit exceeded.' : 'Rate exceeded'),
          );
        }
        case '5xx':
          return answer(
            res,
            entry,
            fault.status ?? 503,
            ec2ErrorXml(fault.code ?? 'Unavailable', 'The server is overloaded and cannot handle the request.'),
          );
        case 'hang':
          return;
        case 'slow': {
          const timer = setTimeout(() => forward(req, res, body, entry), fault.ms);
          res.on('close', () => clearTimeout(timer));
          return;
        }
      }
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, LOOPBACK, () => resolve());
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;

  return {
    url: `http://${LOOPBACK}:${port}`,
    setFault(fault, opts = {}) {
      current = opts.actions ? { fault, actions: new Set(opts.actions) } : { fault };
    },
    requests: () => log.map((e) => ({ ...e })),
    countsByAction(since = -Infinity, until = Infinity) {
      const out: Record<string, number> = {};
      for (const e of log) if (e.receivedAt >= since && e.receivedAt < until) out[e.action] = (out[e.action] ?? 0) + 1;
      return out;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface InvocationSummary {
  invocationId: string;
  action: string;
  /** Requests seen for this call (its attempts). */
  attempts: number;
  /** The SDK's configured maximum, from the header. */
  maxAttempts?: number;
  /** Arrival gaps between consecutive attempts, ms (backoff + client-side rate limiting). */
  gapsMs: number[];
}

/** Groups logged requests by SDK call (`amz-sdk-invocation-id`); requests without one are left out. Pure. */
export function invocationsOf(requests: ProxiedRequest[]): InvocationSummary[] {
  const byId = new Map<string, ProxiedRequest[]>();
  for (const r of requests) {
    if (!r.invocationId) continue;
    byId.set(r.invocationId, [...(byId.get(r.invocationId) ?? []), r]);
  }
  return [...byId.entries()].map(([invocationId, rs]) => {
    const sorted = [...rs].sort((a, b) => a.receivedAt - b.receivedAt);
    const s: InvocationSummary = {
      invocationId,
      action: sorted[0]!.action,
      attempts: sorted.length,
      gapsMs: sorted.slice(1).map((r, i) => r.receivedAt - sorted[i]!.receivedAt),
    };
    const max = sorted.find((r) => r.maxAttempts !== undefined)?.maxAttempts;
    if (max !== undefined) s.maxAttempts = max;
    return s;
  });
}
