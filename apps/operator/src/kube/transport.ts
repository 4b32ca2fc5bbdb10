import {
  ApiException,
  HttpMethod,
  IsomorphicFetchHttpLibrary,
  RequestContext,
  Watch as ClientWatch,
  type KubeConfig,
} from '@kubernetes/client-node';
import type { Metrics } from '@karpenter-operator/core';
import { RuntimeMetrics } from '../runtime/metric-names.js';

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
 * (`.code`, raw `.body`). Stubbed in unit tests; `ClientNodeTransport` is the real one.
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

export interface ClientNodeTransportOptions {
  /** Per-request timeout (not for watches). Default 30 s. */
  requestTimeoutMs?: number;
  /**
   * Client-side inactivity limit of a watch stream. client-node's own default (30 s) is shorter than the
   * API server's bookmark interval (~1 min), so quiet watches would be cut every 30 s; the informer runs
   * its own staleness watchdog instead. Default 10 minutes.
   */
  watchInactivityTimeoutMs?: number;
  /**
   * `User-Agent` of every request and watch. The operator sends `karpenter-operator/<release version>
   * (<pod name>)`, client-go's `<binary>/<version> (...)` with the replica in place of os/arch: replicas
   * share a ServiceAccount, so this is what tells them apart in the API server's audit log. Default: the
   * fetch library's own.
   */
  userAgent?: string;
  /**
   * Called when the API server answers 401: re-reads credentials that may have rotated (the ServiceAccount
   * token file, `LoadedKubeConfig.refreshCredentials`) and returns true when they changed, in which case the
   * request is sent once more with them. A watch refused with 401 refreshes them for its next attempt.
   */
  onUnauthorized?: () => boolean;
}

/**
 * The kubeconfig as client-node's `Watch` sees it, with `User-Agent` added to the headers it builds: `Watch`
 * takes its headers from `applySecurityAuthentication` and offers no other way to set one.
 */
function withUserAgent(kc: KubeConfig, userAgent: string): KubeConfig {
  const view = Object.create(kc) as KubeConfig;
  view.applySecurityAuthentication = async (ctx: RequestContext) => {
    await kc.applySecurityAuthentication(ctx);
    ctx.setHeaderParam('User-Agent', userAgent);
  };
  return view;
}

/**
 * Requests through client-node's own HTTP stack (its `RequestContext`, `KubeConfig` authentication and TLS
 * dispatcher, and its fetch library) with plain JSON bodies. `KubernetesObjectApi` would send the same
 * requests, but its typed (de)serialisation turns timestamps into `Date`s and drops fields its generated
 * models do not know, which breaks comparing desired state with the raw objects the watches deliver.
 * Wrap it with `withRequestMetrics` (or build it with `createKubeTransport`).
 */
export class ClientNodeTransport implements KubeTransport {
  private readonly http = new IsomorphicFetchHttpLibrary();
  private readonly config: () => KubeConfig;
  private readonly requestTimeoutMs: number;
  private readonly watchInactivityTimeoutMs: number;
  private readonly userAgent: string | undefined;
  private readonly onUnauthorized: (() => boolean) | undefined;
  private gate: WriteGate | undefined;

  constructor(config: KubeConfig | (() => KubeConfig), options: ClientNodeTransportOptions = {}) {
    this.config = typeof config === 'function' ? config : () => config;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.watchInactivityTimeoutMs = options.watchInactivityTimeoutMs ?? 10 * 60_000;
    this.userAgent = options.userAgent;
    this.onUnauthorized = options.onUnauthorized;
  }

  fence(gate: WriteGate): void {
    this.gate = gate;
  }

  async request<T = unknown>(req: KubeRequest): Promise<T> {
    try {
      return await this.send<T>(req);
    } catch (e) {
      // A rotated token: the request was refused before it did anything, so sending it again is safe.
      if ((e as { code?: unknown }).code === 401 && this.onUnauthorized?.()) return this.send<T>(req);
      throw e;
    }
  }

  async watch(req: KubeWatchRequest): Promise<WatchHandle> {
    const kc = this.config();
    const w = new ClientWatch(this.userAgent ? withUserAgent(kc, this.userAgent) : kc);
    // See `watchInactivityTimeoutMs`: a private field of client-node's Watch, set if it exists.
    const internals = w as unknown as { requestTimeoutMs?: number };
    if (typeof internals.requestTimeoutMs === 'number') internals.requestTimeoutMs = this.watchInactivityTimeoutMs;
    const controller = await w.watch(
      req.path,
      req.query,
      (type, obj) => req.onEvent(type, obj),
      (err) => {
        if ((err as { statusCode?: unknown } | null)?.statusCode === 401) this.onUnauthorized?.();
        req.onDone(err ?? null);
      },
    );
    return { abort: () => controller.abort() };
  }

  private async send<T>(req: KubeRequest): Promise<T> {
    const kc = this.config();
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig has no current cluster');
    const url = new URL(cluster.server.replace(/\/+$/, '') + req.path);
    for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const ctx = new RequestContext(url.toString(), HttpMethod[req.method]);
    ctx.setHeaderParam('Accept', 'application/json');
    if (req.body !== undefined) {
      ctx.setHeaderParam('Content-Type', req.contentType ?? 'application/json');
      ctx.setBody(JSON.stringify(req.body));
    }
    await kc.applySecurityAuthentication(ctx);
    if (this.userAgent) ctx.setHeaderParam('User-Agent', this.userAgent);
    ctx.setSignal(AbortSignal.timeout(this.requestTimeoutMs));
    // Checked after the last await, as the request is handed to fetch: no time passes in between.
    const refused = req.method === 'GET' ? undefined : this.gate?.(req);
    if (refused !== undefined) throw new WriteFencedError(`not sent: ${req.method} ${req.path}: ${refused}`);
    const resp = await this.http.send(ctx).toPromise();
    const text = await resp.body.text();
    if (resp.httpStatusCode < 200 || resp.httpStatusCode > 299) {
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // not JSON: keep the raw text
      }
      throw new ApiException(resp.httpStatusCode, `HTTP ${resp.httpStatusCode}`, body, resp.headers);
    }
    return (text ? JSON.parse(text) : undefined) as T;
  }
}

/**
 * Counts every request and watch in `karpenter_operator_api_requests_total{verb,kind}` and failures in
 * `karpenter_operator_api_request_errors_total{verb,kind,code}`.
 */
export function withRequestMetrics(inner: KubeTransport, metrics: Metrics): KubeTransport {
  const failed = (verb: string, kind: string, e: unknown) => {
    const code = (e as { code?: unknown; statusCode?: unknown } | null)?.code;
    const status = typeof code === 'number' ? code : (e as { statusCode?: unknown } | null)?.statusCode;
    metrics.inc(RuntimeMetrics.apiErrors.name, { verb, kind, code: typeof status === 'number' ? String(status) : '0' });
  };
  return {
    ...(inner.fence ? { fence: (gate: WriteGate) => inner.fence!(gate) } : {}),
    async request<T = unknown>(req: KubeRequest): Promise<T> {
      metrics.inc(RuntimeMetrics.apiRequests.name, { verb: req.verb, kind: req.kind });
      try {
        return await inner.request<T>(req);
      } catch (e) {
        failed(req.verb, req.kind, e);
        throw e;
      }
    },
    async watch(req: KubeWatchRequest): Promise<WatchHandle> {
      metrics.inc(RuntimeMetrics.apiRequests.name, { verb: 'watch', kind: req.kind });
      try {
        return await inner.watch(req);
      } catch (e) {
        failed('watch', req.kind, e);
        throw e;
      }
    },
  };
}

/** The real transport for a kubeconfig, with request metrics. */
export function createKubeTransport(
  config: KubeConfig | (() => KubeConfig),
  options: ClientNodeTransportOptions & { metrics: Metrics },
): KubeTransport {
  return withRequestMetrics(new ClientNodeTransport(config, options), options.metrics);
}
