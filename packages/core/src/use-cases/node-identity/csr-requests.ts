import type { KubeObject } from '../../model/kube.js';
import { nodeNameFromUser } from '../../policy/csr.js';
import { csrRequestPem, parseCertificateRequestPem, type CsrParseResult } from '../../policy/csr-parse.js';

/** A CSR's parsed request and the node name its subject asks for (`system:node:<name>`, as spelled). */
export interface ParsedRequest {
  parsed: CsrParseResult;
  nodeName?: string;
}

interface Entry {
  /**
   * Which request was parsed: the CSR's uid (its spec, so its request, never changes), or for an object
   * without one the `spec.request` itself (the parse is a function of it alone).
   */
  key: unknown;
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
  /** At most this many requests are parsed between two yields to the event loop (one by one). */
  sliceSize?: number;
  /** At most this many requests are parsed at once, concurrently, by `parseAll` (a listing). */
  batchSliceSize?: number;
  /** Yields to the event loop (defaults to a zero-delay `setTimeout`). */
  yieldToEventLoop?: () => Promise<void>;
}

const DefaultSliceSize = 16;
/** About 15 ms of parsing on the event loop; the signature checks run beside it. */
const DefaultBatchSliceSize = 64;
const nextTick = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));

/**
 * The parsed PKCS#10 requests of kubelet CSRs, memoised per CSR name for one uid. A CSR's spec cannot
 * change (the API server keeps the old spec on update), so its approval, which changes only its status,
 * costs no second parse; a CSR deleted and re-created under its name (a new uid) is parsed again. `drop`
 * and `retain` forget deleted ones, so the memo holds at most the CSRs the cluster has.
 *
 * Nothing is parsed ahead of need. The one-client-certificate rule asks which approved client CSRs were
 * for a node name (`approvedFor`); only those created since the NodeClaim in question can count, so only
 * those are parsed, a slice at a time between yields to the event loop. A fresh start among thousands of
 * approved CSRs therefore parses none of the old ones before the first pending CSR is decided.
 */
export class CsrRequests {
  private readonly entries = new Map<string, Entry>();
  private readonly sliceSize: number;
  private readonly batchSliceSize: number;
  private readonly yieldToEventLoop: () => Promise<void>;

  constructor(opts: CsrRequestsOptions = {}) {
    this.sliceSize = Math.max(1, opts.sliceSize ?? DefaultSliceSize);
    this.batchSliceSize = Math.max(1, opts.batchSliceSize ?? DefaultBatchSliceSize);
    this.yieldToEventLoop = opts.yieldToEventLoop ?? nextTick;
  }

  /** The request of `csr`, parsed once per request (concurrent callers share one parse). */
  parse(csr: KubeObject): Promise<ParsedRequest> {
    const hit = this.memoOf(csr);
    if (hit) return hit.result;
    const entry: Entry = { key: keyOf(csr), result: parseRequest(csr) };
    this.entries.set(csr.metadata.name, entry);
    void entry.result.then((value) => {
      entry.value = value;
    });
    return entry.result;
  }

  /**
   * Parses every request of `csrs` not memoised yet, and waits for those being parsed. `batchSliceSize`
   * at a time: their signatures are checked off the event loop together, while the loop also turns once
   * (a yield to it runs alongside), so a listing of a thousand new pending CSRs costs a few dozen loop
   * turns, not one or two per CSR.
   */
  async parseAll(csrs: readonly KubeObject[]): Promise<void> {
    const inFlight: Promise<ParsedRequest>[] = [];
    const todo: KubeObject[] = [];
    for (const c of csrs) {
      const hit = this.memoOf(c);
      if (!hit) todo.push(c);
      else if (!hit.value) inFlight.push(hit.result);
    }
    for (let i = 0; i < todo.length; i += this.batchSliceSize) {
      await Promise.all([this.yieldToEventLoop(), ...todo.slice(i, i + this.batchSliceSize).map((c) => this.parse(c))]);
    }
    await Promise.all(inFlight);
  }

  /** The node name of `csr`'s request when that request has been parsed. */
  nodeNameOf(csr: KubeObject): string | undefined {
    return this.memoOf(csr)?.value?.nodeName;
  }

  /**
   * Names of the CSRs in `approved` created at or after `sinceMs` whose request is for `nodeName`. Parses
   * only those (the ones not memoised yet), `sliceSize` at most between two yields to the event loop. A
   * memoised request is read without awaiting: one decision in a burst of thousands walks the approved
   * CSRs without a microtask each.
   */
  async approvedFor(approved: readonly ListedCsr[], nodeName: string, sinceMs: number): Promise<string[]> {
    const out: string[] = [];
    let parsedInSlice = 0;
    for (const { object, createdMs } of approved) {
      if (createdMs < sinceMs) continue;
      const hit = this.memoOf(object);
      let parsed = hit?.value;
      if (!parsed) {
        if (!hit) {
          if (parsedInSlice >= this.sliceSize) {
            await this.yieldToEventLoop();
            parsedInSlice = 0;
          }
          parsedInSlice++;
        }
        parsed = await this.parse(object);
      }
      if (parsed.nodeName === nodeName) out.push(object.metadata.name);
    }
    return out;
  }

  /** True when a request of CSR `name` is memoised (for whichever uid). */
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

  /** The entry of `csr` when it is for the uid (or request) `csr` holds. */
  private memoOf(csr: KubeObject): Entry | undefined {
    const hit = this.entries.get(csr.metadata.name);
    return hit && hit.key === keyOf(csr) ? hit : undefined;
  }
}

/** What identifies a CSR's request: its uid, else (an object not from the API) the request itself. */
const keyOf = (csr: KubeObject): unknown => csr.metadata.uid ?? (csr.spec as { request?: unknown } | undefined)?.request;

async function parseRequest(csr: KubeObject): Promise<ParsedRequest> {
  const parsed = await parseCertificateRequestPem(csrRequestPem(csr));
  if (!parsed.ok) return { parsed };
  const cn = parsed.request.subject.find((a) => a.type === 'CN')?.value;
  // As asked for: a name in another spelling is not approvable and must not match a real node's CSRs.
  const nodeName = cn ? nodeNameFromUser(cn) : undefined;
  return nodeName ? { parsed, nodeName } : { parsed };
}
