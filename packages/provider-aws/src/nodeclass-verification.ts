import type { EC2Client, Filter, Image, SecurityGroup, Subnet } from '@aws-sdk/client-ec2';
import type { ClusterFacts, KubeObject, VerificationProblem } from '@karpenter-operator/core';
import { chunks, clusterTagKey, describeImages, describeSecurityGroups, describeSubnets, hasTag } from './ec2-reads.js';
import { EC2_FILTER_VALUES_MAX } from './names.js';
import { isLaunchHoldTerm } from './nodeclass.js';

type Term = Record<string, unknown>;

/** Tags of a selector term as EC2 filters (`*` selects any value of the key). */
function tagFilters(tags: Record<string, unknown>): Filter[] {
  return Object.entries(tags).map(([k, v]) => (v === '*' ? { Name: 'tag-key', Values: [k] } : { Name: `tag:${k}`, Values: [String(v)] }));
}

const describeTags = (tags: Record<string, unknown>): string =>
  `{${Object.entries(tags)
    .map(([k, v]) => `${k}=${String(v)}`)
    .join(', ')}}`;

const tagsOf = (t: Term): Filter[] => (typeof t.tags === 'object' && t.tags !== null ? tagFilters(t.tags as Record<string, unknown>) : []);
const nonEmpty = (filters: Filter[]): Filter[] | undefined => (filters.length ? filters : undefined);

function termsOf(spec: Record<string, unknown>, key: string, problems: VerificationProblem[]): Term[] {
  const v = spec[key];
  if (!Array.isArray(v) || !v.length) {
    problems.push({ field: `spec.${key}`, message: 'no selector terms' });
    return [];
  }
  return v.map((t) => (typeof t === 'object' && t !== null ? (t as Term) : {}));
}

/** How one kind of selector term (subnets, security groups, AMIs) is looked up in EC2 and judged. */
interface TermKind<T> {
  /** The spec list, e.g. `subnetSelectorTerms`. */
  list: string;
  /** The EC2 filter carrying ids (`subnet-id`). */
  idFilter: string;
  idOf: (item: T) => string | undefined;
  describe: (filters: Filter[], term?: Term) => Promise<T[]>;
  /** The filters of a term other than `{id}`; undefined skips the term (EC2 cannot resolve it). */
  filtersOf: (t: Term) => Filter[] | undefined;
  /** The problem when a term matched nothing usable (`id` for an `{id}` term). */
  missing: (term: Term, id: string | undefined) => string;
  /** Why a matched item cannot be used, or undefined when it can. */
  unusable?: (item: T, id: string | undefined) => string | undefined;
}

/**
 * The one resolver of selector terms, the same for every kind: `{id}` terms in batched calls
 * (`EC2_FILTER_VALUES_MAX` ids each, de-duplicated), every other term with the filters `filtersOf` gives it
 * in a call of its own. Reports each term that matched nothing usable; returns the usable items with the
 * field of the term that matched them (`{id}` terms first, in order, then the others in order).
 */
async function resolve<T>(
  spec: Record<string, unknown>,
  kind: TermKind<T>,
  problems: VerificationProblem[],
): Promise<Array<{ field: string; item: T }>> {
  const terms = termsOf(spec, kind.list, problems);
  const idTerms = terms.flatMap((term, i) => (typeof term.id === 'string' ? [{ i, term, id: term.id }] : []));
  const byId = new Map<string, T>();
  for (const ids of chunks([...new Set(idTerms.map((t) => t.id))], EC2_FILTER_VALUES_MAX)) {
    for (const item of await kind.describe([{ Name: kind.idFilter, Values: ids }])) {
      const id = kind.idOf(item);
      if (id) byId.set(id, item);
    }
  }
  const matches: Array<{ field: string; term: Term; id?: string; items: T[] }> = idTerms.map(({ i, term, id }) => {
    const item = byId.get(id);
    return { field: `spec.${kind.list}[${i}]`, term, id, items: item ? [item] : [] };
  });
  for (const [i, term] of terms.entries()) {
    if (typeof term.id === 'string') continue;
    const filters = kind.filtersOf(term);
    if (filters) matches.push({ field: `spec.${kind.list}[${i}]`, term, items: await kind.describe(filters, term) });
  }
  const usable: Array<{ field: string; item: T }> = [];
  for (const { field, term, id, items } of matches) {
    const ok = items.filter((item) => !kind.unusable?.(item, id));
    if (id && items[0] && !ok.length) problems.push({ field, message: kind.unusable!(items[0], id)! });
    else if (!ok.length) problems.push({ field, message: kind.missing(term, id) });
    for (const item of ok) usable.push({ field, item });
  }
  return usable;
}

/**
 * Resolves a NodeClass's subnet, security group and AMI terms and reports what is missing or foreign:
 * subnets absent, in another VPC than the cluster's or without the cluster tag; security groups absent or
 * in another VPC; AMIs absent or not `available`.
 */
export async function verifyNodeClassReferences(
  ec2: EC2Client,
  nodeClass: KubeObject,
  facts: ClusterFacts,
): Promise<VerificationProblem[]> {
  const spec = (nodeClass.spec ?? {}) as Record<string, unknown>;
  const problems: VerificationProblem[] = [];
  const clusterTag = clusterTagKey(facts);

  const subnets = await resolve<Subnet>(
    spec,
    {
      list: 'subnetSelectorTerms',
      idFilter: 'subnet-id',
      idOf: (s) => s.SubnetId,
      describe: (filters) => describeSubnets(ec2, filters),
      // A tags term is looked up even when its map is empty; a term without tags is not.
      filtersOf: (t) => (typeof t.tags === 'object' && t.tags !== null ? tagsOf(t) : undefined),
      missing: (term, id) => (id ? `subnet ${id} not found` : `no subnet has tags ${describeTags(term.tags as Record<string, unknown>)}`),
    },
    problems,
  );
  // The cluster's VPC: that of the first subnet carrying the cluster tag (else the first subnet).
  const vpcId = (subnets.find((f) => hasTag(f.item.Tags, clusterTag)) ?? subnets[0])?.item.VpcId;
  const reported = new Set<string>();
  for (const { field, item: subnet } of subnets) {
    const key = `${field}|${subnet.SubnetId}`;
    if (reported.has(key)) continue;
    reported.add(key);
    if (vpcId && subnet.VpcId !== vpcId) {
      problems.push({ field, message: `subnet ${subnet.SubnetId} is in ${subnet.VpcId}, not in the cluster's ${vpcId}` });
    }
    if (!hasTag(subnet.Tags, clusterTag)) {
      problems.push({ field, message: `subnet ${subnet.SubnetId} lacks the cluster tag ${clusterTag}` });
    }
  }

  const groups = await resolve<SecurityGroup>(
    spec,
    {
      list: 'securityGroupSelectorTerms',
      idFilter: 'group-id',
      idOf: (g) => g.GroupId,
      describe: (filters) => describeSecurityGroups(ec2, filters),
      filtersOf: (t) => nonEmpty([...(typeof t.name === 'string' ? [{ Name: 'group-name', Values: [t.name] }] : []), ...tagsOf(t)]),
      missing: (term, id) =>
        id
          ? `security group ${id} not found`
          : `no security group ${typeof term.name === 'string' ? `named ${term.name}` : `with tags ${describeTags(term.tags as Record<string, unknown>)}`}`,
    },
    problems,
  );
  for (const { field, item: group } of groups) {
    if (vpcId && group.VpcId !== vpcId) {
      problems.push({ field, message: `security group ${group.GroupId} is in ${group.VpcId}, not in the cluster's ${vpcId}` });
    }
  }

  // AMIs. Aliases and SSM parameters resolve outside EC2; Karpenter reports them itself.
  await resolve<Image>(
    spec,
    {
      list: 'amiSelectorTerms',
      idFilter: 'image-id',
      idOf: (img) => img.ImageId,
      describe: (filters, term) =>
        describeImages(
          ec2,
          filters,
          typeof term?.owner === 'string'
            ? term.owner
                .split(',')
                .map((o) => o.trim())
                .filter(Boolean)
            : undefined,
        ),
      // The operator's own launch hold is not a reference to verify (it matches no AMI by design).
      filtersOf: (t) =>
        typeof t.alias === 'string' || typeof t.ssmParameter === 'string' || isLaunchHoldTerm(t)
          ? undefined
          : nonEmpty([...(typeof t.name === 'string' ? [{ Name: 'name', Values: [t.name] }] : []), ...tagsOf(t)]),
      missing: (term, id) => (id ? `AMI ${id} not found` : `no available AMI matches ${JSON.stringify(term)}`),
      unusable: (img, id) => (img.State && img.State !== 'available' ? `AMI ${id ?? img.ImageId} is ${img.State}` : undefined),
    },
    problems,
  );
  return problems;
}
