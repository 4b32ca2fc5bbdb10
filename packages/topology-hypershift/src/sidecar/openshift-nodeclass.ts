import {
  InvalidInputError,
  isInvalidInputError,
  jsonEqual,
  Names,
  Types,
  wholeTree,
  type CloudProvider,
  type ClusterStore,
  type EventRecorder,
  type KubeObject,
  type NodeClassSource,
  type OwnedPath,
  type Reconciler,
  type Result,
  type TypeRef,
  type Watch,
} from '@karpenter-operator/core';
import { HostedControlPlaneType, HcpAnnotations, type HostedControlPlane } from '../hcp.js';
import { ignitionSecretWatch, IgnitionLabels, mergeNodeClassTags, nodeClassInputsFromSecrets, type NodeClassInput } from '../ignition.js';
import { ADAPTER_FIELD_MANAGER, EC2NODECLASS_CRD } from './names.js';
import { HcpScope } from './hcp-scope.js';
import { controlPlaneUpgrade, releaseName, type ControlPlaneUpgrade } from './control-plane-release.js';
import { capacityReservationsStatus, translateV1Spec } from './nodeclass-v1.js';
import { isRecord } from '../records.js';

export const OPENSHIFT_NODECLASS_CONTROLLER = 'openshiftec2nodeclass.translate';

/**
 * HyperShift's NodeClass API, v1 (HyperShift removed v1beta1): the version its ignition generator reacts to. The
 * CRD is rendered from this project's own Go types for v1 (tools/cluster/openshiftec2nodeclass-api).
 */
export const OpenshiftEC2NodeClassType = {
  apiVersion: 'karpenter.hypershift.openshift.io/v1',
  kind: 'OpenshiftEC2NodeClass',
} as const satisfies TypeRef;
export const OPENSHIFT_NODECLASS_CRD = 'openshiftec2nodeclasses.karpenter.hypershift.openshift.io';
/** HyperShift's finalizer on an OpenshiftEC2NodeClass: its EC2NodeClass goes first. */
export const OPENSHIFT_NODECLASS_FINALIZER = 'hypershift.openshift.io/ec2-nodeclass-finalizer';

/** Condition reasons on an OpenshiftEC2NodeClass when its EC2NodeClass cannot be rendered. */
export const OpenshiftNodeClassReasons = {
  instanceProfileMissing: 'InstanceProfileMissing',
  ignitionPending: 'IgnitionSecretPending',
  invalid: 'InvalidOpenshiftEC2NodeClass',
  /** `Ready` False: a field of the OpenshiftEC2NodeClass cannot be translated; the message names it. */
  untranslatable: 'UntranslatableField',
  /** `Ready` Unknown: the EC2NodeClass has reported no `Ready` of its own yet. */
  awaitingEc2NodeClass: 'AwaitingEC2NodeClass',
  /** Event: the HostedCluster's resourceTags overrode tags the OpenshiftEC2NodeClass sets. */
  tagsOverridden: 'ResourceTagsOverride',
  /** Condition `UserDataUpToDate` False: the EC2NodeClass keeps its userData while the control plane upgrades. */
  controlPlaneUpgrading: 'ControlPlaneUpgrading',
  /** `Ready` False when `VersionResolved` is not True and gives no reason of its own (HyperShift's fallback reason). */
  versionResolutionFailed: 'ResolutionFailed',
  /** `AWSResourceTagConflict` True: a key of spec.tags the HostedCluster sets otherwise and does not let it override. */
  tagConflictDetected: 'TagConflictDetected',
  /** `AWSResourceTagConflict` False: no such key (overrides the HostedCluster allows are named). */
  noTagConflict: 'NoTagConflict',
} as const;

/** Condition on an OpenshiftEC2NodeClass, present (False) only while its new userData is held back. */
export const USERDATA_UP_TO_DATE_CONDITION = 'UserDataUpToDate';
/**
 * Condition HyperShift's ignition generator writes on an OpenshiftEC2NodeClass: whether the release its nodes
 * run was resolved (its `spec.version`, or the control plane's when it names none). Not ours: read, never written.
 */
export const VERSION_RESOLVED_CONDITION = 'VersionResolved';
/**
 * HyperShift's condition on an OpenshiftEC2NodeClass whose `spec.tags` meet the HostedCluster's
 * `resourceTags` (`tagConflictCondition`); absent when either has no tags.
 */
export const TAG_CONFLICT_CONDITION = 'AWSResourceTagConflict';

/**
 * The condition types the sidecar writes on an OpenshiftEC2NodeClass: the EC2NodeClass's own (Karpenter
 * v1.14's, mirrored) and `UserDataUpToDate`. Any other type there is someone else's (HyperShift's ignition
 * generator writes its own) and is kept as it is.
 */
const OWN_CONDITION_TYPES: ReadonlySet<string> = new Set([
  'Ready',
  'SubnetsReady',
  'SecurityGroupsReady',
  'AMIsReady',
  'InstanceProfileReady',
  'CapacityReservationsReady',
  'ValidationSucceeded',
  'PlacementGroupReady',
  USERDATA_UP_TO_DATE_CONDITION,
  TAG_CONFLICT_CONDITION,
]);

/**
 * The EC2NodeClass spec fields the translation decides, whatever the OpenshiftEC2NodeClass sets: the sidecar
 * owns each of them whole, at every depth. One the translation leaves out (the OpenshiftEC2NodeClass no longer
 * sets it) is removed from the EC2NodeClass, and so is a map key, list element or field inside one that it no
 * longer renders. The others (`role`, `context`, `cpuOptions`, `networkInterfaces`, `placementGroupSelector`,
 * `connectionTracking`, `ipPrefixCount`) are not mapped from an OpenshiftEC2NodeClass: whatever someone else set
 * there is left alone.
 */
export const TRANSLATED_SPEC_FIELDS = [
  'amiFamily',
  'amiSelectorTerms',
  'userData',
  'instanceProfile',
  'subnetSelectorTerms',
  'securityGroupSelectorTerms',
  'capacityReservationSelectorTerms',
  'tags',
  'associatePublicIPAddress',
  'blockDeviceMappings',
  'instanceStorePolicy',
  'detailedMonitoring',
  'metadataOptions',
  'kubelet',
] as const;

/** The owned paths of an EC2NodeClass write: every translated field, whole, in the desired and the current object. Pure. */
export function translatedSpecOwnedWhole(desired: KubeObject, current: KubeObject | undefined): OwnedPath[] {
  return TRANSLATED_SPEC_FIELDS.flatMap((f) => wholeTree(`spec.${f}`, desired, current));
}

/**
 * The subnets an OpenshiftEC2NodeClass that names none launches into, as HyperShift selects them: the private
 * subnets of the hosted cluster, those HyperShift tags with the internal load-balancer role and with the
 * cluster tag (any value: `owned` or `shared`; Karpenter reads `*` as "the key is present").
 */
export const defaultSubnetTerms = (infraID: string) => [
  { tags: { 'kubernetes.io/role/internal-elb': '1', [`kubernetes.io/cluster/${infraID}`]: '*' } },
];
/** The security groups an OpenshiftEC2NodeClass that names none uses, as HyperShift selects them: the infra ID's discovery tag. */
export const defaultSecurityGroupTerms = (infraID: string) => [{ tags: { 'karpenter.sh/discovery': infraID } }];

/**
 * OpenshiftEC2NodeClass `default` as HyperShift keeps it for an AutoNode HCP: the default subnets
 * (`defaultSubnetTerms`) and security groups (`defaultSecurityGroupTerms`), nothing else. In particular no
 * public IPs, whatever the HCP's `hypershift.openshift.io/aws-machine-public-ips` annotation says: the default
 * launches into private subnets, and nodes that need public IPs get an OpenshiftEC2NodeClass of their own.
 * Its spec is the sidecar's whole (`defaultNodeClassOwnedWhole`). Pure.
 */
export function renderDefaultOpenshiftNodeClass(hcp: HostedControlPlane): KubeObject {
  if (!hcp.infraID) throw new InvalidInputError('InvalidHostedControlPlane', hcp.object, 'spec.infraID', 'missing');
  const spec: Record<string, unknown> = {
    subnetSelectorTerms: defaultSubnetTerms(hcp.infraID),
    securityGroupSelectorTerms: defaultSecurityGroupTerms(hcp.infraID),
  };
  return { ...OpenshiftEC2NodeClassType, metadata: { name: Names.defaultNodeClass }, spec };
}

/**
 * The owned paths of a write of OpenshiftEC2NodeClass `default`: its whole spec, at every depth, so what an
 * earlier rendering set and this one does not (a selector tag, `associatePublicIPAddress`) goes. Pure.
 */
export function defaultNodeClassOwnedWhole(desired: KubeObject, current: KubeObject | undefined): OwnedPath[] {
  return wholeTree('spec', desired, current);
}

/** ConfigMap in the HCP namespace whose KubeletConfig HyperShift's ignition adds: nodes register with Karpenter's taint. */
export const KARPENTER_TAINT_CONFIGMAP = 'set-karpenter-taint';
/** ConfigMap in the HCP namespace listing the subnets the OpenshiftEC2NodeClasses resolved (HyperShift adds them to its VPC endpoint). */
export const KARPENTER_SUBNETS_CONFIGMAP = 'karpenter-subnets';

/** ConfigMap `set-karpenter-taint`, as HyperShift's ignition generator reads it (`data.config`, a KubeletConfig). Pure. */
export function renderTaintConfigMap(namespace: string): KubeObject {
  const config = [
    'apiVersion: machineconfiguration.openshift.io/v1',
    'kind: KubeletConfig',
    'metadata:',
    `  name: ${KARPENTER_TAINT_CONFIGMAP}`,
    'spec:',
    '  kubeletConfig:',
    '    registerWithTaints:',
    '      - key: "karpenter.sh/unregistered"',
    '        value: "true"',
    '        effect: "NoExecute"',
  ].join('\n');
  return { ...Types.ConfigMap, metadata: { name: KARPENTER_TAINT_CONFIGMAP, namespace }, data: { config } };
}

/**
 * ConfigMap `karpenter-subnets`: the sorted subnet IDs in the status of every OpenshiftEC2NodeClass not being
 * deleted, as a JSON list (`data.subnetIDs`), owned by the HCP; undefined when there are none (the ConfigMap
 * goes). Pure.
 */
export function renderSubnetsConfigMap(hcp: HostedControlPlane, nodeClasses: readonly KubeObject[]): KubeObject | undefined {
  const ids = new Set<string>();
  for (const nc of nodeClasses) {
    if (nc.metadata.deletionTimestamp) continue;
    const subnets = (nc.status as { subnets?: unknown } | undefined)?.subnets;
    if (!Array.isArray(subnets)) continue;
    for (const s of subnets) if (isRecord(s) && typeof s.id === 'string' && s.id) ids.add(s.id);
  }
  if (!ids.size) return undefined;
  return {
    ...Types.ConfigMap,
    metadata: {
      name: KARPENTER_SUBNETS_CONFIGMAP,
      namespace: hcp.ref.namespace,
      labels: { 'hypershift.openshift.io/managed-by': 'karpenter', 'hypershift.openshift.io/infra-id': hcp.infraID ?? '' },
      ownerReferences: [
        {
          apiVersion: HostedControlPlaneType.apiVersion,
          kind: HostedControlPlaneType.kind,
          name: hcp.ref.name,
          uid: hcp.ref.uid,
          controller: true,
        },
      ],
    },
    data: { subnetIDs: JSON.stringify([...ids].sort()) },
  };
}

export interface TranslationInput {
  hcp: HostedControlPlane;
  /** The OpenshiftEC2NodeClass as read from the guest (with uid). */
  openshift: KubeObject;
  /** Its ignition Secret's userData and AMIs (`nodeClassInputsFromSecrets`), once HyperShift has written it. */
  ignition: NodeClassInput | undefined;
  /** Renders an EC2NodeClass from a neutral source (the AWS provider). */
  render: CloudProvider['renderNodeClass'];
}

export type Translation = { ok: true; object: KubeObject; tagConflicts: string[] } | { ok: false; reason: string; message: string };

/**
 * OpenshiftEC2NodeClass v1 → EC2NodeClass of the same name, owned by it (controller owner reference, so the
 * guest's garbage collector follows a deletion). The provider renders the NodeClass from the ignition
 * Secret's userData and AMIs, the HCP's instance profile and the OpenshiftEC2NodeClass's selectors
 * (HyperShift's defaults, `defaultSubnetTerms` and `defaultSecurityGroupTerms`, when it names none); every
 * other v1 field is translated into Karpenter's terms (`translateV1Spec`): capacity reservation selectors,
 * `ipAddressAssociation` (`Public` → `associatePublicIPAddress: true`; `SubnetDefault` leaves it unset), block
 * devices (`volumeSizeGiB` → `volumeSize`, enums lowercased or made booleans), instance-store policy,
 * `monitoring` (→ `detailedMonitoring`), and `metadataOptions` and `kubelet` laid over the provider's defaults field by field. A field that cannot be
 * translated is refused (reason `UntranslatableField`, the message names it): nothing is rendered and the
 * last good EC2NodeClass stays. Tags, per tag: the HostedCluster's `resourceTags` win over the NodeClass's own on a
 * conflict unless that tag's `overridePolicy` is `Allow` (the keys whose NodeClass value was refused are
 * returned); keys Karpenter reserves are dropped by the renderer. The result is the whole of the
 * EC2NodeClass's `TRANSLATED_SPEC_FIELDS`: what it leaves out is removed from the EC2NodeClass.
 *
 * HyperShift's default carries no role and no instance profile, which Karpenter's EC2NodeClass requires one
 * of: without the HCP's default instance profile annotation nothing is rendered and the reason says so. Pure.
 */
export function translateOpenshiftNodeClass(input: TranslationInput): Translation {
  const { hcp, openshift } = input;
  const name = openshift.metadata.name;
  const spec = isRecord(openshift.spec) ? openshift.spec : {};
  if (!hcp.defaultInstanceProfile) {
    return {
      ok: false,
      reason: OpenshiftNodeClassReasons.instanceProfileMissing,
      message: `${hcp.object} has no metadata.annotations[${HcpAnnotations.defaultInstanceProfile}]: EC2NodeClass ${name} needs an instance profile (Karpenter accepts no NodeClass without a role or an instance profile)`,
    };
  }
  const v1 = translateV1Spec(spec);
  if (!v1.ok) {
    return {
      ok: false,
      reason: OpenshiftNodeClassReasons.untranslatable,
      message: `OpenshiftEC2NodeClass ${name} ${v1.field} cannot be translated into EC2NodeClass ${name}: ${v1.message}`,
    };
  }
  const translated = v1.spec;
  if (!input.ignition) {
    return {
      ok: false,
      reason: OpenshiftNodeClassReasons.ignitionPending,
      message: `waiting for HyperShift's ignition Secret for OpenshiftEC2NodeClass ${name}`,
    };
  }
  if (!hcp.infraID) {
    return { ok: false, reason: OpenshiftNodeClassReasons.invalid, message: `${hcp.object} spec.infraID: missing` };
  }
  const terms = (field: string, fallback: Array<Record<string, unknown>>): Array<Record<string, unknown>> => {
    const v = translated[field];
    return Array.isArray(v) && v.length ? (v as Array<Record<string, unknown>>) : fallback;
  };
  const ownTags = (translated.tags as Record<string, string> | undefined) ?? {};
  const { tags, blocked: kept } = resourceTagMerge(hcp, ownTags);
  const source: NodeClassSource = {
    userData: input.ignition.userData,
    imageSelectorTerms: input.ignition.amiSelectorTerms.map((t) => ({ ...t })),
    instanceProfile: hcp.defaultInstanceProfile,
    subnetSelectorTerms: terms('subnetSelectorTerms', defaultSubnetTerms(hcp.infraID)),
    securityGroupSelectorTerms: terms('securityGroupSelectorTerms', defaultSecurityGroupTerms(hcp.infraID)),
    tags: Object.entries(tags).map(([key, value]) => ({ key, value })),
  };
  const rendered = input.render(source).object;
  const out = structuredClone(rendered.spec) as Record<string, unknown>;
  // Whole fields: what the OpenshiftEC2NodeClass sets replaces the provider's rendering.
  for (const f of ['associatePublicIPAddress', 'capacityReservationSelectorTerms', 'instanceStorePolicy', 'detailedMonitoring'])
    if (translated[f] !== undefined) out[f] = translated[f];
  if (Array.isArray(translated.blockDeviceMappings) && translated.blockDeviceMappings.length)
    out.blockDeviceMappings = translated.blockDeviceMappings;
  // Field by field: what it sets wins, the provider's defaults fill the rest.
  for (const f of ['metadataOptions', 'kubelet']) {
    const own = translated[f] as Record<string, unknown> | undefined;
    if (own && Object.keys(own).length) out[f] = { ...(isRecord(out[f]) ? out[f] : {}), ...own };
  }
  return {
    ok: true,
    tagConflicts: kept,
    object: {
      apiVersion: rendered.apiVersion,
      kind: rendered.kind,
      metadata: {
        name,
        ownerReferences: [
          {
            apiVersion: OpenshiftEC2NodeClassType.apiVersion,
            kind: OpenshiftEC2NodeClassType.kind,
            name,
            uid: openshift.metadata.uid ?? '',
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      spec: out,
    },
  };
}

export interface IgnitionHold {
  /** What to render the EC2NodeClass from. */
  ignition: NodeClassInput | undefined;
  /** Set when the ignition Secret's userData was held back: the `UserDataUpToDate` False condition's reason and message. */
  held?: { reason: string; message: string };
}

/**
 * The ignition input EC2NodeClass `name` is rendered from, by HyperShift's upgrade rule: while the control
 * plane upgrades (`upgrade`, see `controlPlaneUpgrade`), an EC2NodeClass that already has userData keeps it,
 * with the AMIs it came with (one release's node configuration: a change to either would make Karpenter
 * replace the nodes before the control plane runs the release they would join). A new EC2NodeClass (none
 * yet, or without userData) gets the ignition Secret's; once the upgrade completed (`upgrade` undefined) the
 * Secret's apply to all. Pure.
 */
export function holdIgnitionDuringUpgrade(
  name: string,
  ignition: NodeClassInput | undefined,
  current: KubeObject | undefined,
  upgrade: ControlPlaneUpgrade | undefined,
): IgnitionHold {
  const spec = isRecord(current?.spec) ? current.spec : {};
  const userData = spec.userData;
  if (!upgrade || !ignition || typeof userData !== 'string' || !userData) return { ignition };
  const amis = Array.isArray(spec.amiSelectorTerms) ? (spec.amiSelectorTerms as Array<{ id: string }>) : ignition.amiSelectorTerms;
  if (userData === ignition.userData && jsonEqual(amis, ignition.amiSelectorTerms)) return { ignition };
  return {
    ignition: { userData, amiSelectorTerms: structuredClone(amis), source: `EC2NodeClass ${name}` },
    held: {
      reason: OpenshiftNodeClassReasons.controlPlaneUpgrading,
      message: `EC2NodeClass ${name} keeps its userData while the control plane upgrades from ${releaseName(upgrade.from)} to ${releaseName(upgrade.to)}: the new userData (${ignition.source}) is applied once the upgrade completes`,
    },
  };
}

/**
 * A NodeClass's own tags laid over the HostedCluster's `resourceTags`: the merged tags, the keys whose
 * HostedCluster value wins over the NodeClass's (`blocked`) and those whose HostedCluster tag has
 * `overridePolicy: Allow`, so the NodeClass's value is used (`allowed`). Pure.
 */
export function resourceTagMerge(
  hcp: HostedControlPlane,
  ownTags: Readonly<Record<string, string>>,
): { tags: Record<string, string>; blocked: string[]; allowed: string[] } {
  const { tags, conflicts } = mergeNodeClassTags(hcp.resourceTags, ownTags, hcp.resourceTagOverridesAllowed);
  const allowed = conflicts.filter((k) => hcp.resourceTagOverridesAllowed.includes(k));
  return { tags, blocked: conflicts.filter((k) => !allowed.includes(k)), allowed };
}

/**
 * `AWSResourceTagConflict` for an OpenshiftEC2NodeClass spec, as HyperShift reports it: True
 * (`TagConflictDetected`) while a key of `spec.tags` has another value in the HostedCluster's `resourceTags`
 * and that tag does not allow an override (the HostedCluster's value is used); False (`NoTagConflict`)
 * otherwise, naming the overrides the HostedCluster allows; undefined (no condition) when the HostedCluster
 * or the NodeClass has no tags, or `spec.tags` is not a map of strings (the translation refuses that). Pure.
 */
export function tagConflictCondition(
  hcp: HostedControlPlane,
  spec: Record<string, unknown>,
): { status: 'True' | 'False'; reason: string; message: string } | undefined {
  const own = spec.tags;
  if (!hcp.resourceTags.length || !isRecord(own) || !Object.keys(own).length) return undefined;
  if (Object.values(own).some((v) => typeof v !== 'string')) return undefined;
  const { blocked, allowed } = resourceTagMerge(hcp, own as Record<string, string>);
  const overrides = allowed.length
    ? `the HostedCluster lets spec.tags override ${allowed.join(', ')}, so this NodeClass's values are used`
    : '';
  if (!blocked.length) {
    return {
      status: 'False',
      reason: OpenshiftNodeClassReasons.noTagConflict,
      message: overrides || "no key of spec.tags has another value in the HostedCluster's resourceTags",
    };
  }
  return {
    status: 'True',
    reason: OpenshiftNodeClassReasons.tagConflictDetected,
    message:
      `spec.tags ${blocked.join(', ')}: the HostedCluster's resourceTags set other values and allow no override, so theirs are used` +
      (overrides ? `; ${overrides}` : ''),
  };
}

/**
 * The OpenshiftEC2NodeClass status that mirrors its EC2NodeClass's: resolved subnets and security groups and
 * Karpenter's conditions; with `problem`, a `Ready` False condition saying why there is no EC2NodeClass; with
 * `held`, a `UserDataUpToDate` False condition saying why its userData did not change; with `tagConflict`,
 * `AWSResourceTagConflict` as `tagConflictCondition` gives it (without, none).
 *
 * `Ready` is HyperShift's: whatever the EC2NodeClass says, it is False while HyperShift's ignition generator
 * reports `VersionResolved` other than True, with that condition's reason (`ResolutionFailed` when it has
 * none) and message. An OpenshiftEC2NodeClass without `VersionResolved` (the generator has not reached it
 * yet) keeps the EC2NodeClass's `Ready`. The capacity reservations Karpenter resolved are reported in v1's
 * terms (`capacityReservationsStatus`); `releaseImage` and `version` are the ignition generator's, never
 * written here. Pure.
 */
export function mirroredStatus(
  ec2: KubeObject | undefined,
  problem: { reason: string; message: string } | undefined,
  now: string,
  current: Record<string, unknown> | undefined,
  held?: { reason: string; message: string },
  tagConflict?: { status: 'True' | 'False'; reason: string; message: string },
): Record<string, unknown> {
  const status = isRecord(ec2?.status) ? ec2.status : {};
  const list = (v: unknown): Array<Record<string, unknown>> => (Array.isArray(v) ? v.filter(isRecord) : []);
  const pick = (o: Record<string, unknown>, keys: string[]) =>
    Object.fromEntries(keys.filter((k) => o[k] !== undefined).map((k) => [k, o[k]]));
  const subnets = list(status.subnets).map((s) => pick(s, ['id', 'zone', 'zoneID']));
  const securityGroups = list(status.securityGroups).map((s) => pick(s, ['id', 'name']));
  const capacityReservations = capacityReservationsStatus(status.capacityReservations);
  let conditions = list(status.conditions).map((c) =>
    pick(c, ['type', 'status', 'reason', 'message', 'lastTransitionTime', 'observedGeneration']),
  );
  // A condition of ours keeps its transition time while its status and reason last.
  const ownCondition = (type: string, status: string, why: { reason: string; message: string }) => {
    const was = list(current?.conditions).find((c) => c.type === type);
    const same = was && was.status === status && was.reason === why.reason;
    return {
      type,
      status,
      reason: why.reason,
      message: why.message,
      lastTransitionTime: same && typeof was.lastTransitionTime === 'string' ? was.lastTransitionTime : now,
    };
  };
  const falseCondition = (type: string, why: { reason: string; message: string }) => ownCondition(type, 'False', why);
  if (problem) conditions = [falseCondition('Ready', problem)];
  const version = list(current?.conditions).find((c) => c.type === VERSION_RESOLVED_CONDITION);
  if (version && version.status !== 'True') {
    const reason =
      typeof version.reason === 'string' && version.reason ? version.reason : OpenshiftNodeClassReasons.versionResolutionFailed;
    const detail =
      typeof version.message === 'string' && version.message
        ? version.message
        : `${VERSION_RESOLVED_CONDITION} is ${String(version.status)}`;
    conditions = [
      ...conditions.filter((c) => c.type !== 'Ready'),
      falseCondition('Ready', { reason, message: `Version resolution failed: ${detail}` }),
    ];
  }
  // `Ready` is always said (as HyperShift does): Unknown until the EC2NodeClass reports its own. v1's status
  // needs at least one property, and a status whose last list goes would otherwise be empty.
  if (!conditions.some((c) => c.type === 'Ready')) {
    const was = list(current?.conditions).find((c) => c.type === 'Ready');
    const same = was && was.status === 'Unknown' && was.reason === OpenshiftNodeClassReasons.awaitingEc2NodeClass;
    conditions = [
      {
        type: 'Ready',
        status: 'Unknown',
        reason: OpenshiftNodeClassReasons.awaitingEc2NodeClass,
        message: 'its EC2NodeClass has not reported Ready yet',
        lastTransitionTime: same && typeof was.lastTransitionTime === 'string' ? was.lastTransitionTime : now,
      },
      ...conditions,
    ];
  }
  if (held)
    conditions = [
      ...conditions.filter((c) => c.type !== USERDATA_UP_TO_DATE_CONDITION),
      falseCondition(USERDATA_UP_TO_DATE_CONDITION, held),
    ];
  if (tagConflict) conditions = [...conditions, ownCondition(TAG_CONFLICT_CONDITION, tagConflict.status, tagConflict)];
  // A merge patch replaces the list whole: conditions of other writers go back in as they are.
  const ours = new Set(conditions.map((c) => c.type));
  const theirs = list(current?.conditions).filter(
    (c) => typeof c.type === 'string' && !OWN_CONDITION_TYPES.has(c.type) && !ours.has(c.type),
  );
  conditions = [...conditions, ...theirs];
  // Merge patch: a list that is gone is sent as null, so it is removed rather than left behind.
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries({ subnets, securityGroups, capacityReservations, conditions }))
    out[k] = v.length ? v : current?.[k] !== undefined ? null : undefined;
  return Object.fromEntries(Object.entries(out).filter(([, v]) => v !== undefined));
}

export interface OpenshiftNodeClassDeps {
  management: ClusterStore;
  guest: ClusterStore;
  namespace: string;
  hcpName: string;
  events: EventRecorder;
  /** Renders EC2NodeClasses (the composition root passes the AWS provider). */
  cloud: Pick<CloudProvider, 'nodeClassType' | 'renderNodeClass'>;
  /** The OpenshiftEC2NodeClass CRD to serve in the guest (v1, rendered from this project's own Go types). */
  crd: KubeObject;
  /** Now, RFC 3339 (condition transition times). */
  now: () => string;
  /** Requeue while a CRD is not served yet or an EC2NodeClass is going away. Default 5 s. */
  retryMs?: number;
}

/**
 * `openshiftec2nodeclass.translate`: HyperShift's NodeClass contract in the guest. While AutoNode is on it
 * serves the OpenshiftEC2NodeClass CRD, keeps OpenshiftEC2NodeClass `default` and, in the HCP namespace, ConfigMaps
 * `set-karpenter-taint` and `karpenter-subnets`, and translates every
 * OpenshiftEC2NodeClass into the EC2NodeClass of the same name (`translateOpenshiftNodeClass`) once
 * HyperShift's ignition generator has written its Secret; its finalizer holds it until the EC2NodeClass is
 * gone, and its status mirrors the EC2NodeClass's. While the control plane upgrades, an EC2NodeClass keeps
 * its userData (`holdIgnitionDuringUpgrade`, condition `UserDataUpToDate` False on the OpenshiftEC2NodeClass).
 * Level-based: each key re-derives everything and writes only differences. Key: an OpenshiftEC2NodeClass
 * name, or `*` for all of them.
 */
export class OpenshiftNodeClassReconciler implements Reconciler {
  readonly name = OPENSHIFT_NODECLASS_CONTROLLER;
  readonly watches: Watch[];
  private readonly scope: HcpScope;
  private readonly lastProblem = new Map<string, string>();

  constructor(private readonly deps: OpenshiftNodeClassDeps) {
    this.scope = new HcpScope(deps);
    const crdNames = [EC2NODECLASS_CRD, OPENSHIFT_NODECLASS_CRD];
    this.watches = [
      { type: HostedControlPlaneType, cluster: 'control', namespace: deps.namespace, fieldSelector: `metadata.name=${deps.hcpName}` },
      ignitionSecretWatch(deps.namespace),
      {
        type: Types.ConfigMap,
        cluster: 'control',
        namespace: deps.namespace,
        fieldSelector: `metadata.name=${KARPENTER_TAINT_CONFIGMAP}`,
      },
      {
        type: Types.ConfigMap,
        cluster: 'control',
        namespace: deps.namespace,
        fieldSelector: `metadata.name=${KARPENTER_SUBNETS_CONFIGMAP}`,
      },
      { type: OpenshiftEC2NodeClassType },
      { type: deps.cloud.nodeClassType },
      ...crdNames.map((n) => ({ type: Types.CustomResourceDefinition, fieldSelector: `metadata.name=${n}` })),
    ];
  }

  keysFor(obj: { apiVersion: string; kind: string; metadata: { name: string } }): string[] {
    const t = this.deps.cloud.nodeClassType;
    if (obj.kind === OpenshiftEC2NodeClassType.kind && obj.apiVersion === OpenshiftEC2NodeClassType.apiVersion) return [obj.metadata.name];
    if (obj.kind === t.kind && obj.apiVersion === t.apiVersion) return [obj.metadata.name];
    return ['*'];
  }

  async resyncKeys(): Promise<string[]> {
    return ['*'];
  }

  reconcile(key: string): Promise<Result> {
    const { guest, management, namespace, hcpName } = this.deps;
    const retry = { requeueAfterMs: this.deps.retryMs ?? 5_000 };
    return this.scope.each(hcpName, async (hcp, hcpObject) => {
      if (!hcp.autoNode || hcp.deleting) {
        // The operator's teardown removes NodeClasses; an OpenshiftEC2NodeClass being deleted still gets
        // its EC2NodeClass removed and this finalizer released, so it never hangs.
        let deleting: KubeObject[] = [];
        try {
          deleting = (await guest.list(OpenshiftEC2NodeClassType)).filter(
            (o) => o.metadata.deletionTimestamp && (o.metadata.finalizers ?? []).includes(OPENSHIFT_NODECLASS_FINALIZER),
          );
        } catch {
          return {}; // the CRD is not served (any more): nothing of ours can be left
        }
        return this.translateEach(
          deleting.map((o) => o.metadata.name),
          (name) => this.translate(hcp, name, undefined),
        );
      }
      await guest.apply(this.deps.crd, { fieldManager: ADAPTER_FIELD_MANAGER, force: true });
      const served = await guest.get({ ...Types.CustomResourceDefinition, name: OPENSHIFT_NODECLASS_CRD });
      const ec2Crd = await guest.get({ ...Types.CustomResourceDefinition, name: EC2NODECLASS_CRD });
      if (!isEstablished(served) || !ec2Crd) return retry;
      try {
        const desired = renderDefaultOpenshiftNodeClass(hcp);
        const current = await guest.get({ ...OpenshiftEC2NodeClassType, name: Names.defaultNodeClass });
        const ownedWhole = defaultNodeClassOwnedWhole(desired, current);
        await guest.apply(desired, { fieldManager: ADAPTER_FIELD_MANAGER, force: true, ownedWhole });
      } catch (e) {
        if (!isInvalidInputError(e)) throw e;
        return {}; // the operator reports the HCP field
      }
      const secrets = await management.list(Types.Secret, { namespace, labels: { [IgnitionLabels.managedByKarpenter]: 'true' } });
      const inputs = nodeClassInputsFromSecrets(secrets, namespace, {
        onInvalid: (e) => this.report(hcp, `secret:${e.object}`, 'InvalidIgnitionSecret', e.message),
      });
      await management.apply(renderTaintConfigMap(namespace), { fieldManager: ADAPTER_FIELD_MANAGER, force: true });
      const upgrade = this.upgradeOf(hcp, hcpObject);
      const names = key === '*' ? (await guest.list(OpenshiftEC2NodeClassType)).map((o) => o.metadata.name) : [key];
      const result = await this.translateEach(names, (name) => this.translate(hcp, name, inputs.get(name), upgrade));
      const subnets = renderSubnetsConfigMap(hcp, await guest.list(OpenshiftEC2NodeClassType));
      if (subnets) await management.apply(subnets, { fieldManager: ADAPTER_FIELD_MANAGER, force: true });
      else {
        const ref = { ...Types.ConfigMap, namespace, name: KARPENTER_SUBNETS_CONFIGMAP };
        if (await management.get(ref)) await management.delete(ref);
      }
      return result;
    });
  }

  /** The control-plane upgrade in progress; a release status that cannot be read is reported and counts as none. */
  private upgradeOf(hcp: HostedControlPlane, hcpObject: KubeObject): ControlPlaneUpgrade | undefined {
    try {
      const upgrade = controlPlaneUpgrade(hcpObject);
      this.lastProblem.delete('hcp:release');
      return upgrade;
    } catch (e) {
      if (!isInvalidInputError(e)) throw e;
      this.report(hcp, 'hcp:release', e.reason, `${e.message} (userData is not held back during an upgrade until it is fixed)`);
      return undefined;
    }
  }

  private async translate(
    hcp: HostedControlPlane,
    name: string,
    ignition: NodeClassInput | undefined,
    upgrade?: ControlPlaneUpgrade,
  ): Promise<Result> {
    const { guest, cloud } = this.deps;
    const openshift = await guest.get({ ...OpenshiftEC2NodeClassType, name });
    const ec2Ref = { ...cloud.nodeClassType, name };
    if (!openshift) return {}; // its EC2NodeClass follows through the owner reference
    const ref = { ...OpenshiftEC2NodeClassType, name, uid: openshift.metadata.uid };
    const finalizers = openshift.metadata.finalizers ?? [];
    if (openshift.metadata.deletionTimestamp) {
      if (await guest.get(ec2Ref)) {
        await guest.delete(ec2Ref);
        return { requeueAfterMs: this.deps.retryMs ?? 5_000 };
      }
      if (finalizers.includes(OPENSHIFT_NODECLASS_FINALIZER))
        await guest.updateFinalizers(ref, { remove: [OPENSHIFT_NODECLASS_FINALIZER] });
      return {};
    }
    if (!finalizers.includes(OPENSHIFT_NODECLASS_FINALIZER)) await guest.updateFinalizers(ref, { add: [OPENSHIFT_NODECLASS_FINALIZER] });
    let ec2 = await guest.get(ec2Ref);
    const hold = holdIgnitionDuringUpgrade(name, ignition, ec2, upgrade);
    const t = translateOpenshiftNodeClass({ hcp, openshift, ignition: hold.ignition, render: (s) => cloud.renderNodeClass(s) });
    if (t.ok) {
      // The translation's output is the EC2NodeClass's spec for every field it maps: one the OpenshiftEC2NodeClass
      // (or the HostedCluster) no longer sets leaves the EC2NodeClass too, at any depth. Fields it does not map
      // stay as whoever set them left them (TRANSLATED_SPEC_FIELDS).
      const ownedWhole = translatedSpecOwnedWhole(t.object, ec2);
      ec2 = (await guest.apply(t.object, { fieldManager: ADAPTER_FIELD_MANAGER, force: true, ownedWhole })).object;
      if (t.tagConflicts.length)
        this.report(
          hcp,
          name,
          OpenshiftNodeClassReasons.tagsOverridden,
          `OpenshiftEC2NodeClass ${name} spec.tags: the HostedCluster's resourceTags win for ${t.tagConflicts.join(', ')}`,
        );
      else this.lastProblem.delete(name);
    } else if (t.reason !== OpenshiftNodeClassReasons.ignitionPending) {
      this.report(hcp, name, t.reason, t.message); // the last good EC2NodeClass stays
    }
    // As it is now (this reconcile may have written its finalizer), and written with that resourceVersion: a
    // condition another writer adds meanwhile is not overwritten (409, retried).
    const latest = (await guest.get(ref)) ?? openshift;
    const current = latest.status as Record<string, unknown> | undefined;
    const tagConflict = tagConflictCondition(hcp, isRecord(latest.spec) ? latest.spec : {});
    const status = mirroredStatus(ec2, t.ok ? undefined : t, this.deps.now(), current, t.ok ? hold.held : undefined, tagConflict);
    const rv = latest.metadata.resourceVersion;
    // v1's status has at least one property (MinProperties=1): with nothing to say yet (no EC2NodeClass status,
    // no problem), nothing is written, rather than an empty status the API server refuses.
    if (!Object.keys(status).length) return {};
    await guest.patchStatus(ref, status, rv ? { resourceVersion: rv } : {});
    return {};
  }

  /** Translates each name in turn; the result asks for the last requeue any of them asked for. */
  private async translateEach(names: string[], translate: (name: string) => Promise<Result>): Promise<Result> {
    let result: Result = {};
    for (const name of names) {
      const r = await translate(name);
      if (r.requeueAfterMs !== undefined) result = r;
    }
    return result;
  }

  /** One Warning event per distinct problem of `key` (not one per reconcile). */
  private report(hcp: HostedControlPlane, key: string, reason: string, message: string): void {
    if (this.lastProblem.get(key) === message) return;
    this.lastProblem.set(key, message);
    this.deps.events.record(hcp.ref, 'Warning', reason, message);
  }
}

function isEstablished(crd: KubeObject | undefined): boolean {
  const conditions = (crd?.status as { conditions?: Array<{ type?: string; status?: string }> } | undefined)?.conditions;
  return !!conditions?.some((c) => c.type === 'Established' && c.status === 'True');
}
