import { silentLogger, TransientError, type Logger } from '@karpenter-operator/core';
import { describe, expect, it } from 'vitest';
import { GuestIdentity, GuestUnreachableError, guestProbe, isGuestUnreachableError } from './guest.js';

const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' });
const probe = (fail?: unknown) =>
  guestProbe({
    request: async () => {
      if (fail !== undefined) throw fail;
      return { major: '1' };
    },
    isConnectionFailure: (e) => (e as { code?: unknown }).code === 'ECONNREFUSED',
    describe: (e) => (e instanceof Error ? e.message : String(e)),
  });

describe('guestProbe', () => {
  it('resolves when the guest answers', async () => {
    await expect(probe()()).resolves.toBeUndefined();
  });

  it('a connection failure is GuestUnreachableError (a TransientError) with its cause', async () => {
    const e: unknown = await probe(refused)().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(GuestUnreachableError);
    expect(e).toBeInstanceOf(TransientError);
    expect(isGuestUnreachableError(e)).toBe(true);
    expect((e as Error).message).toBe('probing the guest API: connect ECONNREFUSED 127.0.0.1:6443');
    expect((e as Error).cause).toBe(refused);
  });

  it('any other failure is a plain Error: the guest is there', async () => {
    const e: unknown = await probe(new TransientError('503 Service Unavailable'))().catch((x: unknown) => x);
    expect(isGuestUnreachableError(e)).toBe(false);
    expect(e).not.toBeInstanceOf(TransientError);
    expect((e as Error).message).toBe('probing the guest API: 503 Service Unavailable');
  });
});

describe('GuestIdentity', () => {
  it('asks once, asks again after a failure, an empty answer or forget()', async () => {
    const answers: Array<() => Promise<{ status?: { userInfo?: { username?: string } } }>> = [
      async () => Promise.reject(new Error('connect ECONNREFUSED')),
      async () => ({ status: {} }),
      async () => ({ status: { userInfo: { username: 'system:serviceaccount:kube-system:karpenter-operator' } } }),
      async () => ({ status: { userInfo: { username: 'system:admin' } } }),
    ];
    let asked = 0;
    const warnings: string[] = [];
    const logger: Logger = { ...silentLogger, warn: (msg) => warnings.push(msg) };
    const id = new GuestIdentity({ logger, selfSubjectReview: () => answers[asked++]!() });
    expect(await id.usernames()).toBeUndefined();
    expect(warnings).toEqual(['cannot tell who this adapter is in the guest yet']);
    expect(await id.usernames()).toBeUndefined();
    expect(await id.usernames()).toEqual(['system:serviceaccount:kube-system:karpenter-operator']);
    expect(await id.usernames()).toEqual(['system:serviceaccount:kube-system:karpenter-operator']);
    expect(asked).toBe(3);
    id.forget();
    expect(await id.usernames()).toEqual(['system:admin']);
    expect(asked).toBe(4);
  });
});
