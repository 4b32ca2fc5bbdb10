import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyObject, deleteObject, getObject, listObjects, waitFor } from '@karpenter-operator/testkit';
import { testCluster, seededWorld } from '@karpenter-operator/testkit/vitest';
import { createKubeletClientCsr } from '@karpenter-operator/testkit';
import { CreateSubnetCommand, DeleteSubnetCommand, DescribeInstancesCommand, EC2Client } from '@aws-sdk/client-ec2';
import { CertificatesV1Api, KubeConfig } from '@kubernetes/client-node';
import { adminRequest, clusterOperator, conditionOf } from '../support/k8s.js';
import { launchKarpenterInstance } from '../support/scenario.js';
import {
  credentialsFileText,
  installManifests,
  OPERATOR_NS,
  OPERATOR_USER,
  RELEASE,
  REPO,
  resetOperatorWorld,
  startOperator,
  type OperatorProcess,
} from '../support/operator-process.js';

const cluster = testCluster();
const kc = () => cluster.kubeConfig();
const KARPENTER = { apiVersion: 'autoscaling.openshift.io/v1alpha1', kind: 'Karpenter' };
const operandRef = ['apps/v1', 'Deployment', 'karpenter', OPERATOR_NS] as const;
const getOperand = () => getObject(kc(), ...operandRef);
const RUNTIME_CRDS = ['nodepools.karpenter.sh', 'nodeclaims.karpenter.sh', 'nodeoverlays.karpenter.sh', 'ec2nodeclasses.karpenter.k8s.aws'];
const started = new Date();

let op: OperatorProcess;

const established = async (name: string) => {
  const crd = await getObject(kc(), 'apiextensions.k8s.io/v1', 'CustomResourceDefinition', name);
  return Boolean(
    (crd?.status as { conditions?: Array<{ type: string; status: string }> } | undefined)?.conditions?.some(
      (c) => c.type === 'Established' && c.status === 'True',
    ),
  );
};
const operandAvailable = async () => {
  const d = await getOperand();
  const st = (d?.status ?? {}) as { availableReplicas?: number; updatedReplicas?: number; observedGeneration?: number };
  const replicas = (d?.spec as { replicas?: number } | undefined)?.replicas ?? 0;
  return (
    d !== undefined &&
    replicas > 0 &&
    st.availableReplicas === replicas &&
    st.updatedReplicas === replicas &&
    (st.observedGeneration ?? 0) >= Number(d.metadata.generation ?? 1)
  );
};

describe('standalone operator on a real cluster, as its ServiceAccount', () => {
  beforeAll(async () => {
    await installManifests(cluster);
    await resetOperatorWorld(cluster);
    op = await startOperator(cluster, { name: 'karpenter-operator-a' });
  }, 180_000);

  afterAll(async () => {
    await op?.stop();
  });

  it('with no Karpenter CR: ClusterOperator Available=True (KarpenterNotFound) at the release version', async () => {
    const co = await waitFor(
      'ClusterOperator karpenter to report idle',
      async () => {
        const c = await clusterOperator(cluster);
        return conditionOf(c, 'Available')?.reason === 'KarpenterNotFound' ? c : undefined;
      },
      { timeoutMs: 30_000 },
    );
    expect(conditionOf(co, 'Available')?.status).toBe('True');
    expect(conditionOf(co, 'Degraded')?.status).toBe('False');
    expect((co.status as { versions?: unknown }).versions).toEqual([{ name: 'operator', version: RELEASE }]);
    expect(await getOperand()).toBeUndefined();
  });

  it('a Karpenter CR named other is refused by the API server', async () => {
    const r = await adminRequest(cluster, 'POST', '/apis/autoscaling.openshift.io/v1alpha1/karpenters', {
      ...KARPENTER,
      metadata: { name: 'other' },
    });
    expect(r.status).toBe(422);
    expect(JSON.stringify(r.body)).toMatch(/default/);
  });

  it('creating default: CRDs Established, operand gated on credentials, then Available and AsExpected', async () => {
    await applyObject(kc(), { ...KARPENTER, metadata: { name: 'default' }, spec: { logLevel: 'debug' } });
    for (const name of RUNTIME_CRDS) await waitFor(`CRD ${name} Established`, () => established(name), { timeoutMs: 30_000 });
    await waitFor(
      'Progressing=WaitingForCredentials',
      async () => conditionOf(await clusterOperator(cluster), 'Progressing')?.reason === 'WaitingForCredentials',
      { timeoutMs: 30_000 },
    );
    expect(await getOperand()).toBeUndefined();

    await applyObject(kc(), {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'karpenter-cloud-credentials', namespace: OPERATOR_NS },
      stringData: { credentials: credentialsFileText() },
    });
    await waitFor('the operand Deployment to become Available', operandAvailable, { timeoutMs: 90_000 });
    const dep = (await getOperand())!;
    expect((dep.metadata.ownerReferences as unknown[] | undefined)?.[0]).toMatchObject({
      kind: 'Karpenter',
      name: 'default',
      controller: true,
      blockOwnerDeletion: true,
    });
    const container = (
      dep.spec as { template: { spec: { containers: Array<{ args?: string[]; env?: Array<{ name: string; value?: string }> }> } } }
    ).template.spec.containers[0]!;
    expect(container.env?.find((e) => e.name === 'CLUSTER_NAME')?.value).toBe('demo-x7k2p');
    expect(JSON.stringify(container)).toContain('debug');

    const co = await waitFor(
      'ClusterOperator AsExpected',
      async () => {
        const c = await clusterOperator(cluster);
        return conditionOf(c, 'Available')?.reason === 'AsExpected' && conditionOf(c, 'Progressing')?.status === 'False' ? c : undefined;
      },
      { timeoutMs: 60_000 },
    );
    expect((co.status as { versions?: unknown }).versions).toEqual([{ name: 'operator', version: RELEASE }]);
    const related = (co.status as { relatedObjects: Array<{ resource: string }> }).relatedObjects.map((r) => r.resource);
    expect(related).toEqual(expect.arrayContaining(['namespaces', 'deployments', 'nodepools', 'nodeclaims', 'ec2nodeclasses']));
    // The CR's conditions are written right after the ClusterOperator's, in the same reconcile.
    const cr = await waitFor(
      'the Karpenter CR to mirror AsExpected',
      async () => {
        const c = await getObject(kc(), KARPENTER.apiVersion, KARPENTER.kind, 'default');
        return conditionOf(c, 'Available')?.reason === 'AsExpected' ? c : undefined;
      },
      { timeoutMs: 15_000 },
    );
    expect(conditionOf(cr, 'Available')).toMatchObject({
      status: 'True',
      reason: 'AsExpected',
      observedGeneration: cr.metadata.generation,
    });
  });

  it('reverts drift of the operand: deleted, scaled to 0, env edited; a label a user added survives', async () => {
    const patch = (body: unknown) =>
      adminRequest(cluster, 'PATCH', `/apis/apps/v1/namespaces/${OPERATOR_NS}/deployments/karpenter`, body, 'application/merge-patch+json');
    expect((await patch({ metadata: { labels: { 'team.example.com/owner': 'me' } }, spec: { replicas: 0 } })).status).toBe(200);
    await waitFor('replicas restored', async () => ((await getOperand())?.spec as { replicas: number }).replicas > 0, {
      timeoutMs: 15_000,
    });
    expect((await getOperand())?.metadata.labels?.['team.example.com/owner']).toBe('me');

    const env = ((await getOperand())!.spec as { template: { spec: { containers: Array<{ name: string }> } } }).template.spec.containers;
    const r = await adminRequest(
      cluster,
      'PATCH',
      `/apis/apps/v1/namespaces/${OPERATOR_NS}/deployments/karpenter`,
      { spec: { template: { spec: { containers: [{ name: env[0]!.name, env: [{ name: 'CLUSTER_NAME', value: 'hijacked' }] }] } } } },
      'application/strategic-merge-patch+json',
    );
    expect(r.status).toBe(200);
    await waitFor(
      'env restored',
      async () => {
        const c = (
          (await getOperand())!.spec as { template: { spec: { containers: Array<{ env: Array<{ name: string; value?: string }> }> } } }
        ).template.spec.containers[0]!;
        return c.env.find((e) => e.name === 'CLUSTER_NAME')?.value === 'demo-x7k2p';
      },
      { timeoutMs: 15_000 },
    );

    const uid = (await getOperand())!.metadata.uid;
    await deleteObject(kc(), ...operandRef);
    await waitFor(
      'Deployment re-created',
      async () => {
        const d = await getOperand();
        return d && d.metadata.uid !== uid && !d.metadata.deletionTimestamp;
      },
      { timeoutMs: 20_000 },
    );
    await waitFor('Deployment Available again', operandAvailable, { timeoutMs: 60_000 });
  });

  it('re-creates a deleted runtime CRD', async () => {
    const name = 'nodeoverlays.karpenter.sh';
    const before = (await getObject(kc(), 'apiextensions.k8s.io/v1', 'CustomResourceDefinition', name))!.metadata.uid;
    await deleteObject(kc(), 'apiextensions.k8s.io/v1', 'CustomResourceDefinition', name);
    await waitFor(
      'CRD re-created and Established',
      async () => {
        const crd = await getObject(kc(), 'apiextensions.k8s.io/v1', 'CustomResourceDefinition', name);
        return crd && crd.metadata.uid !== before && (await established(name));
      },
      { timeoutMs: 30_000 },
    );
  });

  const NC = ['karpenter.k8s.aws/v1', 'EC2NodeClass'] as const;
  const ncSpec = async () =>
    ((await getObject(kc(), ...NC, 'default'))?.spec ?? {}) as Record<string, unknown> & {
      amiSelectorTerms?: Array<{ id?: string }>;
      subnetSelectorTerms?: unknown[];
      userData?: string;
      tags?: Record<string, string>;
    };

  it('maintains EC2NodeClass default from the worker MachineSets (accepted by the real CRD), and its MachineConfigPool', async () => {
    const world = seededWorld();
    // Launchable once MCO serves its pool: until then its AMI terms hold launches (docs/node-configuration.md).
    const spec = await waitFor(
      'EC2NodeClass default pointing at its pool',
      async () => {
        const sp = await ncSpec();
        return sp.amiFamily && sp.userData?.includes('/config/karpenter-default"') ? sp : undefined;
      },
      { timeoutMs: 60_000 },
    );
    expect(spec.amiFamily).toBe('Custom');
    expect(spec.amiSelectorTerms).toEqual([{ id: world.facts.amis.x86_64 }]);
    expect(spec.subnetSelectorTerms).toHaveLength(3);
    expect(spec.instanceProfile).toBe(world.facts.instanceProfile);
    expect(spec.userData).toContain('22623/config/');
    const pool = await waitFor(
      'MachineConfigPool karpenter-default',
      () => getObject(kc(), 'machineconfiguration.openshift.io/v1', 'MachineConfigPool', 'karpenter-default'),
      { timeoutMs: 20_000 },
    );
    expect((pool.spec as { nodeSelector: unknown }).nodeSelector).toEqual({ matchLabels: { 'karpenter.k8s.aws/ec2nodeclass': 'default' } });
    await waitFor(
      'KubeletConfig set-karpenter-taint-default',
      () => getObject(kc(), 'machineconfiguration.openshift.io/v1', 'KubeletConfig', 'set-karpenter-taint-default'),
      { timeoutMs: 20_000 },
    );
  });

  it('an AMI change on a MachineSet propagates; a user edit of spec.tags survives; an edit of userData is reverted', async () => {
    const world = seededWorld();
    const ms = world.facts.workerMachineSets;
    const ncPath = '/apis/karpenter.k8s.aws/v1/ec2nodeclasses/default';
    const edited = await adminRequest(
      cluster,
      'PATCH',
      ncPath,
      { spec: { tags: { team: 'payments' }, userData: '{"ignition":{"version":"3.4.0"}}' } },
      'application/merge-patch+json',
    );
    expect(edited.status).toBe(200);
    await waitFor('userData reverted', async () => (await ncSpec()).userData?.includes('22623/config/'), { timeoutMs: 15_000 });
    expect((await ncSpec()).tags?.team).toBe('payments');

    // Another AMI the emulator really has (verification checks that referenced AMIs exist).
    const newAmi = world.facts.amis.aarch64;
    for (const name of ms) {
      const r = await adminRequest(
        cluster,
        'PATCH',
        `/apis/machine.openshift.io/v1beta1/namespaces/openshift-machine-api/machinesets/${name}`,
        { spec: { template: { spec: { providerSpec: { value: { ami: { id: newAmi } } } } } } },
        'application/merge-patch+json',
      );
      expect(r.status).toBe(200);
    }
    await waitFor('AMI propagated', async () => JSON.stringify((await ncSpec()).amiSelectorTerms) === JSON.stringify([{ id: newAmi }]), {
      timeoutMs: 15_000,
    });
    expect((await ncSpec()).tags?.team).toBe('payments');
  });

  it('approves the kubelet client and serving CSRs of a Karpenter-launched instance, and leaves a forged one pending', async () => {
    const { instanceId, dns, ip, providerID, terminate } = await launchKarpenterInstance(cluster, seededWorld(), 'general-e2e1');
    expect(dns).toMatch(/\.ec2\.internal$/);

    const bootstrapper = (await cluster.kubeConfigFor('openshift-machine-config-operator', 'node-bootstrapper')).makeApiClient(
      CertificatesV1Api,
    );
    const submit = async (api: CertificatesV1Api, pem: string, signerName: string, usages: string[]) =>
      (
        await api.createCertificateSigningRequest({
          body: { metadata: { generateName: 'csr-' }, spec: { request: Buffer.from(pem).toString('base64'), signerName, usages } },
        })
      ).metadata!.name!;
    const client = await createKubeletClientCsr(dns);
    const forged = await createKubeletClientCsr('ip-10-0-250-250.ec2.internal');
    const good = await submit(bootstrapper, client.csrPem, 'kubernetes.io/kube-apiserver-client-kubelet', [
      'digital signature',
      'client auth',
    ]);
    const bad = await submit(bootstrapper, forged.csrPem, 'kubernetes.io/kube-apiserver-client-kubelet', [
      'digital signature',
      'client auth',
    ]);

    const admin = kc().makeApiClient(CertificatesV1Api);
    const certificate = await waitFor(
      'the client CSR approved and signed',
      async () => (await admin.readCertificateSigningRequest({ name: good })).status?.certificate,
      { timeoutMs: 30_000, intervalMs: 300 },
    );

    // The kubelet creates its Node with the new identity; here the test does, as admin.
    await applyObject(kc(), {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: dns, labels: { 'karpenter.sh/nodepool': 'general', 'karpenter.k8s.aws/ec2nodeclass': 'default' } },
      spec: { providerID },
    });
    await adminRequest(
      cluster,
      'PATCH',
      '/apis/karpenter.sh/v1/nodeclaims/general-e2e1/status',
      { status: { nodeName: dns } },
      'application/merge-patch+json',
    );

    const asNode = new KubeConfig();
    asNode.loadFromOptions({
      clusters: [{ name: 'local', server: cluster.info.server, caFile: cluster.info.caFile }],
      users: [{ name: 'node', certData: certificate, keyData: Buffer.from(client.privateKeyPem).toString('base64') }],
      contexts: [{ name: 'node', cluster: 'local', user: 'node' }],
      currentContext: 'node',
    });
    const serving = await createKubeletClientCsr(dns, { dnsNames: [dns], ipAddresses: [ip] });
    const servingName = await submit(asNode.makeApiClient(CertificatesV1Api), serving.csrPem, 'kubernetes.io/kubelet-serving', [
      'digital signature',
      'server auth',
    ]);
    await waitFor(
      'the serving CSR approved',
      async () => (await admin.readCertificateSigningRequest({ name: servingName })).status?.conditions?.some((c) => c.type === 'Approved'),
      { timeoutMs: 30_000, intervalMs: 300 },
    );

    const forgedState = await admin.readCertificateSigningRequest({ name: bad });
    expect(forgedState.status?.conditions ?? []).toEqual([]);
    const ec2 = new EC2Client(cluster.ec2Config());
    const described = await ec2.send(new DescribeInstancesCommand({ InstanceIds: [instanceId] }));
    expect(described.Reservations?.[0]?.Instances?.[0]?.PrivateDnsName).toBe(dns);
    ec2.destroy();
    await terminate();
  });

  it('a converged cluster gets zero writes from the operator over 60 s of idleness (leases and events aside)', async () => {
    // Let the last changes settle before the window opens.
    await new Promise((r) => setTimeout(r, 5_000));
    const since = new Date();
    await new Promise((r) => setTimeout(r, 60_000));
    const writes = cluster
      .auditEvents({ user: OPERATOR_USER, verbs: ['create', 'update', 'patch', 'delete'], since })
      .filter((e) => !['leases', 'events'].includes(e.objectRef?.resource ?? ''));
    expect(writes.map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
    const lists = cluster.auditEvents({ user: OPERATOR_USER, verbs: ['list'], since });
    expect(lists.map((e) => e.requestURI)).toEqual([]);
  }, 90_000);

  it('a reconcile of the converged cluster, forced by touching the CR, writes nothing', async () => {
    await new Promise((r) => setTimeout(r, 3_000));
    const reconciles = async () => {
      const text = await (await fetch(`http://127.0.0.1:${op.metricsPort}/metrics`)).text();
      return text
        .split('\n')
        .filter((l) => l.startsWith('karpenter_operator_reconcile_total{'))
        .reduce((n, l) => n + Number(l.split(' ').at(-1)), 0);
    };
    const before = await reconciles();
    const since = new Date();
    // Every use-case watches the CR: an annotation wakes all of them without changing what they derive.
    const r = await adminRequest(
      cluster,
      'PATCH',
      '/apis/autoscaling.openshift.io/v1alpha1/karpenters/default',
      { metadata: { annotations: { 'test.example.com/poke': String(Date.now()) } } },
      'application/merge-patch+json',
    );
    expect(r.status).toBe(200);
    await new Promise((r2) => setTimeout(r2, 5_000));
    const writes = cluster
      .auditEvents({ user: OPERATOR_USER, verbs: ['create', 'update', 'patch', 'delete'], since })
      .filter((e) => !['leases', 'events'].includes(e.objectRef?.resource ?? ''));
    expect(writes.map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
    // ...and the use-cases did run: crds, operand, teardown, default NodeClass, node-config, node-identity.
    expect((await reconciles()) - before).toBeGreaterThanOrEqual(5);
  });

  it('every NodeClass the AWS provider renders for a range of worker fleets is accepted by the real CRD (CEL included)', async () => {
    const { renderDefaultNodeClass } = await import('@karpenter-operator/provider-aws');
    const { aDiscoveryInput, aMachineSet, aUserDataSecret } = await import('@karpenter-operator/provider-aws/testing');
    const variants: Array<{ name: string; machineSets: ReturnType<typeof aMachineSet>[] }> = [
      { name: 'three zones by filter', machineSets: ['a', 'b', 'c'].map((z) => aMachineSet({ zone: `us-east-1${z}` })) },
      {
        name: 'subnet and SGs by id',
        machineSets: [
          aMachineSet({
            providerSpec: { subnet: { id: 'subnet-0abc', filters: null }, securityGroups: [{ id: 'sg-01' }, { id: 'sg-02' }] },
          }),
        ],
      },
      {
        name: 'arm64 and amd64',
        machineSets: [
          aMachineSet(),
          aMachineSet({ name: 'arm', providerSpec: { ami: { id: 'ami-0arm64bbbb' }, instanceType: 'm7g.xlarge' } }),
        ],
      },
      {
        name: 'io1 with iops and KMS',
        machineSets: [
          aMachineSet({
            providerSpec: {
              blockDevices: [
                {
                  ebs: {
                    encrypted: true,
                    iops: 3000,
                    volumeSize: 300,
                    volumeType: 'io1',
                    kmsKey: { arn: 'arn:aws:kms:us-east-1:123456789012:key/abc' },
                  },
                },
              ],
            },
          }),
        ],
      },
      {
        name: 'IMDS optional, public IP, user tags',
        machineSets: [
          aMachineSet({
            providerSpec: {
              metadataServiceOptions: { authentication: 'Optional' },
              publicIp: true,
              tags: [
                { name: 'team', value: 'x' },
                { name: 'karpenter.sh/nodepool', value: 'dropped' },
              ],
            },
          }),
        ],
      },
      { name: 'spot workers', machineSets: [aMachineSet({ providerSpec: { spotMarketOptions: { maxPrice: '0.5' } } })] },
    ];
    for (const v of variants) {
      const nc = renderDefaultNodeClass(aDiscoveryInput({ machineSets: v.machineSets, secrets: [aUserDataSecret()] })).object;
      const r = await adminRequest(cluster, 'POST', '/apis/karpenter.k8s.aws/v1/ec2nodeclasses?dryRun=All', {
        ...nc,
        metadata: { name: `variant-${variants.indexOf(v)}` },
      });
      expect(r.status, `${v.name}: ${JSON.stringify(r.body).slice(0, 400)}`).toBe(201);
    }
  });

  it('a user NodeClass gets its own MachineConfigPool and protected fields, and the pool goes with it', async () => {
    await applyObject(kc(), {
      apiVersion: 'karpenter.k8s.aws/v1',
      kind: 'EC2NodeClass',
      metadata: { name: 'gpu' },
      spec: {
        amiFamily: 'Custom',
        amiSelectorTerms: [{ id: 'ami-0user000000000000' }],
        role: 'demo-x7k2p-worker-role',
        subnetSelectorTerms: [{ tags: { Name: 'demo-x7k2p-subnet-private-us-east-1a' } }],
        securityGroupSelectorTerms: [{ tags: { Name: 'demo-x7k2p-node' } }],
      },
    });
    await waitFor(
      'pool karpenter-gpu',
      () => getObject(kc(), 'machineconfiguration.openshift.io/v1', 'MachineConfigPool', 'karpenter-gpu'),
      { timeoutMs: 20_000 },
    );
    await waitFor(
      'protected fields enforced on gpu',
      async () => {
        const sp = (await getObject(kc(), ...NC, 'gpu'))?.spec as
          { amiSelectorTerms?: Array<{ id: string }>; userData?: string } | undefined;
        return (
          sp?.userData?.includes('22623/config/') &&
          JSON.stringify(sp.amiSelectorTerms) === JSON.stringify((await ncSpec()).amiSelectorTerms)
        );
      },
      // Held (no AMI) until the stand-in MCO has rendered pool karpenter-gpu with its taint.
      { timeoutMs: 60_000 },
    );
    await deleteObject(kc(), ...NC, 'gpu');
    await waitFor(
      'pool karpenter-gpu removed',
      async () => (await getObject(kc(), 'machineconfiguration.openshift.io/v1', 'MachineConfigPool', 'karpenter-gpu')) === undefined,
      { timeoutMs: 20_000 },
    );
    expect(await getObject(kc(), 'machineconfiguration.openshift.io/v1', 'MachineConfigPool', 'karpenter-default')).toBeDefined();
  });

  it('check-credentials exits 0 against the emulator and 1 naming the failure when EC2 is unreachable', async () => {
    const { spawnSync } = await import('node:child_process');
    const { writeFileSync, mkdtempSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const file = join(mkdtempSync(join(tmpdir(), 'ko-creds-')), 'credentials');
    writeFileSync(file, credentialsFileText());
    const run = (endpoint: string) =>
      spawnSync(
        join(REPO, 'node_modules/.bin/node'),
        [join(REPO, 'apps/operator/dist/main.js'), 'check-credentials', '--credentials', file, '--region', 'us-east-1'],
        {
          encoding: 'utf8',
          env: { PATH: process.env.PATH ?? '', AWS_ENDPOINT_URL_EC2: endpoint, AWS_EC2_METADATA_DISABLED: 'true' },
          timeout: 60_000,
        },
      );
    const ok = run(cluster.info.ec2Endpoint!);
    expect(ok.status, ok.stderr).toBe(0);
    const down = run('http://127.0.0.1:9');
    expect(down.status).toBe(1);
    expect(down.stderr).toMatch(/check-credentials: .+/);
  }, 90_000);

  it('deleting a subnet the default NodeClass selects turns verification False and Degraded names it', async () => {
    const world = seededWorld();
    const ec2 = new EC2Client(cluster.ec2Config());
    // A subnet of this test's own (the seeded ones are shared with other files), added by the user to
    // `default` (subnetSelectorTerms belong to the user once created).
    const created = await ec2.send(
      new CreateSubnetCommand({
        VpcId: world.ec2!.vpcId,
        CidrBlock: '10.0.240.0/24',
        AvailabilityZone: world.facts.zones[0],
        TagSpecifications: [
          {
            ResourceType: 'subnet',
            Tags: [
              { Key: world.facts.clusterTagKey, Value: 'owned' },
              { Key: 'Name', Value: 'demo-x7k2p-subnet-extra' },
            ],
          },
        ],
      }),
    );
    const subnetId = created.Subnet!.SubnetId!;
    const ncPath = '/apis/karpenter.k8s.aws/v1/ec2nodeclasses/default';
    const terms = (await ncSpec()).subnetSelectorTerms!;
    await adminRequest(
      cluster,
      'PATCH',
      ncPath,
      { spec: { subnetSelectorTerms: [...terms, { id: subnetId }] } },
      'application/merge-patch+json',
    );
    await new Promise((r) => setTimeout(r, 2_000));
    expect(conditionOf(await clusterOperator(cluster), 'Degraded')?.status).toBe('False');

    await ec2.send(new DeleteSubnetCommand({ SubnetId: subnetId }));
    // Verification runs on a change of the NodeClass or every 5 minutes: a user edit is a change.
    await adminRequest(cluster, 'PATCH', ncPath, { spec: { tags: { team: 'payments', rev: '2' } } }, 'application/merge-patch+json');
    const degraded = await waitFor(
      'Degraded naming the subnet',
      async () => {
        const c = conditionOf(await clusterOperator(cluster), 'Degraded');
        return c?.status === 'True' && c.message.includes(subnetId) ? c : undefined;
      },
      { timeoutMs: 30_000 },
    );
    expect(degraded.reason).toBe('InvalidReferences');
    expect(degraded.message).toContain('subnetSelectorTerms');

    await adminRequest(cluster, 'PATCH', ncPath, { spec: { subnetSelectorTerms: terms } }, 'application/merge-patch+json');
    await waitFor(
      'Degraded cleared once the term is gone',
      async () => conditionOf(await clusterOperator(cluster), 'Degraded')?.status === 'False',
      { timeoutMs: 30_000 },
    );
  });

  it('deleting the CR removes NodePools, then NodeClaims, then the operand, and releases the finalizer', async () => {
    await applyObject(kc(), {
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodePool',
      metadata: { name: 'general' },
      spec: {
        template: {
          spec: {
            nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
            requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }],
          },
        },
      },
    });
    const cr = await getObject(kc(), KARPENTER.apiVersion, KARPENTER.kind, 'default');
    expect(cr?.metadata.finalizers).toContain('karpenter.autoscaling.openshift.io/teardown');
    await deleteObject(kc(), KARPENTER.apiVersion, KARPENTER.kind, 'default');
    await waitFor(
      'the Karpenter CR to be gone',
      async () => (await getObject(kc(), KARPENTER.apiVersion, KARPENTER.kind, 'default')) === undefined,
      { timeoutMs: 60_000 },
    );
    expect(await listObjects(kc(), 'karpenter.sh/v1', 'NodePool')).toEqual([]);
    expect(await listObjects(kc(), 'karpenter.sh/v1', 'NodeClaim')).toEqual([]);
    await waitFor('the operand to be gone', async () => (await getOperand()) === undefined, { timeoutMs: 30_000 });
    // The operator only removes Karpenter's own objects: CRDs stay (deleting them would delete every object of their kinds).
    for (const name of RUNTIME_CRDS) expect(await established(name)).toBe(true);
    await waitFor(
      'ClusterOperator back to idle',
      async () => conditionOf(await clusterOperator(cluster), 'Available')?.reason === 'KarpenterNotFound',
      { timeoutMs: 30_000 },
    );
    const co = await clusterOperator(cluster);
    expect(conditionOf(co, 'Degraded')?.status).toBe('False');
  });

  it('the operator never got a 403 and never crashed', () => {
    const denied = cluster.auditEvents({ user: OPERATOR_USER, codes: [403], since: started });
    expect(denied.map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
    expect(op.exited()).toBe(false);
  });
});
