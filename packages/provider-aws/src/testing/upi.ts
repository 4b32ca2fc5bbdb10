import type { Filter, Image, Instance, SecurityGroup, Subnet, Tag } from '@aws-sdk/client-ec2';
import type { DiscoveryInput, DiscoveryNode } from '@karpenter-operator/core';
import type { ConventionReads } from '../conventions.js';
import type { InstanceProfileInfo } from '../iam.js';
import { aBootImagesConfigMap, aFacts, aUserDataSecret, INFRA_ID, REGION } from './builders.js';

/**
 * A user-provisioned (UPI) cluster's cloud, as the installer's UPI CloudFormation templates and the
 * conventions leave it: one VPC, private subnets tagged for the cluster and `internal-elb`, public ones
 * tagged `elb`, the conventionally named security groups and worker instance profile, three control-plane
 * and two worker instances. Tests mutate the lists to build each fallback.
 */
export interface UpiCloud {
  vpcId: string;
  subnets: Subnet[];
  groups: SecurityGroup[];
  images: Image[];
  profiles: InstanceProfileInfo[];
  instances: Instance[];
  /** Every read served, by kind, for tests that count calls. */
  calls: string[];
}

export const UPI_AMI = 'ami-0aaaaaaaaaaaaaaa1';
export const UPI_ARM_AMI = 'ami-0aaaaaaaaaaaaaaa2';
const clusterTag = `kubernetes.io/cluster/${INFRA_ID}`;
const tags = (o: Record<string, string>): Tag[] => Object.entries(o).map(([Key, Value]) => ({ Key, Value }));

export function aUpiCloud(): UpiCloud {
  const vpcId = 'vpc-0upi';
  const subnet = (id: string, zone: string, role: 'internal-elb' | 'elb'): Subnet => ({
    SubnetId: id,
    VpcId: vpcId,
    AvailabilityZone: zone,
    MapPublicIpOnLaunch: role === 'elb',
    Tags: tags({ [clusterTag]: 'shared', [`kubernetes.io/role/${role}`]: '1' }),
  });
  const group = (id: string, name: string): SecurityGroup => ({
    GroupId: id,
    GroupName: name,
    VpcId: vpcId,
    Tags: tags({ [clusterTag]: 'owned' }),
  });
  const instance = (id: string, subnetId: string, groupIds: string[], profile: string): Instance => ({
    InstanceId: id,
    VpcId: vpcId,
    SubnetId: subnetId,
    State: { Name: 'running' },
    SecurityGroups: groupIds.map((GroupId) => ({ GroupId })),
    IamInstanceProfile: { Arn: `arn:aws:iam::123456789012:instance-profile/${profile}` },
    Tags: tags({ [clusterTag]: 'shared' }),
  });
  return {
    vpcId,
    subnets: [
      subnet('subnet-0priva', 'us-east-1a', 'internal-elb'),
      subnet('subnet-0privb', 'us-east-1b', 'internal-elb'),
      subnet('subnet-0puba', 'us-east-1a', 'elb'),
    ],
    groups: [group('sg-0node', `${INFRA_ID}-node`), group('sg-0lb', `${INFRA_ID}-lb`), group('sg-0master', `${INFRA_ID}-master`)],
    images: [
      { ImageId: UPI_AMI, State: 'available' },
      { ImageId: UPI_ARM_AMI, State: 'available' },
    ],
    profiles: [
      { name: `${INFRA_ID}-worker-profile`, arn: `arn:aws:iam::123456789012:instance-profile/${INFRA_ID}-worker-profile`, roles: ['w'] },
      { name: `${INFRA_ID}-master-profile`, arn: `arn:aws:iam::123456789012:instance-profile/${INFRA_ID}-master-profile`, roles: ['m'] },
    ],
    instances: [
      instance('i-0c0000000000000a', 'subnet-0priva', ['sg-0master'], `${INFRA_ID}-master-profile`),
      instance('i-0c0000000000000b', 'subnet-0privb', ['sg-0master'], `${INFRA_ID}-master-profile`),
      instance('i-0c0000000000000c', 'subnet-0priva', ['sg-0master'], `${INFRA_ID}-master-profile`),
      instance('i-0a0000000000000a', 'subnet-0priva', ['sg-0wk'], 'upi-WorkerInstanceProfile-1X2Y'),
      instance('i-0a0000000000000b', 'subnet-0privb', ['sg-0wk'], 'upi-WorkerInstanceProfile-1X2Y'),
    ],
    calls: [],
  };
}

/** The Nodes of `aUpiCloud`'s instances (control plane `i-0c…`, workers `i-0a…`). */
export function upiNodes(cloud: UpiCloud, arch = 'amd64'): DiscoveryNode[] {
  return cloud.instances.map((i) => ({
    name: `ip-${i.InstanceId}`,
    role: i.InstanceId!.startsWith('i-0c') ? 'control-plane' : 'worker',
    providerID: `aws:///us-east-1a/${i.InstanceId}`,
    architecture: arch,
  }));
}

/** A UPI cluster's discovery input: no MachineSets, the user-data Secret, the boot images and the nodes. */
export function aUpiDiscoveryInput(cloud: UpiCloud, o: Partial<DiscoveryInput> = {}): DiscoveryInput {
  return {
    facts: aFacts(),
    machineSets: [],
    secrets: [aUserDataSecret()],
    bootImages: aBootImagesConfigMap({ x86_64: { [REGION]: UPI_AMI }, aarch64: { [REGION]: UPI_ARM_AMI } }),
    maxPods: 250,
    nodes: upiNodes(cloud),
    ...o,
  };
}

/** Evaluates EC2 filters (`tag-key`, `tag:<key>`, plain fields) against a resource's fields and tags, as EC2 would. */
export function matchesEc2Filters(
  filters: Filter[] | undefined,
  fields: Record<string, string | undefined>,
  tagList: Tag[] | undefined,
): boolean {
  return (filters ?? []).every((f) => {
    const values = f.Values ?? [];
    if (f.Name === 'tag-key') return (tagList ?? []).some((t) => values.includes(t.Key ?? ''));
    if (f.Name?.startsWith('tag:')) return (tagList ?? []).some((t) => t.Key === f.Name!.slice(4) && values.includes(t.Value ?? ''));
    const v = fields[f.Name ?? ''];
    return v !== undefined && values.includes(v);
  });
}

/** `ConventionReads` served from the world, evaluating the EC2 filters discovery sends. */
export function upiReads(cloud: UpiCloud): ConventionReads {
  return {
    liveInstances: async (ids) => {
      cloud.calls.push('instances');
      return cloud.instances.filter((i) => ids.includes(i.InstanceId!) && ['pending', 'running'].includes(i.State?.Name ?? ''));
    },
    subnets: async (filters) => {
      cloud.calls.push('subnets');
      return cloud.subnets.filter((s) => matchesEc2Filters(filters, { 'vpc-id': s.VpcId, 'subnet-id': s.SubnetId }, s.Tags));
    },
    securityGroups: async (filters) => {
      cloud.calls.push('securityGroups');
      return cloud.groups.filter((g) =>
        matchesEc2Filters(filters, { 'vpc-id': g.VpcId, 'group-name': g.GroupName, 'group-id': g.GroupId }, g.Tags),
      );
    },
    images: async (ids) => {
      cloud.calls.push('images');
      return cloud.images.filter((i) => ids.includes(i.ImageId!));
    },
    instanceProfile: async (name) => {
      cloud.calls.push('instanceProfile');
      return cloud.profiles.find((p) => p.name === name);
    },
  };
}
