import { ApiException } from '@kubernetes/client-node';
import type { KubeRequest, KubeTransport, KubeWatchRequest, WatchHandle } from '../transport.js';

export interface OpenWatch extends KubeWatchRequest {
  aborted: boolean;
  /** Sends one event, as the API server would. */
  send(type: string, object: unknown): void;
  /** Ends the stream (`null` = the server closed it). */
  end(error?: unknown): void;
}

type Responder = (req: KubeRequest) => unknown;

/** A stub API server for unit tests: answers requests from handlers, records them, and opens fake watches. */
export class FakeTransport implements KubeTransport {
  readonly requests: KubeRequest[] = [];
  readonly watches: OpenWatch[] = [];
  /** Errors (or results) the next `watch()` calls reject (or not) with, in order. */
  readonly watchFailures: unknown[] = [];
  private readonly responders: Array<{ match: (r: KubeRequest) => boolean; respond: Responder; once: boolean }> = [];

  /** Answers matching requests with `respond` (a value, or a function; throwing a value rejects). */
  on(
    match: Partial<Pick<KubeRequest, 'method' | 'verb' | 'path'>> | ((r: KubeRequest) => boolean),
    respond: Responder | unknown,
    once = false,
  ): this {
    const m =
      typeof match === 'function'
        ? match
        : (r: KubeRequest) => Object.entries(match).every(([k, v]) => (r as unknown as Record<string, unknown>)[k] === v);
    this.responders.push({ match: m, respond: typeof respond === 'function' ? (respond as Responder) : () => respond, once });
    return this;
  }

  once(match: Parameters<FakeTransport['on']>[0], respond: Responder | unknown): this {
    return this.on(match, respond, true);
  }

  async request<T = unknown>(req: KubeRequest): Promise<T> {
    this.requests.push(structuredClone(req));
    // One-shot answers first, in the order given; then the latest standing answer (so a test can override a default).
    const i = this.responders.findIndex((r) => r.once && r.match(req));
    if (i >= 0) {
      const [r] = this.responders.splice(i, 1);
      return structuredClone(await r!.respond(req)) as T;
    }
    for (let j = this.responders.length - 1; j >= 0; j--) {
      const r = this.responders[j]!;
      if (r.match(req)) return structuredClone(await r.respond(req)) as T;
    }
    throw apiError(404, `no stub for ${req.method} ${req.path}`);
  }

  async watch(req: KubeWatchRequest): Promise<WatchHandle> {
    if (this.watchFailures.length) {
      const f = this.watchFailures.shift();
      if (f !== undefined) throw f;
    }
    let done = false;
    const w: OpenWatch = {
      ...req,
      aborted: false,
      send: (type, object) => {
        if (!done && !w.aborted) req.onEvent(type, structuredClone(object));
      },
      end: (error = null) => {
        if (done) return;
        done = true;
        req.onDone(error);
      },
    };
    this.watches.push(w);
    return {
      abort: () => {
        w.aborted = true;
        done = true;
      },
    };
  }

  /** Requests other than reads (what "zero writes" counts). */
  writes(): KubeRequest[] {
    return this.requests.filter((r) => r.method !== 'GET');
  }

  activeWatch(): OpenWatch | undefined {
    return this.watches.filter((w) => !w.aborted).at(-1);
  }
}

/** An `ApiException` as client-node raises it, with a Status body. */
export function apiError(code: number, message: string, reason = 'Failure'): ApiException<unknown> {
  return new ApiException(
    code,
    `HTTP ${code}`,
    JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message, reason, code }),
    {},
  );
}
