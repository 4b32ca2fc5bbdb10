import { WRITE_VERBS, type AuditEvent } from '@karpenter-operator/testkit';

/** Writes the issue allows while idle: leader-lease renewals and Kubernetes Events. */
export const IDLE_ALLOWED_WRITE_RESOURCES = ['leases', 'events'] as const;

export interface AuditWindowSummary {
  /** Requests received in the window (each request once, whatever stages it logged). */
  total: number;
  byVerb: Record<string, number>;
  /** `verb resource[/subresource]` → count. */
  byVerbResource: Record<string, number>;
  /** Writes other than to leases and events (`verb requestURI`), for the idle target. */
  writesExceptLeasesEvents: string[];
  /** LIST requests (`requestURI`): a converged operator serves itself from its caches. */
  lists: string[];
  /** New WATCH requests: informer (re)starts. */
  watches: string[];
  /** Responses with status ≥ 400 (`code verb requestURI`). */
  errors: string[];
}

const resourceOf = (e: AuditEvent): string => {
  const r = e.objectRef?.resource ?? e.requestURI.split('?')[0] ?? e.requestURI;
  return e.objectRef?.subresource ? `${r}/${e.objectRef.subresource}` : r;
};

/**
 * Groups the audit events of requests received in `[since, until)` (one per auditID: a WATCH logs
 * ResponseStarted long before ResponseComplete, so both stages are read and de-duplicated).
 */
export function summarizeAuditWindow(events: readonly AuditEvent[], since: Date, until: Date): AuditWindowSummary {
  const seen = new Map<string, AuditEvent>();
  const from = since.getTime();
  const to = until.getTime();
  for (const e of events) {
    const at = Date.parse(e.requestReceivedTimestamp);
    if (!(at >= from && at < to)) continue;
    const prev = seen.get(e.auditID);
    // Prefer ResponseComplete (it carries the final status code).
    if (!prev || e.stage === 'ResponseComplete') seen.set(e.auditID, e);
  }
  const out: AuditWindowSummary = {
    total: 0,
    byVerb: {},
    byVerbResource: {},
    writesExceptLeasesEvents: [],
    lists: [],
    watches: [],
    errors: [],
  };
  const ordered = [...seen.values()].sort((a, b) => Date.parse(a.requestReceivedTimestamp) - Date.parse(b.requestReceivedTimestamp));
  for (const e of ordered) {
    out.total++;
    out.byVerb[e.verb] = (out.byVerb[e.verb] ?? 0) + 1;
    const vr = `${e.verb} ${resourceOf(e)}`;
    out.byVerbResource[vr] = (out.byVerbResource[vr] ?? 0) + 1;
    const resource = e.objectRef?.resource ?? '';
    if ((WRITE_VERBS as readonly string[]).includes(e.verb) && !(IDLE_ALLOWED_WRITE_RESOURCES as readonly string[]).includes(resource)) {
      out.writesExceptLeasesEvents.push(`${e.verb} ${e.requestURI}`);
    }
    if (e.verb === 'list') out.lists.push(e.requestURI);
    if (e.verb === 'watch') out.watches.push(e.requestURI);
    const code = e.responseStatus?.code ?? 0;
    if (code >= 400) out.errors.push(`${code} ${e.verb} ${e.requestURI}`);
  }
  return out;
}
