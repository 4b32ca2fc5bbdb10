import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { describeCloudProviderContract } from '@karpenter-operator/core/testing';
import { AwsCloudProvider } from './aws-cloud-provider.js';
import { aDiscoveryInput, aFacts, KARPENTER_AWS_CRDS_DIR } from './testing/index.js';

// Dummy static keys: the SDK signs before it connects, so "unreachable" must get past credentials.
const dir = mkdtempSync(join(tmpdir(), 'aws-contract-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const credentialsFile = (): string => {
  const file = join(dir, 'credentials');
  writeFileSync(file, '[default]\naws_access_key_id = AKIAEXAMPLE\naws_secret_access_key = example\n');
  return file;
};

describeCloudProviderContract('aws', () => {
  const provider = new AwsCloudProvider({ crdDir: KARPENTER_AWS_CRDS_DIR, ec2: { credentials: { type: 'default' } } });
  const discovery = aDiscoveryInput();
  return {
    provider,
    facts: aFacts(),
    settings: {
      namespace: 'openshift-karpenter',
      releaseVersion: '4.21.0',
      operandImage: 'quay.io/example/karpenter:1.14.1',
      crdDir: KARPENTER_AWS_CRDS_DIR,
    },
    discovery,
    nodeClass: provider.renderDefaultNodeClass(discovery).object,
    // Port 9 (discard) refuses connections on loopback; one attempt and short timeouts keep it fast.
    unreachable: () =>
      new AwsCloudProvider({
        crdDir: KARPENTER_AWS_CRDS_DIR,
        sqsEndpoint: 'http://127.0.0.1:9',
        ec2: {
          endpoint: 'http://127.0.0.1:9',
          credentials: { type: 'sharedCredentialsFile', path: credentialsFile() },
          maxAttempts: 1,
          requestTimeoutMs: 1_000,
          connectionTimeoutMs: 500,
        },
      }),
  };
});
