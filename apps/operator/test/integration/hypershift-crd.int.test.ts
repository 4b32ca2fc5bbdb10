import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KubeConfig } from '@kubernetes/client-node';
import { ADAPTER_FIELD_MANAGER } from '@karpenter-operator/topology-hypershift/sidecar';
import { getObject, kubeRequest, waitFor, type KubeObj } from '@karpenter-operator/testkit';
import { testCluster } from '@karpenter-operator/testkit/vitest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOpenshiftNodeClassCrd } from '../../src/hosted-controllers.js';

/**
 * The OpenshiftEC2NodeClass CRD the HyperShift sidecar serves in a guest (v1 only, from this project's own Go
 * types) against a guest where HyperShift already installed the kind: on the real kube-apiserver of the run's
 * shared cluster (the CRD is a guest kind: it is removed again afterwards).
 */
const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');
const CRD_NAME = 'openshiftec2nodeclasses.karpenter.hypershift.openshift.io';
const CRD_PATH = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD_NAME}`;
const OBJ_PATH = '/apis/karpenter.hypershift.openshift.io/v1/openshiftec2nodeclasses';
const HYPERSHIFT_MANAGER = 'hypershift-karpenter-operator';

let kc: KubeConfig;
let crd: KubeObj;

type Crd = { status?: { storedVersions?: string[]; conditions?: Array<{ type: string; status: string }> } };
const storedVersions = async () =>
  (await getObject<KubeObj & Crd>(kc, 'apiextensions.k8s.io/v1', 'CustomResourceDefinition', CRD_NAME))?.status?.storedVersions;
const apply = (obj: KubeObj, fieldManager: string) =>
  kubeRequest<{ message?: string }>(kc, 'PATCH', `${CRD_PATH}?fieldManager=${fieldManager}&force=true`, {
    body: obj,
    contentType: 'application/apply-patch+yaml',
  });
const established = () =>
  waitFor(
    'the CRD Established',
    async () =>
      (await getObject<KubeObj & Crd>(kc, 'apiextensions.k8s.io/v1', 'CustomResourceDefinition', CRD_NAME))?.status?.conditions?.some(
        (c) => c.type === 'Established' && c.status === 'True',
      ) ?? false,
    { timeoutMs: 30_000, intervalMs: 250 },
  );
const removeCrd = async () => {
  await kubeRequest(kc, 'DELETE', CRD_PATH);
  await waitFor('the CRD gone', async () => (await kubeRequest(kc, 'GET', CRD_PATH)).status === 404, { timeoutMs: 60_000 });
};

/** An OpenshiftEC2NodeClass v1 with every spec field, as a user of HyperShift's v1 writes it. */
const stored = {
  apiVersion: 'karpenter.hypershift.openshift.io/v1',
  kind: 'OpenshiftEC2NodeClass',
  metadata: { name: 'stored' },
  spec: {
    subnetSelectorTerms: [{ id: 'subnet-0a' }],
    securityGroupSelectorTerms: [{ tags: { role: 'worker' } }],
    capacityReservationSelectorTerms: [{ ownerID: '123456789012', instanceMatchCriteria: 'Open' }],
    ipAddressAssociation: 'Public',
    tags: { team: 'a' },
    blockDeviceMappings: [{ deviceName: '/dev/xvda', rootVolume: 'RootVolume', ebs: { volumeSizeGiB: 200, volumeType: 'GP3' } }],
    instanceStorePolicy: 'RAID0',
    monitoring: 'Detailed',
    metadataOptions: { access: 'HTTPEndpoint', httpTokens: 'Required', httpPutResponseHopLimit: 2 },
    kubelet: { maxPods: 110, containerLogMaxSize: '50Mi' },
    version: '4.20.1',
  },
};

describe('OpenshiftEC2NodeClass CRD: v1 served and stored', () => {
  beforeAll(async () => {
    kc = testCluster().kubeConfig();
    const loaded = loadOpenshiftNodeClassCrd(join(repo, 'generated/crds/karpenter-hypershift'));
    if (!loaded) throw new Error('no OpenshiftEC2NodeClass CRD in generated/crds/karpenter-hypershift: run tools/cluster/fetch-crds.sh');
    crd = loaded as KubeObj;
    if ((await kubeRequest(kc, 'GET', CRD_PATH)).status === 200) await removeCrd();
  }, 120_000);
  afterAll(async () => {
    if (kc) await removeCrd();
  }, 120_000);

  it('serves v1 only, as the storage version', () => {
    const versions = (crd as KubeObj & { spec: { versions: Array<{ name: string; served: boolean; storage: boolean }> } }).spec.versions;
    expect(versions.map((v) => ({ name: v.name, served: v.served, storage: v.storage }))).toEqual([
      { name: 'v1', served: true, storage: true },
    ]);
  });

  it('applied over a CRD that already stores v1 objects: accepted, the objects read back unchanged, still stored as v1', async () => {
    // HyperShift's installation of the kind (another field manager), and an object it stores at v1.
    const installed = await apply(crd, HYPERSHIFT_MANAGER);
    expect(installed.status, JSON.stringify(installed.body)).toBeLessThan(300);
    await established();
    const created = await waitFor(
      'OpenshiftEC2NodeClass stored created',
      async () => {
        const r = await kubeRequest<KubeObj>(kc, 'POST', OBJ_PATH, { body: stored });
        return r.status === 201 ? r.body : false;
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    expect(created.spec).toEqual(stored.spec); // every field kept, the kubelet's untyped key too
    expect(await storedVersions()).toEqual(['v1']);

    // The sidecar's apply (its field manager, forced, as OpenshiftNodeClassReconciler applies it).
    const ours = await apply(crd, ADAPTER_FIELD_MANAGER);
    expect(ours.status, JSON.stringify(ours.body)).toBe(200);
    await established();
    expect(await storedVersions()).toEqual(['v1']);
    const read = await kubeRequest<KubeObj>(kc, 'GET', `${OBJ_PATH}/stored`);
    expect(read.status).toBe(200);
    expect(read.body.spec).toEqual(stored.spec);
    // And it stays writable: a spec change is admitted under the applied schema.
    const patched = await kubeRequest<KubeObj>(kc, 'PATCH', `${OBJ_PATH}/stored`, {
      body: { spec: { monitoring: 'Basic' } },
      contentType: 'application/merge-patch+json',
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect((patched.body.spec as Record<string, unknown>)['monitoring']).toBe('Basic');
    // v1beta1 is not served.
    expect((await kubeRequest(kc, 'GET', '/apis/karpenter.hypershift.openshift.io/v1beta1/openshiftec2nodeclasses')).status).toBe(404);
  });

  // v1's validation rules, enforced by the API server under the applied CRD (the previous case installed it).
  it.each([
    { field: 'subnetSelectorTerms', spec: { subnetSelectorTerms: [{ id: 'subnet-0a', tags: { a: 'b' } }] }, message: 'sets nothing else' },
    { field: 'securityGroupSelectorTerms', spec: { securityGroupSelectorTerms: [{}] }, message: 'sets tags, id or name' },
    { field: 'subnet id', spec: { subnetSelectorTerms: [{ id: 'vpc-0a' }] }, message: 'is a subnet ID' },
    {
      field: 'capacityReservationSelectorTerms',
      spec: { capacityReservationSelectorTerms: [{ ownerID: '12345' }] },
      message: 'AWS account ID (12 digits)',
    },
    { field: 'tags', spec: { tags: { 'kubernetes.io/cluster/x': 'owned' } }, message: 'reserved for Kubernetes' },
    {
      field: 'blockDeviceMappings',
      spec: {
        blockDeviceMappings: [
          { rootVolume: 'RootVolume', ebs: { volumeSizeGiB: 100 } },
          { rootVolume: 'RootVolume', ebs: { volumeSizeGiB: 100 } },
        ],
      },
      message: 'at most one of blockDeviceMappings is the RootVolume',
    },
    {
      field: 'kubelet eviction',
      spec: { kubelet: { evictionSoft: { 'memory.available': '100Mi' } } },
      message: 'needs an evictionSoftGracePeriod entry',
    },
    { field: 'version', spec: { version: '4.20' }, message: 'semantic version' },
  ])('refuses a $field that breaks a v1 rule, with its message', async ({ spec, message }) => {
    const r = await kubeRequest<{ message?: string }>(kc, 'POST', OBJ_PATH, {
      body: { ...stored, metadata: { name: 'invalid' }, spec },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(422);
    expect(r.body.message).toContain(message);
  });

  it('applied over a CRD that still stores v1beta1 objects: refused by the API server (there is no conversion)', async () => {
    await removeCrd();
    // A v1beta1-only CRD of the same name (schema left open), and an object stored at v1beta1.
    const old = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: CRD_NAME },
      spec: {
        group: 'karpenter.hypershift.openshift.io',
        names: {
          kind: 'OpenshiftEC2NodeClass',
          listKind: 'OpenshiftEC2NodeClassList',
          plural: 'openshiftec2nodeclasses',
          singular: 'openshiftec2nodeclass',
        },
        scope: 'Cluster',
        versions: [
          {
            name: 'v1beta1',
            served: true,
            storage: true,
            schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
          },
        ],
      },
    };
    expect((await apply(old as KubeObj, HYPERSHIFT_MANAGER)).status).toBeLessThan(300);
    await established();
    await waitFor(
      'a v1beta1 object stored',
      async () =>
        (
          await kubeRequest(kc, 'POST', '/apis/karpenter.hypershift.openshift.io/v1beta1/openshiftec2nodeclasses', {
            body: { ...stored, apiVersion: 'karpenter.hypershift.openshift.io/v1beta1', metadata: { name: 'old' } },
          })
        ).status === 201,
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    const refused = await apply(crd, ADAPTER_FIELD_MANAGER);
    expect(refused.status).toBe(422);
    expect(refused.body.message).toMatch(/storedVersions/);
  });
});
