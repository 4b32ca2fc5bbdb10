import 'reflect-metadata'; // @peculiar/x509 (through tsyringe) needs the Reflect polyfill loaded first
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

type CryptoKeyPair = webcrypto.CryptoKeyPair;

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const EC: webcrypto.EcKeyGenParams = { name: 'ECDSA', namedCurve: 'P-256' };
const SIGN: webcrypto.EcdsaParams = { name: 'ECDSA', hash: 'SHA-256' };
const DAY_MS = 86_400_000;

export interface KeyPairPem {
  privateKeyPem: string;
  publicKeyPem: string;
}

export interface IssuedCert extends KeyPairPem {
  certPem: string;
}

export interface CertificateAuthority extends IssuedCert {
  /** Issues a leaf certificate (ECDSA P-256) signed by this CA. */
  issue(req: LeafRequest): Promise<IssuedCert>;
}

export interface LeafRequest {
  /** Subject CN. */
  commonName: string;
  /** Subject O values (Kubernetes groups). */
  organizations?: string[];
  dnsNames?: string[];
  ipAddresses?: string[];
  usage: 'server' | 'client' | 'both';
  validDays?: number;
}

function pem(label: string, der: ArrayBuffer): string {
  const b64 = Buffer.from(der).toString('base64');
  return `-----BEGIN ${label}-----\n${b64.replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END ${label}-----\n`;
}

async function generateKeys(): Promise<CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(EC, true, ['sign', 'verify'])) as CryptoKeyPair;
}

async function exportPair(keys: CryptoKeyPair): Promise<KeyPairPem> {
  return {
    privateKeyPem: pem('PRIVATE KEY', await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)),
    publicKeyPem: pem('PUBLIC KEY', await webcrypto.subtle.exportKey('spki', keys.publicKey)),
  };
}

function subject(commonName: string, organizations: string[] = []): string {
  // RFC 4514 string; escape the characters that would split it.
  const esc = (v: string) => v.replace(/([,+"\\<>;=])/g, '\\$1');
  return [`CN=${esc(commonName)}`, ...organizations.map((o) => `O=${esc(o)}`)].join(', ');
}

/** A fresh self-signed CA (ECDSA P-256), valid for `validDays` (default 30). */
export async function createCertificateAuthority(commonName: string, validDays = 30): Promise<CertificateAuthority> {
  const keys = await generateKeys();
  const now = Date.now();
  const caCert = await x509.X509CertificateGenerator.createSelfSigned({
    name: subject(commonName),
    keys,
    signingAlgorithm: SIGN,
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + validDays * DAY_MS),
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const exported = await exportPair(keys);
  return {
    ...exported,
    certPem: caCert.toString('pem') + '\n',
    issue: async (req) => {
      const leafKeys = await generateKeys();
      const ekus: string[] = [];
      if (req.usage !== 'client') ekus.push(x509.ExtendedKeyUsage.serverAuth);
      if (req.usage !== 'server') ekus.push(x509.ExtendedKeyUsage.clientAuth);
      const names: x509.JsonGeneralName[] = [
        ...(req.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
        ...(req.ipAddresses ?? []).map((value) => ({ type: 'ip' as const, value })),
      ];
      const extensions: x509.Extension[] = [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
        new x509.ExtendedKeyUsageExtension(ekus, false),
        await x509.AuthorityKeyIdentifierExtension.create(caCert, false),
      ];
      if (names.length > 0) extensions.push(new x509.SubjectAlternativeNameExtension(names, false));
      const leaf = await x509.X509CertificateGenerator.create({
        subject: subject(req.commonName, req.organizations),
        issuer: caCert.subject,
        publicKey: leafKeys.publicKey,
        signingKey: keys.privateKey,
        signingAlgorithm: SIGN,
        notBefore: new Date(Date.now() - 60_000),
        notAfter: new Date(Date.now() + (req.validDays ?? validDays) * DAY_MS),
        extensions,
      });
      return { ...(await exportPair(leafKeys)), certPem: leaf.toString('pem') + '\n' };
    },
  };
}

/** A standalone ECDSA P-256 key pair (ServiceAccount token signing). */
export async function createKeyPair(): Promise<KeyPairPem> {
  return exportPair(await generateKeys());
}

export interface KubeletCsr extends KeyPairPem {
  /** PEM `CERTIFICATE REQUEST`. */
  csrPem: string;
}

/**
 * A PKCS#10 request like a kubelet's client CSR: subject CN `system:node:<nodeName>`, O `system:nodes`,
 * real ECDSA keys, no SANs. `overrides` lets tests build the bad variants (extra O, SANs, ...).
 */
export async function createKubeletClientCsr(
  nodeName: string,
  overrides: { commonName?: string; organizations?: string[]; dnsNames?: string[]; ipAddresses?: string[] } = {},
): Promise<KubeletCsr> {
  const keys = await generateKeys();
  const names: x509.JsonGeneralName[] = [
    ...(overrides.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(overrides.ipAddresses ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: subject(overrides.commonName ?? `system:node:${nodeName}`, overrides.organizations ?? ['system:nodes']),
    keys,
    signingAlgorithm: SIGN,
    extensions: names.length > 0 ? [new x509.SubjectAlternativeNameExtension(names, false)] : [],
  });
  return { ...(await exportPair(keys)), csrPem: csr.toString('pem') + '\n' };
}
