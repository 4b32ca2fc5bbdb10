import { ForbiddenError, InvalidInputError, isCoreError, RejectedError, TransientError, type CoreError } from '@karpenter-operator/core';

// Error codes, from the EC2 API reference and the SDK's retry classification.
const THROTTLING = new Set([
  'Throttling',
  'ThrottlingException',
  'ThrottledException',
  'RequestThrottled',
  'RequestThrottledException',
  'RequestLimitExceeded',
  'TooManyRequestsException',
  'BandwidthLimitExceeded',
  'SlowDown',
  'PriorRequestNotComplete',
  'EC2ThrottledException',
]);
const AUTH = new Set([
  'UnauthorizedOperation',
  'AuthFailure',
  'AccessDenied',
  'AccessDeniedException',
  'InvalidClientTokenId',
  'SignatureDoesNotMatch',
  'IncompleteSignature',
  'ExpiredToken',
  'ExpiredTokenException',
  'RequestExpired',
  'MissingAuthenticationToken',
  'UnrecognizedClientException',
  'OptInRequired',
  'Blocked',
  'InvalidIdentityToken',
]);
const TRANSIENT = new Set([
  'InternalError',
  'InternalFailure',
  'ServiceUnavailable',
  'Unavailable',
  'RequestTimeout',
  'RequestTimeoutException',
  'TimeoutError',
  'NetworkingError',
  'AbortError',
  'IDPCommunicationError',
]);
const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

interface SdkErrorShape {
  name?: string;
  message?: string;
  code?: string;
  $fault?: 'client' | 'server';
  $retryable?: unknown;
  $metadata?: { httpStatusCode?: number };
}

/**
 * Maps an SDK error to a core error with the original as `cause`, so nothing AWS-shaped crosses the port.
 * Message: "<operation>: <code>: <message>".
 */
/**
 * The one error for a file the AWS credentials need that cannot be read: the shared credentials file, or the
 * projected ServiceAccount token a short-lived (STS) profile names in `web_identity_token_file`. Reason
 * `CloudCredentialsMissing` whether the pre-check or the SDK's credential chain finds it; not transient:
 * nothing changes until the pod mounts it.
 */
export function credentialFileUnreadable(at: {
  object: string;
  field: string;
  path: string;
  context?: string;
  cause: unknown;
}): InvalidInputError {
  const code = (at.cause as { code?: unknown } | null)?.code;
  const why = typeof code === 'string' ? ` (${code})` : '';
  return new InvalidInputError(
    'CloudCredentialsMissing',
    at.object,
    at.field,
    `${at.context ? `${at.context}: ` : ''}${at.path} is not readable${why}: mount the file the credentials name there (for short-lived credentials, the projected ServiceAccount token with audience openshift)`,
    { cause: at.cause },
  );
}

export function mapAwsError(operation: string, e: unknown): CoreError {
  if (isCoreError(e)) return e;
  const err = (typeof e === 'object' && e !== null ? e : {}) as SdkErrorShape;
  const name = err.name ?? 'Error';
  const detail = err.message ?? String(e);
  const cause = name !== 'Error' && !detail.startsWith(name) ? `${name}: ${detail}` : detail;
  const message = `${operation}: ${cause}`;
  const status = err.$metadata?.httpStatusCode;
  // A file the credential chain reads is not there (or not readable): typically the projected
  // ServiceAccount token a short-lived (STS) profile names in `web_identity_token_file`. Not transient:
  // nothing changes until the pod mounts it.
  const path = (e as { path?: unknown } | null)?.path;
  if ((err.code === 'ENOENT' || err.code === 'EACCES') && typeof path === 'string') {
    return credentialFileUnreadable({ object: 'AWS credentials', field: 'web_identity_token_file', path, context: operation, cause: e });
  }
  if (name === 'CredentialsProviderError') {
    return new InvalidInputError('CloudCredentialsInvalid', 'AWS credentials', 'credentials', message, { cause: e });
  }
  if (THROTTLING.has(name) || status === 429) return new TransientError(message, { cause: e });
  if (AUTH.has(name) || status === 401 || status === 403) return new ForbiddenError(message, { cause: e });
  if (
    TRANSIENT.has(name) ||
    (err.code !== undefined && NETWORK_CODES.has(err.code)) ||
    (status !== undefined && status >= 500) ||
    err.$fault === 'server' ||
    err.$retryable
  ) {
    return new TransientError(message, { cause: e });
  }
  if ((status !== undefined && status >= 400) || err.$fault === 'client') return new RejectedError(message, { cause: e });
  // No HTTP response at all: the request never completed (DNS, TLS, socket).
  return new TransientError(message, { cause: e });
}

/** Runs one AWS call (or a paginated series of them), mapping whatever it throws with `mapAwsError`. */
export async function callAws<T>(operation: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (e) {
    throw mapAwsError(operation, e);
  }
}
