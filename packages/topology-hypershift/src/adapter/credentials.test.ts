import { Names, Types, type KubeObject } from '@karpenter-operator/core';
import { MemoryClusterStore, RecordingEvents } from '@karpenter-operator/core/testing';
import { describe, expect, it } from 'vitest';
import { aHostedControlPlane, HCP_NAME, HCP_NAMESPACE, ROLE_ARN } from '../testing/builders.js';
import { HCP_KARPENTER_FINALIZER } from '../hcp.js';
import { CREDENTIALS_MANAGED_LABEL, HcpCredentialsReconciler, webIdentityProfile } from './credentials.js';

const SECRET = { ...Types.Secret, namespace: HCP_NAMESPACE, name: Names.credentialsSecret };
const profileOf = (s: KubeObject | undefined) => Buffer.from(((s as { data?: Record<string, string> } | undefined)?.data?.['credentials'] ?? ''), 'base64').toString('utf8');

function setup(hcp: KubeObject, extra: KubeObject[] = []) {
  const management = new MemoryClusterStore([hcp, ...extra]);
  const events = new RecordingEvents();
  const r = new HcpCredentialsReconciler({ management, namespace: HCP_NAMESPACE, hcpName: HCP_NAME, events });
  return { management, events, r };
}

describe('webIdentityProfile', () => {
  it('is a web-identity profile with the role, the minted token and regional STS', () => {
    expect(webIdentityProfile('arn:aws:iam::123456789012:role/x')).toBe(
      '[default]\nrole_arn = arn:aws:iam::123456789012:role/x\nweb_identity_token_file = /var/run/secrets/openshift/serviceaccount/token\nsts_regional_endpoints = regional\n',
    );
  });
});

describe('HcpCredentialsReconciler', () => {
  it('writes the operand credentials Secret from spec.autoNode, owned by the HCP; a second reconcile writes nothing', async () => {
    const { management, events, r } = setup(aHostedControlPlane());
    await r.reconcile();
    const s = await management.get(SECRET);
    expect(profileOf(s)).toContain(`role_arn = ${ROLE_ARN}`);
    expect(s?.metadata.labels?.[CREDENTIALS_MANAGED_LABEL]).toBe('true');
    expect(s?.metadata['ownerReferences']).toEqual([expect.objectContaining({ kind: 'HostedControlPlane', name: HCP_NAME, uid: 'hcp-uid-1', controller: true })]);
    expect(events.events.map((e) => e.reason)).toEqual(['CredentialsApplied']);
    management.clearWrites();
    await r.reconcile();
    expect(management.writes).toEqual([]);
  });

  it('a new role ARN rewrites the Secret', async () => {
    const { management, r } = setup(aHostedControlPlane());
    await r.reconcile();
    const other = 'arn:aws:iam::123456789012:role/other';
    management.seed(aHostedControlPlane({ spec: { autoNode: { provisionerConfig: { karpenter: { aws: { roleARN: other } } } } } }));
    await r.reconcile();
    expect(profileOf(await management.get(SECRET))).toContain(`role_arn = ${other}`);
  });

  it.each([
    { name: 'AutoNode off, teardown finished: our Secret is removed', finalizers: [], label: true, gone: true },
    { name: 'AutoNode off, teardown still running: kept', finalizers: [HCP_KARPENTER_FINALIZER], label: true, gone: false },
    { name: 'AutoNode off, only a foreign finalizer: removed', finalizers: [Names.karpenterFinalizer], label: true, gone: true },
    { name: 'AutoNode off, a Secret someone else wrote: kept', finalizers: [], label: false, gone: false },
  ])('$name', async ({ finalizers, label, gone }) => {
    const secret: KubeObject = { ...Types.Secret, metadata: { name: Names.credentialsSecret, namespace: HCP_NAMESPACE, ...(label ? { labels: { [CREDENTIALS_MANAGED_LABEL]: 'true' } } : {}) }, data: {} };
    const { management, r } = setup(aHostedControlPlane({ spec: { autoNode: null }, metadata: { finalizers } }), [secret]);
    await r.reconcile();
    expect((await management.get(SECRET)) === undefined).toBe(gone);
  });

  it('an invalid HCP or a deleting one is left alone', async () => {
    const bad = setup(aHostedControlPlane({ spec: { autoNode: { provisionerConfig: { karpenter: { aws: { roleARN: 'not-an-arn' } } } } } }));
    await bad.r.reconcile();
    expect(bad.management.writes).toEqual([]);
    const deleting = setup(aHostedControlPlane({ metadata: { deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['x'] } }));
    await deleting.r.reconcile();
    expect(deleting.management.writes).toEqual([]);
  });
});
