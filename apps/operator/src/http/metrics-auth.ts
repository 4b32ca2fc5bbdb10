import { createHash } from 'node:crypto';
import { describeError, type Clock, type Logger } from '@karpenter-operator/core';
import type { KubeTransport } from '@karpenter-operator/kube-runtime';

/** What a request to the secured metrics endpoint is answered with when it may not pass. */
export interface Refusal {
  status: 401 | 403 | 500;
  message: string;
}

interface UserInfo {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

interface TokenReviewStatus {
  authenticated?: boolean;
  user?: UserInfo;
  error?: string;
}

interface SubjectAccessReviewStatus {
  allowed?: boolean;
  denied?: boolean;
  reason?: string;
  evaluationError?: string;
}

/**
 * Cache lifetimes of controller-runtime's `filters.WithAuthenticationAndAuthorization` (its delegating
 * authenticator and authorizer): a token's review for 1 minute, an allowed decision for 5, a denied one for
 * 30 s. Prometheus scrapes every 30 s, so a steady scrape costs the API server one TokenReview a minute.
 */
export const MetricsAuthCache = { tokenMs: 60_000, allowMs: 5 * 60_000, denyMs: 30_000 } as const;

/**
 * Authenticates and authorises scrapes of the metrics endpoint against the API server, as
 * controller-runtime's `WithAuthenticationAndAuthorization` filter does: the bearer token is checked with a
 * TokenReview (no anonymous access: no token or an invalid one is 401), then the user it names is checked
 * with a SubjectAccessReview for the non-resource URL — `nonResourceAttributes.path` the request's path,
 * `verb` the lower-cased HTTP method (`get` for `GET /metrics`); not allowed is 403. The operator's
 * ServiceAccount needs `create` on `tokenreviews` and `subjectaccessreviews` (ClusterRole
 * `karpenter-operator-metrics-auth`); the scraper needs `get` on the non-resource URL `/metrics`.
 */
export class DelegatingMetricsAuth {
  private readonly tokens = new Map<string, { user: UserInfo | undefined; until: number }>();
  private readonly decisions = new Map<string, { allowed: boolean; reason: string; until: number }>();

  constructor(private readonly deps: { transport: KubeTransport; clock: Clock; logger: Logger }) {}

  /** `undefined` when the request may pass, otherwise the status and message to answer with. */
  async check(authorization: string | undefined, method: string, path: string): Promise<Refusal | undefined> {
    const token = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
    if (!token) return { status: 401, message: 'Unauthorized: a bearer token is required' };
    let user: UserInfo | undefined;
    try {
      user = await this.authenticate(token);
    } catch (e) {
      this.deps.logger.error('metrics: TokenReview failed', { error: describeError(e) });
      return { status: 500, message: 'Authentication failed' };
    }
    if (!user) return { status: 401, message: 'Unauthorized' };
    const verb = method.toLowerCase();
    let decision: { allowed: boolean; reason: string };
    try {
      decision = await this.authorize(user, verb, path);
    } catch (e) {
      this.deps.logger.error('metrics: SubjectAccessReview failed', { user: user.username, error: describeError(e) });
      return { status: 500, message: `Authorization for user ${user.username} failed` };
    }
    if (!decision.allowed) {
      this.deps.logger.debug('metrics: scrape denied', { user: user.username, verb, path, reason: decision.reason });
      return { status: 403, message: `Authorization denied for user ${user.username}: ${verb} on ${path} is not allowed` };
    }
    return undefined;
  }

  private async authenticate(token: string): Promise<UserInfo | undefined> {
    const key = createHash('sha256').update(token).digest('hex');
    const now = this.deps.clock.now();
    const cached = this.tokens.get(key);
    if (cached && cached.until > now) return cached.user;
    const review = await this.deps.transport.request<{ status?: TokenReviewStatus }>({
      verb: 'create',
      kind: 'TokenReview',
      method: 'POST',
      path: '/apis/authentication.k8s.io/v1/tokenreviews',
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
    });
    const user = review.status?.authenticated && review.status.user?.username ? review.status.user : undefined;
    this.prune(this.tokens, now);
    this.tokens.set(key, { user, until: now + MetricsAuthCache.tokenMs });
    return user;
  }

  private async authorize(user: UserInfo, verb: string, path: string): Promise<{ allowed: boolean; reason: string }> {
    const key = JSON.stringify([user.username, user.uid ?? '', [...(user.groups ?? [])].sort(), verb, path]);
    const now = this.deps.clock.now();
    const cached = this.decisions.get(key);
    if (cached && cached.until > now) return cached;
    const review = await this.deps.transport.request<{ status?: SubjectAccessReviewStatus }>({
      verb: 'create',
      kind: 'SubjectAccessReview',
      method: 'POST',
      path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {
          user: user.username,
          ...(user.uid ? { uid: user.uid } : {}),
          ...(user.groups ? { groups: user.groups } : {}),
          ...(user.extra ? { extra: user.extra } : {}),
          nonResourceAttributes: { path, verb },
        },
      },
    });
    const allowed = review.status?.allowed === true && review.status.denied !== true;
    const reason = review.status?.reason ?? review.status?.evaluationError ?? '';
    this.prune(this.decisions, now);
    const decision = { allowed, reason, until: now + (allowed ? MetricsAuthCache.allowMs : MetricsAuthCache.denyMs) };
    this.decisions.set(key, decision);
    return decision;
  }

  /** Drops expired entries so a stream of distinct tokens cannot grow the caches without bound. */
  private prune<V extends { until: number }>(cache: Map<string, V>, now: number): void {
    if (cache.size < 256) return;
    for (const [k, v] of cache) if (v.until <= now) cache.delete(k);
  }
}
