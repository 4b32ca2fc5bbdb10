import 'reflect-metadata';
import { X509Certificate } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import { describe, expect, it } from 'vitest';
import { createCertificateAuthority, createKubeletClientCsr } from './pki.js';

describe('pki', () => {
  it('issues server and client certificates the CA verifies, with the requested names', async () => {
    const ca = await createCertificateAuthority('test CA');
    const caCert = new X509Certificate(ca.certPem);
    expect(caCert.ca).toBe(true);
    const server = new X509Certificate(
      (await ca.issue({ commonName: 'kube-apiserver', usage: 'server', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] })).certPem,
    );
    expect(server.checkIssued(caCert)).toBe(true);
    expect(server.verify(caCert.publicKey)).toBe(true);
    expect(server.subjectAltName).toBe('DNS:localhost, IP Address:127.0.0.1');
    expect(server.checkIP('127.0.0.1')).toBe('127.0.0.1');
    const client = new X509Certificate(
      (await ca.issue({ commonName: 'testkit-admin', organizations: ['system:masters'], usage: 'client' })).certPem,
    );
    expect(client.subject.split('\n')).toEqual(['CN=testkit-admin', 'O=system:masters']);
    expect(client.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);
  });

  it.each([
    {
      name: 'kubelet client',
      node: 'ip-10-0-1-2.ec2.internal',
      overrides: {},
      subject: 'CN=system:node:ip-10-0-1-2.ec2.internal, O=system:nodes',
      sans: 0,
    },
    {
      name: 'extra O',
      node: 'n1',
      overrides: { organizations: ['system:nodes', 'system:masters'] },
      subject: 'CN=system:node:n1, O=system:nodes, O=system:masters',
      sans: 0,
    },
    { name: 'with SAN', node: 'n2', overrides: { dnsNames: ['evil.example.com'] }, subject: 'CN=system:node:n2, O=system:nodes', sans: 1 },
  ])('builds a real PKCS#10 CSR: $name', async ({ node, overrides, subject, sans }) => {
    const csr = new x509.Pkcs10CertificateRequest((await createKubeletClientCsr(node, overrides)).csrPem);
    expect(await csr.verify()).toBe(true);
    expect(csr.subject).toBe(subject);
    const san = csr.extensions.find((e): e is x509.SubjectAlternativeNameExtension => e instanceof x509.SubjectAlternativeNameExtension);
    expect(san?.names.items.length ?? 0).toBe(sans);
  });
});
