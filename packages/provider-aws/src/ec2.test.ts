import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mockClient } from 'aws-sdk-client-mock';
import {
  DescribeImagesCommand,
  DescribeInstancesCommand,
  DescribeSecurityGroupsCommand,
  DescribeSubnetsCommand,
  EC2Client,
  EC2ServiceException,
  type Filter,
  type Image,
  type Instance,
  type SecurityGroup,
  type Subnet,
  type Tag,
} from '@aws-sdk/client-ec2';
import { CoreError, ForbiddenError, InvalidInputError, RejectedError, TransientError, type KubeObject } from '@karpenter-operator/core';
import { createEc2Client, rereadEvery } from './aws-client.js';
import { mapAwsError } from './aws-errors.js';
import { Ec2Adapter, webIdentityTokenFileOf } from './ec2.js';
import { instanceIdFromProviderId } from './instances.js';
import { aFacts, INFRA_ID } from './testing/builders.js';
import { matchesEc2Filters } from './testing/upi.js';

const ec2Mock = mockClient(EC2Client);
const facts = aFacts();
const CLUSTER_TAG: Tag = { Key: `kubernetes.io/cluster/${INFRA_ID}`, Value: 'owned' };

function awsError(name: string, status: number, fault: 'client' | 'server' = status >= 500 ? 'server' : 'client'): EC2ServiceException {
  return new EC2ServiceException({ name, $fault: fault, $metadata: { httpStatusCode: status }, message: `${name} happened` });
}

const matches = matchesEc2Filters;

interface World {
  subnets: Subnet[];
  groups: SecurityGroup[];
  images: Image[];
}

function serve(world: World): void {
  ec2Mock.on(DescribeSubnetsCommand).callsFake((input: { Filters?: Filter[] }) => ({
    Subnets: world.subnets.filter((s) => matches(input.Filters, { 'subnet-id': s.SubnetId }, s.Tags)),
  }));
  ec2Mock.on(DescribeSecurityGroupsCommand).callsFake((input: { Filters?: Filter[] }) => ({
    SecurityGroups: world.groups.filter((g) => matches(input.Filters, { 'group-id': g.GroupId, 'group-name': g.GroupName }, g.Tags)),
  }));
  ec2Mock.on(DescribeImagesCommand).callsFake((input: { Filters?: Filter[] }) => ({
    Images: world.images.filter((i) => matches(input.Filters, { 'image-id': i.ImageId, name: i.Name }, i.Tags)),
  }));
}

const subnet = (id: string, o: Partial<Subnet> = {}): Subnet => ({
  SubnetId: id,
  VpcId: 'vpc-0cluster',
  Tags: [{ Key: 'Name', Value: `${INFRA_ID}-${id}` }, CLUSTER_TAG],
  ...o,
});
const group = (id: string, o: Partial<SecurityGroup> = {}): SecurityGroup => ({
  GroupId: id,
  GroupName: id,
  VpcId: 'vpc-0cluster',
  Tags: [{ Key: 'Name', Value: `${INFRA_ID}-${id}` }, CLUSTER_TAG],
  ...o,
});
const image = (id: string, o: Partial<Image> = {}): Image => ({ ImageId: id, State: 'available', Name: `rhcos-${id}`, ...o });

const goodWorld = (): World => ({
  subnets: [subnet('subnet-0a'), subnet('subnet-0b'), subnet('subnet-0c')],
  groups: [group('sg-0node'), group('sg-0lb')],
  images: [image('ami-0x86'), image('ami-0arm')],
});

const nodeClass = (spec: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: 'karpenter.k8s.aws/v1',
  kind: 'EC2NodeClass',
  metadata: { name: 'default' },
  spec: {
    amiFamily: 'Custom',
    amiSelectorTerms: [{ id: 'ami-0x86' }, { id: 'ami-0arm' }],
    subnetSelectorTerms: [{ id: 'subnet-0a' }, { tags: { Name: `${INFRA_ID}-subnet-0b` } }],
    securityGroupSelectorTerms: [{ id: 'sg-0node' }, { tags: { Name: `${INFRA_ID}-sg-0lb` } }],
    instanceProfile: `${INFRA_ID}-worker-profile`,
    ...spec,
  },
});

const adapter = () =>
  new Ec2Adapter(
    { credentials: { type: 'default' } },
    (region) => new EC2Client({ region, credentials: { accessKeyId: 'a', secretAccessKey: 'b' } }),
  );

beforeEach(() => ec2Mock.reset());
afterEach(() => ec2Mock.reset());

describe('mapAwsError', () => {
  const network = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5000'), { code: 'ECONNREFUSED' });
  const timeout = Object.assign(new Error('Connection timed out after 3000 ms'), { name: 'TimeoutError' });
  const creds = Object.assign(new Error('Could not load credentials from any providers'), { name: 'CredentialsProviderError' });
  it.each([
    { name: 'throttled (RequestLimitExceeded, 503)', error: awsError('RequestLimitExceeded', 503), type: TransientError },
    { name: 'throttled (Throttling, 400)', error: awsError('Throttling', 400), type: TransientError },
    { name: 'too many requests (429)', error: awsError('SomethingNew', 429), type: TransientError },
    { name: 'server error (InternalError, 500)', error: awsError('InternalError', 500), type: TransientError },
    { name: 'unavailable (503)', error: awsError('Unavailable', 503), type: TransientError },
    { name: 'refused operation (UnauthorizedOperation, 403)', error: awsError('UnauthorizedOperation', 403), type: ForbiddenError },
    { name: 'bad keys (AuthFailure, 401)', error: awsError('AuthFailure', 401), type: ForbiddenError },
    { name: 'expired token', error: awsError('ExpiredToken', 400), type: ForbiddenError },
    { name: 'invalid parameter (400)', error: awsError('InvalidParameterValue', 400), type: RejectedError },
    { name: 'network (ECONNREFUSED)', error: network, type: TransientError },
    { name: 'timeout', error: timeout, type: TransientError },
    { name: 'no credentials', error: creds, type: InvalidInputError },
  ])('$name', ({ error, type }) => {
    const mapped = mapAwsError('describing subnets', error);
    expect(mapped).toBeInstanceOf(type);
    expect(mapped.message).toContain(`describing subnets: `);
    expect(mapped.message).toContain(error.message);
    if (!(mapped instanceof InvalidInputError)) expect(mapped.message).toMatch(/^describing subnets: /);
    expect(mapped.cause).toBe(error);
  });

  it('maps a missing token file of the credential chain to InvalidInputError naming the file', () => {
    const enoent = Object.assign(new Error("ENOENT: no such file or directory, open '/var/run/secrets/openshift/serviceaccount/token'"), {
      code: 'ENOENT',
      path: '/var/run/secrets/openshift/serviceaccount/token',
    });
    const mapped = mapAwsError('describing instances', enoent);
    expect(mapped).toBeInstanceOf(InvalidInputError);
    expect((mapped as InvalidInputError).reason).toBe('CloudCredentialsMissing');
    expect(mapped.message).toContain('/var/run/secrets/openshift/serviceaccount/token is not readable (ENOENT)');
    expect(mapped.message).toContain('web_identity_token_file');
    // A socket error carries a code but no path: still transient.
    expect(mapAwsError('op', Object.assign(new Error('x'), { code: 'ECONNRESET' }))).toBeInstanceOf(TransientError);
  });

  it('passes core errors through', () => {
    const e = new TransientError('x');
    expect(mapAwsError('op', e)).toBe(e);
  });
});

describe('instanceIdFromProviderId', () => {
  it.each([
    { name: 'zonal', providerID: 'aws:///us-east-1a/i-0abc123', want: 'i-0abc123' },
    { name: 'no zone', providerID: 'aws:///i-0abc123', want: 'i-0abc123' },
    { name: 'other cloud', providerID: 'azure:///subscriptions/x/vm-1', want: undefined },
    { name: 'not an instance', providerID: 'aws:///us-east-1a/vol-0abc', want: undefined },
    { name: 'empty', providerID: '', want: undefined },
  ])('$name', ({ providerID, want }) => expect(instanceIdFromProviderId(providerID)).toBe(want));
});

describe('Ec2Adapter.verifyNodeClass', () => {
  it.each([
    { name: 'everything exists and belongs to the cluster', world: goodWorld(), spec: {}, want: [] },
    {
      name: 'subnet id missing',
      world: { ...goodWorld(), subnets: [subnet('subnet-0b')] },
      spec: {},
      want: [{ field: 'spec.subnetSelectorTerms[0]', message: 'subnet subnet-0a not found' }],
    },
    {
      name: 'no subnet with the tags',
      world: { ...goodWorld(), subnets: [subnet('subnet-0a')] },
      spec: {},
      want: [{ field: 'spec.subnetSelectorTerms[1]', message: `no subnet has tags {Name=${INFRA_ID}-subnet-0b}` }],
    },
    {
      name: 'subnet in another VPC',
      world: { ...goodWorld(), subnets: [subnet('subnet-0a'), subnet('subnet-0b', { VpcId: 'vpc-0other' })] },
      spec: {},
      want: [{ field: 'spec.subnetSelectorTerms[1]', message: "subnet subnet-0b is in vpc-0other, not in the cluster's vpc-0cluster" }],
    },
    {
      name: 'subnet without the cluster tag',
      world: {
        ...goodWorld(),
        subnets: [subnet('subnet-0a'), subnet('subnet-0b', { Tags: [{ Key: 'Name', Value: `${INFRA_ID}-subnet-0b` }] })],
      },
      spec: {},
      want: [{ field: 'spec.subnetSelectorTerms[1]', message: `subnet subnet-0b lacks the cluster tag kubernetes.io/cluster/${INFRA_ID}` }],
    },
    {
      name: 'security group missing and one in another VPC',
      world: { ...goodWorld(), groups: [group('sg-0lb', { VpcId: 'vpc-0other' })] },
      spec: {},
      want: [
        { field: 'spec.securityGroupSelectorTerms[0]', message: 'security group sg-0node not found' },
        {
          field: 'spec.securityGroupSelectorTerms[1]',
          message: "security group sg-0lb is in vpc-0other, not in the cluster's vpc-0cluster",
        },
      ],
    },
    {
      name: 'security group by name missing',
      world: goodWorld(),
      spec: { securityGroupSelectorTerms: [{ name: 'legacy' }] },
      want: [{ field: 'spec.securityGroupSelectorTerms[0]', message: 'no security group named legacy' }],
    },
    {
      name: 'AMI missing and AMI not available',
      world: { ...goodWorld(), images: [image('ami-0arm', { State: 'pending' })] },
      spec: {},
      want: [
        { field: 'spec.amiSelectorTerms[0]', message: 'AMI ami-0x86 not found' },
        { field: 'spec.amiSelectorTerms[1]', message: 'AMI ami-0arm is pending' },
      ],
    },
    {
      name: "the operator's launch hold is not a missing AMI",
      world: { ...goodWorld(), images: [] },
      spec: { amiSelectorTerms: [{ tags: { 'karpenter-operator.openshift.io/awaiting-machineconfigpool': 'karpenter-default' } }] },
      want: [],
    },
    {
      name: 'no selector terms at all',
      world: goodWorld(),
      spec: { subnetSelectorTerms: [] },
      want: [{ field: 'spec.subnetSelectorTerms', message: 'no selector terms' }],
    },
  ])('$name', async ({ world, spec, want }) => {
    serve(world);
    expect(await adapter().verifyNodeClass(nodeClass(spec), facts)).toEqual(want);
  });

  it('looks up all id terms of a kind in one call', async () => {
    serve(goodWorld());
    await adapter().verifyNodeClass(
      nodeClass({ subnetSelectorTerms: [{ id: 'subnet-0a' }, { id: 'subnet-0b' }, { id: 'subnet-0c' }] }),
      facts,
    );
    const calls = ec2Mock.commandCalls(DescribeSubnetsCommand);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.args[0].input.Filters).toEqual([{ Name: 'subnet-id', Values: ['subnet-0a', 'subnet-0b', 'subnet-0c'] }]);
  });

  it('maps a throttled call to TransientError naming the operation', async () => {
    serve(goodWorld());
    ec2Mock.on(DescribeSubnetsCommand).rejects(awsError('RequestLimitExceeded', 503));
    await expect(adapter().verifyNodeClass(nodeClass(), facts)).rejects.toThrow(TransientError);
    await expect(adapter().verifyNodeClass(nodeClass(), facts)).rejects.toThrow(/^describing subnets: RequestLimitExceeded/);
  });

  it('maps refused credentials to ForbiddenError', async () => {
    serve(goodWorld());
    ec2Mock.on(DescribeImagesCommand).rejects(awsError('UnauthorizedOperation', 403));
    await expect(adapter().verifyNodeClass(nodeClass(), facts)).rejects.toThrow(ForbiddenError);
  });
});

describe('Ec2Adapter.describeInstances', () => {
  const instance = (id: string, o: Partial<Instance> = {}): Instance => ({
    InstanceId: id,
    State: { Name: 'running' },
    PrivateDnsName: `ip-10-0-0-${id.length}.ec2.internal`,
    PrivateIpAddress: '10.0.0.5',
    NetworkInterfaces: [
      { PrivateIpAddresses: [{ PrivateIpAddress: '10.0.0.5' }, { PrivateIpAddress: '10.0.0.6', Association: { PublicIp: '54.1.2.3' } }] },
    ],
    Tags: [CLUSTER_TAG],
    ...o,
  });

  it('makes one filtered call, follows pages, and reports ownership', async () => {
    ec2Mock
      .on(DescribeInstancesCommand)
      .resolvesOnce({ Reservations: [{ Instances: [instance('i-01')] }], NextToken: 'page2' })
      .resolvesOnce({
        Reservations: [{ Instances: [instance('i-02', { Tags: [{ Key: 'kubernetes.io/cluster/other', Value: 'owned' }] })] }],
      });
    const got = await adapter().describeInstances(['i-01', 'i-02', 'i-03', 'i-01'], facts);
    const calls = ec2Mock.commandCalls(DescribeInstancesCommand);
    expect(calls).toHaveLength(2);
    expect(calls[0]!.args[0].input).toEqual({
      Filters: [
        { Name: 'instance-id', Values: ['i-01', 'i-02', 'i-03'] },
        { Name: 'instance-state-name', Values: ['pending', 'running'] },
      ],
    });
    expect(calls[1]!.args[0].input.NextToken).toBe('page2');
    expect(got).toEqual([
      {
        instanceId: 'i-01',
        live: true,
        privateDnsName: 'ip-10-0-0-4.ec2.internal',
        privateIpAddresses: ['10.0.0.5', '10.0.0.6'],
        publicIpAddresses: ['54.1.2.3'],
        ownedByCluster: true,
      },
      expect.objectContaining({ instanceId: 'i-02', ownedByCluster: false }),
    ]);
  });

  it.each([
    ['pending', true],
    ['running', true],
    ['shutting-down', false],
    ['stopping', false],
    ['stopped', false],
    ['terminated', false],
    [undefined, false],
  ] as const)('decides live from the EC2 state (%s → %s), so that core never reads state words', async (state, live) => {
    ec2Mock
      .on(DescribeInstancesCommand)
      .resolves({ Reservations: [{ Instances: [instance('i-01', { State: state ? { Name: state } : {} })] }] });
    const [got] = await adapter().describeInstances(['i-01'], facts);
    expect(got?.live).toBe(live);
  });

  it('owns only instances whose cluster tag says owned (shared is several clusters, never a node of this one)', async () => {
    const key = CLUSTER_TAG.Key!;
    ec2Mock.on(DescribeInstancesCommand).resolves({
      Reservations: [
        {
          Instances: [
            instance('i-0a', { Tags: [{ Key: key, Value: 'owned' }] }),
            instance('i-0b', { Tags: [{ Key: key, Value: 'shared' }] }),
            instance('i-0c', { Tags: [{ Key: key, Value: '' }] }),
            instance('i-0d', { Tags: [{ Key: key, Value: 'Owned' }] }),
            instance('i-0e', { Tags: [] }),
          ],
        },
      ],
    });
    const got = await adapter().describeInstances(['i-0a', 'i-0b', 'i-0c', 'i-0d', 'i-0e'], facts);
    expect(Object.fromEntries(got.map((i) => [i.instanceId, i.ownedByCluster]))).toEqual({
      'i-0a': true,
      'i-0b': false,
      'i-0c': false,
      'i-0d': false,
      'i-0e': false,
    });
  });

  it('sends nothing for no ids', async () => {
    expect(await adapter().describeInstances([], facts)).toEqual([]);
    expect(ec2Mock.commandCalls(DescribeInstancesCommand)).toHaveLength(0);
  });

  it('batches beyond the 200-value filter limit', async () => {
    ec2Mock.on(DescribeInstancesCommand).resolves({ Reservations: [] });
    await adapter().describeInstances(
      Array.from({ length: 250 }, (_, i) => `i-${i.toString(16).padStart(4, '0')}`),
      facts,
    );
    expect(ec2Mock.commandCalls(DescribeInstancesCommand).map((c) => c.args[0].input.Filters![0]!.Values!.length)).toEqual([200, 50]);
  });

  it('maps errors', async () => {
    ec2Mock.on(DescribeInstancesCommand).rejects(awsError('UnauthorizedOperation', 403));
    await expect(adapter().describeInstances(['i-01'], facts)).rejects.toThrow(/^describing instances: UnauthorizedOperation/);
  });
});

describe('Ec2Adapter.checkCredentials', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ko-aws-'));
  const file = join(dir, 'credentials');
  writeFileSync(file, '[default]\naws_access_key_id = AKIAEXAMPLE\naws_secret_access_key = secret\n');
  const withFile = (path: string) =>
    new Ec2Adapter({ credentials: { type: 'sharedCredentialsFile', path } }, (region) => new EC2Client({ region }));

  it('resolves when the dry run would have succeeded', async () => {
    ec2Mock.on(DescribeInstancesCommand).rejects(awsError('DryRunOperation', 412));
    await expect(withFile(file).checkCredentials(facts)).resolves.toBeUndefined();
    const calls = ec2Mock.commandCalls(DescribeInstancesCommand);
    expect(calls.map((c) => c.args[0].input)).toEqual([{ DryRun: true, MaxResults: 5 }]);
  });

  it('resolves when the endpoint ignores DryRun and answers', async () => {
    ec2Mock.on(DescribeInstancesCommand).resolves({ Reservations: [] });
    await expect(withFile(file).checkCredentials(facts)).resolves.toBeUndefined();
  });

  it('names a missing credentials file', async () => {
    const err = await withFile(join(dir, 'nope'))
      .checkCredentials(facts)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidInputError);
    expect((err as CoreError).message).toContain(join(dir, 'nope'));
    expect(ec2Mock.commandCalls(DescribeInstancesCommand)).toHaveLength(0);
  });

  it('names the missing web-identity token of an STS profile with the reason the credential chain would give', async () => {
    const token = join(dir, 'no-token');
    const sts = join(dir, 'sts-credentials');
    writeFileSync(sts, `[default]\nrole_arn = arn:aws:iam::1:role/k\nweb_identity_token_file = ${token}\n`);
    const err = await withFile(sts)
      .checkCredentials(facts)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidInputError);
    const fromChain = mapAwsError('op', Object.assign(new Error('ENOENT'), { code: 'ENOENT', path: token }));
    expect((err as InvalidInputError).reason).toBe((fromChain as InvalidInputError).reason);
    expect((err as InvalidInputError).message).toContain(`${token} is not readable (ENOENT)`);
    expect((err as InvalidInputError).message).toContain(sts);
    expect(ec2Mock.commandCalls(DescribeInstancesCommand)).toHaveLength(0);
  });

  it('reports refused credentials as ForbiddenError', async () => {
    ec2Mock.on(DescribeInstancesCommand).rejects(awsError('UnauthorizedOperation', 403));
    await expect(withFile(file).checkCredentials(facts)).rejects.toThrow(ForbiddenError);
    await expect(withFile(file).checkCredentials(facts)).rejects.toThrow(
      /^checking credentials \(DescribeInstances DryRun\): UnauthorizedOperation/,
    );
  });

  it('needs a region', async () => {
    await expect(withFile(file).checkCredentials(aFacts({ region: undefined }))).rejects.toThrow(/status.platformStatus.aws.region/);
  });
});

describe('createEc2Client', () => {
  it('uses adaptive retries, the endpoint override and timeouts', async () => {
    const c = createEc2Client(
      {
        endpoint: 'http://127.0.0.1:5000',
        maxAttempts: 7,
        requestTimeoutMs: 1234,
        connectionTimeoutMs: 99,
        credentials: { type: 'sharedCredentialsFile', path: '/nonexistent' },
      },
      'eu-west-1',
    );
    expect(c.config.retryMode).toBe('adaptive');
    expect(await c.config.maxAttempts()).toBe(7);
    expect(await c.config.region()).toBe('eu-west-1');
    expect(await c.config.endpoint!()).toMatchObject({ hostname: '127.0.0.1', port: 5000, protocol: 'http:' });
    const handler = c.config.requestHandler as unknown as { configProvider: Promise<Record<string, unknown>> };
    expect(await handler.configProvider).toMatchObject({ requestTimeout: 1234, connectionTimeout: 99, throwOnRequestTimeout: true });
  });
});

describe('rereadEvery', () => {
  it('gives static keys an expiration so a rotated Secret is read again, and keeps STS expirations', async () => {
    const at = Date.UTC(2026, 0, 1);
    const staticKeys = rereadEvery(
      600_000,
      async () => ({ accessKeyId: 'a', secretAccessKey: 'b' }),
      () => at,
    );
    expect((await staticKeys()).expiration).toEqual(new Date(at + 600_000));
    const sts = new Date(at + 3_600_000);
    const temporary = rereadEvery(
      600_000,
      async () => ({ accessKeyId: 'a', secretAccessKey: 'b', sessionToken: 't', expiration: sts }),
      () => at,
    );
    expect((await temporary()).expiration).toBe(sts);
  });

  it('really re-reads the shared credentials file after rotation', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ko-aws-rot-'));
    const file = join(dir, 'credentials');
    writeFileSync(file, '[default]\naws_access_key_id = OLD\naws_secret_access_key = s\n');
    const c = createEc2Client({ credentials: { type: 'sharedCredentialsFile', path: file } }, 'us-east-1');
    const first = await c.config.credentials();
    expect(first.accessKeyId).toBe('OLD');
    writeFileSync(file, '[default]\naws_access_key_id = NEW\naws_secret_access_key = s\n');
    // The SDK's memoisation would keep OLD forever without an expiration; force the refresh window.
    const again = await c.config.credentials({ forceRefresh: true });
    expect(again.accessKeyId).toBe('NEW');
  });
});

describe('webIdentityTokenFileOf', () => {
  it.each([
    {
      name: 'STS profile as the cloud-credential operator writes it',
      text: '[default]\nsts_regional_endpoints = regional\nrole_arn = arn:aws:iam::1:role/k\nweb_identity_token_file = /var/run/secrets/openshift/serviceaccount/token\n',
      want: '/var/run/secrets/openshift/serviceaccount/token',
    },
    { name: 'static keys', text: '[default]\naws_access_key_id = A\naws_secret_access_key = B\n', want: undefined },
    { name: 'another profile only', text: '[other]\nweb_identity_token_file = /t\n', want: undefined },
    { name: 'config-file spelling, CRLF, comments', text: '# c\r\n[profile default]\r\nweb_identity_token_file=/t \r\n', want: '/t' },
    { name: 'empty', text: '', want: undefined },
  ])('$name', ({ text, want }) => {
    expect(webIdentityTokenFileOf(text, 'default')).toBe(want);
  });
});
