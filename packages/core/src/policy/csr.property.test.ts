import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import { Pkcs10CertificateRequestGenerator } from '@peculiar/x509';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../model/kube.js';
import type { InstanceInfo } from '../ports/cloud-provider.js';
import { decideKubeletCsr, KubeletClientSigner, KubeletServingSigner, NodeBootstrapperGroups, type CsrNodeClaim } from './csr.js';
import { parseCertificateRequestPem, type CsrParseResult } from './csr-parse.js';
import { Names } from '../model/names.js';

const RUNS = 10_000;
const T0 = Date.UTC(2026, 5, 1);
const NAMES = ['ip-10-0-1-1.ec2.internal', 'ip-10-0-1-2.ec2.internal', 'IP-10-0-1-1.EC2.INTERNAL.'];
/** Names a CSR may ask for: the two canonical ones and other spellings of the first (never approvable). */
const CSR_NAMES = [...NAMES.slice(0, 2), 'IP-10-0-1-1.EC2.INTERNAL.', 'ip-10-0-1-1.ec2.internal.', 'Ip-10-0-1-1.ec2.internal'];

describe('CSR parsing never throws', () => {
  it('arbitrary text and PEM-shaped garbage are rejected with a reason', async () => {
    const pemLike = fc
      .tuple(
        fc.constantFrom('CERTIFICATE REQUEST', 'CERTIFICATE', 'NEW CERTIFICATE REQUEST', 'X'),
        fc.base64String({ maxLength: 400 }),
        fc.nat(2),
      )
      .map(([type, body, copies]) =>
        Array.from({ length: copies + 1 }, () => `-----BEGIN ${type}-----\n${body}\n-----END ${type}-----`).join('\n'),
      );
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.string({ maxLength: 300 }), pemLike, fc.constant(undefined)), async (input) => {
        const r = await parseCertificateRequestPem(input);
        if (!r.ok) expect(r.reason).toMatch(/^[A-Z][A-Za-z]+$/);
        // A random body never verifies as a real self-signed request.
        expect(r.ok).toBe(false);
      }),
      { numRuns: RUNS },
    );
  }, 120_000);
});

describe('CSR approval is sound: anything approved satisfies every rule, whatever the world', () => {
  const parsed = new Map<string, CsrParseResult>();
  beforeAll(async () => {
    const keys = (await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, [
      'sign',
      'verify',
    ])) as webcrypto.CryptoKeyPair;
    for (const n of CSR_NAMES) {
      const csr = await Pkcs10CertificateRequestGenerator.create({
        name: `CN=system:node:${n}, O=system:nodes`,
        keys,
        signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
      });
      parsed.set(n, await parseCertificateRequestPem(csr.toString('pem')));
    }
  });

  const norm = (s: string) => s.toLowerCase().replace(/\.$/, '');
  const mostly = <T>(good: T, bad: fc.Arbitrary<T>) => fc.oneof({ weight: 4, arbitrary: fc.constant(good) }, { weight: 1, arbitrary: bad });
  let approvals = 0;

  it('client CSRs', () => {
    const claim = fc.record({
      name: fc.constantFrom('a', 'b'),
      createdMs: mostly(T0 - 60_000, fc.integer({ min: T0 - 3 * 3_600_000, max: T0 + 60_000 })),
      instanceId: mostly<string | undefined>('i-1', fc.constantFrom('i-2', undefined)),
      nodeName: mostly<string | undefined>(undefined, fc.constantFrom(...NAMES)),
      deleting: mostly(false, fc.constant(true)),
    });
    const instance = fc.record({
      instanceId: fc.constantFrom('i-1', 'i-2'),
      live: mostly(true, fc.constant(false)),
      privateDnsName: fc.option(fc.constantFrom(...NAMES), { nil: undefined }),
      ownedByCluster: mostly(true, fc.constant(false)),
      // When the answer was read, relative to the CSR's creation second (createdMs .. createdMs+1000).
      readAfterCreatedMs: mostly<number | undefined>(5_000, fc.option(fc.integer({ min: -60_000, max: 60_000 }), { nil: undefined })),
    });
    fc.assert(
      fc.property(
        mostly(NAMES[0]!, fc.constantFrom(...CSR_NAMES)),
        // Mostly legitimate requests, so that approvals happen and their soundness is really checked.
        mostly(Names.nodeBootstrapperUser, fc.constantFrom('system:serviceaccount:default:intruder', 'system:node:x')),
        mostly([...NodeBootstrapperGroups], fc.subarray([...NodeBootstrapperGroups, 'system:masters'])),
        mostly(KubeletClientSigner, fc.constantFrom(KubeletServingSigner, 'example.com/other')),
        mostly(['digital signature', 'client auth'], fc.subarray(['digital signature', 'client auth', 'key encipherment', 'server auth'])),
        mostly(T0, fc.integer({ min: T0 - 3 * 3_600_000, max: T0 + 60_000 })),
        fc.array(claim, { minLength: 1, maxLength: 3 }),
        fc.array(instance, { minLength: 1, maxLength: 3 }),
        mostly<string[]>([], fc.subarray(NAMES)),
        mostly(0, fc.integer({ min: 1, max: 2 })),
        (node, username, groups, signerName, usages, createdMs, claims, instances, nodeNames, approvedBefore) => {
          const csr: KubeObject = {
            apiVersion: 'certificates.k8s.io/v1',
            kind: 'CertificateSigningRequest',
            metadata: { name: 'csr-x', creationTimestamp: new Date(createdMs).toISOString() },
            spec: { signerName, username, groups, usages, request: '' },
          };
          const views: CsrNodeClaim[] = claims.map((c) => ({
            ...c,
            ...(c.instanceId ? { providerID: `aws:///us-east-1a/${c.instanceId}` } : {}),
          }));
          const byId = new Map<string, InstanceInfo & { readAtMs?: number }>(
            instances.map(({ readAfterCreatedMs, ...i }) => [
              i.instanceId,
              {
                ...i,
                privateIpAddresses: [],
                publicIpAddresses: [],
                ...(readAfterCreatedMs !== undefined ? { readAtMs: createdMs + readAfterCreatedMs } : {}),
              } satisfies InstanceInfo,
            ]),
          );
          const d = decideKubeletCsr({
            csr,
            request: parsed.get(node)!,
            nodeClaims: views,
            nodes: nodeNames.map((name) => ({ name })),
            instances: byId,
            now: T0 + 120_000,
            approvedClientCsrs: new Map(views.map((c) => [c.name, approvedBefore])),
          });
          if (d?.decision !== 'approve') return;
          approvals++;
          // Every rule of the node-identity reference (docs/node-identity.md), restated independently of the policy code.
          expect(signerName).toBe(KubeletClientSigner);
          expect(username).toBe(Names.nodeBootstrapperUser);
          for (const g of NodeBootstrapperGroups) expect(groups).toContain(g);
          expect([...usages].sort()).toEqual(['client auth', 'digital signature']);
          // The requester's name is already canonical; only EC2's side is normalised.
          expect(node).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/);
          expect(nodeNames.includes(node)).toBe(false);
          const backing = views.filter((c) => {
            const inst = c.instanceId ? byId.get(c.instanceId) : undefined;
            return (
              !c.deleting &&
              !c.nodeName &&
              inst !== undefined &&
              inst.ownedByCluster &&
              inst.live &&
              norm(inst.privateDnsName ?? '') === node &&
              // Read after the CSR was created (its creationTimestamp has whole seconds).
              inst.readAtMs !== undefined &&
              inst.readAtMs >= createdMs + 1000 &&
              createdMs >= c.createdMs &&
              createdMs <= c.createdMs + 2 * 3_600_000
            );
          });
          expect(backing.length).toBeGreaterThan(0);
          expect(approvedBefore).toBe(0);
        },
      ),
      { numRuns: RUNS },
    );
    // Not vacuous: a good share of the random worlds did contain a provable instance.
    expect(approvals).toBeGreaterThan(RUNS / 100);
    console.error(`csr property: ${approvals} of ${RUNS} random client CSRs approved, every one sound`);
  }, 120_000);
});
