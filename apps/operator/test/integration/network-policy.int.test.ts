import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { testCluster } from '@karpenter-operator/testkit/vitest';
import { adminRequest } from '../support/k8s.js';
import { REPO } from '../support/operator-process.js';

/**
 * The NetworkPolicies of install/ as the API server takes them: a server-side dry-run apply of each, and
 * the stored spec equal to the manifest. The local cluster has no CNI, so nothing enforces them here; what
 * they allow is checked against the pods they select in install.test.ts.
 */
const cluster = testCluster();
const file = join(REPO, 'install/0000_50_karpenter-operator_01_networkpolicy.yaml');

describe('install/ NetworkPolicies on the API server', () => {
  it('each passes a server-side dry-run apply, and the API server changes nothing in its spec', async () => {
    const policies = parseAllDocuments(readFileSync(file, 'utf8')).map(
      (d) => d.toJS() as { metadata: { name: string; namespace: string }; spec: unknown },
    );
    expect(policies.map((p) => p.metadata.name)).toEqual(['default-deny', 'karpenter-operator', 'karpenter']);
    const ns = await adminRequest(cluster, 'GET', '/api/v1/namespaces/openshift-karpenter');
    if (ns.status === 404)
      await adminRequest(cluster, 'POST', '/api/v1/namespaces', {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: 'openshift-karpenter' },
      });
    for (const p of policies) {
      const path = `/apis/networking.k8s.io/v1/namespaces/${p.metadata.namespace}/networkpolicies/${p.metadata.name}?dryRun=All&fieldManager=install-check&force=true`;
      const r = await adminRequest(cluster, 'PATCH', path, p, 'application/apply-patch+yaml');
      expect(r.status, `${p.metadata.name}: ${JSON.stringify(r.body).slice(0, 400)}`).toBeLessThan(300);
      expect((r.body as { spec: unknown }).spec, p.metadata.name).toEqual(p.spec);
    }
  });
});
