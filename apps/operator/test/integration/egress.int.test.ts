import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startForwardProxy, waitFor, type ForwardProxy } from '@karpenter-operator/testkit';
import { seededWorld, testCluster } from '@karpenter-operator/testkit/vitest';
import { clusterOperator, conditionOf } from '../support/k8s.js';
import {
  credentialsFileText,
  ensureBuilt,
  installManifests,
  REPO,
  resetOperatorWorld,
  startOperator,
  type OperatorProcess,
} from '../support/operator-process.js';
import {
  applyKarpenterAndCredentials,
  isConverged,
  launchKarpenterInstance,
  submitClientCsr,
  waitCsrApproved,
  type LaunchedNode,
} from '../support/scenario.js';

/**
 * The cluster-wide proxy and trusted CA. The EC2 emulator is reachable only as `https://ec2.emulator.invalid`
 * (a name that resolves nowhere) through a forward proxy on 127.0.0.1, over TLS with a CA of its own. The
 * operator and check-credentials get what they get on a cluster: HTTPS_PROXY (the CVO's injection),
 * NODE_OPTIONS=--use-system-ca and the CA bundle as the system store (SSL_CERT_FILE stands in for the
 * mounted /etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem). Bad input gets a message naming it.
 */
const cluster = testCluster();
const world = seededWorld();
const NODE = join(REPO, 'node_modules/.bin/node');

let proxy: ForwardProxy;
let dir: string;
let caFile: string;
let op: OperatorProcess | undefined;
const launched: LaunchedNode[] = [];

function checkCredentials(env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const creds = join(dir, 'credentials');
  writeFileSync(creds, credentialsFileText());
  const base = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    AWS_SHARED_CREDENTIALS_FILE: creds,
    REGION: 'us-east-1',
    AWS_EC2_METADATA_DISABLED: 'true',
  };
  return new Promise((resolve) => {
    const p = spawn(NODE, [join(REPO, 'apps/operator/dist/main.js'), 'check-credentials'], {
      env: { ...base, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    p.on('exit', (code) => resolve({ code, out }));
  });
}

describe('cluster-wide proxy and trusted CA', () => {
  beforeAll(async () => {
    ensureBuilt();
    proxy = await startForwardProxy(cluster.info.ec2Endpoint!);
    dir = mkdtempSync(join(tmpdir(), 'ko-egress-'));
    caFile = join(dir, 'tls-ca-bundle.pem');
    writeFileSync(caFile, proxy.caPem);
  }, 60_000);

  afterAll(async () => {
    for (const n of launched) await n.terminate().catch(() => undefined);
    await op?.stop();
    await proxy?.close();
    await resetOperatorWorld(cluster);
  }, 120_000);

  const egressEnv = () => ({
    AWS_ENDPOINT_URL_EC2: proxy.endpoint,
    HTTPS_PROXY: proxy.url,
    NODE_OPTIONS: '--use-system-ca',
    SSL_CERT_FILE: caFile,
  });

  it('check-credentials succeeds through the proxy trusting the bundle; without either it cannot reach EC2', async () => {
    const ok = await checkCredentials(egressEnv());
    expect(ok.out).toMatch(/check-credentials: AWS credentials work/);
    expect(ok.code).toBe(0);
    expect(proxy.connects()).toContain('ec2.emulator.invalid:443');

    const { HTTPS_PROXY: _p, ...noProxy } = egressEnv();
    const direct = await checkCredentials(noProxy);
    expect(direct.code).toBe(1);
    const { SSL_CERT_FILE: _c, ...noCa } = egressEnv();
    const untrusted = await checkCredentials(noCa);
    expect(untrusted.code).toBe(1);
    expect(untrusted.out).toMatch(/certificate|UNABLE_TO|self.signed/i);
  }, 120_000);

  it('a malformed proxy or an unparseable CA bundle: check-credentials says which, naming the Proxy field or the ConfigMap', async () => {
    const badProxy = await checkCredentials({ ...egressEnv(), HTTPS_PROXY: 'http://proxy host:3128' });
    expect(badProxy.code).toBe(1);
    expect(badProxy.out).toContain(
      `HTTPS_PROXY (the cluster Proxy's status.httpsProxy) must be an http:// or https:// URL with a host, got "http://proxy host:3128"`,
    );
    const bad = join(dir, 'bad-bundle.pem');
    writeFileSync(bad, '-----BEGIN CERTIFICATE-----\nMIIBroken\n-----END CERTIFICATE-----\n');
    const badCa = await checkCredentials({ ...egressEnv(), SSL_CERT_FILE: bad });
    expect(badCa.code).toBe(1);
    expect(badCa.out).toContain(
      `trusted CA bundle ${bad} (ConfigMap openshift-karpenter/karpenter-trusted-ca-bundle, key ca-bundle.crt): certificate 1 of 1 does not parse`,
    );
  }, 60_000);

  it('the operator verifies node identity through the proxy, and hands the proxy to the operand', async () => {
    await installManifests(cluster);
    await resetOperatorWorld(cluster);
    op = await startOperator(cluster, { name: 'egress', env: egressEnv() });
    await applyKarpenterAndCredentials(cluster);
    await waitFor('converged', () => isConverged(cluster), { timeoutMs: 120_000, intervalMs: 500 });
    const before = proxy.connects().length;
    const node = await launchKarpenterInstance(cluster, world, 'egress-node');
    launched.push(node);
    const csr = await submitClientCsr(cluster, node.dns);
    await waitCsrApproved(cluster, csr, 60_000);
    expect(proxy.connects().length, 'the DescribeInstances lookup went through the proxy').toBeGreaterThan(before);
    const dep = await cluster
      .kubeConfig()
      .makeApiClient((await import('@kubernetes/client-node')).AppsV1Api)
      .readNamespacedDeployment({ name: 'karpenter', namespace: 'openshift-karpenter' });
    const env = dep.spec!.template.spec!.containers[0]!.env ?? [];
    expect(env.find((e) => e.name === 'HTTPS_PROXY')?.value).toBe(proxy.url);
    await op.stop();
    op = undefined;
  }, 240_000);

  it('a malformed proxy: the operator keeps running and reports Degraded naming HTTPS_PROXY', async () => {
    op = await startOperator(cluster, { name: 'egress-bad', env: { ...egressEnv(), HTTPS_PROXY: 'http://proxy host:3128' } });
    await waitFor(
      'Degraded naming HTTPS_PROXY',
      async () =>
        /HTTPS_PROXY \(the cluster Proxy's status\.httpsProxy\)/.test(
          conditionOf(await clusterOperator(cluster), 'Degraded')?.message ?? '',
        ),
      { timeoutMs: 60_000, intervalMs: 500, abort: () => (op!.exited() ? op!.logs().slice(-3000) : undefined) },
    );
    const degraded = conditionOf(await clusterOperator(cluster), 'Degraded');
    expect(degraded?.status).toBe('True');
    expect(op.exited()).toBe(false);
  }, 120_000);

  it('an unparseable CA bundle: the operator keeps running and reports Degraded naming the file and the ConfigMap', async () => {
    await op?.stop();
    op = undefined;
    await installManifests(cluster);
    const bad = join(dir, 'unparseable-bundle.pem');
    writeFileSync(bad, '-----BEGIN CERTIFICATE-----\nMIIBroken\n-----END CERTIFICATE-----\n');
    op = await startOperator(cluster, { name: 'egress-bad-ca', env: { ...egressEnv(), SSL_CERT_FILE: bad } });
    await applyKarpenterAndCredentials(cluster);
    const want = `trusted CA bundle ${bad} (ConfigMap openshift-karpenter/karpenter-trusted-ca-bundle, key ca-bundle.crt): certificate 1 of 1 does not parse`;
    let seen: unknown;
    await waitFor(
      'Degraded naming the CA bundle',
      async () => {
        seen = (await clusterOperator(cluster))?.status;
        return (conditionOf(await clusterOperator(cluster), 'Degraded')?.message ?? '').includes(want);
      },
      {
        timeoutMs: 90_000,
        intervalMs: 500,
        abort: () => (op!.exited() ? op!.logs().slice(-3000) : undefined),
      },
    ).catch((e: Error) => {
      throw new Error(`${e.message}; ClusterOperator status: ${JSON.stringify(seen)}; operator log: ${op!.logs().slice(-2000)}`);
    });
    const degraded = conditionOf(await clusterOperator(cluster), 'Degraded');
    expect([degraded?.status, degraded?.reason]).toEqual(['True', expect.stringMatching(/\S/)]);
    expect(degraded?.message).not.toMatch(/HTTPS_PROXY/);
    // Still running a while later: no crash loop.
    await new Promise((r) => setTimeout(r, 5_000));
    expect(op.exited()).toBe(false);
  }, 180_000);
});
