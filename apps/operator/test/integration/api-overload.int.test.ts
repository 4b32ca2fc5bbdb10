import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteObject, getObject, startApiFaultProxy, waitFor, type ApiFaultProxy } from '@karpenter-operator/testkit';
import { testCluster } from '@karpenter-operator/testkit/vitest';
import { installManifests, resetOperatorWorld, startOperator, type OperatorProcess } from '../support/operator-process.js';
import { applyKarpenterAndCredentials, isConverged } from '../support/scenario.js';

/**
 * An overloaded API server (API Priority and Fairness answering 429 with Retry-After) while the operator
 * starts, as after a restart of its Pod: a proxy in front of the kube-apiserver throttles every request of
 * the operator for 30 s. The operator stays up and not ready, comes back when Retry-After says, and
 * converges once the API answers again.
 */
const cluster = testCluster();
const kc = () => cluster.kubeConfig();
const OVERLOAD_MS = 30_000;
const RETRY_AFTER_S = 1;
const MCP = ['machineconfiguration.openshift.io/v1', 'MachineConfigPool', 'karpenter-default'] as const;

let proxy: ApiFaultProxy | undefined;
let op: OperatorProcess | undefined;

const probe = async (port: number, path: string) => (await fetch(`http://127.0.0.1:${port}${path}`).catch(() => undefined))?.status;

describe('API server overloaded (429 + Retry-After) at start-up', () => {
  beforeAll(async () => {
    await installManifests(cluster);
    await resetOperatorWorld(cluster);
    op = await startOperator(cluster, { name: 'api-overload-1' });
    await applyKarpenterAndCredentials(cluster, {});
    await waitFor('converged before the overload', () => isConverged(cluster), { timeoutMs: 120_000, intervalMs: 300 });
    await op.stop();
    proxy = await startApiFaultProxy(cluster.info.server, cluster.info.caFile);
  }, 240_000);

  afterAll(async () => {
    await op?.stop();
    await proxy?.close();
    await resetOperatorWorld(cluster);
  }, 120_000);

  it('30 s of 429: no exit, not ready, Retry-After honoured; converged within 10 s of recovery', async () => {
    proxy!.setFault({ kind: 'throttle', retryAfterSeconds: RETRY_AFTER_S });
    const overloadStart = Date.now();
    op = await startOperator(cluster, { name: 'api-overload-2', apiServer: proxy!.url, waitReady: false });
    await waitFor('the probe server to listen', async () => (await probe(op!.healthPort, '/healthz')) === 200, {
      timeoutMs: 20_000,
      intervalMs: 100,
      abort: () => (op!.exited() ? `operator exited:\n${op!.logs().slice(-4000)}` : undefined),
    });
    // Drift the operator must repair once it gets through.
    const uid = (await getObject(kc(), ...MCP))!.metadata.uid;
    await deleteObject(kc(), ...MCP);

    const readyz = new Set<number | undefined>();
    const healthz = new Set<number | undefined>();
    while (Date.now() - overloadStart < OVERLOAD_MS) {
      expect(op.exited(), `the operator exited during the overload:\n${op.logs().split('\n').slice(-10).join('\n')}`).toBe(false);
      readyz.add(await probe(op.healthPort, '/readyz'));
      healthz.add(await probe(op.healthPort, '/healthz'));
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(op.exited()).toBe(false);
    expect(
      [...readyz].filter((s) => s === 200),
      '/readyz answered 200 while every API request was refused',
    ).toEqual([]);
    expect([...healthz]).toEqual([200]);

    const throttled = proxy!.requests().filter((r) => r.status === 429);
    expect(throttled.length, `no request reached the proxy; operator log:\n${op.logs().split('\n').slice(-10).join('\n')}`).toBeGreaterThan(
      0,
    );
    // One start-up read at a time, each after the Retry-After of the previous answer (timer slack 50 ms).
    const gaps = throttled.slice(1).map((r, i) => r.receivedAt - throttled[i]!.receivedAt);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(RETRY_AFTER_S * 1_000 - 50);

    proxy!.setFault({ kind: 'none' });
    const recoveredAt = Date.now();
    await waitFor('ready after recovery', async () => (await probe(op!.healthPort, '/readyz')) === 200, {
      timeoutMs: 10_000,
      intervalMs: 100,
    });
    const readyMs = Date.now() - recoveredAt;
    await waitFor(
      'the deleted pool re-created',
      async () => {
        const p = await getObject(kc(), ...MCP);
        return p !== undefined && p.metadata.uid !== uid;
      },
      { timeoutMs: Math.max(1, 10_000 - (Date.now() - recoveredAt)), intervalMs: 100 },
    );
    await waitFor('converged', () => isConverged(cluster), {
      timeoutMs: Math.max(1, 10_000 - (Date.now() - recoveredAt)),
      intervalMs: 100,
    });
    const convergedMs = Date.now() - recoveredAt;
    expect(op.exited()).toBe(false);
    console.log(
      `api-overload: ${JSON.stringify({
        overloadMs: recoveredAt - overloadStart,
        throttledRequests: throttled.length,
        minGapMs: Math.min(...gaps),
        maxGapMs: Math.max(...gaps),
        readyAfterRecoveryMs: readyMs,
        convergedAfterRecoveryMs: convergedMs,
      })}`,
    );
  }, 120_000);
});
