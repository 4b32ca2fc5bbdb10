import { join } from 'node:path';
import { ApiException, CustomObjectsApi } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { installCrds } from '../../src/resources.js';
import { seededWorld, testCluster } from '../../src/test-env.js';

const GROUP = 'karpenter.k8s.aws';
const VERSION = 'v1';
const PLURAL = 'ec2nodeclasses';

function nodeClass(name: string, amiSelectorTerms: Array<Record<string, unknown>>) {
  const { facts } = seededWorld();
  return {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'EC2NodeClass',
    metadata: { name },
    spec: {
      amiFamily: 'Custom',
      amiSelectorTerms,
      instanceProfile: facts.instanceProfile,
      subnetSelectorTerms: facts.privateSubnets.map((s) => ({ tags: { Name: s.name } })),
      securityGroupSelectorTerms: [{ tags: { Name: facts.securityGroups.node } }],
    },
  };
}

async function createStatus(api: CustomObjectsApi, body: object): Promise<{ code: number; message: string }> {
  try {
    await api.createClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, body });
    return { code: 201, message: '' };
  } catch (e) {
    if (!(e instanceof ApiException)) throw e;
    const raw = typeof e.body === 'string' ? e.body : JSON.stringify(e.body);
    return { code: e.code, message: (JSON.parse(raw) as { message?: string }).message ?? raw };
  }
}

describe('the real EC2NodeClass CRD (karpenter-provider-aws) on the local cluster', () => {
  let api: CustomObjectsApi;
  beforeAll(async () => {
    const cluster = testCluster();
    await installCrds(cluster.kubeConfig(), [join(cluster.info.crdDir, 'karpenter', 'ec2nodeclasses.karpenter.k8s.aws.yaml')]);
    api = cluster.kubeConfig().makeApiClient(CustomObjectsApi);
  });

  it.each([
    { name: 'id alone', terms: [{ id: 'ami-0c5b2a1e9d3f47a61' }], code: 201, message: '' },
    {
      name: 'id with tags',
      terms: [{ id: 'ami-0c5b2a1e9d3f47a61', tags: { Name: 'rhcos' } }],
      code: 422,
      message: "'id' is mutually exclusive",
    },
    { name: 'empty term', terms: [{}], code: 422, message: 'expected at least one, got none' },
    { name: 'unsupported alias family', terms: [{ alias: 'rhcos@latest' }], code: 422, message: 'family is not supported' },
  ])('amiSelectorTerms $name → HTTP $code', async ({ name, terms, code, message }) => {
    const res = await createStatus(api, nodeClass(`cel-${name.replace(/\W+/g, '-')}`, terms));
    expect(res.code).toBe(code);
    expect(res.message).toContain(message);
  });
});
