import type { EC2Client, Instance } from '@aws-sdk/client-ec2';
import type { ClusterFacts, InstanceInfo } from '@karpenter-operator/core';
import { chunks, ClusterOwnedTagValue, clusterTagKey, describeInstancesWhere } from './ec2-reads.js';
import { EC2_FILTER_VALUES_MAX, EC2_LIVE_INSTANCE_STATES } from './names.js';

/** `aws:///us-east-1a/i-0abc` (or `aws:///i-0abc`) → `i-0abc`; undefined for other clouds. Pure. */
export function instanceIdFromProviderId(providerID: string): string | undefined {
  const m = /^aws:\/\/\/(?:[a-z0-9-]+\/)?(i-[0-9a-f]+)$/.exec(providerID.trim());
  return m?.[1];
}

/**
 * The live (`pending|running`) instances among `instanceIds`, as EC2 describes them: batched
 * `EC2_FILTER_VALUES_MAX` ids a call, paginated; unknown IDs are simply absent.
 */
export async function liveInstances(ec2: EC2Client, instanceIds: string[]): Promise<Instance[]> {
  const ids = [...new Set(instanceIds)];
  const instances: Instance[] = [];
  for (const chunk of chunks(ids, EC2_FILTER_VALUES_MAX)) {
    instances.push(
      ...(await describeInstancesWhere(ec2, [
        { Name: 'instance-id', Values: chunk },
        { Name: 'instance-state-name', Values: [...EC2_LIVE_INSTANCE_STATES] },
      ])),
    );
  }
  return instances.filter((i) => i.InstanceId);
}

/**
 * One batched DescribeInstances (filters `instance-id`, state `pending|running`), paginated; unknown
 * IDs are simply absent. `ownedByCluster`: the instance carries the cluster tag with the value `owned`.
 */
export async function describeInstances(ec2: EC2Client, instanceIds: string[], facts: ClusterFacts): Promise<InstanceInfo[]> {
  if (!instanceIds.length) return [];
  const clusterTag = clusterTagKey(facts);
  return (await liveInstances(ec2, instanceIds)).map((i) => toInstanceInfo(i, clusterTag));
}

function toInstanceInfo(i: Instance, clusterTag: string): InstanceInfo {
  const priv = new Set<string>();
  const pub = new Set<string>();
  if (i.PrivateIpAddress) priv.add(i.PrivateIpAddress);
  if (i.PublicIpAddress) pub.add(i.PublicIpAddress);
  for (const ni of i.NetworkInterfaces ?? []) {
    if (ni.PrivateIpAddress) priv.add(ni.PrivateIpAddress);
    if (ni.Association?.PublicIp) pub.add(ni.Association.PublicIp);
    for (const a of ni.PrivateIpAddresses ?? []) {
      if (a.PrivateIpAddress) priv.add(a.PrivateIpAddress);
      if (a.Association?.PublicIp) pub.add(a.Association.PublicIp);
    }
  }
  const info: InstanceInfo = {
    instanceId: i.InstanceId!,
    live: EC2_LIVE_INSTANCE_STATES.includes(i.State?.Name ?? ''),
    privateIpAddresses: [...priv],
    publicIpAddresses: [...pub],
    ownedByCluster: (i.Tags ?? []).some((t) => t.Key === clusterTag && t.Value === ClusterOwnedTagValue),
  };
  if (i.PrivateDnsName) info.privateDnsName = i.PrivateDnsName;
  if (i.PublicDnsName) info.publicDnsName = i.PublicDnsName;
  return info;
}
