import 'reflect-metadata'; // @peculiar/x509 (through tsyringe) needs the Reflect polyfill loaded first
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

/** A certificate and key in PEM, and where they came from. */
export interface ServingCertificate {
  cert: string;
  key: string;
  /** `files`: read from the cert directory; `self-signed`: made up because they could not be read. */
  source: 'files' | 'self-signed';
  /** Why the files were not used (`self-signed` only), naming the file. */
  reason?: string;
}

/** The key names of a `kubernetes.io/tls` Secret, as service-ca writes it. */
export const servingCertFiles = { cert: 'tls.crt', key: 'tls.key' } as const;

/**
 * Reads `tls.crt` / `tls.key` from `dir` (the service-ca serving-certificate Secret, mounted). When they are
 * missing or unreadable — the Secret is optional in the Deployment, so the pod starts before service-ca
 * has written it, or without service-ca at all — returns `undefined` and the reason naming the file.
 */
export async function readServingCert(dir: string): Promise<{ cert: string; key: string } | { reason: string }> {
  const certPath = join(dir, servingCertFiles.cert);
  const keyPath = join(dir, servingCertFiles.key);
  // Both read at once, but reported in a fixed order (certificate first): which read fails first is a race.
  const [cert, key] = await Promise.allSettled([readFile(certPath, 'utf8'), readFile(keyPath, 'utf8')]);
  if (cert.status === 'rejected') return { reason: unreadable(cert.reason, certPath) };
  if (!cert.value.includes('-----BEGIN CERTIFICATE-----')) return { reason: `${certPath} holds no PEM certificate` };
  if (key.status === 'rejected') return { reason: unreadable(key.reason, keyPath) };
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(key.value)) return { reason: `${keyPath} holds no PEM private key` };
  return { cert: cert.value, key: key.value };
}

function unreadable(e: unknown, path: string): string {
  const err = e as NodeJS.ErrnoException;
  return err.code === 'ENOENT' ? `${path} does not exist` : `reading ${path}: ${err.message}`;
}

/** The serving certificate from `dir`, or a self-signed one (ECDSA P-256, 1 year) for `hostnames` when it cannot be read. */
export async function servingCertificate(dir: string | undefined, hostnames: readonly string[]): Promise<ServingCertificate> {
  const read = dir ? await readServingCert(dir) : { reason: 'no --metrics-cert-dir given' };
  if ('cert' in read) return { ...read, source: 'files' };
  return { ...(await selfSignedCertificate(hostnames)), source: 'self-signed', reason: read.reason };
}

export async function selfSignedCertificate(hostnames: readonly string[]): Promise<{ cert: string; key: string }> {
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = (await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${hostnames[0] ?? 'localhost'}`,
    keys,
    signingAlgorithm: alg,
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + 365 * 86_400_000),
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth], false),
      new x509.SubjectAlternativeNameExtension(
        hostnames.map((value) => ({ type: 'dns' as const, value })),
        false,
      ),
    ],
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)).toString('base64');
  const key = `-----BEGIN PRIVATE KEY-----\n${pkcs8.replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END PRIVATE KEY-----\n`;
  return { cert: cert.toString('pem') + '\n', key };
}
