import { ApiException, CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { testCluster } from '../../src/test-env.js';
import { waitFor } from '../../src/wait.js';

const NS = 'testkit-rbac';
const SA = 'probe';
const USER = `system:serviceaccount:${NS}:${SA}`;

async function listStatus(api: CoreV1Api): Promise<number> {
  try {
    await api.listNamespacedConfigMap({ namespace: NS });
    return 200;
  } catch (e) {
    if (e instanceof ApiException) return e.code;
    throw e;
  }
}

describe('RBAC on the local cluster', () => {
  it('denies an unprivileged ServiceAccount until a Role grants it, and the audit log shows both', async () => {
    const cluster = testCluster();
    await cluster.ensureServiceAccount(NS, SA);
    const since = new Date(Date.now() - 1000);
    const asProbe = (await cluster.kubeConfigFor(NS, SA)).makeApiClient(CoreV1Api);

    expect(await listStatus(asProbe)).toBe(403);
    // The denial is recorded against the ServiceAccount's own identity, not admin's.
    const denied = await waitFor('the 403 in the audit log', () => {
      const ev = cluster.auditEvents({ user: USER, verbs: ['list'], resource: 'configmaps', codes: [403], since });
      return ev.length > 0 ? ev : undefined;
    });
    expect(denied[0]?.objectRef?.namespace).toBe(NS);

    const rbac = cluster.kubeConfig().makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace: NS,
      body: { metadata: { name: 'read-configmaps' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }] },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: NS,
      body: {
        metadata: { name: 'probe-reads-configmaps' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-configmaps' },
        subjects: [{ kind: 'ServiceAccount', name: SA, namespace: NS }],
      },
    });

    // RBAC is served from the authorizer's informer cache: allowed within moments, not necessarily at once.
    await waitFor('the Role to take effect', async () => (await listStatus(asProbe)) === 200, { timeoutMs: 20_000 });
    // Still nothing beyond the grant.
    await expect(asProbe.listNamespacedSecret({ namespace: NS })).rejects.toMatchObject({ code: 403 });
    const allowed = cluster.auditEvents({ user: USER, verbs: ['list'], resource: 'configmaps', codes: [200], since });
    expect(allowed.length).toBeGreaterThan(0);
    expect(cluster.auditEvents({ user: USER, verbs: ['create', 'update', 'patch', 'delete'], since })).toEqual([]);
  });
});
