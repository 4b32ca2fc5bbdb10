import { X509Certificate, createPrivateKey } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { selfSignedCertificate, servingCertificate } from './serving-cert.js';

const hosts = ['karpenter-operator-metrics.openshift-karpenter.svc', 'karpenter-operator-metrics.openshift-karpenter.svc.cluster.local'];

describe('servingCertificate', () => {
  it('reads tls.crt and tls.key from the directory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cert-'));
    const made = await selfSignedCertificate(['from-files.example']);
    writeFileSync(join(dir, 'tls.crt'), made.cert);
    writeFileSync(join(dir, 'tls.key'), made.key);
    const got = await servingCertificate(dir, hosts);
    expect(got).toEqual({ ...made, source: 'files' });
  });

  it.each([
    { name: 'the directory is empty (service-ca has not written the Secret)', files: {}, reason: /tls\.crt does not exist$/ },
    { name: 'the key is missing', files: { 'tls.crt': '-----BEGIN CERTIFICATE-----' }, reason: /tls\.key does not exist/ },
    {
      name: 'tls.crt is not PEM',
      files: { 'tls.crt': 'garbage', 'tls.key': '-----BEGIN PRIVATE KEY-----' },
      reason: /tls\.crt holds no PEM certificate/,
    },
  ])('falls back to a self-signed certificate when $name, naming the file', async ({ files, reason }) => {
    const dir = mkdtempSync(join(tmpdir(), 'cert-'));
    for (const [f, text] of Object.entries(files)) writeFileSync(join(dir, f), text);
    const got = await servingCertificate(dir, hosts);
    expect(got.source).toBe('self-signed');
    expect(got.reason).toMatch(reason);
    expect(got.reason).toContain(dir);
  });

  it('makes a self-signed server certificate for the Service names whose key matches it', async () => {
    const { cert, key } = await selfSignedCertificate(hosts);
    const x = new X509Certificate(cert);
    expect(x.subjectAltName).toBe(hosts.map((h) => `DNS:${h}`).join(', '));
    expect(x.checkHost(hosts[0]!)).toBe(hosts[0]);
    expect(x.checkPrivateKey(createPrivateKey(key))).toBe(true);
    expect(x.verify(x.publicKey)).toBe(true);
  });
});
