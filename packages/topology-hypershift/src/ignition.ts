import { InvalidInputError, Types, type KubeObject, type ResourceTag, type Watch } from '@karpenter-operator/core';

/**
 * The ignition Secret contract between HyperShift's ignition generator and this project: which Secrets bind
 * which NodeClass, and what each gives it (userData, AMIs).
 */

export const IgnitionLabels = {
  /** On every Secret the generator writes for Karpenter. */
  managedByKarpenter: 'hypershift.openshift.io/managed-by-karpenter',
  /** amd64 AMI of the release. */
  ami: 'hypershift.openshift.io/ami',
  arm64Ami: 'hypershift.openshift.io/ami-arm64',
} as const;

export const IgnitionAnnotations = {
  /** `<ns>/<nodeclass>-karpenter`: binds a Secret to a NodeClass. */
  nodePool: 'hypershift.openshift.io/nodePool',
  /** `"true"` on token Secrets, which carry no userData. */
  ignitionConfig: 'hypershift.openshift.io/ignition-config',
} as const;

export const IGNITION_NODEPOOL_SUFFIX = '-karpenter';
export const IGNITION_INVALID_REASON = 'InvalidIgnitionSecret';
export const IGNITION_MISSING_REASON = 'IgnitionSecretMissing';

/** What an ignition Secret gives a NodeClass. */
export interface NodeClassInput {
  /** The pointer config, verbatim (the Secret's `data.value`, base64-decoded as every Secret value is). */
  userData: string;
  /** amd64 then arm64, `{ id }` each. */
  amiSelectorTerms: Array<{ id: string }>;
  /** `Secret <ns>/<name>` the input came from, for messages. */
  source: string;
}

export interface NodeClassInputOptions {
  /** The `<ns>` part the nodePool annotation must carry. Default: `namespace`. */
  nodePoolNamespace?: string;
  /**
   * Called for a contract Secret that cannot be used; the Secret is then skipped. Without it the first
   * such Secret throws, so that one broken Secret is never silently ignored.
   */
  onInvalid?: (error: InvalidInputError) => void;
}

/** The informer a controller of the contract needs: labelled Secrets in the HCP namespace. */
export const ignitionSecretWatch = (namespace: string): Watch => ({
  type: Types.Secret,
  cluster: 'control',
  namespace,
  labels: { [IgnitionLabels.managedByKarpenter]: 'true' },
});

/** The nodePool annotation value that binds a Secret to `nodeClass`. */
export const nodePoolAnnotationFor = (namespace: string, nodeClass: string): string =>
  `${namespace}/${nodeClass}${IGNITION_NODEPOOL_SUFFIX}`;

const AMI_ID = /^ami-[0-9a-z]+$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Ignition Secrets → NodeClass inputs, keyed by NodeClass name. Pure.
 *
 * 1. Only Secrets in `namespace` labelled `managed-by-karpenter: "true"` take part.
 * 2. Token Secrets (`ignition-config: "true"`) are skipped.
 * 3. The nodePool annotation `<ns>/<nodeclass>-karpenter` names the NodeClass; the Secret name does not.
 * 4. `data.value` is the userData, byte for byte.
 * 5. AMI labels become `amiSelectorTerms` (`ami` then `ami-arm64`); at least one is required.
 * 6. When several Secrets bind one NodeClass (rotation), the newest (creationTimestamp, then name) wins.
 *
 * A Secret that breaks 3-5 is an `InvalidInputError` naming it and the field (see `onInvalid`).
 */
export function nodeClassInputsFromSecrets(
  secrets: readonly KubeObject[],
  namespace: string,
  options: NodeClassInputOptions = {},
): Map<string, NodeClassInput> {
  const bindNs = options.nodePoolNamespace ?? namespace;
  const candidates = secrets
    .filter((s) => s.kind === 'Secret' && s.metadata.namespace === namespace)
    .filter((s) => s.metadata.labels?.[IgnitionLabels.managedByKarpenter] === 'true')
    .filter((s) => s.metadata.annotations?.[IgnitionAnnotations.ignitionConfig] !== 'true')
    .sort(newestFirst);
  const out = new Map<string, NodeClassInput>();
  for (const secret of candidates) {
    let decoded: { nodeClass: string; input: NodeClassInput };
    try {
      decoded = decodeIgnitionSecret(secret, bindNs);
    } catch (e) {
      if (options.onInvalid && e instanceof InvalidInputError) {
        options.onInvalid(e);
        continue;
      }
      throw e;
    }
    if (!out.has(decoded.nodeClass)) out.set(decoded.nodeClass, decoded.input);
  }
  return out;
}

function newestFirst(a: KubeObject, b: KubeObject): number {
  const ta = Date.parse(a.metadata.creationTimestamp ?? '') || 0;
  const tb = Date.parse(b.metadata.creationTimestamp ?? '') || 0;
  if (ta !== tb) return tb - ta;
  return a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0;
}

function decodeIgnitionSecret(secret: KubeObject, bindNs: string): { nodeClass: string; input: NodeClassInput } {
  const source = `Secret ${secret.metadata.namespace ?? ''}/${secret.metadata.name}`;
  const fail = (field: string, detail: string): never => {
    throw new InvalidInputError(IGNITION_INVALID_REASON, source, field, detail);
  };
  const annField = `metadata.annotations[${IgnitionAnnotations.nodePool}]`;
  const binding = secret.metadata.annotations?.[IgnitionAnnotations.nodePool];
  if (typeof binding !== 'string' || !binding) return fail(annField, 'missing');
  const slash = binding.indexOf('/');
  const ns = binding.slice(0, slash);
  const pool = binding.slice(slash + 1);
  if (slash < 0 || !pool.endsWith(IGNITION_NODEPOOL_SUFFIX)) {
    return fail(annField, `${JSON.stringify(binding)} is not <namespace>/<nodeclass>${IGNITION_NODEPOOL_SUFFIX}`);
  }
  if (ns !== bindNs)
    return fail(annField, `${JSON.stringify(binding)} names namespace ${JSON.stringify(ns)}, expected ${JSON.stringify(bindNs)}`);
  const nodeClass = pool.slice(0, -IGNITION_NODEPOOL_SUFFIX.length);
  if (!DNS_SUBDOMAIN.test(nodeClass)) return fail(annField, `${JSON.stringify(nodeClass)} is not a NodeClass name`);

  const data = secret.data;
  const value = typeof data === 'object' && data !== null && !Array.isArray(data) ? (data as Record<string, unknown>).value : undefined;
  if (typeof value !== 'string' || value === '') return fail('data.value', 'missing or empty');
  if (!BASE64.test(value)) return fail('data.value', 'not base64');
  const userData = Buffer.from(value, 'base64').toString('utf8');
  if (!userData) return fail('data.value', 'empty');

  const amiSelectorTerms: Array<{ id: string }> = [];
  for (const label of [IgnitionLabels.ami, IgnitionLabels.arm64Ami]) {
    const id = secret.metadata.labels?.[label];
    if (id === undefined) continue;
    if (!AMI_ID.test(id)) fail(`metadata.labels[${label}]`, `${JSON.stringify(id)} is not an AMI id`);
    if (!amiSelectorTerms.some((t) => t.id === id)) amiSelectorTerms.push({ id });
  }
  if (!amiSelectorTerms.length)
    fail(`metadata.labels[${IgnitionLabels.ami}]`, `no AMI label (${IgnitionLabels.ami} or ${IgnitionLabels.arm64Ami})`);
  return { nodeClass, input: { userData, amiSelectorTerms, source } };
}

export interface TagMerge {
  tags: Record<string, string>;
  /** Keys the NodeClass sets to a value other than the cluster's (kept or overridden per policy). */
  conflicts: string[];
}

/**
 * The HostedCluster's `resourceTags` merged with a NodeClass's own tags (keys the cloud reserves are
 * dropped later, by the provider's renderer). The cluster's value wins on a conflict unless `allowOverride`
 * (`true` for every key, or the keys whose HostedCluster tag has `overridePolicy: Allow`); conflicts are listed
 * either way so that they can be reported. Pure.
 */
export function mergeNodeClassTags(
  clusterTags: readonly ResourceTag[],
  nodeClassTags: Readonly<Record<string, string>> = {},
  allowOverride: boolean | readonly string[] = false,
): TagMerge {
  const cluster: Record<string, string> = {};
  for (const t of clusterTags) cluster[t.key] = t.value;
  const tags: Record<string, string> = { ...cluster };
  const conflicts: string[] = [];
  for (const [k, v] of Object.entries(nodeClassTags)) {
    if (k in cluster && cluster[k] !== v) {
      conflicts.push(k);
      if (allowOverride !== true && !(Array.isArray(allowOverride) && allowOverride.includes(k))) continue;
    }
    tags[k] = v;
  }
  return { tags, conflicts: conflicts.sort() };
}
