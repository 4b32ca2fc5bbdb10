import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EC2Client, TerminateInstancesCommand } from '@aws-sdk/client-ec2';
import { CertificatesV1Api } from '@kubernetes/client-node';
import { createKubeletClientCsr, getObject, waitFor } from '@karpenter-operator/testkit';
import { seededWorld, testCluster } from '@karpenter-operator/testkit/vitest';
import { adminRequest, clusterOperator, conditionOf } from '../support/k8s.js';
import { installManifests, resetOperatorWorld, startOperator, type OperatorProcess } from '../support/operator-process.js';
import {
  applyKarpenterAndCredentials,
  applyKarpenterNodeClaim,
  csrApproved,
  isConverged,
  KARPENTER,
  runKarpenterInstance,
  waitCsrApproved,
} from '../support/scenario.js';

// Node identity against forged and edge-case client CSRs, as an attacker holding the (effectively public)
// node-bootstrapper token would send them: each stays pending while the real kubelet's CSR is approved.

const cluster = testCluster();
const kc = () => cluster.kubeConfig();
const CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client-kubelet';
const CLIENT_USAGES = ['digital signature', 'client auth'];
let op: OperatorProcess;
let seq = 0;
const created: string[] = [];
const instances: string[] = [];

const ec2 = () => new EC2Client(cluster.ec2Config());
const certificates = () => kc().makeApiClient(CertificatesV1Api);

/** An instance in the emulator as Karpenter launches it (the cluster tag's value is `tagValue`). */
async function runInstance(tagValue = 'owned'): Promise<{ instanceId: string; dns: string; providerID: string }> {
  const inst = await runKarpenterInstance(cluster, seededWorld(), { tagValue });
  instances.push(inst.instanceId);
  return inst;
}

/** A NodeClaim (optionally with its providerID, as Karpenter sets it once the instance is launched). */
const nodeClaim = (name: string, providerID?: string) => applyKarpenterNodeClaim(cluster, name, providerID);

let bootstrapper: CertificatesV1Api | undefined;

/** A client CSR as the node bootstrapper sends it, with `commonName` as the subject CN. */
async function submit(commonName: string): Promise<string> {
  bootstrapper ??= (await cluster.kubeConfigFor('openshift-machine-config-operator', 'node-bootstrapper')).makeApiClient(CertificatesV1Api);
  const api = bootstrapper;
  const csr = await createKubeletClientCsr('unused', { commonName });
  const name = `ni-${Date.now().toString(36)}-${seq++}`;
  await api.createCertificateSigningRequest({
    body: {
      metadata: { name },
      spec: { request: Buffer.from(csr.csrPem).toString('base64'), signerName: CLIENT_SIGNER, usages: CLIENT_USAGES },
    },
  });
  created.push(name);
  return name;
}

/** The reasons of the operator's events about CSR `name`. */
async function eventReasons(name: string): Promise<string[]> {
  const r = await adminRequest(
    cluster,
    'GET',
    `/apis/events.k8s.io/v1/events?fieldSelector=${encodeURIComponent(`regarding.name=${name}`)}`,
  );
  return ((r.body as { items?: Array<{ reason?: string }> }).items ?? []).map((e) => e.reason ?? '');
}

const waitForEvent = (name: string, reason: string, timeoutMs = 30_000) =>
  waitFor(`event ${reason} on CSR ${name}`, async () => (await eventReasons(name)).includes(reason), { timeoutMs, intervalMs: 250 });

async function karpenterCondition(type: string): Promise<{ status?: string; reason?: string; message?: string } | undefined> {
  const cr = await getObject(kc(), KARPENTER.apiVersion, KARPENTER.kind, 'default');
  return conditionOf(cr, type);
}

describe('node identity: forged client CSRs stay pending, real ones are approved', () => {
  beforeAll(async () => {
    await installManifests(cluster);
    await resetOperatorWorld(cluster);
    op = await startOperator(cluster, { name: 'karpenter-operator-ni' });
    await applyKarpenterAndCredentials(cluster);
    await waitFor('operator converged', () => isConverged(cluster), { timeoutMs: 120_000, intervalMs: 500 });
  }, 240_000);

  afterAll(async () => {
    // CSRs are cluster-wide and would count for other files' approvers: remove every one this file made.
    const api = certificates();
    for (let i = 0; i < created.length; i += 32) {
      await Promise.all(created.slice(i, i + 32).map((name) => api.deleteCertificateSigningRequest({ name }).catch(() => undefined)));
    }
    if (instances.length)
      await ec2()
        .send(new TerminateInstancesCommand({ InstanceIds: instances }))
        .catch(() => undefined);
    for (const n of ['ni-spelling', 'ni-shared', 'ni-terminated', 'ni-early', 'ni-elsewhere', 'ni-flood', 'ni-flood-launching']) {
      await adminRequest(cluster, 'DELETE', `/apis/karpenter.sh/v1/nodeclaims/${n}`).catch(() => undefined);
    }
    await op?.stop();
  }, 120_000);

  it('a trailing dot or upper case in the CN is left pending, and the real kubelet still gets its certificate', async () => {
    const inst = await runInstance();
    await nodeClaim('ni-spelling', inst.providerID);
    const dot = await submit(`system:node:${inst.dns}.`);
    const upper = await submit(`system:node:${inst.dns.toUpperCase()}`);
    await waitForEvent(dot, 'NonCanonicalNodeName');
    await waitForEvent(upper, 'NonCanonicalNodeName');
    const real = await submit(`system:node:${inst.dns}`);
    await waitCsrApproved(cluster, real, 30_000);
    expect(await csrApproved(cluster, dot)).toBe(false);
    expect(await csrApproved(cluster, upper)).toBe(false);
  });

  it('an instance tagged kubernetes.io/cluster/<infraID>=shared is not a node of this cluster', async () => {
    const inst = await runInstance('shared');
    await nodeClaim('ni-shared', inst.providerID);
    const csr = await submit(`system:node:${inst.dns}`);
    await waitForEvent(csr, 'InstanceNotOwned');
    expect(await csrApproved(cluster, csr)).toBe(false);
  });

  it('an instance terminated one second before its CSR: never approved from the cached running answer', async () => {
    const inst = await runInstance();
    await nodeClaim('ni-terminated', inst.providerID);
    // The operator looks the instance up as soon as the NodeClaim has its providerID (1 s prefetch window):
    // let it cache "running", then terminate the instance.
    await new Promise((r) => setTimeout(r, 4_000));
    await ec2().send(new TerminateInstancesCommand({ InstanceIds: [inst.instanceId] }));
    await new Promise((r) => setTimeout(r, 1_000));
    const csr = await submit(`system:node:${inst.dns}`);
    // Decided on a read made after the CSR: the instance is gone, so it waits (pending), never approved.
    await waitForEvent(csr, 'InstanceNotVisible');
    await new Promise((r) => setTimeout(r, 3_000));
    expect(await csrApproved(cluster, csr)).toBe(false);
  });

  it('a CSR seen before its NodeClaim shows its instance is approved within seconds of it appearing', async () => {
    // Karpenter created the NodeClaim; the kubelet's CSR arrives before the NodeClaim's providerID is visible
    // (the CSR is never older than its NodeClaim: that is a rule of its own).
    const inst = await runInstance();
    await nodeClaim('ni-early');
    const csr = await submit(`system:node:${inst.dns}`);
    await waitFor(`CSR ${csr} decided`, async () => (await eventReasons(csr)).length > 0, { timeoutMs: 30_000, intervalMs: 250 });
    expect(await csrApproved(cluster, csr)).toBe(false);
    const appeared = Date.now();
    await nodeClaim('ni-early', inst.providerID);
    await waitCsrApproved(cluster, csr, 60_000);
    const ms = Date.now() - appeared;
    console.log(`node-identity: CSR seen before its NodeClaim's instance approved ${ms} ms after the providerID appeared`);
    // Well under a second on a quiet machine; the bound only tells "woken by the NodeClaim" from "found by
    // the periodic resync", with room for a loaded two-core machine.
    expect(ms).toBeLessThan(30_000);
  });

  it('a CSR another approver approved while the operator waited is done: one Approved condition, no approval event, no error', async () => {
    // cluster-machine-approver approves what it can match to a Machine, Karpenter nodes' serving renewals
    // among them; here an approver acts while the operator still waits for the NodeClaim's providerID.
    const inst = await runInstance();
    await nodeClaim('ni-elsewhere');
    const csr = await submit(`system:node:${inst.dns}`);
    await waitFor(`CSR ${csr} decided`, async () => (await eventReasons(csr)).length > 0, { timeoutMs: 30_000, intervalMs: 250 });
    const live = await certificates().readCertificateSigningRequest({ name: csr });
    const now = new Date();
    await certificates().replaceCertificateSigningRequestApproval({
      name: csr,
      body: {
        ...live,
        status: {
          conditions: [
            {
              type: 'Approved',
              status: 'True',
              reason: 'NodeCSRApprove',
              message: 'approved by another approver',
              lastUpdateTime: now,
              lastTransitionTime: now,
            },
          ],
        },
      },
    });
    const before = await eventReasons(csr);
    const logFrom = op.logs().length;
    await nodeClaim('ni-elsewhere', inst.providerID);
    // A NodeClaim event maps to its CSRs within a second (the case above); give it several, then look.
    await new Promise((r) => setTimeout(r, 5_000));
    const after = await certificates().readCertificateSigningRequest({ name: csr });
    expect((after.status?.conditions ?? []).filter((c) => c.type === 'Approved').map((c) => c.reason)).toEqual(['NodeCSRApprove']);
    expect(await eventReasons(csr), `the operator's events on CSR ${csr}`).toEqual(before);
    const logs = op.logs().slice(logFrom);
    expect(logs, 'operator log after the NodeClaim got its providerID').not.toMatch(/reconcile failed/);
    expect(logs).not.toContain(`"csr":"${csr}"`);
  });

  it('a flood of 500 unmatchable CSRs does not delay a legitimate approval, and shows without Degraded', async () => {
    // One NodeClaim still launching (no providerID): the flood's CSRs could be its kubelet's, so they wait.
    await nodeClaim('ni-flood-launching');
    const names = Array.from({ length: 500 }, (_, i) => `system:node:ip-10-0-${200 + Math.floor(i / 250)}-${(i % 250) + 1}.ec2.internal`);
    const t0 = Date.now();
    for (let i = 0; i < names.length; i += 25) await Promise.all(names.slice(i, i + 25).map((n) => submit(n)));
    console.log(`node-identity: 500 flood CSRs submitted in ${Date.now() - t0} ms`);

    const inst = await runInstance();
    await nodeClaim('ni-flood', inst.providerID);
    const submitted = Date.now();
    const real = await submit(`system:node:${inst.dns}`);
    await waitCsrApproved(cluster, real, 90_000);
    const ms = Date.now() - submitted;
    console.log(`node-identity: legitimate CSR approved ${ms} ms after submission, behind 500 flood CSRs`);
    // ~0.3 s on a quiet machine, 10–16 s at load average 18; paused approvals would never approve it.
    expect(ms).toBeLessThan(60_000);

    const healthy = await waitFor(
      'NodeIdentityHealthy on the Karpenter CR reports the flood',
      async () => {
        const c = await karpenterCondition('NodeIdentityHealthy');
        return c?.reason === 'UnmatchedCSRsPending' ? c : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    expect(healthy.status).toBe('True');
    expect(healthy.message).toMatch(/at least 100 pending kubelet CSR\(s\) match no Karpenter instance/);
    const co = await clusterOperator(cluster);
    expect(conditionOf(co, 'Degraded')?.status).toBe('False');
    const metrics = await (await fetch(`http://127.0.0.1:${op.metricsPort}/metrics`)).text();
    expect(metrics).toMatch(/karpenter_operator_csr_unmatched_pending \d{3}/);
  });
});
