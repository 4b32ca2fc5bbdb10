import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getObject, waitFor } from '@karpenter-operator/testkit';
import { seededWorld, testCluster } from '@karpenter-operator/testkit/vitest';
import {
  installManifests,
  OPERATOR_NS,
  REPO,
  resetOperatorWorld,
  startOperator,
  type OperatorProcess,
} from '../support/operator-process.js';
import {
  applyKarpenterAndCredentials,
  isConverged,
  launchKarpenterInstance,
  submitClientCsr,
  waitCsrApproved,
} from '../support/scenario.js';

// Short-lived cloud credentials, as the cloud-credential operator writes them in manual mode with STS: the
// credentials file names a role and a projected ServiceAccount token (audience openshift) instead of keys.
// The EC2 emulator also serves STS (AssumeRoleWithWebIdentity), reached through AWS_ENDPOINT_URL_STS.

const cluster = testCluster();
let op: OperatorProcess | undefined;
let dir: string;

const webIdentityFile = (tokenFile: string) =>
  `[default]\nsts_regional_endpoints = regional\nrole_arn = arn:aws:iam::123456789012:role/karpenter-node-identity\nweb_identity_token_file = ${tokenFile}\n`;

describe('STS (web-identity) credentials', () => {
  beforeAll(async () => {
    await installManifests(cluster);
    await resetOperatorWorld(cluster);
    dir = mkdtempSync(join(tmpdir(), 'ko-sts-'));
    // What the kubelet projects into the pod: a token of the operator's ServiceAccount for audience openshift.
    writeFileSync(
      join(dir, 'token'),
      await cluster.tokenFor(OPERATOR_NS, 'karpenter-operator', { audiences: ['openshift'], expirationSeconds: 3600 }),
    );
    writeFileSync(join(dir, 'credentials'), webIdentityFile(join(dir, 'token')));
    writeFileSync(join(dir, 'credentials-no-token'), webIdentityFile(join(dir, 'absent-token')));
    op = await startOperator(cluster, {
      name: 'karpenter-operator-sts',
      env: { NODE_IDENTITY_CREDENTIALS_FILE: join(dir, 'credentials'), AWS_ENDPOINT_URL_STS: cluster.info.ec2Endpoint ?? '' },
    });
    await applyKarpenterAndCredentials(cluster);
    await waitFor('operator converged', () => isConverged(cluster), { timeoutMs: 120_000, intervalMs: 500 });
  }, 240_000);

  afterAll(async () => {
    await op?.stop();
  });

  it('node identity looks instances up with a web-identity profile and approves a real CSR', async () => {
    const launched = await launchKarpenterInstance(cluster, seededWorld(), 'sts-node');
    const csr = await submitClientCsr(cluster, launched.dns);
    await waitCsrApproved(cluster, csr, 30_000);
    expect(op!.logs()).not.toMatch(/Could not load credentials|CredentialsProviderError/);
    await launched.terminate();
  });

  it('check-credentials succeeds with the web-identity profile, and names the token file when it is missing', () => {
    const run = (file: string) =>
      spawnSync(
        join(REPO, 'node_modules/.bin/node'),
        [join(REPO, 'apps/operator/dist/main.js'), 'check-credentials', '--credentials', file, '--region', 'us-east-1'],
        {
          encoding: 'utf8',
          env: {
            PATH: process.env.PATH ?? '',
            AWS_ENDPOINT_URL_EC2: cluster.info.ec2Endpoint ?? '',
            AWS_ENDPOINT_URL_STS: cluster.info.ec2Endpoint ?? '',
            AWS_EC2_METADATA_DISABLED: 'true',
          },
          timeout: 60_000,
        },
      );
    const ok = run(join(dir, 'credentials'));
    expect(ok.status, ok.stderr).toBe(0);
    const missing = run(join(dir, 'credentials-no-token'));
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('web_identity_token_file');
    expect(missing.stderr).toContain(join(dir, 'absent-token'));
  }, 90_000);

  it('the operand and the operator mount the projected token where the credentials file names it', async () => {
    const operand = await getObject(cluster.kubeConfig(), 'apps/v1', 'Deployment', 'karpenter', OPERATOR_NS);
    const pod = (
      operand?.spec as {
        template: { spec: { volumes: Array<Record<string, unknown>>; containers: Array<{ volumeMounts?: Array<{ mountPath: string }> }> } };
      }
    ).template.spec;
    expect(pod.volumes).toContainEqual(
      expect.objectContaining({
        name: 'bound-sa-token',
        projected: expect.objectContaining({
          sources: [{ serviceAccountToken: { audience: 'openshift', expirationSeconds: 3600, path: 'token' } }],
        }),
      }),
    );
    expect(pod.containers[0]!.volumeMounts?.map((m) => m.mountPath)).toContain('/var/run/secrets/openshift/serviceaccount');
  });
});
