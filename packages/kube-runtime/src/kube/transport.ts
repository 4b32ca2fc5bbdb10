import { STATUS_CODES, type ClientRequest, type IncomingMessage } from 'node:http';
import type { RequestOptions } from 'node:https';
import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import { ApiException, type KubeConfig } from './client-node.js';
import type { Metrics } from '@karpenter-operator/core/ports';
import { dropCachedAgent, httpsOptionsOf, keepAlive, retire, send, tlsMaterialDigest } from './connections.js';
import { withRequestMetrics } from './request-metrics.js';
import { flatHeaders, LineSplitter, readAll, sharedParseTurns, type ParseTurns } from './response-body.js';

export type QueryParams = Record<string, string | number | boolean | undefined>;

export interface KubeRequest {
  /** Metric label: get, list, create, apply, patch, update, delete, discovery. */
  verb: string;
  /** Metric label: the kind the request is about (`-` for discovery). */
  kind: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Absolute API path, e.g. `/apis/apps/v1/namespaces/x/deployments/y`. */
  path: string;
  query?: QueryParams;
  /** Sent as JSON. */
  body?: unknown;
  /** Defaults to `application/json` when there is a body. */
  contentType?: string;
}

export interface KubeWatchRequest {
  kind: string;
  path: string;
  query: QueryParams;
  /** One decoded watch event: `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`. */
  onEvent(type: string, object: unknown): void;
  /** The stream ended: `null` when the server closed it, otherwise the error. Called at most once. */
  onDone(error: unknown): void;
}

export interface WatchHandle {
  abort(): void;
}

/** Decides whether a write may be sent now: `undefined` to send it, otherwise the reason it may not. */
export type WriteGate = (req: KubeRequest) => string | undefined;

/** A write refused by the transport's `WriteGate`; it never reached the API server. */
export class WriteFencedError extends Error {
  override readonly name = 'WriteFencedError';
}

export function isWriteFencedError(e: unknown): e is WriteFencedError {
  return e instanceof WriteFencedError;
}

/**
 * The HTTP seam of the Kubernetes adapters: plain JSON in and out, errors as client-node `ApiException`
 * (`.code`, parsed `.body`). Stubbed in unit tests; `NodeHttpTransport` is the real one.
 */
export interface KubeTransport {
  request<T = unknown>(req: KubeRequest): Promise<T>;
  watch(req: KubeWatchRequest): Promise<WatchHandle>;
  /**
   * Installs `gate`, checked right before every write (any method but GET) is sent; a refused write fails
   * with `WriteFencedError`. Leader election fences the transport it holds its Lease on, so that a replica
   * whose Lease may have passed to another cannot write, even before its renew loop notices (e.g. after
   * the process was frozen). Optional: stubs need not implement it.
   */
  fence?(gate: WriteGate): void;
}

export interface KubeTransportOptions {
  /** Per-request timeout, from sending to the last byte of the response (not for watches). Default 30 s. */
  requestTimeoutMs?: number;
  /**
   * Limit on opening a connection (TCP and TLS), for requests and watches: past it the request fails with
   * code `CONNECT_TIMEOUT`, which `isConnectionFailure` counts as the server being unreachable. Default 10 s.
   */
  connectTimeoutMs?: number;
  /**
   * Client-side inactivity limit of a watch stream (until its response starts, then between two chunks). It
   * is longer than the API server's bookmark interval (~1 min), so quiet watches are not cut; the informer
   * runs its own staleness watchdog as well. Default 10 minutes.
   */
  watchInactivityTimeoutMs?: number;
  /**
   * `User-Agent` of every request and watch. The operator sends `karpenter-operator/<release version>
   * (<pod name>)`, client-go's `<binary>/<version> (...)` with the replica in place of os/arch: replicas
   * share a ServiceAccount, so this is what tells them apart in the API server's audit log. Default: none.
   */
  userAgent?: string;
  /**
   * Called when the API server answers 401: re-reads credentials that may have rotated (the ServiceAccount
   * token file, `LoadedKubeConfig.refreshCredentials`) and returns true when they changed, in which case the
   * request is sent once more with them. A watch refused with 401 refreshes them for its next attempt.
   */
  onUnauthorized?: () => boolean;
  /**
   * Called as work arrives, before it is handled: each chunk of a watch stream and the end of each response.
   * The operator's event-loop lag monitor reads the loop iteration it is called in (`EventLoopLag.wake`).
   */
  onActivity?: () => void;
  /** Paces the parsing of response bodies (see `ParseTurns`). Default: the one shared by the process. */
  parseTurns?: ParseTurns;
}

/** No response (or, for a watch, no data) within the time allowed; `toCoreError` maps it to a transient error. */
export class RequestTimeoutError extends Error {
  override readonly name = 'TimeoutError';
  readonly code = 'ETIMEDOUT';
}

/** No connection (TCP and TLS) within `connectTimeoutMs`: the server is unreachable, for `isConnectionFailure`. */
export class ConnectTimeoutError extends Error {
  override readonly name = 'ConnectTimeoutError';
  readonly code = 'CONNECT_TIMEOUT';
}

/** Fails `client` with a `ConnectTimeoutError` when the new connection it is given is not open within `ms`. */
function limitConnect(client: ClientRequest, ms: number, what: string): void {
  client.once('socket', (socket: Socket) => {
    if (!socket.connecting) return; // a kept-alive connection
    const timer = setTimeout(() => client.destroy(new ConnectTimeoutError(`${what}: no connection within ${ms} ms`)), ms);
    const clear = () => clearTimeout(timer);
    socket.once(socket instanceof TLSSocket ? 'secureConnect' : 'connect', clear);
    socket.once('close', clear);
  });
}

/** `abort()` of a watch handle: what `onDone` receives when the watch was still open. */
function watchAborted(): Error {
  return Object.assign(new Error('the watch was aborted'), { name: 'AbortError' });
}

/**
 * An API server's answer other than 2xx to a watch, shaped like client-node's `Watch` error: `statusCode`,
 * and the parsed `Status` in `body` (so `serverMessage` reads it).
 */
function watchRefused(status: number, statusMessage: string | undefined, body: unknown): Error {
  const text = statusMessage || STATUS_CODES[status] || 'Internal Server Error';
  return Object.assign(new Error(text), { statusCode: status, body });
}

function parseBody(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text; // not JSON: the raw text
  }
}

interface Prepared {
  url: URL;
  options: RequestOptions;
}

/**
 * Requests and watches on `node:https` (`node:http` for an `http:` server), with TLS, credentials and
 * the agent from client-node's `KubeConfig.applyToHTTPSOptions`: the CA, client certificate and key,
 * `insecure-skip-tls-verify`, bearer tokens (also from token files and exec plugins), basic auth, and an
 * agent per cluster and user, through the cluster's `proxy-url` when it has one. The same `node:https` the
 * AWS SDK uses: one HTTP stack in the process (client-node's own requests and `Watch` go through undici,
 * which the operator never loads). Bodies are plain JSON: `KubernetesObjectApi` would send the same
 * requests, but its typed (de)serialisation turns timestamps into `Date`s and drops fields its generated
 * models do not know, which breaks comparing desired state with the raw objects the watches deliver.
 * Wrap it with `withRequestMetrics` (or build it with `createKubeTransport`).
 */
export class NodeHttpTransport implements KubeTransport {
  private readonly config: () => KubeConfig;
  private readonly requestTimeoutMs: number;
  private readonly connectTimeoutMs: number;
  private readonly watchInactivityTimeoutMs: number;
  private readonly userAgent: string | undefined;
  private readonly onUnauthorized: (() => boolean) | undefined;
  private readonly onActivity: () => void;
  private readonly parseTurns: ParseTurns;
  private gate: WriteGate | undefined;
  /** The digest of the TLS material each agent was made with (see `prepare`). */
  private readonly agentMaterial = new WeakMap<object, string>();

  constructor(config: KubeConfig | (() => KubeConfig), options: KubeTransportOptions = {}) {
    this.config = typeof config === 'function' ? config : () => config;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
    this.watchInactivityTimeoutMs = options.watchInactivityTimeoutMs ?? 10 * 60_000;
    this.userAgent = options.userAgent;
    this.onUnauthorized = options.onUnauthorized;
    this.onActivity = options.onActivity ?? (() => {});
    this.parseTurns = options.parseTurns ?? sharedParseTurns;
  }

  fence(gate: WriteGate): void {
    this.gate = gate;
  }

  async request<T = unknown>(req: KubeRequest): Promise<T> {
    try {
      return await this.sendOnce<T>(req);
    } catch (e) {
      // A rotated token: the request was refused before it did anything, so sending it again is safe.
      if ((e as { code?: unknown }).code === 401 && this.onUnauthorized?.()) return this.sendOnce<T>(req);
      throw e;
    }
  }

  private async sendOnce<T>(req: KubeRequest): Promise<T> {
    try {
      return await this.send<T>(req);
    } catch (e) {
      // A kept-alive connection the server closed while it sat idle: a read is safe to send again at once.
      if (req.method === 'GET' && (e as { reusedSocket?: unknown }).reusedSocket === true) return this.send<T>(req);
      throw e;
    }
  }

  /**
   * Resolves once the API server has answered 200 (the stream is open), or after `onDone` when it could not be
   * opened: a caller may take a resolved watch as proof that the server is reachable (the informers do).
   */
  async watch(req: KubeWatchRequest): Promise<WatchHandle> {
    const { url, options } = await this.prepare('GET', req.path, { watch: 'true', ...req.query }, undefined);
    let finished = false;
    let timer: NodeJS.Timeout | undefined;
    let client: ClientRequest | undefined = undefined;
    const handle: WatchHandle = { abort: () => finish(watchAborted()) };
    let opened!: (h: WatchHandle) => void;
    const result = new Promise<WatchHandle>((resolve) => (opened = resolve));
    const finish = (error: unknown) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      client?.destroy();
      req.onDone(error);
      opened(handle);
    };
    const armTimer = () => {
      clearTimeout(timer);
      timer = setTimeout(
        () => finish(new RequestTimeoutError(`watch ${req.path}: nothing received for ${this.watchInactivityTimeoutMs} ms`)),
        this.watchInactivityTimeoutMs,
      );
      timer.unref();
    };
    armTimer();
    client = send(url, options);
    limitConnect(client, this.connectTimeoutMs, `watch ${req.path}`);
    client.on('error', finish);
    client.on('response', (res) => {
      if (res.statusCode !== 200) {
        void readAll(res).then((text) => {
          if (res.statusCode === 401) this.onUnauthorized?.();
          finish(watchRefused(res.statusCode ?? 0, res.statusMessage, parseBody(text)));
        }, finish);
        return;
      }
      armTimer();
      opened(handle);
      const lines = new LineSplitter((line) => {
        if (finished) return;
        let event: { type?: unknown; object?: unknown };
        try {
          event = JSON.parse(line) as typeof event;
        } catch {
          return; // not an event (as client-node's Watch does: skipped)
        }
        if (typeof event?.type !== 'string') return;
        try {
          req.onEvent(event.type, event.object);
        } catch (e) {
          finish(e); // a handler's failure ends this watch (the caller restarts it), never the process
        }
      });
      res.on('data', (chunk: Buffer) => {
        this.onActivity();
        armTimer();
        lines.push(chunk);
      });
      res.on('end', () => {
        lines.end();
        finish(null);
      });
      res.on('error', finish);
      res.on('close', () => finish(res.complete ? null : new Error(`watch ${req.path}: the connection closed mid-stream`)));
    });
    client.end();
    return result;
  }

  /** URL and options of one request: the kubeconfig's TLS, credentials and agent, then our headers. */
  private async prepare(
    method: KubeRequest['method'],
    path: string,
    query: QueryParams | undefined,
    contentType: string | undefined,
  ): Promise<Prepared> {
    const kc = this.config();
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig has no current cluster');
    const url = new URL(cluster.server.replace(/\/+$/, '') + path);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    let tls = await httpsOptionsOf(kc);
    // client-node caches one agent per cluster and user, made with the TLS material of its first request, while
    // the material is read again on every request (files, exec plugins): a rotated client certificate or CA
    // would never reach a new connection. When the material changed, the cached agent is dropped for one made
    // with it, and the old one is retired: requests under way on it finish, then its connections close. A request
    // that took the old agent while another was replacing it takes the options again, never the old agent.
    const agent = tls.agent;
    if (typeof agent === 'object') {
      const material = tlsMaterialDigest(tls);
      const known = this.agentMaterial.get(agent);
      if (known === undefined) this.agentMaterial.set(agent, material);
      else if (known !== material && dropCachedAgent(kc, cluster, agent)) {
        retire(agent);
        tls = await httpsOptionsOf(kc);
        if (typeof tls.agent === 'object' && !this.agentMaterial.has(tls.agent)) this.agentMaterial.set(tls.agent, tlsMaterialDigest(tls));
      }
    }
    const headers: Record<string, string> = { ...(tls.headers as Record<string, string>), Accept: 'application/json' };
    if (contentType) headers['Content-Type'] = contentType;
    if (this.userAgent) headers['User-Agent'] = this.userAgent;
    // Only what the request needs: the agent carries the TLS options (they override a request's own).
    const options: RequestOptions = { method, headers, agent: keepAlive(tls.agent) };
    if (tls.auth) options.auth = tls.auth;
    return { url, options };
  }

  private async send<T>(req: KubeRequest): Promise<T> {
    const body = req.body === undefined ? undefined : Buffer.from(JSON.stringify(req.body));
    const { url, options } = await this.prepare(
      req.method,
      req.path,
      req.query,
      body ? (req.contentType ?? 'application/json') : undefined,
    );
    if (body) (options.headers as Record<string, string>)['Content-Length'] = String(body.length);
    // Checked after the last await, as the request is handed to node:http: no time passes in between.
    const refused = req.method === 'GET' ? undefined : this.gate?.(req);
    if (refused !== undefined) throw new WriteFencedError(`not sent: ${req.method} ${req.path}: ${refused}`);
    const { status, headers, text } = await new Promise<{ status: number; headers: IncomingMessage['headers']; text: string }>(
      (resolve, reject) => {
        const client = send(url, options);
        limitConnect(client, this.connectTimeoutMs, `${req.method} ${req.path}`);
        const timer = setTimeout(
          () =>
            client.destroy(new RequestTimeoutError(`${req.method} ${req.path}: no complete response within ${this.requestTimeoutMs} ms`)),
          this.requestTimeoutMs,
        );
        let answered = false;
        const fail = (e: unknown) => {
          clearTimeout(timer);
          // Only a kept-alive connection that the server had closed while it sat idle: nothing answered, and
          // not our own timeout (sending a timed-out read again would double its wait and the server's load).
          if (client.reusedSocket && !answered && !(e instanceof RequestTimeoutError) && e && typeof e === 'object')
            Object.assign(e, { reusedSocket: true });
          reject(e instanceof Error ? e : new Error(String(e)));
        };
        client.on('error', fail);
        client.on('response', (res) => {
          answered = true;
          res.once('end', this.onActivity); // the body is parsed in this iteration (or waits for its parse turn)
          readAll(res).then((t) => {
            clearTimeout(timer);
            resolve({ status: res.statusCode ?? 0, headers: res.headers, text: t });
          }, fail);
        });
        client.end(body);
      },
    );
    if (status < 200 || status > 299) throw new ApiException(status, `HTTP ${status}`, parseBody(text), flatHeaders(headers));
    if (!text) return undefined as T;
    await this.parseTurns.take(text.length);
    return JSON.parse(text) as T;
  }
}

/** The real transport for a kubeconfig, with request metrics. */
export function createKubeTransport(
  config: KubeConfig | (() => KubeConfig),
  options: KubeTransportOptions & { metrics: Metrics },
): KubeTransport {
  return withRequestMetrics(new NodeHttpTransport(config, options), options.metrics);
}
