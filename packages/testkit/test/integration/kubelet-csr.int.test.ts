import { X509Certificate, createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ApiException, CertificatesV1Api, type V1CertificateSigningRequest } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { createKubeletClientCsr } from '../../src/pki.js';
import { testCluster } from '../../src/test-env.js';
import { waitFor } from '../../src/wait.js';

const MCO = 'openshift-machine-config-operator';
const BOOTSTRAPPER = `system:serviceaccount:${MCO}:node-bootstrapper`;
const NODE = 'ip-10-0-140-77.ec2.internal';

describe('kubelet client CSRs', () => {
  it('a CSR filed by the node-bootstrapper stays pending until approved, then gets a certificate signed by the cluster CA', async () => {
    const cluster = testCluster();
    const csr = await createKubeletClientCsr(NODE);
    const asBootstrapper = (await cluster.kubeConfigFor(MCO, 'node-bootstrapper')).makeApiClient(CertificatesV1Api);
    const created = await asBootstrapper.createCertificateSigningRequest({
      body: {
        metadata: { generateName: 'csr-' },
        spec: {
          request: Buffer.from(csr.csrPem).toString('base64'),
          signerName: 'kubernetes.io/kube-apiserver-client-kubelet',
          usages: ['digital signature', 'client auth'],
        },
      },
    });
    const name = created.metadata!.name!;
    // The API server records who asked: this is what an approver checks.
    expect(created.spec.username).toBe(BOOTSTRAPPER);
    expect(created.spec.groups).toEqual(
      expect.arrayContaining(['system:serviceaccounts', `system:serviceaccounts:${MCO}`, 'system:authenticated']),
    );

    // The bootstrapper may not approve its own request.
    const approval: V1CertificateSigningRequest = {
      ...created,
      status: {
        conditions: [
          {
            type: 'Approved',
            status: 'True',
            reason: 'TestkitApproved',
            message: 'approved by the integration test',
            lastUpdateTime: new Date(),
          },
        ],
      },
    };
    await expect(asBootstrapper.replaceCertificateSigningRequestApproval({ name, body: approval })).rejects.toSatisfy(
      (e) => e instanceof ApiException && e.code === 403,
    );

    // No auto-approval (the CSR approving controller is off: approval is the operator's job).
    await new Promise((r) => setTimeout(r, 2000));
    const admin = cluster.kubeConfig().makeApiClient(CertificatesV1Api);
    const pending = await admin.readCertificateSigningRequest({ name });
    expect(pending.status?.conditions ?? []).toEqual([]);
    expect(pending.status?.certificate).toBeUndefined();

    await admin.replaceCertificateSigningRequestApproval({ name, body: { ...pending, status: approval.status } });
    const signed = await waitFor(
      'kube-controller-manager to sign the approved CSR',
      async () => (await admin.readCertificateSigningRequest({ name })).status?.certificate,
      { timeoutMs: 30_000, intervalMs: 300 },
    );

    const cert = new X509Certificate(Buffer.from(signed, 'base64'));
    expect(cert.subject.split('\n').sort()).toEqual([`CN=system:node:${NODE}`, 'O=system:nodes']);
    expect(cert.checkIssued(new X509Certificate(readFileSync(cluster.info.caFile)))).toBe(true);
    expect(cert.publicKey.export({ type: 'spki', format: 'pem' })).toBe(
      createPublicKey(csr.publicKeyPem).export({ type: 'spki', format: 'pem' }),
    );
  });
});
