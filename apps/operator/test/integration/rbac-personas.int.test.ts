import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyObject, deleteObject, waitFor } from '@karpenter-operator/testkit';
import { testCluster } from '@karpenter-operator/testkit/vitest';
import { adminRequest } from '../support/k8s.js';
import { installManifests } from '../support/operator-process.js';

/**
 * Who may do what with Karpenter's cluster-scoped objects under the RBAC of install/, asked of the API
 * server's own authorizer (SubjectAccessReviews) for each persona: only cluster administrators create
 * NodePools, NodeClaims, NodeOverlays and EC2NodeClasses (they launch EC2 capacity); `cluster-reader` reads
 * them (install/'s karpenter-reader aggregates into it); the namespace `admin` role grants nothing on them,
 * neither through a RoleBinding (a project admin) nor through a ClusterRoleBinding; an ordinary user, nothing.
 */
const cluster = testCluster();
const kc = () => cluster.kubeConfig();
const PROJECT = 'persona-project';

/**
 * OpenShift's `cluster-reader` as its API server bootstraps it: no rules of its own, an aggregation of every
 * ClusterRole labelled aggregate-to-cluster-reader or aggregate-to-view. The local cluster is plain
 * Kubernetes, so the test creates it (only when absent) and removes what it created.
 */
const CLUSTER_READER = {
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'ClusterRole',
  metadata: { name: 'cluster-reader' },
  aggregationRule: {
    clusterRoleSelectors: [
      { matchLabels: { 'rbac.authorization.k8s.io/aggregate-to-cluster-reader': 'true' } },
      { matchLabels: { 'rbac.authorization.k8s.io/aggregate-to-view': 'true' } },
    ],
  },
};

const RESOURCES = [
  { group: 'karpenter.sh', resource: 'nodepools' },
  { group: 'karpenter.sh', resource: 'nodeclaims' },
  { group: 'karpenter.sh', resource: 'nodeoverlays' },
  { group: 'karpenter.k8s.aws', resource: 'ec2nodeclasses' },
];
const READ = ['get', 'list', 'watch'];
const WRITE = ['create', 'update', 'patch', 'delete', 'deletecollection'];

const personas = {
  clusterAdmin: 'persona-cluster-admin',
  projectAdmin: 'persona-project-admin',
  adminEverywhere: 'persona-admin-clusterrolebinding',
  clusterReader: 'persona-cluster-reader',
  unprivileged: 'persona-unprivileged',
};

async function allowed(user: string, verb: string, group: string, resource: string, namespace?: string): Promise<boolean> {
  const r = await adminRequest(cluster, 'POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    spec: {
      user,
      groups: ['system:authenticated'],
      resourceAttributes: { group, resource, verb, ...(namespace ? { namespace } : {}) },
    },
  });
  expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(201);
  return (r.body as { status: { allowed: boolean } }).status.allowed === true;
}

const binding = (name: string, role: string, user: string) => ({
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'ClusterRoleBinding',
  metadata: { name },
  roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
  subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
});
const bindings = [
  binding('persona-cluster-admin', 'cluster-admin', personas.clusterAdmin),
  binding('persona-admin-everywhere', 'admin', personas.adminEverywhere),
  binding('persona-cluster-reader', 'cluster-reader', personas.clusterReader),
];
let createdClusterReader = false;

beforeAll(async () => {
  await installManifests(cluster);
  if ((await adminRequest(cluster, 'GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles/cluster-reader')).status === 404) {
    await applyObject(kc(), CLUSTER_READER);
    createdClusterReader = true;
  }
  await applyObject(kc(), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: PROJECT } });
  await applyObject(kc(), {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'persona-project-admin', namespace: PROJECT },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'admin' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: personas.projectAdmin }],
  });
  for (const b of bindings) await applyObject(kc(), b);
  // The aggregation controller fills cluster-reader's rules (from karpenter-reader) asynchronously; the
  // project admin's RoleBinding is in effect once it may read its own namespace's pods.
  await waitFor(
    'cluster-reader to aggregate karpenter-reader',
    () => allowed(personas.clusterReader, 'list', 'karpenter.sh', 'nodepools'),
    {
      timeoutMs: 60_000,
    },
  );
  await waitFor('the project admin RoleBinding', () => allowed(personas.projectAdmin, 'create', '', 'pods', PROJECT), {
    timeoutMs: 60_000,
  });
});

afterAll(async () => {
  for (const b of bindings) await deleteObject(kc(), b.apiVersion, b.kind, b.metadata.name);
  await deleteObject(kc(), 'v1', 'Namespace', PROJECT);
  if (createdClusterReader) await deleteObject(kc(), CLUSTER_READER.apiVersion, CLUSTER_READER.kind, CLUSTER_READER.metadata.name);
});

describe('RBAC personas on NodePools, NodeClaims, NodeOverlays and EC2NodeClasses (SubjectAccessReview)', () => {
  it.each([
    { name: 'cluster-admin (ClusterRoleBinding)', user: personas.clusterAdmin, read: true, write: true },
    { name: 'cluster-reader (ClusterRoleBinding)', user: personas.clusterReader, read: true, write: false },
    { name: 'admin through a ClusterRoleBinding', user: personas.adminEverywhere, read: false, write: false },
    { name: 'project admin (RoleBinding to admin)', user: personas.projectAdmin, read: false, write: false },
    { name: 'an authenticated user with no bindings', user: personas.unprivileged, read: false, write: false },
  ])('$name: read $read, write $write', async ({ user, read, write }) => {
    const got: string[] = [];
    const want: string[] = [];
    for (const { group, resource } of RESOURCES) {
      for (const verb of [...READ, ...WRITE]) {
        want.push(`${verb} ${resource}.${group}: ${READ.includes(verb) ? read : write}`);
        got.push(`${verb} ${resource}.${group}: ${await allowed(user, verb, group, resource)}`);
      }
    }
    expect(got).toEqual(want);
  });

  it("a project admin gets nothing on them inside its namespace either (nothing aggregates into 'admin')", async () => {
    for (const { group, resource } of RESOURCES)
      for (const verb of ['create', 'list'])
        expect(await allowed(personas.projectAdmin, verb, group, resource, PROJECT), `${verb} ${resource} in ${PROJECT}`).toBe(false);
  });

  it('no ClusterRole in the cluster aggregates Karpenter rights into admin, edit or view', async () => {
    const r = await adminRequest(cluster, 'GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles');
    const roles = (
      r.body as { items: Array<{ metadata: { name: string; labels?: Record<string, string> }; rules?: Array<{ apiGroups?: string[] }> }> }
    ).items;
    const offending = roles.filter(
      (cr) =>
        ['admin', 'edit', 'view'].some((to) => cr.metadata.labels?.[`rbac.authorization.k8s.io/aggregate-to-${to}`] === 'true') &&
        (cr.rules ?? []).some((rule) => (rule.apiGroups ?? []).some((g) => g === 'karpenter.sh' || g === 'karpenter.k8s.aws')),
    );
    expect(offending.map((cr) => cr.metadata.name)).toEqual([]);
  });
});
