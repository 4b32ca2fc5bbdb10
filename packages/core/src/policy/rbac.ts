import type { KubeObject } from '../model/kube.js';

/** An RBAC rule as `rbac.authorization.k8s.io/v1` stores it. */
export interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

export interface CoverageResult {
  ok: boolean;
  /** The wanted permissions no granter rule holds, one (group, resource, verb, name) each. */
  missing: PolicyRule[];
}

const ALL = '*';

/**
 * RBAC escalation prevention, as the API server runs it when a Role or ClusterRole is created: every
 * permission `wanted` grants must already be held through `granter`. `wanted` is broken down into single
 * (apiGroup, resource, verb, resourceName) permissions, each of which one granter rule must cover:
 *
 * 1. verbs and apiGroups: the granter lists `*` or the same value (a wanted `*` needs a granter `*`);
 * 2. resources: `*`, the same value, or `*` + `/<sub>` (any resource's subresource `<sub>`);
 * 3. resourceNames: a granter without names covers every name; a granter with names covers only those,
 *    never a wanted rule without names (that means every name);
 * 4. nonResourceURLs: the same URL, `*`, or a granter prefix ending in `*`.
 *
 * Pure. Callers combine the granter's rules for one namespace (ClusterRoles plus that namespace's Roles).
 */
export function coversRules(granter: readonly PolicyRule[], wanted: readonly PolicyRule[]): CoverageResult {
  const missing = wanted.flatMap(breakDown).filter((one) => !granter.some((g) => ruleCovers(g, one)));
  return { ok: missing.length === 0, missing };
}

/** Splits a rule into rules of one verb, one group, one resource (or URL) and at most one name. */
function breakDown(rule: PolicyRule): PolicyRule[] {
  const out: PolicyRule[] = [];
  for (const verb of rule.verbs) {
    for (const url of rule.nonResourceURLs ?? []) out.push({ verbs: [verb], nonResourceURLs: [url] });
    for (const group of rule.apiGroups ?? []) {
      for (const resource of rule.resources ?? []) {
        const names = rule.resourceNames?.length ? rule.resourceNames : [undefined];
        for (const name of names) {
          const one: PolicyRule = { apiGroups: [group], resources: [resource], verbs: [verb] };
          if (name !== undefined) one.resourceNames = [name];
          out.push(one);
        }
      }
    }
  }
  return out;
}

function ruleCovers(g: PolicyRule, one: PolicyRule): boolean {
  const verb = one.verbs[0] as string;
  if (!g.verbs.includes(ALL) && !g.verbs.includes(verb)) return false;
  const url = one.nonResourceURLs?.[0];
  if (url !== undefined) return (g.nonResourceURLs ?? []).some((p) => urlCovers(p, url));

  const group = one.apiGroups?.[0] as string;
  const resource = one.resources?.[0] as string;
  const groups = g.apiGroups ?? [];
  if (!groups.includes(ALL) && !groups.includes(group)) return false;
  if (!(g.resources ?? []).some((r) => resourceCovers(r, resource))) return false;
  const names = g.resourceNames ?? [];
  if (names.length === 0) return true;
  const name = one.resourceNames?.[0];
  return name !== undefined && names.includes(name);
}

function resourceCovers(granted: string, wanted: string): boolean {
  if (granted === ALL || granted === wanted) return true;
  const slash = wanted.indexOf('/');
  return slash > 0 && granted === `*${wanted.slice(slash)}`;
}

function urlCovers(granted: string, wanted: string): boolean {
  if (granted === ALL || granted === wanted) return true;
  return granted.endsWith('*') && wanted.startsWith(granted.slice(0, -1));
}

export interface RbacSubject {
  kind: 'ServiceAccount' | 'User' | 'Group';
  name: string;
  namespace?: string;
}

/**
 * The rules `subject` holds in `namespace` (or cluster-wide when `namespace` is absent) through the
 * bindings among `objects`: ClusterRoleBindings to ClusterRoles everywhere, plus, in a namespace, that
 * namespace's RoleBindings to its Roles or to ClusterRoles. Aggregation rules are not followed. Pure.
 */
export function effectiveRules(objects: readonly KubeObject[], subject: RbacSubject, namespace?: string): PolicyRule[] {
  const find = (kind: string, name: string, ns?: string) =>
    objects.find((o) => o.kind === kind && o.metadata.name === name && o.metadata.namespace === ns);
  const binds = (b: KubeObject) =>
    ((b['subjects'] as RbacSubject[] | undefined) ?? []).some(
      (s) => s.kind === subject.kind && s.name === subject.name && (s.kind !== 'ServiceAccount' || s.namespace === subject.namespace),
    );
  const rules: PolicyRule[] = [];
  for (const b of objects) {
    const clusterWide = b.kind === 'ClusterRoleBinding';
    const here = b.kind === 'RoleBinding' && namespace !== undefined && b.metadata.namespace === namespace;
    if (!(clusterWide || here) || !binds(b)) continue;
    const ref = b['roleRef'] as { kind: string; name: string } | undefined;
    if (!ref) continue;
    const role = ref.kind === 'ClusterRole' ? find('ClusterRole', ref.name) : clusterWide ? undefined : find('Role', ref.name, namespace);
    rules.push(...((role?.['rules'] as PolicyRule[] | undefined) ?? []));
  }
  return rules;
}

export interface EscalationProblem {
  /** `ClusterRole karpenter-core`, `Role openshift-karpenter/karpenter`. */
  role: string;
  missing: PolicyRule[];
}

/**
 * For each Role and ClusterRole in `roles`, what `subject` (through `granterObjects`) would lack to create
 * it: ClusterRoles against its cluster-wide rules, Roles against its rules in the Role's namespace.
 * Empty when the API server's escalation check would pass. Pure.
 */
export function checkEscalation(
  granterObjects: readonly KubeObject[],
  subject: RbacSubject,
  roles: readonly KubeObject[],
): EscalationProblem[] {
  const problems: EscalationProblem[] = [];
  for (const role of roles) {
    if (role.kind !== 'Role' && role.kind !== 'ClusterRole') continue;
    const ns = role.kind === 'Role' ? role.metadata.namespace : undefined;
    const held = effectiveRules(granterObjects, subject, ns);
    const { missing } = coversRules(held, (role['rules'] as PolicyRule[] | undefined) ?? []);
    if (missing.length) problems.push({ role: ns ? `Role ${ns}/${role.metadata.name}` : `ClusterRole ${role.metadata.name}`, missing });
  }
  return problems;
}
