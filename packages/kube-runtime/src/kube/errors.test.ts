import { ConflictError, CoreError, ForbiddenError, NotFoundError, RejectedError, TransientError } from '@karpenter-operator/core';
import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { isConnectionFailure, serverMessage, toCoreError } from './errors.js';
import { apiError } from './testing/fake-transport.js';

const action = 'applying Deployment openshift-karpenter/karpenter';

describe('toCoreError', () => {
  it.each([
    { name: '401', error: apiError(401, 'Unauthorized'), type: ForbiddenError, message: `${action}: Unauthorized` },
    {
      name: '403',
      error: apiError(403, 'forbidden: User "x" cannot patch'),
      type: ForbiddenError,
      message: `${action}: forbidden: User "x" cannot patch`,
    },
    { name: '404', error: apiError(404, 'not found'), type: NotFoundError, message: `${action}: not found` },
    {
      name: '409',
      error: apiError(409, 'the object has been modified'),
      type: ConflictError,
      message: `${action}: the object has been modified`,
    },
    { name: '400', error: apiError(400, 'bad request'), type: RejectedError, message: `${action}: bad request` },
    {
      name: '422 (CEL)',
      error: apiError(422, 'spec: Invalid value: "object": name must be default'),
      type: RejectedError,
      message: `${action}: spec: Invalid value: "object": name must be default`,
    },
    { name: '415', error: apiError(415, 'unsupported media type'), type: RejectedError, message: `${action}: unsupported media type` },
    { name: '429', error: apiError(429, 'too many requests'), type: TransientError, message: `${action}: too many requests` },
    { name: '500', error: apiError(500, 'internal error'), type: TransientError, message: `${action}: internal error` },
    { name: '504', error: apiError(504, 'timeout'), type: TransientError, message: `${action}: timeout` },
    {
      name: 'body as parsed object',
      error: new ApiException(403, 'x', { message: 'nope' }, {}),
      type: ForbiddenError,
      message: `${action}: nope`,
    },
    {
      name: 'non-JSON body',
      error: new ApiException(502, 'x', '<html>bad gateway</html>', {}),
      type: TransientError,
      message: `${action}: <html>bad gateway</html>`,
    },
    { name: 'empty body', error: new ApiException(503, 'x', '', {}), type: TransientError, message: `${action}: HTTP 503` },
    {
      name: 'watch error with statusCode',
      error: Object.assign(new Error('Forbidden'), { statusCode: 403 }),
      type: ForbiddenError,
      message: `${action}: Forbidden`,
    },
    {
      name: 'ECONNREFUSED in cause',
      error: Object.assign(new TypeError('fetch failed'), {
        cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' }),
      }),
      type: TransientError,
      message: `${action}: fetch failed (ECONNREFUSED)`,
    },
    {
      name: 'timeout',
      error: new DOMException('The operation was aborted due to timeout', 'TimeoutError'),
      type: TransientError,
      message: `${action}: The operation was aborted due to timeout`,
    },
    {
      name: 'ECONNRESET',
      error: Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }),
      type: TransientError,
      message: `${action}: socket hang up (ECONNRESET)`,
    },
  ])('$name', ({ error, type, message }) => {
    const mapped = toCoreError(error, action);
    expect(mapped).toBeInstanceOf(type);
    expect(mapped.message).toBe(message);
    expect(mapped.cause).toBe(error);
  });

  it('passes core errors through unchanged', () => {
    const e = new RejectedError('already mapped');
    expect(toCoreError(e, action)).toBe(e);
  });

  it('never returns a vendor error', () => {
    expect(toCoreError(new Error('weird'), action)).toBeInstanceOf(CoreError);
    expect(toCoreError('a string', action)).toBeInstanceOf(TransientError);
  });
});

describe('serverMessage', () => {
  it('truncates huge raw bodies', () => {
    expect(serverMessage(new ApiException(500, 'x', 'y'.repeat(5_000), {}))).toHaveLength(1_000);
  });
});

describe('isConnectionFailure', () => {
  const fetchFailed = (code: string) => Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error(code), { code }) });
  it.each([
    { name: 'refused', e: fetchFailed('ECONNREFUSED'), want: true },
    { name: 'no route', e: fetchFailed('EHOSTUNREACH'), want: true },
    { name: 'no such host', e: fetchFailed('ENOTFOUND'), want: true },
    { name: 'connect timeout', e: Object.assign(new Error('no connection within 10000 ms'), { code: 'CONNECT_TIMEOUT' }), want: true },
    { name: 'reset mid-request (the server was there)', e: fetchFailed('ECONNRESET'), want: false },
    { name: 'TLS failure', e: fetchFailed('UNABLE_TO_VERIFY_LEAF_SIGNATURE'), want: false },
    { name: '503', e: Object.assign(new Error('HTTP 503'), { code: 503 }), want: false },
    { name: 'request timeout', e: Object.assign(new Error('timed out'), { name: 'TimeoutError' }), want: false },
  ])('$name', ({ e, want }) => {
    expect(isConnectionFailure(e)).toBe(want);
  });
});
