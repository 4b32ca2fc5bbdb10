import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '@karpenter-operator/core';
import { nodeClassSourceFromConventions, type ConventionResult } from './conventions.js';
import {
  aBootImagesConfigMap,
  aUpiCloud,
  aUpiDiscoveryInput,
  INFRA_ID,
  REGION,
  UPI_AMI,
  UPI_ARM_AMI,
  upiNodes,
  upiReads,
  type UpiCloud,
} from './testing/index.js';

const X = INFRA_ID;
const withoutGroups = (c: UpiCloud, ...names: string[]) => {
  c.groups = c.groups.filter((g) => !names.includes(g.GroupName!));
};
const workers = (c: UpiCloud) => c.instances.filter((i) => i.InstanceId!.startsWith('i-0a'));
const noWorkers = (c: UpiCloud) => {
  c.instances = c.instances.filter((i) => !i.InstanceId!.startsWith('i-0a'));
};

async function discover(c: UpiCloud, input = aUpiDiscoveryInput(c)): Promise<ConventionResult> {
  return nodeClassSourceFromConventions(input, upiReads(c));
}

async function failure(c: UpiCloud, input = aUpiDiscoveryInput(c)): Promise<InvalidInputError> {
  try {
    await discover(c, input);
  } catch (e) {
    if (e instanceof InvalidInputError) return e;
    throw e;
  }
  throw new Error('discovery succeeded');
}

const sourceOf = (r: ConventionResult, field: string) => r.sources.find((s) => s.field === field)?.source;

describe('discovery without worker MachineSets: each rule and each fallback', () => {
  it('C1–C7 from conventions: private internal-elb subnets of the control-plane VPC, node and lb groups, the worker profile', async () => {
    const c = aUpiCloud();
    const r = await discover(c);
    expect(r.source).toMatchObject({
      subnetSelectorTerms: [{ id: 'subnet-0priva' }, { id: 'subnet-0privb' }],
      securityGroupSelectorTerms: [{ id: 'sg-0node' }, { id: 'sg-0lb' }],
      instanceProfile: `${X}-worker-profile`,
      imageSelectorTerms: [{ id: UPI_AMI }],
      maxPods: 250,
    });
    expect(r.source.rootVolume).toBeUndefined();
    expect(r.sources).toEqual(
      ['subnets', 'securityGroups', 'instanceProfile', 'ami', 'userData', 'blockDevice'].map((field) => ({ field, source: 'Conventions' })),
    );
    expect(r.unverified).toEqual([]);
  });

  it.each([
    {
      name: 'C1 private subnets without internal-elb: cluster-tagged, not elb, no public IPs',
      mutate: (c: UpiCloud) => {
        for (const s of c.subnets) s.Tags = s.Tags!.filter((t) => t.Key !== 'kubernetes.io/role/internal-elb');
      },
      field: 'subnets',
      expected: [{ id: 'subnet-0priva' }, { id: 'subnet-0privb' }],
      source: 'Conventions',
    },
    {
      name: 'C1 fallback: no cluster-tagged subnet, the worker instances’ subnets',
      mutate: (c: UpiCloud) => {
        for (const s of c.subnets) s.Tags = [];
      },
      field: 'subnets',
      expected: [{ id: 'subnet-0priva' }, { id: 'subnet-0privb' }],
      source: 'WorkerInstances',
    },
    {
      name: 'C2 before 4.16: <infraID>-worker-sg',
      mutate: (c: UpiCloud) => {
        withoutGroups(c, `${X}-node`, `${X}-lb`);
        c.groups.push({ GroupId: 'sg-0legacy', GroupName: `${X}-worker-sg`, VpcId: c.vpcId });
      },
      field: 'securityGroups',
      expected: [{ id: 'sg-0legacy' }],
      source: 'Conventions',
    },
    {
      name: 'C2 fallback: no conventional group, the worker instances’ groups',
      mutate: (c: UpiCloud) => withoutGroups(c, `${X}-node`, `${X}-lb`),
      field: 'securityGroups',
      expected: [{ id: 'sg-0wk' }],
      source: 'WorkerInstances',
    },
    {
      name: 'C2 fallback: only one of node/lb (partial conventions) is not used',
      mutate: (c: UpiCloud) => withoutGroups(c, `${X}-lb`),
      field: 'securityGroups',
      expected: [{ id: 'sg-0wk' }],
      source: 'WorkerInstances',
    },
    {
      name: 'C2 ignores a conventional name in another VPC',
      mutate: (c: UpiCloud) => {
        for (const g of c.groups) if (g.GroupName === `${X}-lb`) g.VpcId = 'vpc-0other';
      },
      field: 'securityGroups',
      expected: [{ id: 'sg-0wk' }],
      source: 'WorkerInstances',
    },
    {
      name: 'C3 fallback: no <infraID>-worker-profile, the worker instances’ profile (proven in IAM)',
      mutate: (c: UpiCloud) => {
        c.profiles = c.profiles.filter((p) => p.name !== `${X}-worker-profile`);
        c.profiles.push({ name: 'upi-WorkerInstanceProfile-1X2Y', arn: 'arn', roles: ['w'] });
      },
      field: 'instanceProfile',
      expected: 'upi-WorkerInstanceProfile-1X2Y',
      source: 'WorkerInstances',
    },
    {
      name: 'C3 fallback: a conventional profile without a role is not used',
      mutate: (c: UpiCloud) => {
        c.profiles = c.profiles.map((p) => (p.name === `${X}-worker-profile` ? { ...p, roles: [] } : p));
        c.profiles.push({ name: 'upi-WorkerInstanceProfile-1X2Y', arn: 'arn', roles: ['w'] });
      },
      field: 'instanceProfile',
      expected: 'upi-WorkerInstanceProfile-1X2Y',
      source: 'WorkerInstances',
    },
  ])('$name', async ({ mutate, field, expected, source }) => {
    const c = aUpiCloud();
    mutate(c);
    const r = await discover(c);
    const key = { subnets: 'subnetSelectorTerms', securityGroups: 'securityGroupSelectorTerms', instanceProfile: 'instanceProfile' }[
      field
    ]!;
    expect((r.source as unknown as Record<string, unknown>)[key]).toEqual(expected);
    expect(sourceOf(r, field)).toBe(source);
  });

  it('C4: one boot image per architecture the nodes run', async () => {
    const c = aUpiCloud();
    const nodes = upiNodes(c);
    nodes[4] = { ...nodes[4]!, architecture: 'arm64' };
    const r = await discover(c, aUpiDiscoveryInput(c, { nodes }));
    expect(r.source.imageSelectorTerms).toEqual([{ id: UPI_AMI }, { id: UPI_ARM_AMI }]);
  });

  it.each([
    {
      name: 'several candidate security groups (4.16 names and the older one)',
      mutate: (c: UpiCloud) => c.groups.push({ GroupId: 'sg-0legacy', GroupName: `${X}-worker-sg`, VpcId: c.vpcId }),
      reason: 'DiscoveryAmbiguous',
      message: `securityGroups: ambiguous: several candidate security groups in vpc-0upi: ${X}-node and ${X}-lb (4.16 and later) and ${X}-worker-sg (before 4.16)`,
    },
    {
      name: 'worker instances with different security groups',
      mutate: (c: UpiCloud) => {
        withoutGroups(c, `${X}-node`);
        workers(c)[1]!.SecurityGroups = [{ GroupId: 'sg-0other' }];
      },
      reason: 'DiscoveryAmbiguous',
      message: 'the worker instances use different security groups (i-0a0000000000000a: sg-0wk; i-0a0000000000000b: sg-0other)',
    },
    {
      name: 'worker instances with different instance profiles',
      mutate: (c: UpiCloud) => {
        c.profiles = c.profiles.filter((p) => p.name !== `${X}-worker-profile`);
        workers(c)[1]!.IamInstanceProfile = { Arn: 'arn:aws:iam::1:instance-profile/other' };
      },
      reason: 'DiscoveryAmbiguous',
      message: 'the worker instances use different instance profiles (other, upi-WorkerInstanceProfile-1X2Y)',
    },
    {
      name: 'control-plane instances in two VPCs',
      mutate: (c: UpiCloud) => {
        c.instances[0]!.VpcId = 'vpc-0other';
      },
      reason: 'DiscoveryAmbiguous',
      message: 'subnets: ambiguous: the control-plane instances are in several VPCs (vpc-0other, vpc-0upi)',
    },
    {
      name: 'a VPC whose cluster-tagged subnets belong to another cluster, no workers',
      mutate: (c: UpiCloud) => {
        for (const s of c.subnets) s.Tags = [{ Key: 'kubernetes.io/cluster/other-abcde', Value: 'owned' }];
        noWorkers(c);
      },
      reason: 'DiscoveryIncomplete',
      message: `subnets: no private subnet tagged kubernetes.io/cluster/${X} (owned or shared) in vpc-0upi; its subnets are tagged for other clusters: subnet-0priva (kubernetes.io/cluster/other-abcde)`,
    },
    {
      name: 'the worker profile is not in IAM',
      mutate: (c: UpiCloud) => {
        c.profiles = [];
      },
      reason: 'DiscoveryIncomplete',
      message: `instanceProfile: no instance profile named ${X}-worker-profile (IAM GetInstanceProfile: NoSuchEntity), and the worker instances' profile upi-WorkerInstanceProfile-1X2Y is not in IAM`,
    },
    {
      name: 'the worker profile has no role',
      mutate: (c: UpiCloud) => {
        c.profiles = [{ name: 'upi-WorkerInstanceProfile-1X2Y', arn: 'arn', roles: [] }];
      },
      reason: 'DiscoveryIncomplete',
      message: `and the worker instances' profile upi-WorkerInstanceProfile-1X2Y has no role`,
    },
    {
      name: 'the boot image is not in EC2',
      mutate: (c: UpiCloud) => {
        c.images = [];
      },
      reason: 'DiscoveryIncomplete',
      message: `ami: AMI ${UPI_AMI} (coreos-bootimages, amd64 in ${REGION}) not found in EC2`,
    },
  ])('never guesses: $name', async ({ mutate, reason, message }) => {
    const c = aUpiCloud();
    mutate(c);
    const e = await failure(c);
    expect(e.reason).toBe(reason);
    expect(e.object).toBe('EC2NodeClass default');
    expect(e.message).toContain(message);
  });

  it('names every missing piece and what was tried when the conventional names do not exist and no worker runs', async () => {
    const c = aUpiCloud();
    c.groups = [];
    c.profiles = [];
    c.images = [];
    for (const s of c.subnets) s.Tags = [];
    noWorkers(c);
    const e = await failure(c);
    expect(e.reason).toBe('DiscoveryIncomplete');
    expect(e.field).toBe('spec.subnetSelectorTerms, spec.securityGroupSelectorTerms, spec.instanceProfile, spec.amiSelectorTerms');
    expect(e.message).toContain(
      `subnets: no private subnet tagged kubernetes.io/cluster/${X} (owned or shared) in vpc-0upi, and no running worker instance to copy from`,
    );
    expect(e.message).toContain(
      `securityGroups: no security group named ${X}-node or ${X}-lb (nor ${X}-worker-sg) in vpc-0upi, and no running worker instance to copy from`,
    );
    expect(e.message).toContain(
      `instanceProfile: no instance profile named ${X}-worker-profile (IAM GetInstanceProfile: NoSuchEntity), and no running worker instance to copy from`,
    );
    expect(e.message).toContain(`ami: AMI ${UPI_AMI}`);
  });

  it('without nodes it says there is no control-plane instance to find the VPC from', async () => {
    const c = aUpiCloud();
    c.groups = [];
    const e = await failure(c, aUpiDiscoveryInput(c, { nodes: [] }));
    expect(e.message).toContain(
      'subnets: no control-plane node with an AWS providerID to find the VPC from, and no running worker instance to copy from',
    );
  });

  it('reports a missing user-data Secret and boot image locally, with the cloud still consulted for the rest', async () => {
    const c = aUpiCloud();
    const e = await failure(
      c,
      aUpiDiscoveryInput(c, { secrets: [], bootImages: aBootImagesConfigMap({ x86_64: { 'eu-west-1': UPI_AMI } }) }),
    );
    expect(e.message).toMatch(/ami: .*no AMI for x86_64 in us-east-1/);
    expect(e.message).toMatch(/userData: .*Secret openshift-machine-api\/worker-user-data not found/);
  });

  it('offline: the conventional values, each listed as unverified, and no cloud read', async () => {
    const c = aUpiCloud();
    const r = await nodeClassSourceFromConventions(aUpiDiscoveryInput(c), undefined);
    expect(c.calls).toEqual([]);
    expect(r.source.securityGroupSelectorTerms).toEqual([{ name: `${X}-node` }, { name: `${X}-lb` }]);
    expect(r.source.instanceProfile).toBe(`${X}-worker-profile`);
    expect(r.unverified.map((u) => u.split(':')[0])).toEqual([
      'spec.subnetSelectorTerms',
      'spec.securityGroupSelectorTerms',
      'spec.instanceProfile',
      'spec.amiSelectorTerms',
    ]);
  });

  it('is deterministic: the same world gives the same source', async () => {
    const a = await discover(aUpiCloud());
    const b = await discover(aUpiCloud());
    expect(a).toEqual(b);
  });
});
