import { readFileSync } from 'node:fs';

/** The fields of an audit.k8s.io/v1 Event that tests filter and assert on (Metadata level). */
export interface AuditEvent {
  auditID: string;
  stage: string;
  verb: string;
  requestURI: string;
  user: { username: string; groups?: string[] };
  impersonatedUser?: { username: string };
  userAgent?: string;
  objectRef?: { resource?: string; namespace?: string; name?: string; apiGroup?: string; apiVersion?: string; subresource?: string };
  responseStatus?: { code?: number; reason?: string; message?: string };
  requestReceivedTimestamp: string;
  stageTimestamp: string;
}

export const WRITE_VERBS = ['create', 'update', 'patch', 'delete', 'deletecollection'] as const;

export interface AuditFilter {
  /** Exact username, e.g. `system:serviceaccount:openshift-karpenter:karpenter-operator`. */
  user?: string;
  verbs?: readonly string[];
  /** Plural resource, e.g. `ec2nodeclasses`; `resource/subresource` also matches (`nodeclaims/status`). */
  resource?: string;
  apiGroup?: string;
  namespace?: string;
  name?: string;
  /** HTTP status codes, e.g. `[403]`. */
  codes?: readonly number[];
  /** Only requests received at or after this instant. */
  since?: Date;
  /** Default `ResponseComplete` (one event per finished request); `*` for all stages. */
  stage?: string;
}

/** Parses the apiserver's JSON-lines audit log and returns the matching events, oldest first. */
export function readAuditEvents(path: string, filter: AuditFilter = {}): AuditEvent[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  const stage = filter.stage ?? 'ResponseComplete';
  const since = filter.since?.getTime();
  const out: AuditEvent[] = [];
  for (const line of text.split('\n')) {
    if (!line) continue;
    let e: AuditEvent;
    try {
      e = JSON.parse(line) as AuditEvent;
    } catch {
      continue; // a line being written right now
    }
    if (stage !== '*' && e.stage !== stage) continue;
    if (filter.user !== undefined && e.user?.username !== filter.user) continue;
    if (filter.verbs && !filter.verbs.includes(e.verb)) continue;
    if (filter.resource !== undefined) {
      const r = e.objectRef?.resource;
      const full = e.objectRef?.subresource ? `${r}/${e.objectRef.subresource}` : r;
      if (filter.resource !== r && filter.resource !== full) continue;
    }
    if (filter.apiGroup !== undefined && (e.objectRef?.apiGroup ?? '') !== filter.apiGroup) continue;
    if (filter.namespace !== undefined && e.objectRef?.namespace !== filter.namespace) continue;
    if (filter.name !== undefined && e.objectRef?.name !== filter.name) continue;
    if (filter.codes && !filter.codes.includes(e.responseStatus?.code ?? 0)) continue;
    if (since !== undefined && Date.parse(e.requestReceivedTimestamp) < since) continue;
    out.push(e);
  }
  return out;
}

/** Metadata for every request; nothing for the control plane's own lease renewals and health checks. */
export const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: None
    users: [system:kube-controller-manager, system:kube-scheduler, system:kwok-controller]
    verbs: [get, update]
    resources:
      - group: coordination.k8s.io
        resources: [leases]
  - level: None
    nonResourceURLs: [/healthz*, /readyz*, /livez*, /version]
  - level: Metadata
`;
