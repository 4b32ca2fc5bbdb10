import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import {
  Extension,
  Pkcs10CertificateRequestGenerator,
  SubjectAlternativeNameExtension,
  X509CertificateGenerator,
  type JsonGeneralName,
} from '@peculiar/x509';
import { beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../model/kube.js';
import { Names } from '../model/names.js';
import type { InstanceInfo } from '../ports/cloud-provider.js';
import {
  type CsrDecision,
  type CsrDecisionReason,
  type CsrNode,
  type CsrNodeClaim,
  decideClientCsr,
  decideServingCsr,
  KubeletClientSigner,
  KubeletServingSigner,
  NodeBootstrapperGroups,
} from './csr.js';
import { parseCertificateRequestPem } from './csr-parse.js';

type Algorithm = webcrypto.Algorithm;
type EcdsaParams = webcrypto.EcdsaParams;
type EcKeyGenParams = webcrypto.EcKeyGenParams;
type RsaHashedKeyGenParams = webcrypto.RsaHashedKeyGenParams;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

// ---------------------------------------------------------------------------------------------------------
// Keys are generated once at test start; every CSR is generated inside its case.

type KeyName = 'ec256' | 'ec384' | 'rsa2048' | 'rsa1024' | 'ed25519';

const KeyParams: Record<KeyName, { gen: RsaHashedKeyGenParams | EcKeyGenParams | Algorithm; sign: Algorithm | EcdsaParams }> = {
  ec256: { gen: { name: 'ECDSA', namedCurve: 'P-256' }, sign: { name: 'ECDSA', hash: 'SHA-256' } as EcdsaParams },
  ec384: { gen: { name: 'ECDSA', namedCurve: 'P-384' }, sign: { name: 'ECDSA', hash: 'SHA-384' } as EcdsaParams },
  rsa2048: {
    gen: { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256', publicExponent: new Uint8Array([1, 0, 1]), modulusLength: 2048 },
    sign: { name: 'RSASSA-PKCS1-v1_5' },
  },
  rsa1024: {
    gen: { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256', publicExponent: new Uint8Array([1, 0, 1]), modulusLength: 1024 },
    sign: { name: 'RSASSA-PKCS1-v1_5' },
  },
  ed25519: { gen: { name: 'Ed25519' }, sign: { name: 'Ed25519' } },
};

const keys = {} as Record<KeyName, CryptoKeyPair>;

beforeAll(async () => {
  for (const [name, p] of Object.entries(KeyParams) as Array<[KeyName, (typeof KeyParams)[KeyName]]>) {
    keys[name] = (await webcrypto.subtle.generateKey(p.gen as EcKeyGenParams, true, ['sign', 'verify'])) as CryptoKeyPair;
  }
});

async function makeCsrPem(subject: string, sans: JsonGeneralName[] = [], key: KeyName = 'ec256'): Promise<string> {
  const extensions: Extension[] = sans.length ? [new SubjectAlternativeNameExtension(sans)] : [];
  const csr = await Pkcs10CertificateRequestGenerator.create({
    name: subject,
    keys: keys[key],
    signingAlgorithm: KeyParams[key].sign,
    extensions,
  });
  return csr.toString('pem');
}

async function makeCertificatePem(): Promise<string> {
  const cert = await X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: `CN=${ClientUser}, O=system:nodes`,
    notBefore: new Date(T0),
    notAfter: new Date(T0 + 86_400_000),
    keys: keys.ec256,
    signingAlgorithm: KeyParams.ec256.sign,
  });
  return cert.toString('pem');
}

/** Flips one byte of the signature (the last byte of the DER), keeping the request parseable. */
function corruptSignature(pem: string): string {
  const body = pem.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, '');
  const der = Buffer.from(body, 'base64');
  der[der.length - 1] = der[der.length - 1]! ^ 0x01;
  const b64 = der.toString('base64').replace(/(.{64})/g, '$1\n');
  return `-----BEGIN CERTIFICATE REQUEST-----\n${b64}\n-----END CERTIFICATE REQUEST-----\n`;
}

// ---------------------------------------------------------------------------------------------------------
// The world: one launching NodeClaim (a), one registered NodeClaim (b) with its Node, one MachineSet node.

const T0 = Date.UTC(2026, 2, 1, 12, 0, 0);
const MIN = 60_000;
const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

const NodeA = 'ip-10-0-1-10.ec2.internal';
const NodeB = 'ip-10-0-2-20.ec2.internal';
const MachineNode = 'ip-10-0-9-9.ec2.internal';
const ClientUser = `system:node:${NodeA}`;
const ServingUser = `system:node:${NodeB}`;

type Observed = InstanceInfo & { readAtMs?: number };

interface World {
  nodeClaims: CsrNodeClaim[];
  nodes: CsrNode[];
  /** Read a second before `now`, after the CSR was created, unless a case says otherwise. */
  instances: Map<string, Observed>;
  approved: Map<string, number>;
  now: number;
  csrCreated: number;
  /** When the approver first saw the CSR (absent: one second after its creationTimestamp stands in). */
  csrSeen?: number;
}

const anInstance = (o: Partial<Observed> & { instanceId: string }): Observed => ({
  live: true,
  privateIpAddresses: [],
  publicIpAddresses: [],
  ownedByCluster: true,
  ...o,
});

function baseWorld(kind: 'client' | 'serving'): World {
  const a: CsrNodeClaim = { name: 'default-a', createdMs: T0, providerID: 'aws:///us-east-1a/i-0a', instanceId: 'i-0a', deleting: false };
  const b: CsrNodeClaim = {
    name: 'default-b',
    createdMs: T0 - 60 * MIN,
    providerID: 'aws:///us-east-1a/i-0b',
    instanceId: 'i-0b',
    nodeName: NodeB,
    deleting: false,
  };
  const now = kind === 'client' ? T0 + 4 * MIN : T0 + 10 * MIN;
  return {
    nodeClaims: [a, b],
    nodes: [
      { name: NodeB, providerID: 'aws:///us-east-1a/i-0b' },
      { name: MachineNode, providerID: 'aws:///us-east-1a/i-0m' },
    ],
    instances: new Map([
      [
        'i-0a',
        anInstance({ instanceId: 'i-0a', live: true, privateDnsName: NodeA, privateIpAddresses: ['10.0.1.10'], readAtMs: now - 1000 }),
      ],
      [
        'i-0b',
        anInstance({
          instanceId: 'i-0b',
          readAtMs: now - 1000,
          privateDnsName: NodeB,
          publicDnsName: 'ec2-54-1-2-3.compute-1.amazonaws.com',
          privateIpAddresses: ['10.0.2.20', '2600:1f18::20'],
          publicIpAddresses: ['54.1.2.3'],
        }),
      ],
    ]),
    approved: new Map(),
    now,
    csrCreated: kind === 'client' ? T0 + 3 * MIN : T0 + 9 * MIN,
  };
}

const claim = (w: World, name: string): CsrNodeClaim => w.nodeClaims.find((n) => n.name === name)!;
const instance = (w: World, id: string): Observed => w.instances.get(id)!;

// ---------------------------------------------------------------------------------------------------------
// Cases

interface Case {
  name: string;
  kind: 'client' | 'serving';
  /** Subject DN of the generated request. */
  subject?: string;
  sans?: JsonGeneralName[];
  key?: KeyName;
  /** Replaces the generated PEM (malformed requests). */
  pem?: (good: string) => Promise<string> | string;
  signerName?: string;
  username?: string;
  groups?: string[];
  usages?: string[];
  world?: (w: World) => void;
  want: CsrDecision['decision'];
  reason: CsrDecisionReason;
}

const ClientSubject = `CN=${ClientUser}, O=system:nodes`;
const ServingSubject = `CN=${ServingUser}, O=system:nodes`;
const ServingSans: JsonGeneralName[] = [
  { type: 'dns', value: NodeB },
  { type: 'ip', value: '10.0.2.20' },
];

const forged: Case[] = [
  // --- client: who asks
  {
    name: 'client wrong signer (kube-apiserver-client)',
    kind: 'client',
    signerName: 'kubernetes.io/kube-apiserver-client',
    want: 'ignore',
    reason: 'WrongSigner',
  },
  { name: 'client serving signer', kind: 'client', signerName: KubeletServingSigner, want: 'ignore', reason: 'WrongSigner' },
  {
    name: 'client requester is a node (renewal, not ours)',
    kind: 'client',
    username: ClientUser,
    groups: ['system:nodes', 'system:authenticated'],
    want: 'ignore',
    reason: 'NodeClientRenewal',
  },
  {
    name: 'client requester is another service account',
    kind: 'client',
    username: 'system:serviceaccount:default:builder',
    want: 'ignore',
    reason: 'UnexpectedRequester',
  },
  { name: 'client requester is an admin user', kind: 'client', username: 'kube:admin', want: 'ignore', reason: 'UnexpectedRequester' },
  {
    name: 'client missing MCO service account group',
    kind: 'client',
    groups: ['system:serviceaccounts', 'system:authenticated'],
    want: 'ignore',
    reason: 'MissingRequesterGroups',
  },
  {
    name: 'client missing system:authenticated',
    kind: 'client',
    groups: ['system:serviceaccounts:openshift-machine-config-operator', 'system:serviceaccounts'],
    want: 'ignore',
    reason: 'MissingRequesterGroups',
  },
  { name: 'client no groups', kind: 'client', groups: [], want: 'ignore', reason: 'MissingRequesterGroups' },
  // --- client: the request
  {
    name: 'client garbage PEM',
    kind: 'client',
    pem: () => '-----BEGIN CERTIFICATE REQUEST-----\nbm90IGEgY3NyIGF0IGFsbA==\n-----END CERTIFICATE REQUEST-----\n',
    want: 'ignore',
    reason: 'MalformedRequest',
  },
  { name: 'client not PEM at all', kind: 'client', pem: () => 'hello, approver', want: 'ignore', reason: 'MalformedRequest' },
  { name: 'client empty request', kind: 'client', pem: () => '', want: 'ignore', reason: 'MalformedRequest' },
  {
    name: 'client data outside the PEM block',
    kind: 'client',
    pem: (good) => `${good}trailing junk\n`,
    want: 'ignore',
    reason: 'MalformedRequest',
  },
  {
    name: 'client two PEM blocks',
    kind: 'client',
    pem: async (good) => good + (await makeCsrPem(`CN=system:node:${MachineNode}, O=system:nodes`)),
    want: 'ignore',
    reason: 'MultiplePemBlocks',
  },
  {
    name: 'client non-CSR PEM (a certificate)',
    kind: 'client',
    pem: () => makeCertificatePem(),
    want: 'ignore',
    reason: 'NotCertificateRequest',
  },
  {
    name: 'client CSR bytes under a CERTIFICATE header',
    kind: 'client',
    pem: (good) => good.replaceAll('CERTIFICATE REQUEST', 'CERTIFICATE'),
    want: 'ignore',
    reason: 'NotCertificateRequest',
  },
  { name: 'client bad signature', kind: 'client', pem: (good) => corruptSignature(good), want: 'ignore', reason: 'BadSignature' },
  {
    name: 'client two CNs',
    kind: 'client',
    subject: `CN=${ClientUser}, CN=system:node:${MachineNode}, O=system:nodes`,
    want: 'ignore',
    reason: 'InvalidCommonName',
  },
  { name: 'client no CN', kind: 'client', subject: 'O=system:nodes', want: 'ignore', reason: 'InvalidCommonName' },
  {
    name: 'client CN not system:node',
    kind: 'client',
    subject: 'CN=system:admin, O=system:nodes',
    want: 'ignore',
    reason: 'InvalidCommonName',
  },
  {
    name: 'client CN with empty node name',
    kind: 'client',
    subject: 'CN=system:node:, O=system:nodes',
    want: 'ignore',
    reason: 'InvalidCommonName',
  },
  // A name in another spelling than the kubelet's Node name: the certificate is useless to any kubelet but
  // would take the NodeClaim's one client certificate from the real kubelet.
  {
    name: 'client CN with a trailing dot',
    kind: 'client',
    subject: `CN=system:node:${NodeA}., O=system:nodes`,
    want: 'ignore',
    reason: 'NonCanonicalNodeName',
  },
  {
    name: 'client CN in upper case',
    kind: 'client',
    subject: `CN=system:node:${NodeA.toUpperCase()}, O=system:nodes`,
    want: 'ignore',
    reason: 'NonCanonicalNodeName',
  },
  {
    name: 'client CN in mixed case',
    kind: 'client',
    subject: `CN=system:node:Ip-10-0-1-10.ec2.internal, O=system:nodes`,
    want: 'ignore',
    reason: 'NonCanonicalNodeName',
  },
  {
    name: 'client CN with a space',
    kind: 'client',
    subject: `CN=system:node:${NodeA} , O=system:nodes`,
    want: 'ignore',
    reason: 'NonCanonicalNodeName',
  },
  {
    name: 'client CN with an empty label',
    kind: 'client',
    subject: 'CN=system:node:ip-10-0-1-10..ec2.internal, O=system:nodes',
    want: 'ignore',
    reason: 'NonCanonicalNodeName',
  },
  {
    name: 'client CN with an underscore',
    kind: 'client',
    subject: 'CN=system:node:ip_10_0_1_10.ec2.internal, O=system:nodes',
    want: 'ignore',
    reason: 'NonCanonicalNodeName',
  },
  { name: 'client O missing', kind: 'client', subject: `CN=${ClientUser}`, want: 'ignore', reason: 'InvalidOrganization' },
  {
    name: 'client O system:masters',
    kind: 'client',
    subject: `CN=${ClientUser}, O=system:masters`,
    want: 'ignore',
    reason: 'InvalidOrganization',
  },
  {
    name: 'client extra O system:masters',
    kind: 'client',
    subject: `CN=${ClientUser}, O=system:nodes, O=system:masters`,
    want: 'ignore',
    reason: 'InvalidOrganization',
  },
  {
    name: 'client extra OU',
    kind: 'client',
    subject: `CN=${ClientUser}, O=system:nodes, OU=ops`,
    want: 'ignore',
    reason: 'UnexpectedSubjectField',
  },
  {
    name: 'client extra C',
    kind: 'client',
    subject: `CN=${ClientUser}, O=system:nodes, C=US`,
    want: 'ignore',
    reason: 'UnexpectedSubjectField',
  },
  { name: 'client DNS SAN', kind: 'client', sans: [{ type: 'dns', value: NodeA }], want: 'ignore', reason: 'UnexpectedSubjectAltNames' },
  {
    name: 'client IP SAN',
    kind: 'client',
    sans: [{ type: 'ip', value: '10.0.1.10' }],
    want: 'ignore',
    reason: 'UnexpectedSubjectAltNames',
  },
  {
    name: 'client email SAN',
    kind: 'client',
    sans: [{ type: 'email', value: 'root@example.com' }],
    want: 'ignore',
    reason: 'UnexpectedSubjectAltNames',
  },
  {
    name: 'client URI SAN',
    kind: 'client',
    sans: [{ type: 'url', value: 'spiffe://cluster/ns/kube-system' }],
    want: 'ignore',
    reason: 'UnexpectedSubjectAltNames',
  },
  { name: 'client RSA 1024 key', kind: 'client', key: 'rsa1024', want: 'ignore', reason: 'UnsupportedKeyAlgorithm' },
  { name: 'client Ed25519 key', kind: 'client', key: 'ed25519', want: 'ignore', reason: 'UnsupportedKeyAlgorithm' },
  { name: 'client usages missing client auth', kind: 'client', usages: ['digital signature'], want: 'ignore', reason: 'UnexpectedUsages' },
  {
    name: 'client usages extra server auth',
    kind: 'client',
    usages: ['digital signature', 'client auth', 'server auth'],
    want: 'ignore',
    reason: 'UnexpectedUsages',
  },
  {
    name: 'client key encipherment with EC key',
    kind: 'client',
    usages: ['digital signature', 'key encipherment', 'client auth'],
    want: 'ignore',
    reason: 'UnexpectedUsages',
  },
  { name: 'client usages missing digital signature', kind: 'client', usages: ['client auth'], want: 'ignore', reason: 'UnexpectedUsages' },
  {
    name: 'client duplicate usages',
    kind: 'client',
    usages: ['digital signature', 'client auth', 'client auth'],
    want: 'ignore',
    reason: 'UnexpectedUsages',
  },
  // --- client: cluster state
  {
    name: 'client CN mismatch with the instance private DNS',
    kind: 'client',
    subject: 'CN=system:node:ip-10-0-1-99.ec2.internal, O=system:nodes',
    want: 'ignore',
    reason: 'NoMatchingNodeClaim',
  },
  {
    name: "client an existing Node's name (MachineSet node)",
    kind: 'client',
    subject: `CN=system:node:${MachineNode}, O=system:nodes`,
    want: 'ignore',
    reason: 'NodeAlreadyExists',
  },
  {
    name: "client an existing Node's name (Karpenter node)",
    kind: 'client',
    subject: `CN=system:node:${NodeB}, O=system:nodes`,
    want: 'ignore',
    reason: 'NodeAlreadyExists',
  },
  {
    name: 'client NodeClaim already registered (status.nodeName set, Node not cached yet)',
    kind: 'client',
    world: (w) => {
      claim(w, 'default-a').nodeName = NodeA;
    },
    want: 'ignore',
    reason: 'NodeClaimAlreadyRegistered',
  },
  {
    name: 'client deleting NodeClaim',
    kind: 'client',
    world: (w) => void (claim(w, 'default-a').deleting = true),
    want: 'ignore',
    reason: 'NodeClaimDeleting',
  },
  {
    name: 'client NodeClaim without providerID',
    kind: 'client',
    world: (w) => {
      const a = claim(w, 'default-a');
      delete a.providerID;
      delete a.instanceId;
    },
    want: 'wait',
    reason: 'NodeClaimNotVisible',
  },
  {
    name: 'client NodeClaim without providerID past the launch deadline',
    kind: 'client',
    world: (w) => {
      const a = claim(w, 'default-a');
      delete a.providerID;
      delete a.instanceId;
      w.now = w.csrCreated + 16 * MIN;
    },
    want: 'ignore',
    reason: 'NoMatchingNodeClaim',
  },
  {
    name: "client NodeClaim with another cloud's providerID",
    kind: 'client',
    world: (w) => {
      const a = claim(w, 'default-a');
      a.providerID = 'azure:///subscriptions/x/vm-a';
      delete a.instanceId;
    },
    want: 'ignore',
    reason: 'NoMatchingNodeClaim',
  },
  {
    name: 'client instance no longer live',
    kind: 'client',
    world: (w) => void (instance(w, 'i-0a').live = false),
    want: 'ignore',
    reason: 'InstanceNotRunning',
  },
  {
    name: 'client instance in another cluster',
    kind: 'client',
    world: (w) => void (instance(w, 'i-0a').ownedByCluster = false),
    want: 'ignore',
    reason: 'InstanceNotOwned',
  },
  // The AWS provider reports ownedByCluster=false for `kubernetes.io/cluster/<infraID>=shared` (ec2.test.ts).
  {
    name: 'client instance tagged shared, not owned',
    kind: 'client',
    world: (w) => void (instance(w, 'i-0a').ownedByCluster = false),
    want: 'ignore',
    reason: 'InstanceNotOwned',
  },
  {
    name: 'client instance answer read before the CSR was seen (a cached running, maybe terminated since)',
    kind: 'client',
    world: (w) => void ((w.csrSeen = w.now - 500), (instance(w, 'i-0a').readAtMs = w.now - 2000)),
    want: 'wait',
    reason: 'InstanceAnswerStale',
  },
  {
    name: 'client instance answer read in the second the CSR was created',
    kind: 'client',
    world: (w) => void (instance(w, 'i-0a').readAtMs = w.csrCreated + 999),
    want: 'wait',
    reason: 'InstanceAnswerStale',
  },
  {
    name: 'client instance answer of unknown age',
    kind: 'client',
    world: (w) => void delete instance(w, 'i-0a').readAtMs,
    want: 'wait',
    reason: 'InstanceAnswerStale',
  },
  {
    name: 'client instance not found',
    kind: 'client',
    world: (w) => void w.instances.delete('i-0a'),
    want: 'wait',
    reason: 'InstanceNotVisible',
  },
  {
    name: 'client instance not found past the launch deadline',
    kind: 'client',
    world: (w) => {
      w.instances.delete('i-0a');
      w.now = w.csrCreated + 16 * MIN;
    },
    want: 'ignore',
    reason: 'NoMatchingNodeClaim',
  },
  {
    name: 'client instance private DNS is another name',
    kind: 'client',
    world: (w) => void (instance(w, 'i-0a').privateDnsName = 'ip-10-0-1-11.ec2.internal'),
    want: 'ignore',
    reason: 'NoMatchingNodeClaim',
  },
  {
    name: 'client two NodeClaims resolve to the same name',
    kind: 'client',
    world: (w) => {
      w.nodeClaims.push({ name: 'default-c', createdMs: T0, providerID: 'aws:///us-east-1b/i-0c', instanceId: 'i-0c', deleting: false });
      w.instances.set('i-0c', anInstance({ instanceId: 'i-0c', privateDnsName: NodeA }));
    },
    want: 'ignore',
    reason: 'AmbiguousNodeClaim',
  },
  {
    name: 'client expired window',
    kind: 'client',
    world: (w) => void ((w.csrCreated = T0 + 3 * 60 * MIN), (w.now = w.csrCreated + MIN)),
    want: 'ignore',
    reason: 'ApprovalWindowExpired',
  },
  {
    name: 'client CSR older than NodeClaim',
    kind: 'client',
    world: (w) => void (w.csrCreated = T0 - 1000),
    want: 'ignore',
    reason: 'CsrPredatesNodeClaim',
  },
  {
    name: 'client second client CSR for the same NodeClaim',
    kind: 'client',
    world: (w) => void w.approved.set('default-a', 1),
    want: 'ignore',
    reason: 'ClientCsrAlreadyApproved',
  },

  // --- serving: who asks
  {
    name: 'serving wrong signer (client-kubelet)',
    kind: 'serving',
    signerName: KubeletClientSigner,
    want: 'ignore',
    reason: 'WrongSigner',
  },
  {
    name: 'serving wrong signer (legacy-unknown)',
    kind: 'serving',
    signerName: 'kubernetes.io/legacy-unknown',
    want: 'ignore',
    reason: 'WrongSigner',
  },
  {
    name: 'serving requester is the bootstrapper',
    kind: 'serving',
    username: Names.nodeBootstrapperUser,
    groups: [...NodeBootstrapperGroups],
    want: 'ignore',
    reason: 'UnexpectedRequester',
  },
  {
    name: 'serving requester system:node with empty name',
    kind: 'serving',
    username: 'system:node:',
    want: 'ignore',
    reason: 'UnexpectedRequester',
  },
  {
    name: 'serving missing group system:nodes',
    kind: 'serving',
    groups: ['system:authenticated'],
    want: 'ignore',
    reason: 'MissingRequesterGroups',
  },
  // --- serving: the request
  {
    name: 'serving garbage PEM',
    kind: 'serving',
    pem: () => '-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----',
    want: 'ignore',
    reason: 'MalformedRequest',
  },
  { name: 'serving bad signature', kind: 'serving', pem: (good) => corruptSignature(good), want: 'ignore', reason: 'BadSignature' },
  {
    name: 'serving CN of another node',
    kind: 'serving',
    subject: `CN=system:node:${NodeA}, O=system:nodes`,
    want: 'ignore',
    reason: 'InvalidCommonName',
  },
  {
    name: 'serving CN and requester with a trailing dot',
    kind: 'serving',
    username: `${ServingUser}.`,
    subject: `CN=${ServingUser}., O=system:nodes`,
    want: 'ignore',
    reason: 'NonCanonicalNodeName',
  },
  {
    name: 'serving CN and requester in upper case',
    kind: 'serving',
    username: `system:node:${NodeB.toUpperCase()}`,
    subject: `CN=system:node:${NodeB.toUpperCase()}, O=system:nodes`,
    want: 'ignore',
    reason: 'NonCanonicalNodeName',
  },
  { name: 'serving O missing', kind: 'serving', subject: `CN=${ServingUser}`, want: 'ignore', reason: 'InvalidOrganization' },
  {
    name: 'serving extra subject field',
    kind: 'serving',
    subject: `CN=${ServingUser}, O=system:nodes, L=Somewhere`,
    want: 'ignore',
    reason: 'UnexpectedSubjectField',
  },
  { name: 'serving no SANs', kind: 'serving', sans: [], want: 'ignore', reason: 'MissingSubjectAltNames' },
  {
    name: 'serving email SAN',
    kind: 'serving',
    sans: [...ServingSans, { type: 'email', value: 'node@example.com' }],
    want: 'ignore',
    reason: 'UnexpectedSubjectAltNames',
  },
  {
    name: 'serving URI SAN',
    kind: 'serving',
    sans: [...ServingSans, { type: 'url', value: 'https://evil.example.com' }],
    want: 'ignore',
    reason: 'UnexpectedSubjectAltNames',
  },
  {
    name: 'serving usages client auth instead of server auth',
    kind: 'serving',
    usages: ['digital signature', 'client auth'],
    want: 'ignore',
    reason: 'UnexpectedUsages',
  },
  {
    name: 'serving usages extra client auth',
    kind: 'serving',
    usages: ['digital signature', 'server auth', 'client auth'],
    want: 'ignore',
    reason: 'UnexpectedUsages',
  },
  {
    name: 'serving key encipherment with EC key',
    kind: 'serving',
    usages: ['digital signature', 'key encipherment', 'server auth'],
    want: 'ignore',
    reason: 'UnexpectedUsages',
  },
  // --- serving: cluster state
  {
    name: 'serving SAN DNS not an instance address',
    kind: 'serving',
    sans: [...ServingSans, { type: 'dns', value: 'kubernetes.default.svc' }],
    want: 'ignore',
    reason: 'SanNotInstanceAddress',
  },
  {
    name: 'serving IP SAN of another node',
    kind: 'serving',
    sans: [...ServingSans, { type: 'ip', value: '10.0.1.10' }],
    want: 'ignore',
    reason: 'SanNotInstanceAddress',
  },
  {
    name: 'serving only a foreign IP SAN',
    kind: 'serving',
    sans: [{ type: 'ip', value: '169.254.169.254' }],
    want: 'ignore',
    reason: 'SanNotInstanceAddress',
  },
  {
    name: 'serving for node without NodeClaim (MachineSet node)',
    kind: 'serving',
    username: `system:node:${MachineNode}`,
    subject: `CN=system:node:${MachineNode}, O=system:nodes`,
    sans: [{ type: 'dns', value: MachineNode }],
    want: 'ignore',
    reason: 'NodeNotManagedByKarpenter',
  },
  {
    name: 'serving Node not visible yet',
    kind: 'serving',
    world: (w) => void (w.nodes = w.nodes.filter((n) => n.name !== NodeB)),
    want: 'wait',
    reason: 'NodeNotVisible',
  },
  {
    name: 'serving Node missing past the launch deadline',
    kind: 'serving',
    world: (w) => {
      w.nodes = w.nodes.filter((n) => n.name !== NodeB);
      w.now = w.csrCreated + 20 * MIN;
    },
    want: 'ignore',
    reason: 'NodeNotFound',
  },
  {
    name: 'serving Node providerID differs from the NodeClaim',
    kind: 'serving',
    world: (w) => void (w.nodes.find((n) => n.name === NodeB)!.providerID = 'aws:///us-east-1a/i-0evil'),
    want: 'ignore',
    reason: 'ProviderIdMismatch',
  },
  {
    name: 'serving instance terminated',
    kind: 'serving',
    world: (w) => void (instance(w, 'i-0b').live = false),
    want: 'ignore',
    reason: 'InstanceNotRunning',
  },
  {
    name: 'serving instance in another cluster',
    kind: 'serving',
    world: (w) => void (instance(w, 'i-0b').ownedByCluster = false),
    want: 'ignore',
    reason: 'InstanceNotOwned',
  },
  {
    name: 'serving instance not found',
    kind: 'serving',
    world: (w) => void w.instances.delete('i-0b'),
    want: 'wait',
    reason: 'InstanceNotVisible',
  },
  {
    name: 'serving instance private DNS differs from the node name',
    kind: 'serving',
    world: (w) => void (instance(w, 'i-0b').privateDnsName = 'ip-10-0-2-21.ec2.internal'),
    want: 'ignore',
    reason: 'NodeNameMismatch',
  },
];

const legitimate: Case[] = [
  { name: 'client good (EC P-256)', kind: 'client', want: 'approve', reason: 'ClientCsrVerified' },
  { name: 'client good (EC P-384)', kind: 'client', key: 'ec384', want: 'approve', reason: 'ClientCsrVerified' },
  {
    name: 'client good (RSA with key encipherment)',
    kind: 'client',
    key: 'rsa2048',
    usages: ['digital signature', 'key encipherment', 'client auth'],
    want: 'approve',
    reason: 'ClientCsrVerified',
  },
  { name: 'client good (RSA without key encipherment)', kind: 'client', key: 'rsa2048', want: 'approve', reason: 'ClientCsrVerified' },
  {
    name: 'client good (instance running)',
    kind: 'client',
    world: (w) => void (instance(w, 'i-0a').live = true),
    want: 'approve',
    reason: 'ClientCsrVerified',
  },
  {
    name: 'client good (created the same second as the NodeClaim)',
    kind: 'client',
    world: (w) => void (w.csrCreated = T0),
    want: 'approve',
    reason: 'ClientCsrVerified',
  },
  {
    name: 'client good (instance read right after the CSR was seen)',
    kind: 'client',
    world: (w) => void ((w.csrSeen = w.now - 500), (instance(w, 'i-0a').readAtMs = w.now - 500)),
    want: 'approve',
    reason: 'ClientCsrVerified',
  },
  {
    name: 'client good (instance DNS upper-case with trailing dot)',
    kind: 'client',
    world: (w) => void (instance(w, 'i-0a').privateDnsName = `${NodeA.toUpperCase()}.`),
    want: 'approve',
    reason: 'ClientCsrVerified',
  },
  {
    name: 'client good (other NodeClaims still launching)',
    kind: 'client',
    world: (w) => void w.nodeClaims.push({ name: 'default-d', createdMs: T0, deleting: false }),
    want: 'approve',
    reason: 'ClientCsrVerified',
  },
  { name: 'serving good (DNS and IP)', kind: 'serving', want: 'approve', reason: 'ServingCsrVerified' },
  {
    name: 'serving good (public DNS and IP too)',
    kind: 'serving',
    sans: [...ServingSans, { type: 'dns', value: 'ec2-54-1-2-3.compute-1.amazonaws.com' }, { type: 'ip', value: '54.1.2.3' }],
    want: 'approve',
    reason: 'ServingCsrVerified',
  },
  {
    name: 'serving good (IP only)',
    kind: 'serving',
    sans: [{ type: 'ip', value: '10.0.2.20' }],
    want: 'approve',
    reason: 'ServingCsrVerified',
  },
  {
    name: 'serving good (IPv6 in long form)',
    kind: 'serving',
    sans: [{ type: 'ip', value: '2600:1f18:0:0:0:0:0:20' }],
    want: 'approve',
    reason: 'ServingCsrVerified',
  },
  {
    name: 'serving good (instance DNS upper-case with trailing dot)',
    kind: 'serving',
    world: (w) => void (instance(w, 'i-0b').privateDnsName = `${NodeB.toUpperCase()}.`),
    want: 'approve',
    reason: 'ServingCsrVerified',
  },
  {
    name: 'serving good (RSA with key encipherment)',
    kind: 'serving',
    key: 'rsa2048',
    usages: ['digital signature', 'key encipherment', 'server auth'],
    want: 'approve',
    reason: 'ServingCsrVerified',
  },
  {
    name: 'serving good (NodeClaim matched by providerID before nodeName is set)',
    kind: 'serving',
    world: (w) => void delete claim(w, 'default-b').nodeName,
    want: 'approve',
    reason: 'ServingCsrVerified',
  },
  {
    name: 'serving good (renewal while the NodeClaim drains)',
    kind: 'serving',
    world: (w) => void (claim(w, 'default-b').deleting = true),
    want: 'approve',
    reason: 'ServingCsrVerified',
  },
];

async function decide(c: Case): Promise<CsrDecision> {
  const w = baseWorld(c.kind);
  c.world?.(w);
  const client = c.kind === 'client';
  const good = await makeCsrPem(c.subject ?? (client ? ClientSubject : ServingSubject), c.sans ?? (client ? [] : ServingSans), c.key);
  const pem = c.pem ? await c.pem(good) : good;
  const csr: KubeObject = {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: { name: 'csr-under-test', creationTimestamp: iso(w.csrCreated) },
    spec: {
      request: Buffer.from(pem, 'latin1').toString('base64'),
      signerName: c.signerName ?? (client ? KubeletClientSigner : KubeletServingSigner),
      username: c.username ?? (client ? Names.nodeBootstrapperUser : ServingUser),
      groups: c.groups ?? (client ? [...NodeBootstrapperGroups] : ['system:nodes', 'system:authenticated']),
      usages: c.usages ?? (client ? ['digital signature', 'client auth'] : ['digital signature', 'server auth']),
    },
  };
  const input = {
    csr,
    request: await parseCertificateRequestPem(pem),
    nodeClaims: w.nodeClaims,
    nodes: w.nodes,
    instances: w.instances,
    now: w.now,
    approvedClientCsrs: w.approved,
    ...(w.csrSeen !== undefined ? { csrSeenMs: w.csrSeen } : {}),
  };
  return client ? decideClientCsr(input) : decideServingCsr(input);
}

describe('kubelet CSR policy', () => {
  it('has at least 40 named forged or malformed cases', () => {
    expect(forged.length).toBeGreaterThanOrEqual(40);
    expect(new Set([...forged, ...legitimate].map((c) => c.name)).size).toBe(forged.length + legitimate.length);
  });

  it.each(forged)('never approves: $name', async (c) => {
    const d = await decide(c);
    expect(d.decision).not.toBe('approve');
    expect({ decision: d.decision, reason: d.reason }).toEqual({ decision: c.want, reason: c.reason });
    expect(d.message).not.toBe('');
  });

  it.each(legitimate)('approves: $name', async (c) => {
    const d = await decide(c);
    expect({ decision: d.decision, reason: d.reason }).toEqual({ decision: c.want, reason: c.reason });
    expect(d.nodeClaim).toBe(c.kind === 'client' ? 'default-a' : 'default-b');
    expect(d.instanceId).toBe(c.kind === 'client' ? 'i-0a' : 'i-0b');
  });
});
