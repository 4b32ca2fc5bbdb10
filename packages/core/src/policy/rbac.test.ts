import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../model/kube.js';
import { checkEscalation, coversRules, effectiveRules, type PolicyRule } from './rbac.js';

const r = (apiGroups: string[], resources: string[], verbs: string[], resourceNames?: string[]): PolicyRule =>
  resourceNames ? { apiGroups, resources, verbs, resourceNames } : { apiGroups, resources, verbs };

describe('coversRules', () => {
  it.each([
    { name: 'exact rule', granter: [r([''], ['pods'], ['get'])], wanted: [r([''], ['pods'], ['get'])], missing: 0 },
    { name: 'verb missing', granter: [r([''], ['pods'], ['get'])], wanted: [r([''], ['pods'], ['get', 'delete'])], missing: 1 },
    {
      name: 'verbs spread over two granter rules',
      granter: [r([''], ['pods'], ['get']), r([''], ['pods'], ['list'])],
      wanted: [r([''], ['pods'], ['get', 'list'])],
      missing: 0,
    },
    {
      name: 'verb star covers any verb',
      granter: [r([''], ['pods'], ['*'])],
      wanted: [r([''], ['pods'], ['escalate', 'get'])],
      missing: 0,
    },
    {
      name: 'wanted verb star needs granter star',
      granter: [r([''], ['pods'], ['get', 'list'])],
      wanted: [r([''], ['pods'], ['*'])],
      missing: 1,
    },
    {
      name: 'other api group',
      granter: [r(['apps'], ['deployments'], ['get'])],
      wanted: [r(['extensions'], ['deployments'], ['get'])],
      missing: 1,
    },
    {
      name: 'group star',
      granter: [r(['*'], ['deployments'], ['get'])],
      wanted: [r(['apps', 'extensions'], ['deployments'], ['get'])],
      missing: 0,
    },
    {
      name: 'resource star covers subresources',
      granter: [r(['karpenter.sh'], ['*'], ['update'])],
      wanted: [r(['karpenter.sh'], ['nodeclaims/status'], ['update'])],
      missing: 0,
    },
    {
      name: 'star-slash-sub covers that subresource',
      granter: [r([''], ['*/status'], ['patch'])],
      wanted: [r([''], ['pods/status', 'nodes/status'], ['patch'])],
      missing: 0,
    },
    {
      name: 'star-slash-sub does not cover the resource',
      granter: [r([''], ['*/status'], ['patch'])],
      wanted: [r([''], ['pods'], ['patch'])],
      missing: 1,
    },
    {
      name: 'resource does not cover its subresource',
      granter: [r(['karpenter.sh'], ['nodeclaims'], ['update'])],
      wanted: [r(['karpenter.sh'], ['nodeclaims/finalizers'], ['update'])],
      missing: 1,
    },
    {
      name: 'unnamed granter covers named wanted',
      granter: [r(['coordination.k8s.io'], ['leases'], ['update'])],
      wanted: [r(['coordination.k8s.io'], ['leases'], ['update'], ['a'])],
      missing: 0,
    },
    {
      name: 'named granter covers the same name',
      granter: [r(['coordination.k8s.io'], ['leases'], ['update'], ['a', 'b'])],
      wanted: [r(['coordination.k8s.io'], ['leases'], ['update'], ['b'])],
      missing: 0,
    },
    {
      name: 'named granter misses another name',
      granter: [r(['coordination.k8s.io'], ['leases'], ['update'], ['a'])],
      wanted: [r(['coordination.k8s.io'], ['leases'], ['update'], ['a', 'c'])],
      missing: 1,
    },
    {
      name: 'named granter misses unnamed wanted',
      granter: [r(['coordination.k8s.io'], ['leases'], ['update'], ['a'])],
      wanted: [r(['coordination.k8s.io'], ['leases'], ['update'])],
      missing: 1,
    },
    {
      name: 'wanted name star is a literal name',
      granter: [r([''], ['secrets'], ['get'], ['a'])],
      wanted: [r([''], ['secrets'], ['get'], ['*'])],
      missing: 1,
    },
    {
      name: 'cross product is broken down',
      granter: [r([''], ['pods', 'nodes'], ['get'])],
      wanted: [r([''], ['pods', 'nodes', 'services'], ['get', 'list'])],
      missing: 4,
    },
    {
      name: 'non-resource URL exact',
      granter: [{ verbs: ['get'], nonResourceURLs: ['/healthz'] }],
      wanted: [{ verbs: ['get'], nonResourceURLs: ['/healthz'] }],
      missing: 0,
    },
    {
      name: 'non-resource URL prefix star',
      granter: [{ verbs: ['get'], nonResourceURLs: ['/metrics*'] }],
      wanted: [{ verbs: ['get'], nonResourceURLs: ['/metrics/slis'] }],
      missing: 0,
    },
    {
      name: 'non-resource URL not covered by resource rule',
      granter: [r(['*'], ['*'], ['*'])],
      wanted: [{ verbs: ['get'], nonResourceURLs: ['/version'] }],
      missing: 1,
    },
    { name: 'empty wanted', granter: [], wanted: [], missing: 0 },
  ])('$name', ({ granter, wanted, missing }) => {
    const result = coversRules(granter, wanted);
    expect(result.missing).toHaveLength(missing);
    expect(result.ok).toBe(missing === 0);
  });

  it('names each missing permission', () => {
    const result = coversRules([r([''], ['pods'], ['get'])], [r([''], ['pods'], ['get', 'delete'], ['x'])]);
    expect(result.missing).toEqual([r([''], ['pods'], ['delete'], ['x'])]);
  });
});

const sa = { kind: 'ServiceAccount' as const, name: 'op', namespace: 'ns-a' };
const meta = (name: string, namespace?: string) => (namespace ? { name, namespace } : { name });
const role = (kind: 'Role' | 'ClusterRole', name: string, rules: PolicyRule[], namespace?: string): KubeObject => ({
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind,
  metadata: meta(name, namespace),
  rules,
});
const binding = (
  kind: 'RoleBinding' | 'ClusterRoleBinding',
  roleKind: string,
  roleName: string,
  subject: object,
  namespace?: string,
): KubeObject => ({
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind,
  metadata: meta(`${roleName}-binding`, namespace),
  roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: roleKind, name: roleName },
  subjects: [subject],
});

const podsGet = r([''], ['pods'], ['get']);
const leases = r(['coordination.k8s.io'], ['leases'], ['get']);
const nodes = r([''], ['nodes'], ['list']);
const world: KubeObject[] = [
  role('ClusterRole', 'cluster', [podsGet]),
  binding('ClusterRoleBinding', 'ClusterRole', 'cluster', sa),
  role('Role', 'local', [leases], 'ns-a'),
  binding('RoleBinding', 'Role', 'local', sa, 'ns-a'),
  role('ClusterRole', 'reused', [nodes]),
  binding('RoleBinding', 'ClusterRole', 'reused', sa, 'ns-b'),
  role('ClusterRole', 'unbound', [r(['*'], ['*'], ['*'])]),
  binding('ClusterRoleBinding', 'ClusterRole', 'unbound', { ...sa, namespace: 'elsewhere' }),
  role('Role', 'local', [r([''], ['secrets'], ['get'])], 'ns-c'),
];

describe('effectiveRules', () => {
  it.each([
    { name: 'cluster-wide: ClusterRoleBindings only', namespace: undefined, rules: [podsGet] },
    { name: 'own namespace adds its Role', namespace: 'ns-a', rules: [podsGet, leases] },
    { name: 'RoleBinding to a ClusterRole applies in its namespace', namespace: 'ns-b', rules: [podsGet, nodes] },
    { name: 'a Role of the same name elsewhere is not bound', namespace: 'ns-c', rules: [podsGet] },
  ])('$name', ({ namespace, rules }) => {
    expect(effectiveRules(world, sa, namespace)).toEqual(rules);
  });
});

describe('checkEscalation', () => {
  it.each([
    { name: 'ClusterRole within cluster rules', roles: [role('ClusterRole', 'x', [podsGet])], problems: [] },
    { name: 'ClusterRole needing a namespaced rule', roles: [role('ClusterRole', 'x', [leases])], problems: ['ClusterRole x'] },
    { name: 'Role in the namespace holding the rule', roles: [role('Role', 'x', [leases], 'ns-a')], problems: [] },
    { name: 'Role in another namespace', roles: [role('Role', 'x', [leases], 'ns-b')], problems: ['Role ns-b/x'] },
    { name: 'other kinds are ignored', roles: [binding('RoleBinding', 'Role', 'x', sa, 'ns-b')], problems: [] },
  ])('$name', ({ roles, problems }) => {
    expect(checkEscalation(world, sa, roles).map((p) => p.role)).toEqual(problems);
  });
});
