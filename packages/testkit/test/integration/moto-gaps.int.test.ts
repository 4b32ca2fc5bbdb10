import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import {
  CreateFleetCommand,
  CreateLaunchTemplateCommand,
  DeleteLaunchTemplateCommand,
  DescribeInstancesCommand,
  EC2Client,
  TerminateInstancesCommand,
} from '@aws-sdk/client-ec2';
import { describe, expect, it } from 'vitest';
import { motoLauncherPath } from '../../src/ec2-emulator.js';
import { seededWorld, testCluster } from '../../src/test-env.js';
import { loadToolchain } from '../../src/toolchain.js';

/**
 * The emulator gaps the real Karpenter runs into, closed by packages/testkit/moto/launch_moto.py: each
 * fix is checked here through the API, the way Karpenter calls it, on the moto of the pinned version.
 */
describe('moto, as launched for the real Karpenter', () => {
  it('refuses to start on a moto version its fixes are not pinned to', () => {
    const tc = loadToolchain();
    const python = join(dirname(tc.motoServer), 'python');
    // Pretend moto is another version: the launcher must stop before serving.
    const r = spawnSync(
      python,
      [
        '-c',
        `import moto, runpy, sys; moto.__version__ = "0.0.0"; sys.argv = ["launch_moto.py", "-p", "0"]; runpy.run_path(${JSON.stringify(motoLauncherPath())}, run_name="__main__")`,
      ],
      {
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/moto 0\.0\.0 is installed but its fixes are pinned to \d+\.\d+\.\d+/);
  });

  it('CreateFleet gives instances the security groups of the launch template network interface (as Karpenter sets them)', async () => {
    const world = seededWorld();
    const ec2 = new EC2Client(testCluster().ec2Config());
    const zone = world.facts.zones[0]!;
    const groups = [world.ec2!.securityGroupIds.node, world.ec2!.securityGroupIds.lb];
    const name = `moto-gaps-${Date.now()}`;
    const lt = await ec2.send(
      new CreateLaunchTemplateCommand({
        LaunchTemplateName: name,
        LaunchTemplateData: {
          ImageId: world.facts.amis.x86_64,
          // Karpenter's launch template: groups on the primary interface, none at the top level.
          NetworkInterfaces: [{ DeviceIndex: 0, AssociatePublicIpAddress: false, Groups: groups }],
          UserData: Buffer.from('{"ignition":{"version":"3.4.0"}}').toString('base64'),
        },
      }),
    );
    const ltId = lt.LaunchTemplate!.LaunchTemplateId!;
    try {
      const fleet = await ec2.send(
        new CreateFleetCommand({
          Type: 'instant',
          TargetCapacitySpecification: { TotalTargetCapacity: 1, DefaultTargetCapacityType: 'on-demand' },
          LaunchTemplateConfigs: [
            {
              LaunchTemplateSpecification: { LaunchTemplateId: ltId, Version: '$Latest' },
              Overrides: [{ InstanceType: 'm6i.large', SubnetId: world.ec2!.privateSubnetIds[zone], AvailabilityZone: zone }],
            },
          ],
          TagSpecifications: [{ ResourceType: 'instance', Tags: [{ Key: world.facts.clusterTagKey, Value: 'owned' }] }],
        }),
      );
      const instanceId = fleet.Instances?.[0]?.InstanceIds?.[0];
      expect(instanceId, JSON.stringify(fleet.Errors)).toBeDefined();
      const inst = (await ec2.send(new DescribeInstancesCommand({ InstanceIds: [instanceId!] }))).Reservations![0]!.Instances![0]!;
      expect((inst.SecurityGroups ?? []).map((g) => g.GroupId).sort()).toEqual([...groups].sort());
      expect(inst.SubnetId).toBe(world.ec2!.privateSubnetIds[zone]);
      expect(inst.Tags).toContainEqual({ Key: world.facts.clusterTagKey, Value: 'owned' });
      await ec2.send(new TerminateInstancesCommand({ InstanceIds: [instanceId!] }));
    } finally {
      await ec2.send(new DeleteLaunchTemplateCommand({ LaunchTemplateId: ltId }));
      ec2.destroy();
    }
  });
});
