import { beforeEach, describe, expect, it } from 'vitest';
import { Container } from 'inversify';
import { mockClient } from 'aws-sdk-client-mock';
import { DescribeImagesCommand, DescribeSecurityGroupsCommand, DescribeSubnetsCommand, EC2Client } from '@aws-sdk/client-ec2';
import { GetInstanceProfileCommand, IAMClient, IAMServiceException, NoSuchEntityException } from '@aws-sdk/client-iam';
import { CloudProviderId, ForbiddenError, InvalidInputError, type OperatorSettings } from '@karpenter-operator/core';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AWS_CRD_FILES, AwsCloudProvider } from './aws-cloud-provider.js';
import { awsProviderModule } from './module.js';
import { aDiscoveryInput, aFacts, INFRA_ID } from './testing/builders.js';
import { aUpiCloud, aUpiDiscoveryInput, UPI_AMI } from './testing/upi.js';
import { KARPENTER_AWS_CRDS_DIR } from './testing/crd-schema.js';

const settings: OperatorSettings = {
  namespace: 'openshift-karpenter',
  releaseVersion: '4.21.0',
  operandImage: 'quay.io/example/karpenter:1.14.1',
  crdDir: KARPENTER_AWS_CRDS_DIR,
};
const provider = (o: Partial<ConstructorParameters<typeof AwsCloudProvider>[0]> = {}) =>
  new AwsCloudProvider({ crdDir: KARPENTER_AWS_CRDS_DIR, ec2: { credentials: { type: 'default' } }, ...o });

describe('AwsCloudProvider', () => {
  it('serves AWS with EC2NodeClass', () => {
    const p = provider();
    expect(p.platform).toBe('AWS');
    expect(p.nodeClassType).toEqual({ apiVersion: 'karpenter.k8s.aws/v1', kind: 'EC2NodeClass' });
    expect(() => p.assertSupported()).not.toThrow();
    expect(p.relatedObjects()).toEqual([
      { group: 'karpenter.k8s.aws', resource: 'ec2nodeclasses', name: '' },
      {
        group: 'cloudcredential.openshift.io',
        resource: 'credentialsrequests',
        name: 'karpenter-cloud-credentials',
        namespace: 'openshift-cloud-credential-operator',
      },
      {
        group: 'cloudcredential.openshift.io',
        resource: 'credentialsrequests',
        name: 'karpenter-node-identity-credentials',
        namespace: 'openshift-cloud-credential-operator',
      },
    ]);
  });

  it('reads the four runtime CRDs, one served version each', () => {
    const crds = provider().crds();
    expect(crds.map((c) => c.metadata.name)).toEqual([
      'nodepools.karpenter.sh',
      'nodeclaims.karpenter.sh',
      'nodeoverlays.karpenter.sh',
      'ec2nodeclasses.karpenter.k8s.aws',
    ]);
    for (const c of crds) {
      expect(c.kind).toBe('CustomResourceDefinition');
      const versions = (c.spec as { versions: Array<{ served: boolean }> }).versions;
      expect(versions.filter((v) => v.served)).toHaveLength(1);
    }
  });

  it('returns copies of the CRDs', () => {
    const p = provider();
    (p.crds()[0]!.spec as Record<string, unknown>).group = 'mutated';
    expect((p.crds()[0]!.spec as Record<string, unknown>).group).toBe('karpenter.sh');
  });

  it('reads the JSON a build wrote beside a CRD file instead of its YAML, and names a bad one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'crds-'));
    try {
      for (const f of AWS_CRD_FILES) copyFileSync(join(KARPENTER_AWS_CRDS_DIR, f), join(dir, f));
      const yaml = provider({ crdDir: dir }).crds();
      // The JSON is what is read: a marker only it carries shows.
      const marked = { ...yaml[0]!, metadata: { ...yaml[0]!.metadata, annotations: { from: 'json' } } };
      writeFileSync(join(dir, AWS_CRD_FILES[0]!.replace(/\.yaml$/, '.json')), JSON.stringify(marked));
      const crds = provider({ crdDir: dir }).crds();
      expect(crds[0]).toEqual(marked);
      expect(crds.slice(1)).toEqual(yaml.slice(1));
      writeFileSync(join(dir, AWS_CRD_FILES[1]!.replace(/\.yaml$/, '.json')), '{"kind": "ConfigMap"}');
      expect(() => provider({ crdDir: dir }).crds()).toThrow(/karpenter.sh_nodeclaims.json.*CustomResourceDefinition/);
      writeFileSync(join(dir, AWS_CRD_FILES[1]!.replace(/\.yaml$/, '.json')), '{');
      expect(() => provider({ crdDir: dir }).crds()).toThrow(InvalidInputError);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names a missing CRD file', () => {
    expect(() => provider({ crdDir: '/nonexistent' }).crds()).toThrow(InvalidInputError);
    expect(() => provider({ crdDir: '/nonexistent' }).crds()).toThrow(/\/nonexistent\/karpenter.sh_nodepools.yaml/);
  });

  it('gives the operand region, shared credentials file and the Secret mount', () => {
    const cfg = provider().operandCloudConfig(aFacts({ region: 'eu-west-1' }), settings);
    expect(cfg).toEqual({
      env: [
        { name: 'AWS_REGION', value: 'eu-west-1' },
        { name: 'AWS_SHARED_CREDENTIALS_FILE', value: '/etc/provider/credentials' },
        { name: 'AWS_SDK_LOAD_CONFIG', value: 'true' },
      ],
      volumes: [{ name: 'provider-creds', secret: { secretName: 'karpenter-cloud-credentials' } }],
      volumeMounts: [{ name: 'provider-creds', mountPath: '/etc/provider', readOnly: true }],
      credentialsSecret: 'karpenter-cloud-credentials',
    });
  });

  it('points the operand at an EC2 endpoint override', () => {
    const cfg = provider({ operandEc2Endpoint: 'http://moto:5000' }).operandCloudConfig(aFacts(), settings);
    expect(cfg.env).toContainEqual({ name: 'AWS_ENDPOINT_URL_EC2', value: 'http://moto:5000' });
  });

  it('refuses an operand config without a region', () => {
    expect(() => provider().operandCloudConfig(aFacts({ region: undefined }), settings)).toThrow(/status.platformStatus.aws.region/);
  });

  it('delegates discovery, RBAC and CredentialsRequests', () => {
    const p = provider();
    expect(p.renderDefaultNodeClass(aDiscoveryInput()).object.metadata.name).toBe('default');
    expect(p.operandRbac('openshift-karpenter').length).toBeGreaterThan(0);
    expect(p.credentialsRequests('openshift-karpenter').map((o) => o.kind)).toContain('CredentialsRequest');
    expect(p.instanceIdFromProviderId('aws:///us-east-1a/i-0abc')).toBe('i-0abc');
  });

  it('resolves from the real inversify container', () => {
    const container = new Container();
    container.load(awsProviderModule({ crdDir: KARPENTER_AWS_CRDS_DIR, ec2: {} }));
    const p = container.get(CloudProviderId);
    expect(p).toBeInstanceOf(AwsCloudProvider);
    expect(container.get(CloudProviderId)).toBe(p);
  });
});

describe('AwsCloudProvider.discoverDefaultNodeClass', () => {
  it('takes every field from worker MachineSets when there are any, as renderDefaultNodeClass renders them', async () => {
    const p = provider();
    const input = aDiscoveryInput();
    const d = await p.discoverDefaultNodeClass(input);
    expect(d.object).toEqual(p.renderDefaultNodeClass(input).object);
    expect(new Set(d.sources.map((s) => s.source))).toEqual(new Set(['MachineSets']));
    expect(d.sources.map((s) => s.field)).toEqual(['subnets', 'securityGroups', 'instanceProfile', 'ami', 'userData', 'blockDevice']);
  });

  it('renders a UPI cluster (no MachineSets) from conventions offline', async () => {
    const p = provider();
    const upi = await p.discoverDefaultNodeClass(aUpiDiscoveryInput(aUpiCloud()), { offline: true });
    expect(upi.object.kind).toBe('EC2NodeClass');
    expect(upi.protectedSpec).toMatchObject({ amiFamily: 'Custom', amiSelectorTerms: [{ id: UPI_AMI }] });
  });
});

describe('AwsCloudProvider.verifyNodeClass: the instance profile in IAM', () => {
  const ec2Mock = mockClient(EC2Client);
  const iamMock = mockClient(IAMClient);
  beforeEach(() => {
    ec2Mock.reset();
    iamMock.reset();
    ec2Mock.on(DescribeSubnetsCommand).resolves({
      Subnets: [{ SubnetId: 'subnet-0a', VpcId: 'vpc-1', Tags: [{ Key: `kubernetes.io/cluster/${INFRA_ID}`, Value: 'owned' }] }],
    });
    ec2Mock.on(DescribeSecurityGroupsCommand).resolves({ SecurityGroups: [{ GroupId: 'sg-0a', VpcId: 'vpc-1' }] });
    ec2Mock.on(DescribeImagesCommand).resolves({ Images: [{ ImageId: 'ami-0a', State: 'available' }] });
  });
  const nodeClass = (instanceProfile: string) => ({
    apiVersion: 'karpenter.k8s.aws/v1',
    kind: 'EC2NodeClass',
    metadata: { name: 'default' },
    spec: {
      subnetSelectorTerms: [{ id: 'subnet-0a' }],
      securityGroupSelectorTerms: [{ id: 'sg-0a' }],
      amiSelectorTerms: [{ id: 'ami-0a' }],
      instanceProfile,
    },
  });
  const p = () => provider({ ec2: { credentials: { type: 'default' } } });

  it.each([
    { name: 'exists with a role', answer: { InstanceProfile: profile('p', ['r']) }, problems: [] },
    {
      name: 'absent',
      error: new NoSuchEntityException({ message: 'not found', $metadata: { httpStatusCode: 404 } }),
      problems: [{ field: 'spec.instanceProfile', message: 'instance profile p not found (IAM GetInstanceProfile: NoSuchEntity)' }],
    },
    {
      name: 'without a role',
      answer: { InstanceProfile: profile('p', []) },
      problems: [{ field: 'spec.instanceProfile', message: 'instance profile p has no role' }],
    },
  ])('$name', async ({ answer, error, problems }) => {
    if (error) iamMock.on(GetInstanceProfileCommand).rejects(error);
    else iamMock.on(GetInstanceProfileCommand).resolves(answer!);
    expect(await p().verifyNodeClass(nodeClass('p'), aFacts())).toEqual(problems);
    expect(iamMock.commandCalls(GetInstanceProfileCommand)[0]!.args[0].input).toEqual({ InstanceProfileName: 'p' });
  });

  it('maps IAM refusing the call to ForbiddenError', async () => {
    iamMock
      .on(GetInstanceProfileCommand)
      .rejects(new IAMServiceException({ name: 'AccessDenied', $fault: 'client', $metadata: { httpStatusCode: 403 }, message: 'no' }));
    await expect(p().verifyNodeClass(nodeClass('p'), aFacts())).rejects.toBeInstanceOf(ForbiddenError);
  });
});

function profile(name: string, roles: string[]) {
  return {
    InstanceProfileName: name,
    InstanceProfileId: 'AIPA',
    Arn: `arn:aws:iam::1:instance-profile/${name}`,
    Path: '/',
    CreateDate: new Date(0),
    Roles: roles.map((RoleName) => ({ RoleName, RoleId: 'R', Arn: `arn:aws:iam::1:role/${RoleName}`, Path: '/', CreateDate: new Date(0) })),
  };
}
