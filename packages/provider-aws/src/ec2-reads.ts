import {
  DescribeImagesCommand,
  DescribeInstancesCommand,
  DescribeSecurityGroupsCommand,
  DescribeSubnetsCommand,
  type EC2Client,
  type Filter,
  type Image,
  type Instance,
  type SecurityGroup,
  type Subnet,
  type Tag,
} from '@aws-sdk/client-ec2';
import type { ClusterFacts } from '@karpenter-operator/core';
import { callAws } from './aws-errors.js';

/** The EC2 reads the operator makes, paginated, every error mapped to a core error. */

export const clusterTagKey = (facts: ClusterFacts): string => `kubernetes.io/cluster/${facts.infrastructureName}`;

export const hasTag = (tags: Tag[] | undefined, key: string): boolean => (tags ?? []).some((t) => t.Key === key);

export const tagValue = (tags: Tag[] | undefined, key: string): string | undefined => (tags ?? []).find((t) => t.Key === key)?.Value;

/**
 * The cluster tag's value on what belongs to this cluster alone (the installer's resources and the
 * instances Karpenter launches); `shared` marks resources several clusters use, never a node of this one.
 */
export const ClusterOwnedTagValue = 'owned';

const MAX_PAGES = 100;

export const chunks = <T>(list: T[], size: number): T[][] => {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += size) out.push(list.slice(i, i + size));
  return out;
};

async function paginate<T>(
  fetch: (token: string | undefined) => Promise<{ items: T[] | undefined; next: string | undefined }>,
): Promise<T[]> {
  const all: T[] = [];
  let token: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const { items, next } = await fetch(token);
    all.push(...(items ?? []));
    if (!next) break;
    token = next;
  }
  return all;
}

export function describeSubnets(ec2: EC2Client, filters: Filter[]): Promise<Subnet[]> {
  return callAws('describing subnets', () =>
    paginate(async (NextToken) => {
      const r = await ec2.send(new DescribeSubnetsCommand({ Filters: filters, ...(NextToken ? { NextToken } : {}) }));
      return { items: r.Subnets, next: r.NextToken };
    }),
  );
}

export function describeSecurityGroups(ec2: EC2Client, filters: Filter[]): Promise<SecurityGroup[]> {
  return callAws('describing security groups', () =>
    paginate(async (NextToken) => {
      const r = await ec2.send(new DescribeSecurityGroupsCommand({ Filters: filters, ...(NextToken ? { NextToken } : {}) }));
      return { items: r.SecurityGroups, next: r.NextToken };
    }),
  );
}

export function describeImages(ec2: EC2Client, filters: Filter[], owners?: string[]): Promise<Image[]> {
  return callAws('describing images', () =>
    paginate(async (NextToken) => {
      const r = await ec2.send(
        new DescribeImagesCommand({
          Filters: filters,
          // RHCOS boot images older than two years are deprecated by AWS but still launch.
          IncludeDeprecated: true,
          ...(owners ? { Owners: owners } : {}),
          ...(NextToken ? { NextToken } : {}),
        }),
      );
      return { items: r.Images, next: r.NextToken };
    }),
  );
}

export function describeInstancesWhere(ec2: EC2Client, filters: Filter[]): Promise<Instance[]> {
  return callAws('describing instances', () =>
    paginate(async (NextToken) => {
      const r = await ec2.send(new DescribeInstancesCommand({ Filters: filters, ...(NextToken ? { NextToken } : {}) }));
      return { items: (r.Reservations ?? []).flatMap((res) => res.Instances ?? []), next: r.NextToken };
    }),
  );
}
