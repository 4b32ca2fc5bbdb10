import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readAuditEvents, type AuditFilter } from './audit.js';

const OP = 'system:serviceaccount:openshift-karpenter:karpenter-operator';
const ev = (
  id: string,
  stage: string,
  user: string,
  verb: string,
  resource: string,
  code: number,
  at: string,
  extra: Record<string, string> = {},
) =>
  JSON.stringify({
    kind: 'Event',
    auditID: id,
    stage,
    verb,
    requestURI: `/x/${id}`,
    user: { username: user },
    objectRef: {
      resource,
      apiGroup: extra.apiGroup ?? 'karpenter.k8s.aws',
      namespace: extra.namespace,
      name: extra.name,
      subresource: extra.subresource,
    },
    responseStatus: { code },
    requestReceivedTimestamp: at,
    stageTimestamp: at,
  });

const file = join(mkdtempSync(join(tmpdir(), 'audit-test-')), 'audit.log');
writeFileSync(
  file,
  [
    ev('a', 'ResponseComplete', OP, 'patch', 'ec2nodeclasses', 200, '2026-01-01T00:00:01.000000Z', { name: 'default' }),
    ev('b', 'ResponseStarted', OP, 'watch', 'ec2nodeclasses', 200, '2026-01-01T00:00:02.000000Z'),
    ev('b', 'ResponseComplete', OP, 'watch', 'ec2nodeclasses', 200, '2026-01-01T00:00:02.000000Z'),
    ev('c', 'ResponseComplete', OP, 'create', 'secrets', 403, '2026-01-01T00:00:03.000000Z', { apiGroup: '', namespace: 'kube-system' }),
    ev('d', 'ResponseComplete', 'testkit-admin', 'update', 'nodeclaims', 200, '2026-01-01T00:00:04.000000Z', {
      apiGroup: 'karpenter.sh',
      subresource: 'status',
    }),
    '{"half a line',
  ].join('\n'),
);

describe('readAuditEvents', () => {
  it.each<{ name: string; filter: AuditFilter; ids: string[] }>([
    { name: 'all finished requests', filter: {}, ids: ['a', 'b', 'c', 'd'] },
    { name: 'every stage', filter: { stage: '*' }, ids: ['a', 'b', 'b', 'c', 'd'] },
    { name: 'by user', filter: { user: OP }, ids: ['a', 'b', 'c'] },
    { name: 'writes by user', filter: { user: OP, verbs: ['create', 'update', 'patch', 'delete'] }, ids: ['a', 'c'] },
    { name: '403s', filter: { codes: [403] }, ids: ['c'] },
    { name: 'core group', filter: { apiGroup: '' }, ids: ['c'] },
    { name: 'subresource', filter: { resource: 'nodeclaims/status' }, ids: ['d'] },
    { name: 'resource matches its subresources too', filter: { resource: 'nodeclaims' }, ids: ['d'] },
    { name: 'since', filter: { since: new Date('2026-01-01T00:00:03Z') }, ids: ['c', 'd'] },
    { name: 'namespace and name', filter: { name: 'default' }, ids: ['a'] },
  ])('$name', ({ filter, ids }) => {
    expect(readAuditEvents(file, filter).map((e) => e.auditID)).toEqual(ids);
  });

  it('returns nothing for a missing log', () => {
    expect(readAuditEvents(join(tmpdir(), 'no-such-audit.log'))).toEqual([]);
  });
});
