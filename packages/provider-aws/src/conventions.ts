import type { Filter, Image, Instance, SecurityGroup, Subnet } from '@aws-sdk/client-ec2';
import {
  InvalidInputError,
  isInvalidInputError,
  Names,
  type DiscoveryInput,
  type DiscoverySource,
  type NodeClassSource,
} from '@karpenter-operator/core';
import { bootImage, DEFAULT_USER_DATA_SECRET_NAME, idFromArn, readUserData, sourceTags, type Architecture } from './discovery.js';
import { hasTag, tagValue } from './ec2-reads.js';
import type { InstanceProfileInfo } from './iam.js';
import { instanceIdFromProviderId } from './instances.js';

/**
 * EC2NodeClass `default` without worker MachineSets (user-provisioned clusters, or MachineSets scaled away
 * and deleted), by rules C1–C7 of docs/architecture.md ("Discovery without worker MachineSets"): each field
 * from the installer's naming conventions, else from the cluster's running worker instances, and every
 * value proven in EC2/IAM before it is used. Nothing is guessed.
 */

/** The cloud reads the conventions need; `AwsCloudProvider` serves them from EC2 and IAM. */
export interface ConventionReads {
  /** The live (pending/running) instances among these ids. */
  liveInstances(ids: string[]): Promise<Instance[]>;
  subnets(filters: Filter[]): Promise<Subnet[]>;
  securityGroups(filters: Filter[]): Promise<SecurityGroup[]>;
  images(ids: string[]): Promise<Image[]>;
  /** Undefined when IAM says there is no such instance profile. */
  instanceProfile(name: string): Promise<InstanceProfileInfo | undefined>;
}

/** The fields discovery reports a source for, in order, with the spec field each fills. */
export const DISCOVERY_FIELDS = {
  subnets: 'spec.subnetSelectorTerms',
  securityGroups: 'spec.securityGroupSelectorTerms',
  instanceProfile: 'spec.instanceProfile',
  ami: 'spec.amiSelectorTerms',
  userData: 'spec.userData',
  blockDevice: 'spec.blockDeviceMappings',
} as const;
export type DiscoveryField = keyof typeof DISCOVERY_FIELDS;

/** The names the installer gives a cluster's worker resources (C2, C3). */
export function conventionalNames(infraId: string) {
  return {
    /** 4.16 and later: every node gets both. */
    securityGroups: [`${infraId}-node`, `${infraId}-lb`],
    /** Before 4.16. */
    legacySecurityGroup: `${infraId}-worker-sg`,
    instanceProfile: `${infraId}-worker-profile`,
  };
}

export const INTERNAL_ELB_TAG = 'kubernetes.io/role/internal-elb';
export const ELB_TAG = 'kubernetes.io/role/elb';
const CLUSTER_TAG_VALUES = ['owned', 'shared'];
const NOTHING_TO_COPY = 'no running worker instance to copy from';

interface Piece {
  field: DiscoveryField;
  ambiguous: boolean;
  message: string;
}

export interface ConventionResult {
  source: NodeClassSource;
  sources: Array<{ field: DiscoveryField; source: DiscoverySource }>;
  /** Values not proven (offline), one line each. */
  unverified: string[];
}

const distinct = <T>(list: T[]): T[] => [...new Set(list)];
const sorted = (list: string[]): string[] => [...list].sort();

/**
 * The default NodeClass's source from conventions and worker instances. `reads` undefined: offline, the
 * conventional values unproven (listed in `unverified`). Throws `InvalidInputError` `DiscoveryIncomplete`
 * or `DiscoveryAmbiguous` naming every piece that could not be proven and what was tried.
 */
export async function nodeClassSourceFromConventions(input: DiscoveryInput, reads: ConventionReads | undefined): Promise<ConventionResult> {
  const infraId = input.facts.infrastructureName;
  const clusterTag = `kubernetes.io/cluster/${infraId}`;
  const names = conventionalNames(infraId);
  const pieces: Piece[] = [];
  const sources: ConventionResult['sources'] = [];
  const unverified: string[] = [];
  const missing = (field: DiscoveryField, message: string) => pieces.push({ field, ambiguous: false, message });
  const ambiguous = (field: DiscoveryField, message: string) => pieces.push({ field, ambiguous: true, message });
  const local = <T>(field: DiscoveryField, read: () => T): T | undefined => {
    try {
      return read();
    } catch (e) {
      if (!isInvalidInputError(e)) throw e;
      missing(field, e.message);
      return undefined;
    }
  };

  // C5: userData from the cluster's worker user-data Secret.
  const userData = local('userData', () =>
    readUserData(input, DEFAULT_USER_DATA_SECRET_NAME, {
      object: `EC2NodeClass ${Names.defaultNodeClass}`,
      field: DISCOVERY_FIELDS.userData,
    }),
  );
  // C4: the boot image of each architecture the cluster's nodes run (amd64 when none says).
  const nodes = input.nodes ?? [];
  const archs = sorted(distinct(nodes.flatMap((n) => (n.architecture === 'amd64' || n.architecture === 'arm64' ? [n.architecture] : []))));
  const amis = (archs.length ? archs : ['amd64']).flatMap((arch) => {
    const id = local('ami', () =>
      bootImage(
        input,
        arch as Architecture,
        { object: `EC2NodeClass ${Names.defaultNodeClass}`, field: DISCOVERY_FIELDS.ami },
        'DiscoveryIncomplete',
      ),
    );
    return id ? [{ id, arch }] : [];
  });

  let subnetIds: string[] | undefined;
  let groupTerms: Array<Record<string, unknown>> | undefined;
  let profile: string | undefined;

  if (!reads) {
    // Offline: the conventional values, unproven.
    groupTerms = names.securityGroups.map((name) => ({ name }));
    profile = names.instanceProfile;
    unverified.push(
      `${DISCOVERY_FIELDS.subnets}: subnets tagged ${clusterTag} and ${INTERNAL_ELB_TAG} (Conventions), not looked up`,
      `${DISCOVERY_FIELDS.securityGroups}: security groups named ${names.securityGroups.join(' and ')} (Conventions, 4.16 and later; ${names.legacySecurityGroup} before), not looked up`,
      `${DISCOVERY_FIELDS.instanceProfile}: instance profile ${profile} (Conventions), not looked up in IAM`,
      ...amis.map((a) => `${DISCOVERY_FIELDS.ami}: ${a.id} (Conventions, ${Names.bootImagesConfigMap} ${a.arch}), not looked up in EC2`),
    );
    sources.push(
      { field: 'subnets', source: 'Conventions' },
      { field: 'securityGroups', source: 'Conventions' },
      { field: 'instanceProfile', source: 'Conventions' },
    );
  } else {
    const idsOf = (role: 'control-plane' | 'worker') =>
      distinct(
        nodes.filter((n) => n.role === role).flatMap((n) => (n.providerID ? [instanceIdFromProviderId(n.providerID) ?? []].flat() : [])),
      );
    const cpIds = idsOf('control-plane');
    const workerIds = idsOf('worker');
    const [cp, workers] = await Promise.all([
      cpIds.length ? reads.liveInstances(cpIds) : Promise.resolve([]),
      workerIds.length ? reads.liveInstances(workerIds) : Promise.resolve([]),
    ]);
    workers.sort((a, b) => ((a.InstanceId ?? '') < (b.InstanceId ?? '') ? -1 : 1));
    const nothingToCopy =
      workerIds.length && !workers.length ? `none of the worker instances ${workerIds.join(', ')} is running` : NOTHING_TO_COPY;

    // C1: the VPC of the control-plane instances.
    const vpcs = sorted(distinct(cp.flatMap((i) => (i.VpcId ? [i.VpcId] : []))));
    const vpc = vpcs.length === 1 ? vpcs[0] : undefined;
    const noVpc = !cpIds.length
      ? 'no control-plane node with an AWS providerID to find the VPC from'
      : !cp.length
        ? `none of the control-plane instances ${cpIds.join(', ')} is running`
        : vpcs.length > 1
          ? `the control-plane instances are in several VPCs (${vpcs.join(', ')})`
          : undefined;
    if (vpcs.length > 1) ambiguous('subnets', noVpc!);

    // C1: subnets.
    let subnetsTried = noVpc ?? '';
    if (vpc) {
      const tagged = (
        await reads.subnets([
          { Name: 'vpc-id', Values: [vpc] },
          { Name: 'tag-key', Values: [clusterTag] },
        ])
      ).filter((s) => CLUSTER_TAG_VALUES.includes(tagValue(s.Tags, clusterTag) ?? ''));
      const internal = tagged.filter((s) => hasTag(s.Tags, INTERNAL_ELB_TAG));
      const priv = internal.length ? internal : tagged.filter((s) => !hasTag(s.Tags, ELB_TAG) && !s.MapPublicIpOnLaunch);
      if (priv.length) {
        subnetIds = sorted(priv.flatMap((s) => (s.SubnetId ? [s.SubnetId] : [])));
        sources.push({ field: 'subnets', source: 'Conventions' });
      } else {
        subnetsTried = `no private subnet tagged ${clusterTag} (owned or shared) in ${vpc}`;
        const others = (await reads.subnets([{ Name: 'vpc-id', Values: [vpc] }])).flatMap((s) => {
          const keys = (s.Tags ?? []).flatMap((t) => (t.Key?.startsWith('kubernetes.io/cluster/') && t.Key !== clusterTag ? [t.Key] : []));
          return keys.length ? [`${s.SubnetId} (${keys.join(', ')})`] : [];
        });
        if (others.length) subnetsTried += `; its subnets are tagged for other clusters: ${sorted(others).join(', ')}`;
      }
    }
    if (!subnetIds && vpcs.length <= 1) {
      const fromWorkers = workers.filter((w) => !vpc || w.VpcId === vpc);
      const workerVpcs = distinct(fromWorkers.flatMap((w) => (w.VpcId ? [w.VpcId] : [])));
      if (workerVpcs.length > 1)
        ambiguous('subnets', `${subnetsTried}, and the worker instances are in several VPCs (${sorted(workerVpcs).join(', ')})`);
      else if (fromWorkers.length) {
        subnetIds = sorted(distinct(fromWorkers.flatMap((w) => (w.SubnetId ? [w.SubnetId] : []))));
        sources.push({ field: 'subnets', source: 'WorkerInstances' });
      } else
        missing(
          'subnets',
          `${subnetsTried}, and ${vpc && workers.length ? `no running worker instance in ${vpc} to copy from` : nothingToCopy}`,
        );
    }

    // C2: security groups.
    let groupsTried = noVpc ?? '';
    if (vpc) {
      const found = await reads.securityGroups([
        { Name: 'vpc-id', Values: [vpc] },
        { Name: 'group-name', Values: [...names.securityGroups, names.legacySecurityGroup] },
      ]);
      const byName = new Map(found.flatMap((g) => (g.GroupName && g.GroupId ? [[g.GroupName, g.GroupId] as const] : [])));
      const current = names.securityGroups.map((n) => byName.get(n));
      const legacy = byName.get(names.legacySecurityGroup);
      const all = current.every((id) => id !== undefined);
      if (all && legacy) {
        ambiguous(
          'securityGroups',
          `several candidate security groups in ${vpc}: ${names.securityGroups.join(' and ')} (4.16 and later) and ${names.legacySecurityGroup} (before 4.16)`,
        );
      } else if (all || (legacy && current.every((id) => id === undefined))) {
        groupTerms = (all ? (current as string[]) : [legacy!]).map((id) => ({ id }));
        sources.push({ field: 'securityGroups', source: 'Conventions' });
      } else {
        const present = names.securityGroups.filter((_, i) => current[i] !== undefined);
        groupsTried = present.length
          ? `only ${present.join(', ')} of the security groups ${names.securityGroups.join(' and ')} in ${vpc}`
          : `no security group named ${names.securityGroups.join(' or ')} (nor ${names.legacySecurityGroup}) in ${vpc}`;
      }
    }
    if (!groupTerms && !pieces.some((p) => p.field === 'securityGroups')) {
      const sets = distinct(workers.map((w) => sorted((w.SecurityGroups ?? []).flatMap((g) => (g.GroupId ? [g.GroupId] : []))).join(', ')));
      if (sets.length > 1) {
        const each = workers.map(
          (w) => `${w.InstanceId}: ${sorted((w.SecurityGroups ?? []).flatMap((g) => (g.GroupId ? [g.GroupId] : []))).join(', ')}`,
        );
        ambiguous('securityGroups', `${groupsTried}, and the worker instances use different security groups (${each.join('; ')})`);
      } else if (sets.length === 1 && sets[0]) {
        groupTerms = sets[0].split(', ').map((id) => ({ id }));
        sources.push({ field: 'securityGroups', source: 'WorkerInstances' });
      } else missing('securityGroups', `${groupsTried}, and ${nothingToCopy}`);
    }

    // C3: instance profile.
    const conventional = await reads.instanceProfile(names.instanceProfile);
    if (conventional?.roles.length) {
      profile = conventional.name;
      sources.push({ field: 'instanceProfile', source: 'Conventions' });
    } else {
      const tried = conventional
        ? `instance profile ${names.instanceProfile} has no role`
        : `no instance profile named ${names.instanceProfile} (IAM GetInstanceProfile: NoSuchEntity)`;
      const fromWorkers = distinct(workers.flatMap((w) => [idFromArn(w.IamInstanceProfile?.Arn, 'instance-profile') ?? []].flat()));
      if (fromWorkers.length > 1) {
        ambiguous(
          'instanceProfile',
          `${tried}, and the worker instances use different instance profiles (${sorted(fromWorkers).join(', ')})`,
        );
      } else if (fromWorkers[0]) {
        const p = await reads.instanceProfile(fromWorkers[0]);
        if (p?.roles.length) {
          profile = p.name;
          sources.push({ field: 'instanceProfile', source: 'WorkerInstances' });
        } else if (p) missing('instanceProfile', `${tried}, and the worker instances' profile ${fromWorkers[0]} has no role`);
        else missing('instanceProfile', `${tried}, and the worker instances' profile ${fromWorkers[0]} is not in IAM`);
      } else missing('instanceProfile', `${tried}, and ${nothingToCopy}`);
    }

    // C4: the boot images exist and are available.
    if (amis.length) {
      const images = new Map((await reads.images(amis.map((a) => a.id))).map((i) => [i.ImageId, i]));
      for (const a of amis) {
        const img = images.get(a.id);
        if (!img) missing('ami', `AMI ${a.id} (${Names.bootImagesConfigMap}, ${a.arch} in ${input.facts.region}) not found in EC2`);
        else if (img.State && img.State !== 'available')
          missing('ami', `AMI ${a.id} (${Names.bootImagesConfigMap}, ${a.arch}) is ${img.State}`);
      }
    }
  }

  if (pieces.length) {
    pieces.sort((a, b) => Object.keys(DISCOVERY_FIELDS).indexOf(a.field) - Object.keys(DISCOVERY_FIELDS).indexOf(b.field));
    throw new InvalidInputError(
      pieces.some((p) => p.ambiguous) ? 'DiscoveryAmbiguous' : 'DiscoveryIncomplete',
      `EC2NodeClass ${Names.defaultNodeClass}`,
      distinct(pieces.map((p) => DISCOVERY_FIELDS[p.field])).join(', '),
      `no worker MachineSet in ${Names.machineApiNamespace}, and the conventions and worker instances do not prove it: ${pieces
        .map((p) => `${p.field}: ${p.ambiguous ? 'ambiguous: ' : ''}${p.message}`)
        .join('; ')}`,
    );
  }
  sources.push(
    { field: 'ami', source: 'Conventions' },
    { field: 'userData', source: 'Conventions' },
    // C6: the installer's default root volume.
    { field: 'blockDevice', source: 'Conventions' },
  );
  const order = Object.keys(DISCOVERY_FIELDS);
  sources.sort((a, b) => order.indexOf(a.field) - order.indexOf(b.field));
  return {
    source: {
      userData: userData!,
      imageSelectorTerms: amis.map((a) => ({ id: a.id })),
      instanceProfile: profile!,
      subnetSelectorTerms: subnetIds ? subnetIds.map((id) => ({ id })) : [{ tags: { [clusterTag]: '*', [INTERNAL_ELB_TAG]: '*' } }],
      securityGroupSelectorTerms: groupTerms!,
      // C7: the Infrastructure's resource tags.
      tags: sourceTags(input.facts.resourceTags, []),
      maxPods: input.maxPods,
    },
    sources,
    unverified,
  };
}
