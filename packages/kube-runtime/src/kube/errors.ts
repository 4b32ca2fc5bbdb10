import { ConflictError, CoreError, ForbiddenError, NotFoundError, RejectedError, TransientError } from '@karpenter-operator/core/ports';

/** Network error codes (Node's and the transport's) that mean "try again later". */
const transientCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ENOTFOUND',
  'CONNECT_TIMEOUT',
]);

/** Codes that mean the server could not be reached at all (as opposed to slow, overloaded or misconfigured). */
const connectionCodes = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'CONNECT_TIMEOUT']);

/**
 * True when `e` says the API server could not be connected to: refused, no route, no such host, connect
 * timeout. Not for 5xx, 429, a request timeout or a TLS failure: the server is there, just unwell.
 */
export function isConnectionFailure(e: unknown): boolean {
  const code = networkCode(e);
  return code !== undefined && connectionCodes.has(code);
}

/** The HTTP status of an `ApiException` (`code`) or a client-node watch error (`statusCode`), if any. */
export function httpStatusOf(e: unknown): number | undefined {
  if (typeof e !== 'object' || e === null) return undefined;
  const o = e as { code?: unknown; statusCode?: unknown };
  if (typeof o.code === 'number') return o.code;
  if (typeof o.statusCode === 'number') return o.statusCode;
  return undefined;
}

/** The API server's message: `Status.message` of the body, or the raw body text. */
export function serverMessage(e: unknown): string {
  const body = (e as { body?: unknown } | null)?.body;
  let parsed: unknown = body;
  if (typeof body === 'string') {
    try {
      parsed = JSON.parse(body);
    } catch {
      if (body.trim()) return body.trim().slice(0, 1_000);
    }
  }
  if (typeof parsed === 'object' && parsed !== null) {
    const message = (parsed as { message?: unknown }).message;
    if (typeof message === 'string' && message) return message;
  }
  // An ApiException's own message is only "HTTP <code>"-like; a watch error's message is the status text.
  if (body === undefined && e instanceof Error && e.message) return e.message;
  const status = httpStatusOf(e);
  if (status !== undefined) return `HTTP ${status}`;
  return e instanceof Error ? e.message : String(e);
}

function networkCode(e: unknown): string | undefined {
  for (let cur: unknown = e, depth = 0; cur && depth < 5; depth++) {
    const c = (cur as { code?: unknown }).code;
    if (typeof c === 'string') return c;
    cur = (cur as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * Maps an error from the API server or the network to a core error, with `action` as the message prefix,
 * e.g. "applying Deployment openshift-karpenter/karpenter: <server message>". Core errors pass through.
 *
 * 401/403 Forbidden · 404/410 NotFound (410 only outside watches: the object or page is gone) ·
 * 409 Conflict · 400/422 and other 4xx Rejected · 429/5xx, timeouts and network errors Transient.
 */
export function toCoreError(e: unknown, action: string): CoreError {
  if (e instanceof CoreError) return e;
  const status = httpStatusOf(e);
  const options = { cause: e };
  if (status !== undefined) {
    const msg = `${action}: ${serverMessage(e)}`;
    if (status === 401 || status === 403) return new ForbiddenError(msg, options);
    if (status === 404 || status === 410) return new NotFoundError(msg, options);
    if (status === 409) return new ConflictError(msg, options);
    if (status === 429 || status >= 500) return new TransientError(msg, options);
    if (status >= 400) return new RejectedError(msg, options);
  }
  const name = (e as { name?: unknown } | null)?.name;
  const code = networkCode(e);
  const detail = e instanceof Error ? e.message + (code && !e.message.includes(code) ? ` (${code})` : '') : String(e);
  if (name === 'TimeoutError' || name === 'AbortError' || (code && transientCodes.has(code))) {
    return new TransientError(`${action}: ${detail}`, options);
  }
  // Anything else (e.g. `fetch failed` without a known code) is treated as transient: retried with backoff.
  return new TransientError(`${action}: ${detail}`, options);
}
