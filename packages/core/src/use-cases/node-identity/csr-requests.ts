import type { KubeObject } from '../../model/kube.js';
import { nodeNameFromUser } from '../../policy/csr.js';
import { csrRequestPem, parseCertificateRequestPem, type CsrParseResult } from '../../policy/csr-parse.js';

/** A CSR's parsed request and the node name its subject asks for (`system:node:<name>`, as spelled). */
export interface ParsedRequest {
  parsed: CsrParseResult;
  nodeName?: string;
}

interface Entry {
  uid: string | undefined;
  resourceVersion: string | undefined;
  result: Promise<ParsedRequest>;
  /** Set once `result` has settled. */
  value?: ParsedRequest;
}

/** An approved client CSR as listed: the object and its creation time (cheap fields, nothing parsed). */
export interface ListedCsr {
  object: KubeObject;
  createdMs: number;
}

export interface CsrRequestsOptions {
  /** At most this many requests are parsed between two yields to the event loop. */
  sliceSize?: number;
  /** Yields to the event loop (defaults to a zero-delay `setTimeout`). */
  yieldToEventLoop?: () => Promise<void>;
}

const DefaultSliceSize = 16;
const nextTick = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));

/**
 * The parsed PKCS#10 requests of kubelet CSRs, memoised per CSR name for one uid and resourceVersion: a
 * CSR updated, or deleted and re-created under its name, is parsed again; `drop` and `retain` forget
 * deleted ones, so the memo holds at most the CSRs the cluster has.
 *
 * Nothing is parsed ahead of need. The one-client-certificate rule asks which approved client CSRs were
 * for a node name (`approvedFor`); only those created since the NodeClaim in question can count, so only
 * those are parsed, a slice at a time between yields to the event loop. A fresh start among thousands of
 * approved CSRs therefore parses none of the old ones before the first pending CSR is decided.
 */
export class CsrRequests {
  private readonly entries = new Map<string, Entry>();
  private readonly sliceSize: number;
  private readonly yieldToEventLoop: () => Promise<void>;

  constructor(opts: CsrRequestsOptions = {}) {
    this.sliceSize = Math.max(1, opts.sliceSize ?? DefaultSliceSize);
    this.yieldToEventLoop = opts.yieldToEventLoop ?? nextTick;
  }

  /** The request of `csr`, parsed once per uid and resourceVersion (concurrent callers share one parse). */
  parse(csr: KubeObject): Promise<ParsedRequest> {
    const hit = this.memoOf(csr);
    if (hit) return hit.result;
    const entry: Entry = { uid: csr.metadata.uid, resourceVersion: csr.metadata.resourceVersion, result: parseRequest(csr) };
    this.entries.set(csr.metadata.name, entry);
    void entry.result.then((value) => {
      entry.value = value;
    });
    return entry.result;
  }

  /** The node name of `csr`'s request when it has been parsed in this uid and resourceVersion. */
  nodeNameOf(csr: KubeObject): string | undefined {
    return this.memoOf(csr)?.value?.nodeName;
  }

  /**
   * Names of the CSRs in `approved` created at or after `sinceMs` whose request is for `nodeName`. Parses
   * only those (the ones not memoised yet), `sliceSize` at most between two yields to the event loop.
   */
  async approvedFor(approved: readonly ListedCsr[], nodeName: string, sinceMs: number): Promise<string[]> {
    const out: string[] = [];
    let parsedInSlice = 0;
    for (const { object, createdMs } of approved) {
      if (createdMs < sinceMs) continue;
      if (!this.memoOf(object)) {
        if (parsedInSlice >= this.sliceSize) {
          await this.yieldToEventLoop();
          parsedInSlice = 0;
        }
        parsedInSlice++;
      }
      if ((await this.parse(object)).nodeName === nodeName) out.push(object.metadata.name);
    }
    return out;
  }

  /** True when a request of CSR `name` is memoised (in any uid or resourceVersion). */
  has(name: string): boolean {
    return this.entries.has(name);
  }

  /** Forgets CSR `name` (deleted, or no longer a kubelet CSR worth remembering). */
  drop(name: string): void {
    this.entries.delete(name);
  }

  /** Forgets every CSR not in `live` (the names the cluster has). */
  retain(live: ReadonlySet<string>): void {
    for (const name of [...this.entries.keys()]) if (!live.has(name)) this.entries.delete(name);
  }

  /** How many CSRs are memoised. */
  get size(): number {
    return this.entries.size;
  }

  /** The entry of `csr` when it is for this uid and resourceVersion. */
  private memoOf(csr: KubeObject): Entry | undefined {
    const hit = this.entries.get(csr.metadata.name);
    return hit && hit.uid === csr.metadata.uid && hit.resourceVersion === csr.metadata.resourceVersion ? hit : undefined;
  }
}

async function parseRequest(csr: KubeObject): Promise<ParsedRequest> {
  const parsed = await parseCertificateRequestPem(csrRequestPem(csr));
  if (!parsed.ok) return { parsed };
  const cn = parsed.request.subject.find((a) => a.type === 'CN')?.value;
  // As asked for: a name in another spelling is not approvable and must not match a real node's CSRs.
  const nodeName = cn ? nodeNameFromUser(cn) : undefined;
  return nodeName ? { parsed, nodeName } : { parsed };
}
