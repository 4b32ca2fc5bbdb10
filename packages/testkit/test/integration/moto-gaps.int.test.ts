import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
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
import { motoLauncherPath, startEc2Emulator } from '../../src/ec2-emulator.js';
import { freePort } from '../../src/ports.js';
import { ProcessSupervisor } from '../../src/processes.js';
import { rhcosAmis } from '../../src/seed/openshift-aws.js';
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

  it('answers the same bytes with its speed fixes (python check, one process, over five states)', () => {
    const tc = loadToolchain();
    const python = join(dirname(tc.motoServer), 'python');
    const r = spawnSync(python, [join(dirname(motoLauncherPath()), 'check_speed_fixes.py')], {
      encoding: 'utf8',
      timeout: 300_000,
    });
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stdout).toMatch(/speed fixes: \d+ bodies identical over 5 states/);
  });

  it('answers DescribeInstances and DescribeTags with the same bodies as moto without its speed fixes', async () => {
    // Two fresh emulators, one without the speed fixes, seeded alike so that they draw the same ids; each
    // call goes to both and the raw bodies must match, but for request ids and the clock (launch and
    // attach times, which differ by the instants the two servers handled the call).
    const tc = loadToolchain();
    const dirs = [mkdtempSync(join(tmpdir(), 'moto-plain-')), mkdtempSync(join(tmpdir(), 'moto-fast-'))];
    const sups = dirs.map((d) => new ProcessSupervisor(d));
    try {
      const [plain, fast] = await Promise.all(
        sups.map(async (sup, i) =>
          startEc2Emulator(sup, {
            motoServer: tc.motoServer,
            port: await freePort(),
            baseDir: dirs[i]!,
            amis: rhcosAmis(),
            speedFixes: i === 1,
          }),
        ),
      );
      for (const e of [plain!, fast!]) {
        const seeded = await fetch(`${e.endpoint}/moto-api/seed?a=1804`, { method: 'POST' });
        expect(seeded.status).toBe(200);
      }
      const ami = rhcosAmis()[0]!.ami_id;
      let compared = 0;
      /** One call to both; the body of the emulator with the fixes, after checking it equals the other's. */
      const both = async (action: string, params: Record<string, string>): Promise<string> => {
        const [a, b] = [await ec2Query(plain!.endpoint, action, params), await ec2Query(fast!.endpoint, action, params)];
        expect(b.status, b.body).toBe(a.status);
        expect(masked(b.body), `${action} ${JSON.stringify(params)}`).toBe(masked(a.body));
        compared++;
        return b.body;
      };
      const all = (xml: string, tag: string) => [...xml.matchAll(new RegExp(`<${tag}>([^<]*)</${tag}>`, 'g'))].map((m) => m[1]!);

      const vpc = all(await both('CreateVpc', { CidrBlock: '10.9.0.0/16' }), 'vpcId')[0]!;
      const subnet = all(
        await both('CreateSubnet', { VpcId: vpc, CidrBlock: '10.9.1.0/24', AvailabilityZone: 'us-east-1a' }),
        'subnetId',
      )[0]!;
      const sg = all(await both('CreateSecurityGroup', { GroupName: 'nodes', GroupDescription: 'nodes', VpcId: vpc }), 'groupId')[0]!;
      const ids: string[] = [];
      for (const pool of ['a', 'b']) {
        const run = await both('RunInstances', {
          ImageId: ami,
          MinCount: '5',
          MaxCount: '5',
          InstanceType: 'm6i.large',
          'TagSpecification.1.ResourceType': 'instance',
          'TagSpecification.1.Tag.1.Key': 'kubernetes.io/cluster/demo',
          'TagSpecification.1.Tag.1.Value': 'owned',
          'TagSpecification.1.Tag.2.Key': 'karpenter.sh/nodepool',
          'TagSpecification.1.Tag.2.Value': pool,
          'TagSpecification.1.Tag.3.Key': 'Name',
          'TagSpecification.1.Tag.3.Value': '',
        });
        ids.push(...new Set(all(run, 'instanceId')));
      }
      // Several interfaces and private IPs: secondary IPs on the primary interface, and a second interface.
      const multi = [
        ...new Set(
          all(
            await both('RunInstances', {
              ImageId: ami,
              MinCount: '2',
              MaxCount: '2',
              'NetworkInterface.1.DeviceIndex': '0',
              'NetworkInterface.1.SubnetId': subnet,
              'NetworkInterface.1.SecurityGroupId.1': sg,
              'NetworkInterface.1.SecondaryPrivateIpAddressCount': '2',
            }),
            'instanceId',
          ),
        ),
      ];
      const eni = all(
        await both('CreateNetworkInterface', { SubnetId: subnet, 'SecurityGroupId.1': sg, SecondaryPrivateIpAddressCount: '1' }),
        'networkInterfaceId',
      )[0]!;
      await both('CreateTags', { 'ResourceId.1': eni, 'Tag.1.Key': 'role', 'Tag.1.Value': 'second' });
      await both('AttachNetworkInterface', { NetworkInterfaceId: eni, InstanceId: multi[0]!, DeviceIndex: '1' });
      expect(ids).toHaveLength(10);
      expect(multi).toHaveLength(2);

      const ask = async () => {
        await both('DescribeInstances', {});
        await both('DescribeInstances', {
          ...list('Filter.1.Value', [...ids.slice(2, 9), ...multi]),
          'Filter.1.Name': 'instance-id',
          'Filter.2.Name': 'instance-state-name',
          'Filter.2.Value.1': 'pending',
          'Filter.2.Value.2': 'running',
        });
        await both('DescribeInstances', { 'Filter.1.Name': 'tag:karpenter.sh/nodepool', 'Filter.1.Value.1': 'b' });
        await both('DescribeInstances', list('InstanceId', [ids[0]!, multi[0]!]));
        await both('DescribeTags', { 'Filter.1.Name': 'resource-id', 'Filter.1.Value.1': ids[1]! });
        await both('DescribeTags', { 'Filter.1.Name': 'resource-id', 'Filter.1.Value.1': eni });
        await both('DescribeTags', {});
        await both('DescribeNetworkInterfaces', {});
      };
      await ask();
      await both('CreateTags', { ...list('ResourceId', ids.slice(0, 4)), 'Tag.1.Key': 'karpenter.sh/nodeclaim', 'Tag.1.Value': 'c1' });
      await both('DeleteTags', { ...list('ResourceId', ids.slice(2, 6)), 'Tag.1.Key': 'karpenter.sh/nodepool' });
      await both('DeleteTags', { 'ResourceId.1': eni, 'Tag.1.Key': 'role' });
      await ask();
      await both('TerminateInstances', list('InstanceId', [ids[3]!, ids[7]!, multi[1]!]));
      await both('CreateTags', { 'ResourceId.1': ids[3]!, 'Tag.1.Key': 'after', 'Tag.1.Value': 'termination' });
      await ask();
      expect(compared).toBeGreaterThan(30);
    } finally {
      for (const sup of sups) await sup.stopAll();
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    }
  });
});

/** `{ Prefix.1: v1, Prefix.2: v2, ... }`, the EC2 Query API's list parameters. */
function list(prefix: string, values: string[]): Record<string, string> {
  return Object.fromEntries(values.map((v, i) => [`${prefix}.${i + 1}`, v]));
}

/** The body without what differs between two servers given the same calls: request ids and timestamps. */
function masked(xml: string): string {
  return xml.replace(/<requestId>[^<]*<\/requestId>/g, '<requestId/>').replace(/<(\w*Time)>\d{4}-\d\d-\d\dT[^<]*<\/\1>/g, '<$1/>');
}

/**
 * A raw EC2 Query API call, for the exact response body. moto reads the service and region from the
 * credential scope and does not check the signature.
 */
async function ec2Query(endpoint: string, action: string, params: Record<string, string>): Promise<{ status: number; body: string }> {
  const res = await fetch(endpoint, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/x-www-form-urlencoded; charset=utf-8',
      Authorization: 'AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/ec2/aws4_request, SignedHeaders=host, Signature=0',
    },
    body: new URLSearchParams({ Action: action, Version: '2016-11-15', ...params }).toString(),
  });
  return { status: res.status, body: await res.text() };
}
