import {
  InvalidInputError,
  Names,
  NON_NEGATIVE_QUANTITY_PATTERN,
  type Condition,
  type ObjectRef,
  type OperandPodOverrides,
  type ResourceTag,
  type TypeRef,
} from '@karpenter-operator/core';
import { isRecord } from './records.js';

/**
 * HostedControlPlane (hypershift.openshift.io/v1beta1) → a small validated projection. Field names follow
 * the HyperShift CRD in `generated/crds/hypershift/`.
 */

export const HostedControlPlaneType = {
  apiVersion: 'hypershift.openshift.io/v1beta1',
  kind: 'HostedControlPlane',
} as const satisfies TypeRef;

/** HCP annotations HyperShift sets for Karpenter (image overrides and the default instance profile). */
export const HcpAnnotations = {
  karpenterProviderAwsImage: 'hypershift.openshift.io/karpenter-provider-aws-image',
  karpenterOperatorImage: 'hypershift.openshift.io/karpenter-operator-image',
  defaultInstanceProfile: 'hypershift.openshift.io/aws-karpenter-default-instance-profile',
  /** Priority class of the HCP's control-plane pods, instead of `hypershift-control-plane`. */
  controlPlanePriorityClass: 'hypershift.openshift.io/control-plane-priority-class',
  /**
   * Prefix of request overrides: `<prefix>/<deployment>.<container>` = `cpu=50m,memory=100Mi`. For the
   * operand the deployment is `karpenter`.
   */
  resourceRequestOverridePrefix: 'resource-request-override.hypershift.openshift.io',
} as const;

/**
 * The one finalizer on the HCP, HyperShift's own: the operator's teardown (core, through
 * `HyperShiftTopology.teardownFinalizer`) adds it while AutoNode is on. AutoNode turned off, it removes it
 * once the operand is gone, leaving the user's NodePools and NodeClaims; the hosted cluster deleted, once
 * NodePools, NodeClaims and the operand are gone. HyperShift's hosted-cluster controller removes it itself
 * when AutoNode was disabled (it deletes the operator at once) or the guest API is down during deletion.
 */
export const HCP_KARPENTER_FINALIZER = 'hypershift.openshift.io/karpenter-finalizer';

export const ROLE_ARN_PATTERN = /^arn:(aws|aws-cn|aws-us-gov):iam::[0-9]{12}:role\/.+$/;
/** IAM instance profile names: 1-128 of `[\w+=,.@-]`. */
const INSTANCE_PROFILE_PATTERN = /^[\w+=,.@-]{1,128}$/;
/** An image reference, loosely: registry/repo[:tag][@digest] without whitespace. */
const IMAGE_PATTERN = /^[A-Za-z0-9][^\s]*$/;

export const HCP_INVALID_REASON = 'InvalidHostedControlPlane';

const AUTONODE = 'spec.autoNode';
const PROVISIONER = `${AUTONODE}.provisionerConfig`;
const KARPENTER = `${PROVISIONER}.karpenter`;

/** AutoNode as this operator serves it: Karpenter on AWS with a web-identity role. */
export interface AutoNodeConfig {
  provisioner: 'Karpenter';
  platform: 'AWS';
  roleARN: string;
}

export interface HostedControlPlane {
  /** `HostedControlPlane <ns>/<name>`, for messages. */
  object: string;
  ref: ObjectRef & { namespace: string; uid: string };
  /** `metadata.resourceVersion`: finalizer writes carry it, so they apply only over what was read. */
  resourceVersion?: string;
  generation: number;
  /** Set only when `spec.autoNode` asks for Karpenter on AWS. */
  autoNode: AutoNodeConfig | undefined;
  /** Why a present `spec.autoNode` is not served here (another provisioner or platform). */
  autoNodeIgnored?: string;
  /** `spec.infraID`; Karpenter's CLUSTER_NAME and the tag the default NodeClass selects on. */
  infraID?: string;
  /** `spec.clusterID`: the hosted cluster's ID, the `_id` label HyperShift puts on its control plane's metrics. */
  clusterID?: string;
  /** `spec.platform.type`. */
  platformType?: string;
  /** `spec.platform.aws.region`. */
  region?: string;
  /** `spec.platform.aws.resourceTags`. */
  resourceTags: ResourceTag[];
  /** Keys of those tags whose `overridePolicy` is `Allow`: a NodeClass's own value wins for them. */
  resourceTagOverridesAllowed: string[];
  images: { karpenterProviderAws?: string; karpenterOperator?: string };
  /**
   * What HyperShift applies to every control-plane pod of this HCP, for the operand's: `spec.nodeSelector`,
   * `spec.tolerations` (added), `spec.labels`, the priority-class annotation, and the request overrides of
   * Deployment `karpenter`.
   */
  podOverrides: OperandPodOverrides;
  defaultInstanceProfile?: string;
  deleting: boolean;
  deletionRequestedAtMs?: number;
  finalizers: string[];
  /** `status.conditions` as found (entries that are not objects dropped). */
  conditions: Condition[];
  /**
   * `status.controlPlaneVersion.desired.version`: the version of the control-plane release HyperShift rolls
   * out (its control-plane operator writes it from the release image it deploys; absent before HyperShift
   * has done so, and in HyperShift versions older than that field).
   */
  controlPlaneVersion?: string;
}

/**
 * Decodes a HostedControlPlane. Absent optional parts decode to absent; a part of the wrong shape or an
 * invalid value throws `InvalidInputError` (reason `InvalidHostedControlPlane`) naming the field. Pure.
 *
 * AutoNode is enabled only for `provisionerConfig.name: Karpenter` with `karpenter.platform: AWS`; a
 * missing or empty name means "off" (HyperShift zeroes the struct to disable), another provisioner or
 * platform is "not ours" (`autoNodeIgnored`). Karpenter on AWS needs a role ARN of the IAM role pattern.
 */
export function decodeHostedControlPlane(obj: unknown): HostedControlPlane {
  const meta = isRecord(obj) ? obj.metadata : undefined;
  const rawName = isRecord(meta) ? meta.name : undefined;
  const rawNs = isRecord(meta) ? meta.namespace : undefined;
  const name = typeof rawName === 'string' ? rawName : '';
  const namespace = typeof rawNs === 'string' ? rawNs : '';
  const object = `HostedControlPlane ${namespace}/${name}`;
  const fail = (field: string, detail: string): never => {
    throw new InvalidInputError(HCP_INVALID_REASON, object, field, detail);
  };

  if (!isRecord(obj)) return fail('metadata', 'not an object');
  if (!isRecord(meta)) return fail('metadata', 'must be an object');
  if (!name) fail('metadata.name', 'missing');
  if (!namespace) fail('metadata.namespace', 'missing (HostedControlPlane is namespaced)');
  const uid = meta.uid;
  if (typeof uid !== 'string' || !uid) return fail('metadata.uid', 'missing');
  const generation = meta.generation ?? 1;
  if (typeof generation !== 'number' || !Number.isInteger(generation) || generation < 0) {
    return fail('metadata.generation', 'must be a non-negative integer');
  }
  const finalizers = meta.finalizers ?? [];
  if (!Array.isArray(finalizers) || !finalizers.every((f) => typeof f === 'string')) {
    return fail('metadata.finalizers', 'must be a list of strings');
  }
  const deletionTimestamp = meta.deletionTimestamp;
  if (deletionTimestamp !== undefined && deletionTimestamp !== null && typeof deletionTimestamp !== 'string') {
    fail('metadata.deletionTimestamp', 'must be a timestamp string');
  }
  const annotations = decodeStringMap(meta.annotations, 'metadata.annotations', fail);

  const spec = obj.spec ?? {};
  if (!isRecord(spec)) return fail('spec', 'must be an object');
  const infraID = optionalString(spec.infraID, 'spec.infraID', fail);
  const clusterID = optionalString(spec.clusterID, 'spec.clusterID', fail);
  const platform = spec.platform ?? {};
  if (!isRecord(platform)) return fail('spec.platform', 'must be an object');
  const platformType = optionalString(platform.type, 'spec.platform.type', fail);
  const aws = platform.aws ?? {};
  if (!isRecord(aws)) return fail('spec.platform.aws', 'must be an object');
  const region = optionalString(aws.region, 'spec.platform.aws.region', fail);
  const { tags: resourceTags, overridable: resourceTagOverridesAllowed } = decodeTags(aws.resourceTags, fail);

  const { autoNode, ignored } = decodeAutoNode(spec.autoNode, fail);

  const hcp: HostedControlPlane = {
    object,
    ref: { ...HostedControlPlaneType, namespace, name, uid },
    generation,
    autoNode,
    resourceTags,
    resourceTagOverridesAllowed,
    images: {},
    podOverrides: decodePodOverrides(spec, annotations, fail),
    deleting: typeof deletionTimestamp === 'string' && deletionTimestamp !== '',
    finalizers: finalizers as string[],
    conditions: decodeConditions(obj.status),
  };
  if (typeof meta.resourceVersion === 'string' && meta.resourceVersion) hcp.resourceVersion = meta.resourceVersion;
  const controlPlaneVersion = decodeControlPlaneVersion(obj.status, fail);
  if (controlPlaneVersion) hcp.controlPlaneVersion = controlPlaneVersion;
  if (ignored) hcp.autoNodeIgnored = ignored;
  if (infraID) hcp.infraID = infraID;
  if (clusterID) hcp.clusterID = clusterID;
  if (platformType) hcp.platformType = platformType;
  if (region) hcp.region = region;
  if (hcp.deleting) {
    const t = Date.parse(deletionTimestamp as string);
    if (!Number.isNaN(t)) hcp.deletionRequestedAtMs = t;
  }

  const image = (key: string): string | undefined => {
    const v = annotations[key];
    if (v === undefined) return undefined;
    if (!IMAGE_PATTERN.test(v)) fail(`metadata.annotations[${key}]`, `${JSON.stringify(v)} is not an image reference`);
    return v;
  };
  const providerImage = image(HcpAnnotations.karpenterProviderAwsImage);
  const operatorImage = image(HcpAnnotations.karpenterOperatorImage);
  if (providerImage) hcp.images.karpenterProviderAws = providerImage;
  if (operatorImage) hcp.images.karpenterOperator = operatorImage;
  const profile = annotations[HcpAnnotations.defaultInstanceProfile];
  if (profile !== undefined) {
    if (!INSTANCE_PROFILE_PATTERN.test(profile)) {
      fail(
        `metadata.annotations[${HcpAnnotations.defaultInstanceProfile}]`,
        `${JSON.stringify(profile)} is not an IAM instance profile name`,
      );
    }
    hcp.defaultInstanceProfile = profile;
  }
  return hcp;
}

type Fail = (field: string, detail: string) => never;

/** A request: a Kubernetes quantity without a sign (`10m`, `1Gi`, `0.5`), as the Karpenter CRD takes them. */
const REQUEST_QUANTITY = new RegExp(NON_NEGATIVE_QUANTITY_PATTERN);

function decodePodOverrides(spec: Record<string, unknown>, annotations: Record<string, string>, fail: Fail): OperandPodOverrides {
  const out: OperandPodOverrides = {};
  const nodeSelector = decodeStringMap(spec.nodeSelector, 'spec.nodeSelector', fail);
  if (Object.keys(nodeSelector).length) out.nodeSelector = { ...nodeSelector };
  const labels = decodeStringMap(spec.labels, 'spec.labels', fail);
  if (Object.keys(labels).length) out.labels = { ...labels };
  const tolerations = spec.tolerations;
  if (tolerations !== undefined && tolerations !== null) {
    if (!Array.isArray(tolerations)) return fail('spec.tolerations', 'must be a list');
    out.tolerations = tolerations.map((t, i) => {
      const field = `spec.tolerations[${i}]`;
      if (!isRecord(t)) return fail(field, 'must be an object');
      for (const k of ['key', 'operator', 'value', 'effect'])
        if (t[k] !== undefined && typeof t[k] !== 'string') fail(`${field}.${k}`, 'must be a string');
      if (t.tolerationSeconds !== undefined && t.tolerationSeconds !== null && !Number.isInteger(t.tolerationSeconds))
        fail(`${field}.tolerationSeconds`, 'must be an integer');
      return { ...t };
    });
    if (!out.tolerations.length) delete out.tolerations;
  }
  const priority = annotations[HcpAnnotations.controlPlanePriorityClass];
  if (priority) out.priorityClassName = priority;
  const prefix = `${HcpAnnotations.resourceRequestOverridePrefix}/${Names.operandDeployment}.`;
  for (const [key, value] of Object.entries(annotations)) {
    if (!key.startsWith(prefix)) continue;
    const container = key.slice(prefix.length);
    const field = `metadata.annotations[${key}]`;
    const requests: Record<string, string> = {};
    for (const part of value.split(',')) {
      const eq = part.indexOf('=');
      const [name, quantity] = eq > 0 ? [part.slice(0, eq).trim(), part.slice(eq + 1).trim()] : ['', ''];
      if (!name || !REQUEST_QUANTITY.test(quantity))
        fail(field, `${JSON.stringify(part)} is not resource=quantity (e.g. cpu=50m,memory=100Mi)`);
      requests[name] = quantity;
    }
    (out.requests ??= {})[container] = requests;
  }
  return out;
}

function decodeAutoNode(raw: unknown, fail: Fail): { autoNode: AutoNodeConfig | undefined; ignored?: string } {
  if (raw === undefined || raw === null) return { autoNode: undefined };
  if (!isRecord(raw)) return fail(AUTONODE, 'must be an object');
  const pc = raw.provisionerConfig;
  if (pc === undefined || pc === null) return { autoNode: undefined };
  if (!isRecord(pc)) return fail(PROVISIONER, 'must be an object');
  const name = pc.name;
  if (name === undefined || name === null || name === '') return { autoNode: undefined };
  if (typeof name !== 'string') return fail(`${PROVISIONER}.name`, 'must be a string');
  if (name !== 'Karpenter') return { autoNode: undefined, ignored: `provisioner ${JSON.stringify(name)} is not Karpenter` };
  const k = pc.karpenter;
  if (!isRecord(k)) return fail(KARPENTER, k === undefined || k === null ? 'required for provisioner Karpenter' : 'must be an object');
  const platform = k.platform;
  if (typeof platform !== 'string' || platform === '') {
    return fail(`${KARPENTER}.platform`, platform === undefined || platform === null ? 'missing' : 'must be a non-empty string');
  }
  if (platform !== 'AWS') return { autoNode: undefined, ignored: `Karpenter platform ${JSON.stringify(platform)} is not AWS` };
  const aws = k.aws;
  if (!isRecord(aws))
    return fail(`${KARPENTER}.aws`, aws === undefined || aws === null ? 'required for platform AWS' : 'must be an object');
  const roleARN = aws.roleARN;
  if (typeof roleARN !== 'string' || !ROLE_ARN_PATTERN.test(roleARN)) {
    return fail(`${KARPENTER}.aws.roleARN`, `must match ${ROLE_ARN_PATTERN.source}, got ${JSON.stringify(roleARN ?? null)}`);
  }
  return { autoNode: { provisioner: 'Karpenter', platform: 'AWS', roleARN } };
}

function optionalString(v: unknown, field: string, fail: Fail): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') return fail(field, 'must be a string');
  return v;
}

function decodeStringMap(v: unknown, field: string, fail: Fail): Record<string, string> {
  if (v === undefined || v === null) return {};
  if (!isRecord(v)) return fail(field, 'must be a map of strings');
  for (const [k, val] of Object.entries(v)) {
    if (typeof val !== 'string') fail(`${field}[${k}]`, 'must be a string');
  }
  return v as Record<string, string>;
}

function decodeTags(v: unknown, fail: Fail): { tags: ResourceTag[]; overridable: string[] } {
  const field = 'spec.platform.aws.resourceTags';
  if (v === undefined || v === null) return { tags: [], overridable: [] };
  if (!Array.isArray(v)) return fail(field, 'must be a list');
  const overridable: string[] = [];
  const tags = v.map((t, i) => {
    if (!isRecord(t) || typeof t.key !== 'string' || typeof t.value !== 'string' || !t.key) {
      return fail(`${field}[${i}]`, 'needs a non-empty string key and a string value');
    }
    const policy = t.overridePolicy;
    if (policy !== undefined && typeof policy !== 'string') return fail(`${field}[${i}].overridePolicy`, 'must be a string');
    if (policy === 'Allow') overridable.push(t.key);
    return { key: t.key, value: t.value };
  });
  return { tags, overridable };
}

/** `status.controlPlaneVersion.desired.version`, absent when any part is; a part of the wrong shape fails naming it. */
function decodeControlPlaneVersion(status: unknown, fail: Fail): string | undefined {
  const cpv = isRecord(status) ? status.controlPlaneVersion : undefined;
  if (cpv === undefined || cpv === null) return undefined;
  if (!isRecord(cpv)) return fail('status.controlPlaneVersion', 'must be an object');
  const desired = cpv.desired;
  if (desired === undefined || desired === null) return undefined;
  if (!isRecord(desired)) return fail('status.controlPlaneVersion.desired', 'must be an object');
  return optionalString(desired.version, 'status.controlPlaneVersion.desired.version', fail);
}

function decodeConditions(status: unknown): Condition[] {
  const list = isRecord(status) ? status.conditions : undefined;
  if (!Array.isArray(list)) return [];
  // Foreign conditions are kept as found: the topology writes the list back with only its own entry changed.
  return list.filter((c): c is Condition => isRecord(c) && typeof c.type === 'string');
}
