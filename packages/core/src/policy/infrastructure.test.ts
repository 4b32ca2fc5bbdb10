import { describe, expect, it } from 'vitest';
import { isInvalidInputError } from '../errors.js';
import type { KubeObject } from '../model/kube.js';
import { decodeInfrastructure } from './infrastructure.js';

const anInfrastructure = (status: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: 'config.openshift.io/v1',
  kind: 'Infrastructure',
  metadata: { name: 'cluster' },
  status: {
    infrastructureName: 'demo-x7k2p',
    apiServerInternalURI: 'https://api-int.demo.example.com:6443',
    controlPlaneTopology: 'HighlyAvailable',
    platformStatus: { type: 'AWS', aws: { region: 'us-east-1', resourceTags: [{ key: 'team', value: 'infra' }] } },
    ...status,
  },
});

describe('decodeInfrastructure', () => {
  it('decodes AWS facts', () => {
    expect(decodeInfrastructure(anInfrastructure())).toEqual({
      platform: 'AWS',
      region: 'us-east-1',
      infrastructureName: 'demo-x7k2p',
      apiServerInternalURL: 'https://api-int.demo.example.com:6443',
      controlPlaneTopology: 'HighlyAvailable',
      resourceTags: [{ key: 'team', value: 'infra' }],
    });
  });

  it('applies CLUSTER_NAME / CLUSTER_ENDPOINT overrides', () => {
    const f = decodeInfrastructure(anInfrastructure(), { clusterName: 'other', clusterEndpoint: 'https://x:6443' });
    expect([f.infrastructureName, f.apiServerInternalURL]).toEqual(['other', 'https://x:6443']);
  });

  it.each([
    { name: 'absent', obj: undefined, field: 'metadata.name' },
    { name: 'no platformStatus', obj: anInfrastructure({ platformStatus: undefined }), field: 'status.platformStatus.type' },
    { name: 'empty platform type', obj: anInfrastructure({ platformStatus: { type: '' } }), field: 'status.platformStatus.type' },
    { name: 'no infra ID', obj: anInfrastructure({ infrastructureName: undefined }), field: 'status.infrastructureName' },
    { name: 'API URL not https', obj: anInfrastructure({ apiServerInternalURI: 'http://x' }), field: 'status.apiServerInternalURI' },
    {
      name: 'region not a string',
      obj: anInfrastructure({ platformStatus: { type: 'AWS', aws: { region: 7 } } }),
      field: 'status.platformStatus.aws.region',
    },
    {
      name: 'tags not a list',
      obj: anInfrastructure({ platformStatus: { type: 'AWS', aws: { resourceTags: {} } } }),
      field: 'status.platformStatus.aws.resourceTags',
    },
    {
      name: 'tag without value',
      obj: anInfrastructure({ platformStatus: { type: 'AWS', aws: { resourceTags: [{ key: 'a' }] } } }),
      field: 'status.platformStatus.aws.resourceTags[0]',
    },
  ])('rejects $name naming $field', ({ obj, field }) => {
    let err: unknown;
    try {
      decodeInfrastructure(obj);
    } catch (e) {
      err = e;
    }
    expect(isInvalidInputError(err)).toBe(true);
    expect((err as { field: string }).field).toBe(field);
    expect((err as Error).message).toContain('Infrastructure cluster');
  });
});
