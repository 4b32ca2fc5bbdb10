import { silentLogger } from '@karpenter-operator/core';
import { describe, expect, it } from 'vitest';
import type { KubeRequest, KubeTransport } from '@karpenter-operator/kube-runtime';
import { DelegatingMetricsAuth, MetricsAuthCache } from './metrics-auth.js';

/** An API server answering TokenReviews from `tokens` and SubjectAccessReviews from `allowed`. */
function apiServer(world: {
  tokens: Record<string, { username: string; groups?: string[]; uid?: string }>;
  allowed: Set<string>;
  fail?: string;
}) {
  const requests: KubeRequest[] = [];
  const transport: KubeTransport = {
    request: async <T>(req: KubeRequest): Promise<T> => {
      requests.push(req);
      if (world.fail === req.kind) throw new Error('connection refused');
      const spec = (req.body as { spec: Record<string, any> }).spec; // eslint-disable-line @typescript-eslint/no-explicit-any
      if (req.kind === 'TokenReview') {
        const user = world.tokens[spec['token']];
        return { status: user ? { authenticated: true, user } : { authenticated: false, error: 'invalid bearer token' } } as T;
      }
      const attrs = spec['nonResourceAttributes'] as { path: string; verb: string };
      const allowed = world.allowed.has(`${spec['user']} ${attrs.verb} ${attrs.path}`);
      return { status: allowed ? { allowed: true } : { allowed: false, reason: 'no RBAC policy matched' } } as T;
    },
    watch: () => Promise.reject(new Error('no watches')),
  };
  return { transport, requests };
}

const prometheus = 'system:serviceaccount:openshift-monitoring:prometheus-k8s';
const nobody = 'system:serviceaccount:default:nobody';

function setup(fail?: string) {
  const now = { t: 1_000_000 };
  const world = {
    tokens: {
      'tok-prom': { username: prometheus, uid: 'u-1', groups: ['system:serviceaccounts', 'system:authenticated'] },
      'tok-nobody': { username: nobody },
    },
    allowed: new Set([`${prometheus} get /metrics`]),
    ...(fail ? { fail } : {}),
  };
  const api = apiServer(world);
  const auth = new DelegatingMetricsAuth({ transport: api.transport, clock: { now: () => now.t }, logger: silentLogger });
  return { auth, api, now };
}

describe('DelegatingMetricsAuth', () => {
  it.each([
    { name: 'no Authorization header', header: undefined, want: 401 },
    { name: 'a Basic credential', header: 'Basic dXNlcjpwYXNz', want: 401 },
    { name: 'an empty bearer token', header: 'Bearer ', want: 401 },
    { name: 'a token the API server does not know', header: 'Bearer tok-forged', want: 401 },
    { name: 'a token whose user may not get /metrics', header: 'Bearer tok-nobody', want: 403 },
    { name: 'prometheus-k8s', header: 'Bearer tok-prom', want: undefined },
  ])('$name → $want', async ({ header, want }) => {
    const { auth } = setup();
    const r = await auth.check(header, 'GET', '/metrics');
    expect(r?.status).toBe(want);
  });

  it('names the user it refused', async () => {
    const { auth } = setup();
    expect((await auth.check('Bearer tok-nobody', 'GET', '/metrics'))?.message).toContain(nobody);
  });

  it('asks as controller-runtime does: a TokenReview, then a SubjectAccessReview of the non-resource URL with the lower-cased verb', async () => {
    const { auth, api } = setup();
    await auth.check('Bearer tok-prom', 'GET', '/metrics');
    expect(api.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /apis/authentication.k8s.io/v1/tokenreviews',
      'POST /apis/authorization.k8s.io/v1/subjectaccessreviews',
    ]);
    expect((api.requests[0]!.body as { spec: unknown }).spec).toEqual({ token: 'tok-prom' });
    expect((api.requests[1]!.body as { spec: unknown }).spec).toEqual({
      user: prometheus,
      uid: 'u-1',
      groups: ['system:serviceaccounts', 'system:authenticated'],
      nonResourceAttributes: { path: '/metrics', verb: 'get' },
    });
  });

  it('authorises the path asked for, not always /metrics', async () => {
    const { auth } = setup();
    expect((await auth.check('Bearer tok-prom', 'GET', '/healthz'))?.status).toBe(403);
  });

  it('caches a token for a minute, an allow for five and a deny for 30 s', async () => {
    const { auth, api, now } = setup();
    await auth.check('Bearer tok-prom', 'GET', '/metrics');
    await auth.check('Bearer tok-nobody', 'GET', '/metrics');
    expect(api.requests).toHaveLength(4);
    await auth.check('Bearer tok-prom', 'GET', '/metrics');
    await auth.check('Bearer tok-nobody', 'GET', '/metrics');
    expect(api.requests).toHaveLength(4);
    now.t += MetricsAuthCache.denyMs;
    await auth.check('Bearer tok-nobody', 'GET', '/metrics');
    expect(api.requests.slice(4).map((r) => r.kind)).toEqual(['SubjectAccessReview']);
    now.t += MetricsAuthCache.tokenMs;
    await auth.check('Bearer tok-prom', 'GET', '/metrics');
    expect(api.requests.slice(5).map((r) => r.kind)).toEqual(['TokenReview']);
    now.t += MetricsAuthCache.allowMs;
    await auth.check('Bearer tok-prom', 'GET', '/metrics');
    expect(api.requests.slice(6).map((r) => r.kind)).toEqual(['TokenReview', 'SubjectAccessReview']);
  });

  it.each([
    { name: 'TokenReview', want: 'Authentication failed' },
    { name: 'SubjectAccessReview', want: `Authorization for user ${prometheus} failed` },
  ])('answers 500 when the $name cannot be made', async ({ name, want }) => {
    const { auth } = setup(name);
    expect(await auth.check('Bearer tok-prom', 'GET', '/metrics')).toEqual({ status: 500, message: want });
  });
});
