import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import { Pkcs10CertificateRequestGenerator } from '@peculiar/x509';
import { beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { KubeObject } from '../../model/kube.js';
import { Types } from '../../model/kube.js';
import { parseCertificateRequestPem } from '../../policy/csr-parse.js';
import { CsrRequests, type ListedCsr } from './csr-requests.js';

// The real parser, observed: which requests the memo parses, and how many.
vi.mock('../../policy/csr-parse.js', async (original) => {
  const real = await original<typeof import('../../policy/csr-parse.js')>();
  return { ...real, parseCertificateRequestPem: vi.fn(real.parseCertificateRequestPem) };
});
const parses = () => vi.mocked(parseCertificateRequestPem).mock.calls.length;

let keys: webcrypto.CryptoKeyPair;
beforeAll(async () => {
  keys = (await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
});
beforeEach(() => vi.mocked(parseCertificateRequestPem).mockClear());

const requests = new Map<string, string>();
/** An approved client CSR for `node` (requests cached per node: generating one is the slow part). */
async function anApprovedCsr(name: string, node: string, o: { uid?: string; rv?: string; createdMs?: number } = {}): Promise<KubeObject> {
  let request = requests.get(node);
  if (!request) {
    const csr = await Pkcs10CertificateRequestGenerator.create({
      name: `CN=system:node:${node}, O=system:nodes`,
      keys,
      signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' } as webcrypto.EcdsaParams,
    });
    request = Buffer.from(csr.toString('pem')).toString('base64');
    requests.set(node, request);
  }
  return {
    ...Types.CertificateSigningRequest,
    metadata: {
      name,
      uid: o.uid ?? `uid-${name}`,
      resourceVersion: o.rv ?? '1',
      creationTimestamp: new Date(o.createdMs ?? 0).toISOString(),
    },
    spec: { request, signerName: 'kubernetes.io/kube-apiserver-client-kubelet' },
    status: { conditions: [{ type: 'Approved', status: 'True' }] },
  };
}
const listed = (object: KubeObject): ListedCsr => ({ object, createdMs: Date.parse(object.metadata.creationTimestamp!) });

describe('CsrRequests', () => {
  it('parses a CSR once per uid: a status update is not parsed again, a re-created CSR is', async () => {
    const memo = new CsrRequests();
    const v1 = await anApprovedCsr('csr-a', 'node-a');
    expect((await memo.parse(v1)).nodeName).toBe('node-a');
    expect(memo.nodeNameOf(v1)).toBe('node-a');
    await memo.parse(structuredClone(v1));
    // Approved (a new resourceVersion, the same spec): the API server keeps a CSR's spec, so is the memo.
    const approved = { ...structuredClone(v1), metadata: { ...v1.metadata, resourceVersion: '7' } };
    expect(memo.nodeNameOf(approved)).toBe('node-a');
    await memo.parse(approved);
    expect(parses()).toBe(1);

    // Another request under the name (deleted and re-created) is parsed again, and until then its node
    // name is not known.
    const v2 = await anApprovedCsr('csr-a', 'node-b', { uid: 'other', rv: '2' });
    expect(memo.nodeNameOf(v2)).toBeUndefined();
    expect((await memo.parse(v2)).nodeName).toBe('node-b');
    expect(parses()).toBe(2);
    expect(memo.size).toBe(1);
  });

  it('drops the entry of a deleted CSR, and retains only the CSRs the cluster has', async () => {
    const memo = new CsrRequests();
    const csrs = await Promise.all([0, 1, 2, 3].map((i) => anApprovedCsr(`csr-${i}`, `node-${i}`)));
    for (const c of csrs) await memo.parse(c);
    expect(memo.size).toBe(4);
    memo.drop('csr-0');
    expect(memo.size).toBe(3);
    expect(memo.nodeNameOf(csrs[0]!)).toBeUndefined();
    memo.retain(new Set(['csr-2', 'csr-9']));
    expect(memo.size).toBe(1);
    expect(memo.nodeNameOf(csrs[2]!)).toBe('node-2');
    expect(memo.nodeNameOf(csrs[1]!)).toBeUndefined();
  });

  it('answers which approved CSRs were for a node, parsing only those created since the NodeClaim, once', async () => {
    const memo = new CsrRequests();
    const old = await Promise.all(
      [0, 1, 2, 3, 4].map((i) => anApprovedCsr(`old-${i}`, i === 0 ? 'node-x' : `node-${i}`, { createdMs: 1_000 })),
    );
    const recent = [
      await anApprovedCsr('new-x', 'node-x', { createdMs: 60_000 }),
      await anApprovedCsr('new-y', 'node-y', { createdMs: 61_000 }),
    ];
    const approved = [...old, ...recent].map(listed);

    expect(await memo.approvedFor(approved, 'node-x', 30_000)).toEqual(['new-x']);
    // Only the two created since 30 s were parsed; the old ones (old-0 for node-x included) cost nothing.
    expect(vi.mocked(parseCertificateRequestPem).mock.calls).toHaveLength(2);
    expect(memo.size).toBe(2);
    expect(await memo.approvedFor(approved, 'node-y', 30_000)).toEqual(['new-y']);
    expect(parses()).toBe(2);

    // Asked from earlier on, it parses the older ones too, and finds node-x's first approval.
    expect(await memo.approvedFor(approved, 'node-x', 0)).toEqual(['old-0', 'new-x']);
    expect(parses()).toBe(7);
  });

  it('parses at most a slice between two yields to the event loop', async () => {
    let inSlice = 0;
    const slices: number[] = [];
    const memo = new CsrRequests({
      sliceSize: 3,
      yieldToEventLoop: async () => {
        slices.push(inSlice);
        inSlice = 0;
        await new Promise((r) => setTimeout(r, 0));
      },
    });
    const real = await vi.importActual<typeof import('../../policy/csr-parse.js')>('../../policy/csr-parse.js');
    vi.mocked(parseCertificateRequestPem).mockImplementation((pem) => {
      inSlice++;
      return real.parseCertificateRequestPem(pem);
    });
    try {
      const approved = (await Promise.all(Array.from({ length: 10 }, (_, i) => anApprovedCsr(`csr-${i}`, `node-${i % 4}`)))).map(listed);
      expect(await memo.approvedFor(approved, 'node-1', 0)).toEqual(['csr-1', 'csr-5', 'csr-9']);
      slices.push(inSlice);
      expect(slices).toEqual([3, 3, 3, 1]);
      // Memoised: asked again, nothing is parsed and nothing yields.
      slices.length = 0;
      expect(await memo.approvedFor(approved, 'node-2', 0)).toEqual(['csr-2', 'csr-6']);
      expect(slices).toEqual([]);
    } finally {
      vi.mocked(parseCertificateRequestPem).mockImplementation(real.parseCertificateRequestPem);
    }
  });

  it('parses a listing in concurrent slices, one loop turn each, and waits for parses already running', async () => {
    let yields = 0;
    const memo = new CsrRequests({
      batchSliceSize: 4,
      yieldToEventLoop: async () => {
        yields++;
        await new Promise((r) => setTimeout(r, 0));
      },
    });
    const csrs = await Promise.all(Array.from({ length: 10 }, (_, i) => anApprovedCsr(`csr-${i}`, `node-${i % 5}`)));
    void memo.parse(csrs[0]!); // already being parsed when the listing comes
    await memo.parseAll(csrs);
    expect(parses()).toBe(10);
    expect(yields).toBe(3); // 9 left to parse: slices of 4, 4 and 1
    for (const [i, c] of csrs.entries()) expect(memo.nodeNameOf(c)).toBe(`node-${i % 5}`);
    // All memoised: nothing parsed, no turn taken.
    await memo.parseAll(csrs);
    expect(parses()).toBe(10);
    expect(yields).toBe(3);
  });

  it('parseAll waits for a parse of the listing that was already running', async () => {
    const memo = new CsrRequests();
    const csrs = await Promise.all([0, 1, 2].map((i) => anApprovedCsr(`csr-${i}`, `node-${i}`)));
    const real = await vi.importActual<typeof import('../../policy/csr-parse.js')>('../../policy/csr-parse.js');
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    vi.mocked(parseCertificateRequestPem).mockImplementationOnce(async (pem) => {
      await held;
      return real.parseCertificateRequestPem(pem);
    });
    void memo.parse(csrs[0]!); // held
    let done = false;
    const all = memo.parseAll(csrs).then(() => (done = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(done).toBe(false);
    expect(memo.nodeNameOf(csrs[1]!)).toBe('node-1');
    release();
    await all;
    expect(memo.nodeNameOf(csrs[0]!)).toBe('node-0');
    expect(parses()).toBe(3);
  });
});
