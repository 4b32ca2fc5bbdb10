import {
  DescribeImagesCommand,
  DescribeSecurityGroupsCommand,
  DescribeSubnetsCommand,
  DescribeVpcsCommand,
  EC2Client,
} from '@aws-sdk/client-ec2';
import { afterAll, describe, expect, it } from 'vitest';
import { seedEc2 } from '../../src/seed/openshift-aws.js';
import { seededWorld, testCluster } from '../../src/test-env.js';

describe('the seeded EC2 emulator', () => {
  const ec2 = new EC2Client(testCluster().ec2Config());
  afterAll(() => ec2.destroy());

  it('lists the private subnets of the cluster by tag', async () => {
    const { facts, ec2: ids } = seededWorld();
    const res = await ec2.send(
      new DescribeSubnetsCommand({
        Filters: [
          { Name: `tag:${facts.clusterTagKey}`, Values: ['owned'] },
          { Name: 'tag:kubernetes.io/role/internal-elb', Values: ['1'] },
        ],
      }),
    );
    const found = (res.Subnets ?? []).map((s) => ({
      id: s.SubnetId,
      zone: s.AvailabilityZone,
      name: s.Tags?.find((t) => t.Key === 'Name')?.Value,
    }));
    expect(found.sort((a, b) => a.zone!.localeCompare(b.zone!))).toEqual(
      facts.privateSubnets.map((s) => ({ id: ids?.privateSubnetIds[s.zone], zone: s.zone, name: s.name })),
    );
  });

  it.each([
    { name: 'node group by tag:Name', filter: 'demo-x7k2p-node', expected: 'node' as const },
    { name: 'lb group by tag:Name', filter: 'demo-x7k2p-lb', expected: 'lb' as const },
  ])('finds the $name', async ({ filter, expected }) => {
    const res = await ec2.send(new DescribeSecurityGroupsCommand({ Filters: [{ Name: 'tag:Name', Values: [filter] }] }));
    expect((res.SecurityGroups ?? []).map((g) => g.GroupId)).toEqual([seededWorld().ec2?.securityGroupIds[expected]]);
  });

  it('serves the RHCOS AMIs of the boot-image stream with their architectures', async () => {
    const { amis } = seededWorld().facts;
    const res = await ec2.send(new DescribeImagesCommand({ ImageIds: [amis.x86_64, amis.aarch64] }));
    const arch = Object.fromEntries((res.Images ?? []).map((i) => [i.ImageId, i.Architecture]));
    expect(arch).toEqual({ [amis.x86_64]: 'x86_64', [amis.aarch64]: 'arm64' });
  });

  it('seeding again finds the same resources instead of creating new ones', async () => {
    const { facts, ec2: ids } = seededWorld();
    expect(await seedEc2(testCluster().info.ec2Endpoint!, facts)).toEqual(ids);
    const vpcs = await ec2.send(new DescribeVpcsCommand({ Filters: [{ Name: `tag:${facts.clusterTagKey}`, Values: ['owned'] }] }));
    expect((vpcs.Vpcs ?? []).map((v) => v.VpcId)).toEqual([ids?.vpcId]);
  });
});
