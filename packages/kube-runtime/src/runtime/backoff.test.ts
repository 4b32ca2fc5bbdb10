import { ApiException } from '@kubernetes/client-node';
import { TransientError } from '@karpenter-operator/core';
import { describe, expect, it } from 'vitest';
import { retryAfterMs, retryDelay, type BackoffPolicy } from './backoff.js';

const NOW = Date.UTC(2026, 11, 3, 12, 0, 0);
const throttled = (retryAfter?: string) =>
  new ApiException(
    429,
    'HTTP 429',
    { kind: 'Status', message: 'Too many requests' },
    retryAfter === undefined ? {} : { 'retry-after': retryAfter },
  );

describe('retryAfterMs', () => {
  it.each([
    { name: 'delay-seconds', error: throttled('3'), want: 3_000 },
    { name: 'zero seconds', error: throttled('0'), want: 0 },
    { name: 'an HTTP date 5 s ahead', error: throttled(new Date(NOW + 5_000).toUTCString()), want: 5_000 },
    { name: 'an HTTP date in the past', error: throttled(new Date(NOW - 5_000).toUTCString()), want: 0 },
    { name: 'no header', error: throttled(), want: undefined },
    { name: 'garbage', error: throttled('soon'), want: undefined },
    { name: 'negative seconds are not delay-seconds', error: throttled('-1'), want: undefined },
    {
      name: 'on the cause of a core error',
      error: new TransientError('applying Deployment: Too many requests', { cause: throttled('2') }),
      want: 2_000,
    },
    { name: 'a network error', error: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), want: undefined },
    { name: 'not an error', error: 'boom', want: undefined },
  ])('$name', ({ error, want }) => {
    expect(retryAfterMs(error, NOW)).toBe(want);
  });
});

describe('retryDelay', () => {
  const policy: BackoffPolicy = { baseMs: 200, capMs: 60_000, jitter: 0.2 };
  it.each([
    { name: 'Retry-After replaces a short backoff (never sooner than asked)', failures: 1, error: throttled('1'), random: 0, want: 1_000 },
    { name: 'Retry-After replaces a long backoff (back as soon as asked)', failures: 12, error: throttled('1'), random: 0, want: 1_000 },
    { name: 'Retry-After spread by up to the jitter, later only', failures: 1, error: throttled('1'), random: 0.999_999, want: 1_200 },
    { name: 'Retry-After capped', failures: 1, error: throttled('3600'), random: 0, want: 60_000 },
    { name: 'Retry-After 0 is no instruction: backoff', failures: 2, error: throttled('0'), random: 0, want: 400 },
    { name: 'no Retry-After: exponential backoff', failures: 3, error: throttled(), random: 0, want: 800 },
    { name: 'a network error: exponential backoff', failures: 1, error: new Error('fetch failed'), random: 0, want: 200 },
  ])('$name', ({ failures, error, random, want }) => {
    expect(retryDelay(failures, policy, error, NOW, () => random)).toBe(want);
  });
});
