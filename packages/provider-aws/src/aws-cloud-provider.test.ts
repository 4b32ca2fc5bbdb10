import { describe, expect, it } from 'vitest';
import { Container } from 'inversify';
import { CloudProviderId, InvalidInputError, type OperatorSettings } from '@karpenter-operator/core';
import { AwsCloudProvider } from './aws-cloud-provider.js';
import { awsProviderModule } from './module.js';
import { aDiscoveryInput, aFacts } from './testing/builders.js';
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
