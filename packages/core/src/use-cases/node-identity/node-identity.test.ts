import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import { Pkcs10CertificateRequestGenerator, SubjectAlternativeNameExtension, type JsonGeneralName } from '@peculiar/x509';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { parseCertificateRequestPem } from '../../policy/csr-parse.js';
import { ConflictError, ForbiddenError, InvalidInputError, TransientError } from '../../errors.js';
import type { ClusterFacts } from '../../model/cluster.js';
import type { KubeObject } from '../../model/kube.js';
import { Types } from '../../model/kube.js';
import { Names } from '../../model/names.js';
import { KubeletClientSigner, KubeletServingSigner, NodeBootstrapperGroups } from '../../policy/csr.js';
import { isoNow } from '../../ports/clock.js';
import type { InstanceInfo } from '../../ports/cloud-provider.js';
import { silentLogger } from '../../ports/logger.js';
import { FakeClock } from '../../testing/fake-clock.js';
import { FakeCloudProvider } from '../../testing/fake-cloud-provider.js';
import { MemoryClusterStore } from '../../testing/memory-cluster-store.js';
import { RecordingEvents, RecordingMetrics } from '../../testing/recording.js';
import { StandaloneTopology } from '../../topology/standalone.js';
import { whileKarpenterRuns } from '../gate.js';
import { NodeIdentityReconciler, type NodeIdentityLimits } from './node-identity.js';
import { CsrDecisionsMetric } from './reporting.js';

// The real parser, observed: which requests the reconciler parses (to prove it skips what cannot count).
vi.mock('../../policy/csr-parse.js', async (original) => {
  const real = await original<typeof import('../../policy/csr-parse.js')>();
  return { ...real, parseCertificateRequestPem: vi.fn(real.parseCertificateRequestPem) };
});

const facts: ClusterFacts = {
  platform: 'AWS',
  region: 'us-east-1',
  infrastructureName: 'test-x7k2p',
  apiServerInternalURL: 'https://api-int.test.example.com:6443',
  resourceTags: [],
};

let key: webcrypto.CryptoKeyPair;
beforeAll(async () => {
  key = (await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
});

async function requestFor(subject: string, sans: JsonGeneralName[] = []): Promise<string> {
  const csr = await Pkcs10CertificateRequestGenerator.create({
    name: subject,
    keys: key,
    signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' } as webcrypto.EcdsaParams,
    extensions: sans.length ? [new SubjectAlternativeNameExtension(sans)] : [],
  });
  return Buffer.from(csr.toString('pem')).toString('base64');
}

const dnsOf = (i: number) => `ip-10-0-${Math.floor(i / 250)}-${(i % 250) + 1}.ec2.internal`;
const ipOf = (i: number) => `10.0.${Math.floor(i / 250)}.${(i % 250) + 1}`;
const idOf = (i: number) => `i-${(0x1000 + i).toString(16).padStart(8, '0')}`;

function anInstance(i: number, o: Partial<InstanceInfo> = {}): InstanceInfo {
  return {
    instanceId: idOf(i),
    live: true,
    privateDnsName: dnsOf(i),
    privateIpAddresses: [ipOf(i)],
    publicIpAddresses: [],
    ownedByCluster: true,
    ...o,
  };
}

function aNodeClaim(i: number, o: { providerID?: string | null; nodeName?: string; created?: string } = {}): KubeObject {
  const status: Record<string, unknown> = {};
  if (o.providerID !== null) status.providerID = o.providerID ?? FakeCloudProvider.providerIdFor(idOf(i));
  if (o.nodeName) status.nodeName = o.nodeName;
  return {
    ...Types.NodeClaim,
    metadata: { name: `default-${i}`, ...(o.created ? { creationTimestamp: o.created } : {}) },
    spec: {},
    status,
  };
}

async function aClientCsr(name: string, nodeName: string, o: { subject?: string; username?: string } = {}): Promise<KubeObject> {
  return {
    ...Types.CertificateSigningRequest,
    metadata: { name },
    spec: {
      request: await requestFor(o.subject ?? `CN=system:node:${nodeName}, O=system:nodes`),
      signerName: KubeletClientSigner,
      username: o.username ?? Names.nodeBootstrapperUser,
      groups: [...NodeBootstrapperGroups],
      usages: ['digital signature', 'client auth'],
    },
  };
}

async function aServingCsr(name: string, nodeName: string, sans: JsonGeneralName[]): Promise<KubeObject> {
  return {
    ...Types.CertificateSigningRequest,
    metadata: { name },
    spec: {
      request: await requestFor(`CN=system:node:${nodeName}, O=system:nodes`, sans),
      signerName: KubeletServingSigner,
      username: `system:node:${nodeName}`,
      groups: ['system:nodes', 'system:authenticated'],
      usages: ['digital signature', 'server auth'],
    },
  };
}

function world(limits: NodeIdentityLimits = {}) {
  const clock = new FakeClock(Date.UTC(2026, 2, 1, 12, 0, 0));
  const store = new MemoryClusterStore([], () => isoNow(clock));
  const cloud = new FakeCloudProvider({ latencyMs: 5 });
  const events = new RecordingEvents();
  const metrics = new RecordingMetrics();
  const reconciler = new NodeIdentityReconciler({
    store,
    cloud,
    facts: async () => facts,
    clock,
    events,
    metrics,
    logger: silentLogger,
    // The fresh-read window is real time (setTimeout): short here, so the cases run fast.
    limits: { freshLookupBatchWindowMs: 20, ...limits },
  });
  const approvals = () => store.writes.filter((w) => w.verb === 'approve').map((w) => w.ref.name);
  const describeCalls = () => cloud.callsOf('describeInstances').length;
  return { clock, store, cloud, events, metrics, reconciler, approvals, describeCalls };
}

describe('certificatesigningrequest.node-identity', () => {
  it('approves a Karpenter node client CSR, then writes nothing on the second reconcile', async () => {
    const w = world();
    w.store.seed(aNodeClaim(1));
    w.cloud.putInstance(anInstance(1));
    w.clock.advance(120_000);
    w.store.seed(await aClientCsr('csr-a', dnsOf(1)));

    expect(w.reconciler.keysFor((await w.store.get({ ...Types.CertificateSigningRequest, name: 'csr-a' }))!)).toEqual(['csr-a']);
    expect(await w.reconciler.reconcile('csr-a')).toEqual({});
    expect(w.approvals()).toEqual(['csr-a']);
    const approved = await w.store.get({ ...Types.CertificateSigningRequest, name: 'csr-a' });
    expect((approved!.status as { conditions: Array<{ type: string; reason: string }> }).conditions).toEqual([
      expect.objectContaining({ type: 'Approved', status: 'True', reason: 'ClientCsrVerified' }),
    ]);
    expect(w.events.events).toEqual([
      expect.objectContaining({ type: 'Normal', reason: 'ClientCsrVerified', regarding: expect.objectContaining({ name: 'csr-a' }) }),
    ]);
    expect(w.metrics.counters.get(`${CsrDecisionsMetric}{outcome=approve,reason=ClientCsrVerified}`)).toBe(1);

    w.store.clearWrites();
    expect(await w.reconciler.reconcile('csr-a')).toEqual({});
    expect(w.store.writes).toEqual([]);
    expect(w.events.events).toHaveLength(1);
  });

  it('approves the serving CSR of a registered Karpenter node, and only that', async () => {
    const w = world();
    w.store.seed(aNodeClaim(2, { nodeName: dnsOf(2) }));
    w.store.seed({ ...Types.Node, metadata: { name: dnsOf(2) }, spec: { providerID: FakeCloudProvider.providerIdFor(idOf(2)) } });
    w.store.seed({ ...Types.Node, metadata: { name: dnsOf(7) }, spec: { providerID: FakeCloudProvider.providerIdFor(idOf(7)) } });
    w.cloud.setInstances([anInstance(2), anInstance(7)]);
    w.store.seed(
      await aServingCsr('serving-2', dnsOf(2), [
        { type: 'dns', value: dnsOf(2) },
        { type: 'ip', value: ipOf(2) },
      ]),
    );
    // A MachineSet node's serving CSR: cluster-machine-approver's, not ours.
    w.store.seed(await aServingCsr('serving-7', dnsOf(7), [{ type: 'dns', value: dnsOf(7) }]));
    // Karpenter node asking for another node's IP.
    w.store.seed(
      await aServingCsr('serving-2-evil', dnsOf(2), [
        { type: 'dns', value: dnsOf(2) },
        { type: 'ip', value: ipOf(7) },
      ]),
    );

    for (const n of ['serving-2', 'serving-7', 'serving-2-evil']) await w.reconciler.reconcile(n);
    expect(w.approvals()).toEqual(['serving-2']);
    expect(w.events.events.map((e) => [e.regarding.name, e.type, e.reason])).toEqual([
      ['serving-2', 'Normal', 'ServingCsrVerified'],
      ['serving-7', 'Normal', 'NodeNotManagedByKarpenter'],
      ['serving-2-evil', 'Warning', 'SanNotInstanceAddress'],
    ]);

    w.store.clearWrites();
    for (const n of ['serving-2', 'serving-7', 'serving-2-evil']) await w.reconciler.reconcile(n);
    expect(w.store.writes).toEqual([]);
    expect(w.events.events).toHaveLength(3);
  });

  describe("beside cluster-machine-approver, which may approve a Karpenter node's serving CSR first", () => {
    async function servingWorld() {
      const w = world();
      w.store.seed(aNodeClaim(3, { nodeName: dnsOf(3) }));
      w.store.seed({ ...Types.Node, metadata: { name: dnsOf(3) }, spec: { providerID: FakeCloudProvider.providerIdFor(idOf(3)) } });
      w.cloud.putInstance(anInstance(3));
      w.store.seed(await aServingCsr('serving-3', dnsOf(3), [{ type: 'dns', value: dnsOf(3) }]));
      return w;
    }
    /** What cluster-machine-approver writes when it approves (its reason, its condition). */
    async function approveElsewhere(w: Awaited<ReturnType<typeof servingWorld>>) {
      const csr = (await w.store.get({ ...Types.CertificateSigningRequest, name: 'serving-3' }))!;
      w.store.seed({
        ...csr,
        status: { conditions: [{ type: 'Approved', status: 'True', reason: 'NodeCSRApprove', message: 'approved by machine-approver' }] },
      });
    }
    const approvedConditions = async (w: Awaited<ReturnType<typeof servingWorld>>) =>
      (
        (await w.store.get({ ...Types.CertificateSigningRequest, name: 'serving-3' }))!.status as {
          conditions?: Array<{ type: string; reason: string }>;
        }
      )
        .conditions!.filter((c) => c.type === 'Approved')
        .map((c) => c.reason);

    it('approved before the reconcile read it: done, no write, no event', async () => {
      const w = await servingWorld();
      await approveElsewhere(w);
      expect(await w.reconciler.reconcile('serving-3')).toEqual({});
      expect(w.approvals()).toEqual([]);
      expect(w.events.events).toEqual([]);
      expect(await approvedConditions(w)).toEqual(['NodeCSRApprove']);
    });

    it('approved between the decision and the approval: done, no Approved event of ours, no second condition', async () => {
      const w = await servingWorld();
      const approve = w.store.approveCertificateSigningRequest.bind(w.store);
      vi.spyOn(w.store, 'approveCertificateSigningRequest').mockImplementationOnce(async (...args) => {
        await approveElsewhere(w);
        return approve(...args);
      });
      expect(await w.reconciler.reconcile('serving-3')).toEqual({});
      expect(w.approvals()).toEqual([]);
      expect(w.events.events).toEqual([]);
      expect(w.metrics.counters.get(`${CsrDecisionsMetric}{outcome=approve,reason=ServingCsrVerified}`)).toBeUndefined();
      expect(await approvedConditions(w)).toEqual(['NodeCSRApprove']);
      w.store.clearWrites();
      expect(await w.reconciler.reconcile('serving-3')).toEqual({});
      expect(w.store.writes).toEqual([]);
    });

    it('a 409 on the approval (approved meanwhile) is no error: requeued, then done without a second approval', async () => {
      const w = await servingWorld();
      w.store.failNext(new ConflictError('the object has been modified'), 'approve');
      const first = await w.reconciler.reconcile('serving-3');
      expect(first.requeueAfterMs).toBeGreaterThan(0);
      await approveElsewhere(w);
      expect(await w.reconciler.reconcile('serving-3')).toEqual({});
      expect(w.approvals()).toEqual([]);
      expect(w.events.events).toEqual([]);
      expect(await approvedConditions(w)).toEqual(['NodeCSRApprove']);
    });
  });

  it('leaves forged CSRs pending, with no cloud call for a malformed request', async () => {
    const w = world();
    w.store.seed(aNodeClaim(1));
    w.cloud.putInstance(anInstance(1));
    w.clock.advance(60_000);
    w.store.seed(await aClientCsr('extra-o', dnsOf(1), { subject: `CN=system:node:${dnsOf(1)}, O=system:nodes, O=system:masters` }));
    w.store.seed(await aClientCsr('wrong-user', dnsOf(1), { username: 'system:serviceaccount:default:default' }));
    w.store.seed(await aClientCsr('other-name', dnsOf(99)));

    expect(await w.reconciler.reconcile('extra-o')).toEqual({});
    expect(await w.reconciler.reconcile('wrong-user')).toEqual({});
    expect(w.describeCalls()).toBe(0);
    expect(await w.reconciler.reconcile('other-name')).toEqual({});
    expect(w.approvals()).toEqual([]);
    expect(w.store.writes).toEqual([]);
    expect(w.events.events.map((e) => [e.regarding.name, e.reason])).toEqual([
      ['extra-o', 'InvalidOrganization'],
      ['wrong-user', 'UnexpectedRequester'],
      ['other-name', 'NoMatchingNodeClaim'],
    ]);
    expect(w.metrics.counters.get(`${CsrDecisionsMetric}{outcome=ignore,reason=InvalidOrganization}`)).toBe(1);
  });

  it('waits while the NodeClaim has no providerID, and approves once it does (NodeClaim event maps to the CSR)', async () => {
    const w = world({ waitRequeueMs: 3000 });
    w.store.seed(aNodeClaim(3, { providerID: null }));
    w.cloud.putInstance(anInstance(3));
    w.clock.advance(90_000);
    const csr = w.store.seed(await aClientCsr('csr-3', dnsOf(3)));
    w.reconciler.keysFor(csr);

    expect(await w.reconciler.reconcile('csr-3')).toEqual({ requeueAfterMs: 3000 });
    expect(w.approvals()).toEqual([]);
    expect(w.events.events.map((e) => e.reason)).toEqual(['NodeClaimNotVisible']);

    const launched = w.store.seed(aNodeClaim(3));
    expect(w.reconciler.keysFor(launched)).toEqual(['csr-3']);
    expect(await w.reconciler.reconcile('csr-3')).toEqual({});
    expect(w.approvals()).toEqual(['csr-3']);
  });

  it('waits while the instance is not visible, bounded by the launch deadline', async () => {
    const w = world();
    w.store.seed(aNodeClaim(4));
    w.clock.advance(60_000);
    w.store.seed(await aClientCsr('csr-4', dnsOf(4)));
    expect(await w.reconciler.reconcile('csr-4')).toEqual({ requeueAfterMs: 5000 });
    w.clock.advance(16 * 60_000);
    expect(await w.reconciler.reconcile('csr-4')).toEqual({});
    expect(w.approvals()).toEqual([]);
    expect(w.events.events.map((e) => e.reason)).toEqual(['InstanceNotVisible', 'NoMatchingNodeClaim']);
  });

  it('approves nothing when the instance lookup fails, and throws the typed error for backoff', async () => {
    const w = world();
    w.store.seed(aNodeClaim(5));
    w.cloud.putInstance(anInstance(5));
    w.clock.advance(60_000);
    w.store.seed(await aClientCsr('csr-5', dnsOf(5)));
    w.cloud.failNext('describeInstances', new TransientError('describing instances: throttled'));

    await expect(w.reconciler.reconcile('csr-5')).rejects.toBeInstanceOf(TransientError);
    expect(w.approvals()).toEqual([]);
    expect(w.events.events).toEqual([]);

    expect(await w.reconciler.reconcile('csr-5')).toEqual({});
    expect(w.approvals()).toEqual(['csr-5']);
  });

  it('says NodeIdentityHealthy=False naming the error while the cloud refuses the lookups, and recovers', async () => {
    const w = world();
    w.store.seed(aNodeClaim(5));
    w.cloud.putInstance(anInstance(5));
    w.clock.advance(60_000);
    w.store.seed(await aClientCsr('csr-5', dnsOf(5)));
    // Throttling is retried quietly: it does not flip the condition.
    w.cloud.failNext('describeInstances', new TransientError('describing instances: throttled'));
    await expect(w.reconciler.reconcile('csr-5')).rejects.toBeInstanceOf(TransientError);
    expect(w.reconciler.condition().status).toBe('True');
    const missing = new InvalidInputError(
      'CloudCredentialsMissing',
      'AWS credentials',
      'web_identity_token_file',
      'describing instances: /var/run/secrets/openshift/serviceaccount/token is not readable (ENOENT)',
    );
    w.cloud.failNext('describeInstances', missing);
    await expect(w.reconciler.reconcile('csr-5')).rejects.toBe(missing);
    expect(w.reconciler.condition()).toMatchObject({ status: 'False', reason: 'InstanceLookupRefused' });
    expect(w.reconciler.condition().message).toContain('/var/run/secrets/openshift/serviceaccount/token is not readable');
    expect(w.approvals()).toEqual([]);

    w.cloud.failNext('describeInstances', new ForbiddenError('describing instances: UnauthorizedOperation'));
    await expect(w.reconciler.reconcile('csr-5')).rejects.toBeInstanceOf(ForbiddenError);
    expect(w.reconciler.condition()).toMatchObject({ status: 'False', reason: 'InstanceLookupRefused' });
    expect(w.reconciler.condition().message).toContain('UnauthorizedOperation');

    // The next reconcile whose lookup succeeds approves and sets the condition from the census again.
    expect(await w.reconciler.reconcile('csr-5')).toEqual({});
    expect(w.approvals()).toEqual(['csr-5']);
    expect(w.reconciler.condition()).toMatchObject({ status: 'True', reason: 'AsExpected' });
  });

  it('approves one client CSR per NodeClaim, even when two are reconciled at once', async () => {
    const w = world();
    w.store.seed(aNodeClaim(6));
    w.cloud.putInstance(anInstance(6));
    w.clock.advance(60_000);
    w.store.seed(await aClientCsr('csr-6a', dnsOf(6)));
    w.store.seed(await aClientCsr('csr-6b', dnsOf(6)));
    await Promise.all([w.reconciler.reconcile('csr-6a'), w.reconciler.reconcile('csr-6b')]);
    expect(w.approvals()).toHaveLength(1);
    const loser = w.approvals()[0] === 'csr-6a' ? 'csr-6b' : 'csr-6a';
    expect(w.events.events.find((e) => e.regarding.name === loser)?.reason).toBe('ClientCsrAlreadyApproved');

    // A fresh process (no memory of its approvals) sees the approval in the cache.
    const again = new NodeIdentityReconciler({
      store: w.store,
      cloud: w.cloud,
      facts: async () => facts,
      clock: w.clock,
      events: w.events,
      metrics: w.metrics,
      logger: silentLogger,
    });
    w.store.clearWrites();
    await again.reconcile(loser);
    expect(w.store.writes).toEqual([]);
  });

  it('counts only client CSRs approved since the NodeClaim was created, and parses only those', async () => {
    const w = world();
    const approvedCsr = async (name: string, created: string) => {
      const c = await aClientCsr(name, dnsOf(7));
      c.metadata.creationTimestamp = created;
      c.status = { conditions: [{ type: 'Approved', status: 'True', reason: 'Test', message: '' }] };
      return c;
    };
    // Approved for the same name before this NodeClaim existed (an earlier machine): not this NodeClaim's.
    const old = await approvedCsr('csr-7-old', new Date(w.clock.now() - 3_600_000).toISOString());
    const oldPem = await aClientCsr('x', dnsOf(7)).then((c) => (c.spec as { request: string }).request);
    (old.spec as { request: string }).request = oldPem;
    w.store.seed(old);
    w.store.seed(aNodeClaim(7, { created: new Date(w.clock.now()).toISOString() }));
    w.cloud.putInstance(anInstance(7));
    w.clock.advance(60_000);
    w.store.seed(await aClientCsr('csr-7a', dnsOf(7)));
    const parsedRequests = () => vi.mocked(parseCertificateRequestPem).mock.calls.map(([pem]) => pem);
    vi.mocked(parseCertificateRequestPem).mockClear();
    expect(await w.reconciler.reconcile('csr-7a')).toEqual({});
    expect(w.approvals()).toEqual(['csr-7a']);
    // The old approval was neither counted nor parsed.
    expect(parsedRequests()).not.toContain(Buffer.from(oldPem, 'base64').toString('latin1'));
    expect(parsedRequests().length).toBeGreaterThan(0);

    // One approved after the NodeClaim by someone else counts, for a process that did not approve it itself.
    const other = new NodeIdentityReconciler({
      store: w.store,
      cloud: w.cloud,
      facts: async () => facts,
      clock: w.clock,
      events: w.events,
      metrics: w.metrics,
      logger: silentLogger,
    });
    w.store.seed(await aClientCsr('csr-7b', dnsOf(7)));
    w.clock.advance(1_000);
    w.store.clearWrites();
    expect(await other.reconcile('csr-7b')).toEqual({});
    expect(w.approvals()).toEqual([]);
    expect(w.events.events.find((e) => e.regarding.name === 'csr-7b')?.reason).toBe('ClientCsrAlreadyApproved');
  });

  it('maps an approved CSR to a reconcile only while it holds something about it (a start among thousands costs none)', async () => {
    const w = world();
    const approved = async (name: string) => {
      const c = await aClientCsr(name, dnsOf(4));
      c.status = { conditions: [{ type: 'Approved', status: 'True', reason: 'Test', message: '' }] };
      return w.store.seed(c);
    };
    // Approved before this process looked at it: nothing to forget, no reconcile (as the informer's first list).
    const old = await approved('csr-old');
    expect(w.reconciler.keysFor(old)).toEqual([]);

    // Pending: reconciled; once approved (here, by this process) its index entry is gone and its parse is kept,
    // so its deletion still maps to it (the parse is dropped then).
    w.store.seed(aNodeClaim(3));
    w.cloud.putInstance(anInstance(3));
    w.clock.advance(60_000);
    const pending = w.store.seed(await aClientCsr('csr-new', dnsOf(3)));
    expect(w.reconciler.keysFor(pending)).toEqual(['csr-new']);
    await w.reconciler.reconcile('csr-new');
    expect(w.approvals()).toEqual(['csr-new']);
    const nowApproved = (await w.store.get({ ...Types.CertificateSigningRequest, name: 'csr-new' }))!;
    expect(w.reconciler.keysFor(nowApproved)).toEqual(['csr-new']);
    w.store.remove({ ...Types.CertificateSigningRequest, name: 'csr-new' });
    expect(await w.reconciler.reconcile('csr-new')).toEqual({});
    expect(w.reconciler.keysFor(nowApproved)).toEqual([]);
    // Not a kubelet CSR: never.
    expect(w.reconciler.keysFor({ ...old, spec: { ...(old.spec as object), signerName: 'example.com/other' } })).toEqual([]);
  });

  it('stops approving and reports TooManyPendingCSRs above the bound', async () => {
    const w = world({ maxPending: 3 });
    for (let i = 10; i < 15; i++) {
      w.store.seed(aNodeClaim(i));
      w.cloud.putInstance(anInstance(i));
    }
    w.clock.advance(60_000);
    for (let i = 10; i < 15; i++) w.store.seed(await aClientCsr(`csr-${i}`, dnsOf(i)));

    expect(await w.reconciler.reconcile('csr-10')).toEqual({ requeueAfterMs: 5000 });
    expect(w.approvals()).toEqual([]);
    expect(w.reconciler.condition()).toMatchObject({ type: 'NodeIdentityHealthy', status: 'False', reason: 'TooManyPendingCSRs' });
    // The held CSR says why it is held.
    expect(w.events.events).toEqual([
      expect.objectContaining({
        reason: 'ApprovalsPaused',
        message: expect.stringContaining('5 approvable kubelet CSRs are pending, more than 3'),
        regarding: expect.objectContaining({ name: 'csr-10' }),
      }),
    ]);

    // Two of them go away (denied by an admin): back under the bound, approvals resume.
    for (const n of ['csr-13', 'csr-14']) w.store.remove({ ...Types.CertificateSigningRequest, name: n });
    w.clock.advance(1_000); // the CSR census is shared for up to snapshotTtlMs
    expect(await w.reconciler.reconcile('csr-10')).toEqual({});
    expect(w.approvals()).toEqual(['csr-10']);
    expect(w.reconciler.condition()).toMatchObject({ status: 'True', reason: 'AsExpected' });
  });

  it('keeps the CSR census built while a decision waits on the cloud, parsing the CSRs that arrive meanwhile', async () => {
    const w = world({ snapshotTtlMs: 20 });
    for (const i of [1, 2]) {
      w.store.seed(aNodeClaim(i));
      w.cloud.putInstance(anInstance(i));
    }
    w.clock.advance(60_000);
    w.store.seed(await aClientCsr('csr-1', dnsOf(1)));
    const csr2 = await aClientCsr('csr-2', dnsOf(2));
    let csrLists = 0;
    const list = w.store.list.bind(w.store);
    w.store.list = (async (type, opts) => {
      if (type.kind === Types.CertificateSigningRequest.kind) csrLists++;
      return list(type, opts);
    }) as typeof w.store.list;
    // The cloud does not answer until the test says so.
    let lookups = 0;
    let answer!: () => void;
    const held = new Promise<void>((r) => (answer = r));
    const describe = w.cloud.describeInstances.bind(w.cloud);
    w.cloud.describeInstances = async (ids, facts) => {
      lookups++;
      await held;
      return describe(ids, facts);
    };
    const until = async (what: () => boolean, label: string) => {
      for (let t = Date.now(); !what(); await new Promise((r) => setTimeout(r, 5))) {
        if (Date.now() - t > 10_000) throw new Error(`timed out waiting for ${label}`);
      }
    };

    const decided = w.reconciler.reconcile('csr-1');
    await until(() => lookups === 1, 'the lookup');
    // While it waits, another node's CSR arrives, and the census's time-to-live passes.
    w.store.seed(csr2);
    w.clock.advance(1_000);
    const listsBefore = csrLists;
    // Rebuilt during the wait (the decision itself reads the census only once the cloud answered), with the
    // new CSR parsed and indexed: a NodeClaim event now maps to it.
    await until(() => w.reconciler.keysFor(aNodeClaim(2)).includes('csr-2'), 'csr-2 indexed');
    expect(csrLists).toBeGreaterThan(listsBefore);
    answer();
    expect(await decided).toEqual({});
    expect(w.approvals()).toEqual(['csr-1']);
    // Nothing waits any more: the census is not rebuilt again.
    const listsAfter = csrLists;
    w.clock.advance(1_000);
    await new Promise((r) => setTimeout(r, 100));
    expect(csrLists).toBe(listsAfter);
  });

  it('maps a Node event to the pending serving CSRs of that node, and ignores other signers', async () => {
    const w = world();
    const serving = w.store.seed(await aServingCsr('serving-8', dnsOf(8), [{ type: 'dns', value: dnsOf(8) }]));
    const foreign = w.store.seed({
      ...(await aServingCsr('foreign', dnsOf(8), [])),
      spec: { signerName: 'example.com/signer', request: '' },
    });
    expect(w.reconciler.keysFor(serving)).toEqual(['serving-8']);
    expect(w.reconciler.keysFor(foreign)).toEqual([]);
    // The mapping only reads the index; reconcile and resync build it (the CSR's own event queued it).
    expect(w.reconciler.keysFor({ ...Types.Node, metadata: { name: dnsOf(8) } })).toEqual([]);
    expect(await w.reconciler.resyncKeys()).toEqual(['serving-8']);
    expect(w.reconciler.keysFor({ ...Types.Node, metadata: { name: dnsOf(8) } })).toEqual(['serving-8']);
    expect(w.reconciler.keysFor({ ...Types.Node, metadata: { name: dnsOf(9) } })).toEqual([]);
    expect(await w.reconciler.reconcile('foreign')).toEqual({});
    expect(w.events.events).toEqual([]);
  });

  it('maps NodeClaim events to CSRs without a cloud call (standby replicas run the mapping too)', async () => {
    const w = world();
    for (let i = 0; i < 30; i++) w.cloud.putInstance(anInstance(i));
    for (let i = 0; i < 30; i++) w.reconciler.keysFor(w.store.seed(aNodeClaim(i)));
    await new Promise((r) => setTimeout(r, 1_100));
    expect(w.describeCalls()).toBe(0);
    // The first CSR looks every unregistered NodeClaim's instance up in one call; that answer, read after
    // the CSR was seen, also approves it.
    w.clock.advance(30_000);
    const csr = w.store.seed(await aClientCsr('first', dnsOf(3)));
    for (const k of w.reconciler.keysFor(csr)) await w.reconciler.reconcile(k);
    expect(w.approvals()).toEqual(['first']);
    expect(w.describeCalls()).toBe(1);
    expect((w.cloud.callsOf('describeInstances')[0]!.args[0] as string[]).length).toBe(30);
  });

  it('a standby or a closed gate receiving CSR and NodeClaim events makes no cloud call and keeps no state', async () => {
    const w = world();
    for (let i = 0; i < 5; i++) w.cloud.putInstance(anInstance(i));
    w.clock.advance(60_000);
    // What the informers deliver as NodeClaims launch and their kubelets file client CSRs.
    const events: KubeObject[] = [];
    for (let i = 0; i < 5; i++) events.push(w.store.seed(aNodeClaim(i, { providerID: null })));
    for (let i = 0; i < 5; i++) events.push(w.store.seed(await aClientCsr(`csr-${i}`, dnsOf(i))));
    for (let i = 0; i < 5; i++) events.push(w.store.seed(aNodeClaim(i)));

    // A standby replica: informers and the mapping run, nothing is reconciled.
    const keys = events.flatMap((o) => w.reconciler.keysFor(o));
    expect(keys).toEqual(['csr-0', 'csr-1', 'csr-2', 'csr-3', 'csr-4']);
    // The leader, before Karpenter is requested: the gate stays closed.
    const gated = whileKarpenterRuns(w.reconciler, {
      topology: new StandaloneTopology({ store: w.store, namespace: 'openshift-karpenter', clock: w.clock }),
      cloud: w.cloud,
      clock: w.clock,
    });
    for (const o of events) gated.keysFor(o);
    for (const k of keys) expect(await gated.reconcile(k)).toEqual({});
    await new Promise((r) => setTimeout(r, 100)); // past every lookup batch window
    expect(w.cloud.calls.filter((c) => c.method === 'describeInstances')).toEqual([]);
    // Nothing was indexed by the events: a Node event maps to nothing yet.
    expect(w.reconciler.keysFor({ ...Types.Node, metadata: { name: dnsOf(0) } })).toEqual([]);

    // Reconciled (the leader with the gate open), the same CSRs are approved with one lookup.
    for (const k of keys) await w.reconciler.reconcile(k);
    expect(w.approvals()).toEqual(keys);
    expect(w.describeCalls()).toBe(1);
  });

  it('approves a burst of 200 client CSRs with fewer than 10 DescribeInstances calls', async () => {
    const w = world();
    const n = 200;
    for (let i = 0; i < n; i++) {
      w.store.seed(aNodeClaim(i));
      w.cloud.putInstance(anInstance(i));
    }
    w.clock.advance(120_000);
    const names: string[] = [];
    for (let i = 0; i < n; i++) {
      const csr = w.store.seed(await aClientCsr(`burst-${i}`, dnsOf(i)));
      names.push(...w.reconciler.keysFor(csr));
    }
    // Plus forged CSRs in the same burst: none of them may be approved.
    for (let i = 0; i < 20; i++) w.store.seed(await aClientCsr(`forged-${i}`, dnsOf(1000 + i)));

    // Like the work queue: a pool of workers, each taking the next key; 100 ms of clock per reconcile, so
    // the 220 reconciles span 22 s and outlive the 15 s instance cache once.
    const queue = [...names, ...Array.from({ length: 20 }, (_, i) => `forged-${i}`)];
    const worker = async () => {
      for (let k = queue.shift(); k !== undefined; k = queue.shift()) {
        w.clock.advance(100);
        await w.reconciler.reconcile(k);
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));

    const approved = w.approvals();
    expect(new Set(approved)).toEqual(new Set(names));
    expect(approved.some((a) => a.startsWith('forged-'))).toBe(false);
    const calls = w.describeCalls();
    console.log(`burst: ${n} CSRs approved with ${calls} describeInstances call(s)`);
    expect(calls).toBeLessThan(10);
  });

  it('never approves from a cached answer: an instance terminated just before its CSR stays pending', async () => {
    const w = world();
    w.cloud.putInstance(anInstance(5));
    w.reconciler.keysFor(w.store.seed(aNodeClaim(5)));
    // Another CSR (not this instance's) makes the operator look the NodeClaims' instances up: "running" is cached.
    w.store.seed(await aClientCsr('other', dnsOf(55)));
    w.clock.advance(1_000);
    await w.reconciler.reconcile('other');
    expect(w.describeCalls()).toBe(1);
    w.clock.advance(1_000);
    w.cloud.removeInstance(idOf(5)); // terminated (DescribeInstances filters pending|running)
    w.clock.advance(1_000);
    const csr = w.store.seed(await aClientCsr('late', dnsOf(5)));
    for (const k of w.reconciler.keysFor(csr)) expect(await w.reconciler.reconcile(k)).toEqual({ requeueAfterMs: 5000 });
    expect(w.approvals()).toEqual([]);
    expect(w.events.events.filter((e) => e.regarding.name === 'late').map((e) => e.reason)).toEqual(['InstanceNotVisible']);
  });

  it('decides a CSR seen before its NodeClaim as soon as the NodeClaim appears (not at the next resync)', async () => {
    const w = world();
    w.cloud.putInstance(anInstance(6));
    const csr = w.store.seed(await aClientCsr('early', dnsOf(6)));
    for (const k of w.reconciler.keysFor(csr)) await w.reconciler.reconcile(k);
    expect(w.events.events.map((e) => e.reason)).toEqual(['NoMatchingNodeClaim']);
    // The NodeClaim becomes visible with its providerID: its event maps to the CSR.
    const keys = w.reconciler.keysFor(w.store.seed(aNodeClaim(6)));
    expect(keys).toEqual(['early']);
    // A NodeClaim without an instance, or a registered one, does not re-open it.
    expect(w.reconciler.keysFor(aNodeClaim(60, { providerID: null }))).toEqual([]);
    for (const k of keys) await w.reconciler.reconcile(k);
    expect(w.approvals()).toEqual(['early']);
  });

  it('a resync that yields while it projects does not forget a CSR a reconcile saw meanwhile', async () => {
    // At the resync's first yield to the event loop, a new CSR arrives and is reconciled to the end.
    let meanwhile: (() => Promise<void>) | undefined;
    const w = world({
      schedule: (fn, ms) => {
        const run = ms === 0 ? meanwhile : undefined;
        meanwhile = ms === 0 ? undefined : meanwhile;
        if (run) void run().then(fn);
        else setTimeout(fn, ms);
      },
    });
    w.cloud.putInstance(anInstance(6));
    // More approved CSRs than one projection slice: the resync yields while it reads them.
    const approved = await aClientCsr('approved', dnsOf(7));
    for (let i = 0; i < 300; i++) {
      w.store.seed({
        ...approved,
        metadata: { name: `approved-${i}` },
        status: { conditions: [{ type: 'Approved', status: 'True', reason: 'Test', message: '' }] },
      });
    }
    const early = await aClientCsr('early', dnsOf(6));
    meanwhile = async () => {
      w.store.seed(early);
      expect(await w.reconciler.reconcile('early')).toEqual({}); // no NodeClaim yet: left pending
    };
    await w.reconciler.resyncKeys();
    expect(meanwhile).toBeUndefined();
    expect(w.events.events.map((e) => e.reason)).toEqual(['NoMatchingNodeClaim']);
    // Its NodeClaim appears: the CSR is still known, so the event maps to it.
    expect(w.reconciler.keysFor(w.store.seed(aNodeClaim(6)))).toEqual(['early']);
  });

  it('a NodeClaim event makes its CSR read NodeClaims anew, even when another CSR built a newer listing before it', async () => {
    const w = world();
    w.cloud.putInstance(anInstance(6));
    await w.reconciler.reconcile(w.store.seed(await aClientCsr('early', dnsOf(6))).metadata.name);
    const other = w.store.seed(await aClientCsr('other', dnsOf(7)));
    await w.reconciler.reconcile(other.metadata.name);
    await w.reconciler.reconcile(other.metadata.name); // decided from a listing newer than the one 'early' used
    const keys = w.reconciler.keysFor(w.store.seed(aNodeClaim(6)));
    expect(keys).toContain('early');
    for (const k of keys) await w.reconciler.reconcile(k); // same clock second: within the listing's TTL
    expect(w.approvals()).toEqual(['early']);
  });

  it('a flood of unmatchable CSRs does not hold back a legitimate one, and is visible without a False condition', async () => {
    const w = world();
    w.store.seed(aNodeClaim(1));
    w.cloud.putInstance(anInstance(1));
    w.clock.advance(60_000);
    const flood = 150; // above the default bound of 100 + NodeClaims
    for (let i = 0; i < flood; i++) w.store.seed(await aClientCsr(`flood-${i}`, dnsOf(2000 + i)));
    for (let i = 0; i < flood; i++) await w.reconciler.reconcile(`flood-${i}`);
    w.store.seed(await aClientCsr('real', dnsOf(1)));
    w.clock.advance(1_000);
    expect(await w.reconciler.reconcile('real')).toEqual({});
    expect(w.approvals()).toEqual(['real']);
    expect(w.reconciler.condition()).toMatchObject({
      status: 'True',
      reason: 'UnmatchedCSRsPending',
      message: expect.stringContaining('at least 100 pending kubelet CSR(s) match no Karpenter instance'),
    });
    expect(w.metrics.gauges.get('karpenter_operator_csr_unmatched_pending')).toBe(flood);
    expect(w.metrics.gauges.get('karpenter_operator_csr_pending')).toBe(1);
  });

  it('counts pending client and serving CSRs once per node name, and those that match nothing as unmatched', async () => {
    const w = world();
    w.store.seed(aNodeClaim(1, { nodeName: dnsOf(1) })); // registered: its serving CSRs are approvable
    w.cloud.putInstance(anInstance(1));
    w.store.seed(aNodeClaim(2)); // launched, not registered: its client CSRs are approvable
    w.cloud.putInstance(anInstance(2));
    w.clock.advance(60_000);
    for (const csr of [
      await aClientCsr('client-2', dnsOf(2)),
      await aClientCsr('client-2-again', dnsOf(2)),
      await aServingCsr('serving-1', dnsOf(1), [{ type: 'dns', value: dnsOf(1) }]),
      await aServingCsr('serving-1-again', dnsOf(1), [{ type: 'dns', value: dnsOf(1) }]),
      await aServingCsr('serving-7', dnsOf(7), [{ type: 'dns', value: dnsOf(7) }]), // a MachineSet node's
      await aClientCsr('client-9', dnsOf(9)), // no NodeClaim, no instance
    ])
      w.store.seed(csr);

    // Counted before this CSR's approval: two node names approvable (client of 2, serving of 1), two unmatched.
    expect(await w.reconciler.reconcile('client-2')).toEqual({});
    expect(w.approvals()).toEqual(['client-2']);
    expect(w.metrics.gauges.get('karpenter_operator_csr_pending')).toBe(2);
    expect(w.metrics.gauges.get('karpenter_operator_csr_unmatched_pending')).toBe(2);
  });

  it('ignores names in another spelling than the Node name, so the real kubelet keeps its certificate', async () => {
    const w = world();
    w.store.seed(aNodeClaim(3));
    w.cloud.putInstance(anInstance(3));
    w.clock.advance(60_000);
    w.store.seed(await aClientCsr('dot', `${dnsOf(3)}.`));
    w.store.seed(await aClientCsr('upper', dnsOf(3).toUpperCase()));
    w.clock.advance(1_000);
    for (const n of ['dot', 'upper']) await w.reconciler.reconcile(n);
    expect(w.approvals()).toEqual([]);
    expect(w.events.events.map((e) => `${e.type}/${e.reason}`)).toEqual(['Warning/NonCanonicalNodeName', 'Warning/NonCanonicalNodeName']);
    w.store.seed(await aClientCsr('real', dnsOf(3)));
    w.clock.advance(1_000);
    await w.reconciler.reconcile('real');
    expect(w.approvals()).toEqual(['real']);
  });

  it('a CSR re-created under the same name is seen anew: an answer read for the old one does not approve it', async () => {
    const w = world();
    w.store.seed(aNodeClaim(8));
    w.cloud.putInstance(anInstance(8));
    w.clock.advance(60_000);
    // A first CSR named "same" for another name: its reconcile reads (and caches) instance 8 as running.
    w.store.seed(await aClientCsr('same', dnsOf(88)));
    w.clock.advance(1_000);
    await w.reconciler.reconcile('same');
    expect(w.describeCalls()).toBe(1);
    // Deleted and re-created under the same name (one reconcile sees only the new object), for instance 8,
    // which has been terminated meanwhile.
    w.store.remove({ ...Types.CertificateSigningRequest, name: 'same' });
    w.cloud.removeInstance(idOf(8));
    w.clock.advance(1_000);
    w.store.seed(await aClientCsr('same', dnsOf(8)));
    w.clock.advance(1_000);
    await w.reconciler.reconcile('same');
    expect(w.approvals()).toEqual([]);
    expect(w.describeCalls()).toBe(2);
  });
});
