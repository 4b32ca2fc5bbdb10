import { InvalidInputError } from '../errors.js';
import type { ClusterFacts, ResourceTag } from '../model/cluster.js';
import type { KubeObject } from '../model/kube.js';

const OBJ = 'Infrastructure cluster';

/**
 * Decodes Infrastructure `cluster` (config.openshift.io/v1) into ClusterFacts. Missing platformStatus or
 * infrastructureName is an `InvalidInputError` naming the field. `overrides` are CLUSTER_NAME /
 * CLUSTER_ENDPOINT from the environment. Pure.
 */
export function decodeInfrastructure(
  infra: KubeObject | undefined,
  overrides: { clusterName?: string; clusterEndpoint?: string } = {},
): ClusterFacts {
  if (!infra) throw new InvalidInputError('InvalidInfrastructure', OBJ, 'metadata.name', 'not found');
  const status = asRecord(infra.status);
  const ps = asRecord(status?.platformStatus);
  const platform = ps?.type;
  if (typeof platform !== 'string' || platform === '') {
    throw new InvalidInputError('InvalidInfrastructure', OBJ, 'status.platformStatus.type', 'missing');
  }
  const infraName = overrides.clusterName ?? status?.infrastructureName;
  if (typeof infraName !== 'string' || infraName === '') {
    throw new InvalidInputError('InvalidInfrastructure', OBJ, 'status.infrastructureName', 'missing');
  }
  const api = overrides.clusterEndpoint ?? status?.apiServerInternalURI;
  if (typeof api !== 'string' || !/^https:\/\/[^\s/]+/.test(api)) {
    throw new InvalidInputError(
      'InvalidInfrastructure',
      OBJ,
      'status.apiServerInternalURI',
      `must be an https URL, got ${JSON.stringify(api ?? null)}`,
    );
  }
  // platformStatus.<type lower-cased>: aws, azure, gcp, baremetal, openstack, vsphere, ibmcloud...
  const platformKey = platform.toLowerCase();
  const specific = asRecord(ps?.[platformKey]);
  const region = specific?.region;
  if (region !== undefined && typeof region !== 'string') {
    throw new InvalidInputError('InvalidInfrastructure', OBJ, `status.platformStatus.${platformKey}.region`, 'must be a string');
  }
  const tags: ResourceTag[] = [];
  const rawTags = specific?.resourceTags;
  if (rawTags !== undefined) {
    if (!Array.isArray(rawTags)) {
      throw new InvalidInputError('InvalidInfrastructure', OBJ, `status.platformStatus.${platformKey}.resourceTags`, 'must be a list');
    }
    rawTags.forEach((t, i) => {
      const r = asRecord(t);
      if (typeof r?.key !== 'string' || typeof r.value !== 'string') {
        throw new InvalidInputError(
          'InvalidInfrastructure',
          OBJ,
          `status.platformStatus.${platformKey}.resourceTags[${i}]`,
          'needs string key and value',
        );
      }
      tags.push({ key: r.key, value: r.value });
    });
  }
  const facts: ClusterFacts = { platform, infrastructureName: infraName, apiServerInternalURL: api, resourceTags: tags };
  if (typeof region === 'string' && region) facts.region = region;
  if (typeof status?.controlPlaneTopology === 'string') facts.controlPlaneTopology = status.controlPlaneTopology;
  return facts;
}

function asRecord(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}
