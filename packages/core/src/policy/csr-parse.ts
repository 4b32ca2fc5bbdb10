// @peculiar/x509 resolves its crypto and ASN.1 registries through tsyringe, which needs the Reflect
// polyfill loaded before the library's module body runs. This is the polyfill only; nothing here relies on
// emitted decorator metadata.
import 'reflect-metadata';
import { Pkcs10CertificateRequest, PemConverter, SubjectAlternativeNameExtension } from '@peculiar/x509';
import type { webcrypto } from 'node:crypto';
import type { KubeObject } from '../model/kube.js';

/** The PEM type Kubernetes requires in `spec.request` (certificates.k8s.io/v1 `ParseCSR`). */
export const CERTIFICATE_REQUEST_PEM_TYPE = 'CERTIFICATE REQUEST';

/** Kubelet requests are well under 2 KiB; anything much larger is not a kubelet and not worth parsing. */
export const MAX_CSR_REQUEST_BYTES = 16 * 1024;

/** One attribute of the subject DN, in order: `type` is the short name (`CN`, `O`) or the dotted OID. */
export interface SubjectAttribute {
  type: string;
  value: string;
}

export type KeyAlgorithm = { kind: 'ECDSA'; namedCurve: string } | { kind: 'RSA'; modulusLength: number } | { kind: 'other'; name: string };

/** What the policy needs from a PKCS#10 request, as plain data. */
export interface ParsedCertificateRequest {
  /** Every subject attribute, RDN by RDN (multi-valued RDNs flattened in order). */
  subject: SubjectAttribute[];
  dnsNames: string[];
  ipAddresses: string[];
  emailAddresses: string[];
  uris: string[];
  /** SANs of any other type (otherName, directoryName, registeredID, ...), as `type:value`. */
  otherNames: string[];
  keyAlgorithm: KeyAlgorithm;
}

export type CsrParseFailureReason = 'MalformedRequest' | 'MultiplePemBlocks' | 'NotCertificateRequest' | 'BadSignature';

export type CsrParseResult =
  { ok: true; request: ParsedCertificateRequest } | { ok: false; reason: CsrParseFailureReason; message: string };

const fail = (reason: CsrParseFailureReason, message: string): CsrParseResult => ({ ok: false, reason, message });

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g;
const PEM_BOUNDARY = /-----(BEGIN|END) /;

/**
 * Decodes the CSR object's `spec.request` (base64 of the PEM text, as the API serves `[]byte`).
 * Returns undefined when the field is missing or not a string.
 */
export function csrRequestPem(csr: KubeObject): string | undefined {
  const request = (csr.spec as { request?: unknown } | undefined)?.request;
  if (typeof request !== 'string' || request.length === 0) return undefined;
  if (request.length > (MAX_CSR_REQUEST_BYTES * 4) / 3 + 4) return undefined;
  return Buffer.from(request, 'base64').toString('latin1');
}

/**
 * Parses a kubelet CSR: the text must hold exactly one PEM block, of type `CERTIFICATE REQUEST`, and
 * nothing else but whitespace; the block must be a PKCS#10 request whose self-signature verifies (proof
 * that the requester holds the private key). Never throws: every failure is a result with a reason.
 */
export async function parseCertificateRequestPem(pem: string | undefined): Promise<CsrParseResult> {
  if (pem === undefined || pem.trim() === '') return fail('MalformedRequest', 'spec.request is empty');
  if (pem.length > MAX_CSR_REQUEST_BYTES) {
    return fail('MalformedRequest', `spec.request is ${pem.length} bytes, more than ${MAX_CSR_REQUEST_BYTES}`);
  }
  const blocks = [...pem.matchAll(PEM_BLOCK)];
  const rest = pem.replace(PEM_BLOCK, '');
  if (blocks.length === 0) return fail('MalformedRequest', 'spec.request holds no PEM block');
  if (blocks.length > 1) return fail('MultiplePemBlocks', `spec.request holds ${blocks.length} PEM blocks, expected one`);
  if (rest.trim() !== '') {
    return PEM_BOUNDARY.test(rest)
      ? fail('MalformedRequest', 'spec.request holds an unterminated PEM block')
      : fail('MalformedRequest', 'spec.request holds data outside its PEM block');
  }
  const type = blocks[0]![1];
  if (type !== CERTIFICATE_REQUEST_PEM_TYPE) {
    return fail('NotCertificateRequest', `spec.request holds a PEM block of type ${type}, expected ${CERTIFICATE_REQUEST_PEM_TYPE}`);
  }

  let csr: Pkcs10CertificateRequest;
  let parsed: ParsedCertificateRequest;
  try {
    const [der] = PemConverter.decode(blocks[0]![0]);
    if (!der) return fail('MalformedRequest', 'the PEM block is empty');
    csr = new Pkcs10CertificateRequest(der);
    parsed = project(csr);
  } catch (e) {
    return fail('MalformedRequest', `the PEM block is not a PKCS#10 request: ${e instanceof Error ? e.message : String(e)}`);
  }

  let verified = false;
  try {
    verified = await csr.verify();
  } catch (e) {
    return fail('BadSignature', `the request's signature cannot be checked: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (!verified) return fail('BadSignature', "the request's signature does not match its public key");
  return { ok: true, request: parsed };
}

function project(csr: Pkcs10CertificateRequest): ParsedCertificateRequest {
  const subject: SubjectAttribute[] = [];
  for (const rdn of csr.subjectName.toJSON()) {
    for (const [type, values] of Object.entries(rdn)) {
      for (const value of values) subject.push({ type, value });
    }
  }

  const out: ParsedCertificateRequest = {
    subject,
    dnsNames: [],
    ipAddresses: [],
    emailAddresses: [],
    uris: [],
    otherNames: [],
    keyAlgorithm: keyAlgorithmOf(csr.publicKey.algorithm),
  };
  for (const ext of csr.extensions) {
    if (!(ext instanceof SubjectAlternativeNameExtension)) continue;
    for (const name of ext.names.items) {
      if (name.type === 'dns') out.dnsNames.push(name.value);
      else if (name.type === 'ip') out.ipAddresses.push(name.value);
      else if (name.type === 'email') out.emailAddresses.push(name.value);
      else if (name.type === 'url') out.uris.push(name.value);
      else out.otherNames.push(`${name.type}:${name.value}`);
    }
  }
  return out;
}

function keyAlgorithmOf(alg: webcrypto.Algorithm): KeyAlgorithm {
  const a = alg as webcrypto.Algorithm & { namedCurve?: string; modulusLength?: number };
  if (a.name === 'ECDSA' && typeof a.namedCurve === 'string') return { kind: 'ECDSA', namedCurve: a.namedCurve };
  if (/^(RSASSA-PKCS1-v1_5|RSA-PSS|RSA-OAEP)$/.test(a.name) && typeof a.modulusLength === 'number') {
    return { kind: 'RSA', modulusLength: a.modulusLength };
  }
  return { kind: 'other', name: a.name };
}
