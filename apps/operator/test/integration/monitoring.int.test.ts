import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyObject, createCertificateAuthority, deleteObject, waitFor, type CertificateAuthority } from '@karpenter-operator/testkit';
import { testCluster } from '@karpenter-operator/testkit/vitest';
import { scrapeMetrics } from '../support/metrics-scrape.js';
import {
  installManifests,
  OPERATOR_NS,
  OPERATOR_USER,
  resetOperatorWorld,
  startOperator,
  type OperatorProcess,
} from '../support/operator-process.js';

/**
 * The operator's metrics endpoint as the platform Prometheus scrapes it: HTTPS with a certificate from a
 * stand-in for service-ca (a CA of the test, the Secret's files in the cert directory), each scrape checked
 * by the operator with a TokenReview and a SubjectAccessReview against the real API server. The stand-in
 * for Prometheus is a `prometheus-k8s` ServiceAccount in `openshift-monitoring` bound, as cluster monitoring
 * binds its own, to a ClusterRole with `get` on the non-resource URL `/metrics`.
 */
const cluster = testCluster();
const kc = () => cluster.kubeConfig();
const SERVER_NAME = `karpenter-operator-metrics.${OPERATOR_NS}.svc`;
const scrape = (port: number, opts: { token?: string; ca?: string }) => scrapeMetrics(port, { ...opts, serverName: SERVER_NAME });
const MONITORING = 'openshift-monitoring';
const SCRAPER_ROLE = 'test-prometheus-k8s-metrics';

describe('monitoring: the operator metrics endpoint', () => {
  let ca: CertificateAuthority;
  let op: OperatorProcess;
  let standby: OperatorProcess | undefined;
  const tokens: Record<'prometheus' | 'norbac', string> = { prometheus: '', norbac: '' };

  beforeAll(async () => {
    await installManifests(cluster);
    await resetOperatorWorld(cluster);
    ca = await createCertificateAuthority('test-service-ca');
    const leaf = await ca.issue({ commonName: SERVER_NAME, dnsNames: [SERVER_NAME, `${SERVER_NAME}.cluster.local`], usage: 'server' });
    const certDir = mkdtempSync(join(tmpdir(), 'metrics-tls-'));
    writeFileSync(join(certDir, 'tls.crt'), leaf.certPem);
    writeFileSync(join(certDir, 'tls.key'), leaf.privateKeyPem);

    await cluster.ensureServiceAccount(MONITORING, 'prometheus-k8s');
    await cluster.ensureServiceAccount('default', 'metrics-no-rbac');
    await applyObject(kc(), {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: SCRAPER_ROLE },
      rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }],
    });
    await applyObject(kc(), {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: SCRAPER_ROLE },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: SCRAPER_ROLE },
      subjects: [{ kind: 'ServiceAccount', name: 'prometheus-k8s', namespace: MONITORING }],
    });
    tokens.prometheus = await cluster.tokenFor(MONITORING, 'prometheus-k8s');
    tokens.norbac = await cluster.tokenFor('default', 'metrics-no-rbac');
    op = await startOperator(cluster, { name: 'karpenter-operator-metrics', args: ['--metrics-secure', `--metrics-cert-dir=${certDir}`] });
  }, 180_000);

  afterAll(async () => {
    await standby?.stop();
    await op?.stop();
    await deleteObject(kc(), 'rbac.authorization.k8s.io/v1', 'ClusterRoleBinding', SCRAPER_ROLE).catch(() => false);
    await deleteObject(kc(), 'rbac.authorization.k8s.io/v1', 'ClusterRole', SCRAPER_ROLE).catch(() => false);
    await resetOperatorWorld(cluster);
  }, 120_000);

  it('serves the certificate from the cert directory, valid for the Service name under the CA', async () => {
    const r = await scrape(op.metricsPort, { ca: ca.certPem });
    expect(r.cert.subjectaltname).toContain(`DNS:${SERVER_NAME}`);
    expect(r.cert.issuer.CN).toBe('test-service-ca');
  });

  it.each([
    { name: 'no token', token: () => undefined, status: 401 },
    { name: 'a token the API server did not issue', token: () => 'not-a-real-token', status: 401 },
    { name: 'a ServiceAccount token without RBAC for /metrics', token: () => tokens.norbac, status: 403 },
    { name: 'the token of prometheus-k8s, bound to get /metrics', token: () => tokens.prometheus, status: 200 },
  ])('$name → $status', async ({ token, status }) => {
    const r = await scrape(op.metricsPort, { token: token(), ca: ca.certPem });
    expect(r.status, r.body).toBe(status);
    if (status === 200) expect(r.body).toContain('karpenter_operator_');
    if (status === 403) expect(r.body).toContain('system:serviceaccount:default:metrics-no-rbac');
  });

  it('asks the API server as the operator, with a TokenReview and a SubjectAccessReview', async () => {
    const seen = () =>
      [
        ...new Set(
          cluster
            .auditEvents({ user: OPERATOR_USER })
            .filter((e) => /^(tokenreviews|subjectaccessreviews)$/.test(e.objectRef?.resource ?? ''))
            .map((e) => `${e.verb} ${e.objectRef?.resource} ${e.responseStatus?.code}`),
        ),
      ].sort();
    await waitFor('the reviews in the audit log', () => seen().length === 2, { timeoutMs: 30_000 });
    expect(seen()).toEqual(['create subjectaccessreviews 201', 'create tokenreviews 201']);
  });

  it('keeps the probes on plain HTTP', async () => {
    expect((await fetch(`http://127.0.0.1:${op.healthPort}/healthz`)).status).toBe(200);
  });

  it('without a serving certificate serves a self-signed one and says so, without exiting', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'metrics-tls-missing-'));
    // A second replica: it stands by for the Lease, and serves metrics all the same.
    standby = await startOperator(cluster, {
      name: 'karpenter-operator-metrics-2',
      args: ['--metrics-secure', `--metrics-cert-dir=${empty}`],
    });
    const r = await scrape(standby.metricsPort, { token: tokens.prometheus });
    expect(r.status, r.body).toBe(200);
    expect(r.cert.issuer.CN).toBe(SERVER_NAME);
    expect(r.cert.subject.CN).toBe(SERVER_NAME);
    expect(r.body).toMatch(/^karpenter_operator_metrics_self_signed_certificate 1$/m);
    expect(standby.logs()).toContain(`${join(empty, 'tls.crt')} does not exist`);
    expect(standby.exited()).toBe(false);
  });
});
