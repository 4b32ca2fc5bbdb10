import { describeError, TransientError, type Logger } from '@karpenter-operator/core';

/**
 * The guest API could not be connected to at all (refused, no route, no such host, connect timeout). Only
 * this counts towards releasing the HCP finalizer during deletion; a cache that has not synced yet, or a
 * slow or misconfigured guest, fails with other errors, which are retried and never release anything.
 */
export class GuestUnreachableError extends TransientError {}

export const isGuestUnreachableError = (e: unknown): e is GuestUnreachableError => e instanceof GuestUnreachableError;

export interface GuestProbeDeps {
  /** One live request to the guest API (`GET /version`), not a cache read: a cache answers after the guest is gone. */
  request: () => Promise<unknown>;
  /** True when an error of `request` says the API server could not be connected to at all. */
  isConnectionFailure: (e: unknown) => boolean;
  /** Maps an error of `request` to a readable one (the transport's error mapping). */
  describe: (e: unknown) => string;
}

/**
 * The finalizer-release rule's probe: resolves when the guest answers; throws `GuestUnreachableError` when it
 * cannot be connected to; any other failure (a 5xx, a timeout, TLS) is a plain `Error`: the guest is
 * there and may still hold instances.
 */
export function guestProbe(deps: GuestProbeDeps): () => Promise<void> {
  return async () => {
    try {
      await deps.request();
    } catch (e) {
      const message = `probing the guest API: ${deps.describe(e)}`;
      if (deps.isConnectionFailure(e)) throw new GuestUnreachableError(message, { cause: e });
      throw new Error(message, { cause: e });
    }
  };
}

export interface SelfSubjectReviewStatus {
  status?: { userInfo?: { username?: string } };
}

/**
 * Who the sidecar is in the guest, as the guest's API server sees it (a SelfSubjectReview): the one identity
 * allowed to change the managed NodeClasses. Learnt lazily and remembered; asked again after a failure or
 * an empty answer, and after `forget()` (the guest kubeconfig changed and may name another identity).
 */
export class GuestIdentity {
  private pending: Promise<string[] | undefined> | undefined;

  constructor(
    private readonly deps: {
      /** Creates a SelfSubjectReview in the guest. */
      selfSubjectReview: () => Promise<SelfSubjectReviewStatus>;
      logger: Logger;
    },
  ) {}

  /** The usernames (one) allowed to write the managed spec; undefined while they cannot be learnt. */
  usernames(): Promise<string[] | undefined> {
    return (this.pending ??= this.deps.selfSubjectReview().then(
      (r) => {
        const user = r.status?.userInfo?.username;
        if (!user) this.pending = undefined;
        return user ? [user] : undefined;
      },
      (e: unknown) => {
        this.pending = undefined;
        this.deps.logger.warn('cannot tell who this adapter is in the guest yet', { error: describeError(e) });
        return undefined;
      },
    ));
  }

  forget(): void {
    this.pending = undefined;
  }
}
