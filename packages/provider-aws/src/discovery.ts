import {
  canonicalJson,
  InvalidInputError,
  Names,
  pointerConfigProblem,
  type DefaultNodeClass,
  type DiscoveryInput,
  type KubeObject,
  type NodeClassSource,
  type ResourceTag,
} from '@karpenter-operator/core';
import { renderEc2NodeClass } from './nodeclass.js';
import { decodeProviderSpec, PROVIDER_SPEC_PATH, type AwsFilter, type AwsProviderSpec, type AwsResourceRef } from './provider-spec.js';

/**
 * Worker MachineSets → EC2NodeClass `default`, by rules 1–12 of docs/architecture.md ("Default
 * EC2NodeClass: where each field comes from"). Pure: no cloud calls. Rule numbers in comments refer to it.
 */

export const ROLE_LABEL = 'machine.openshift.io/cluster-api-machine-role';
const EXCLUDED_NODE_ROLES = ['node-role.kubernetes.io/infra', 'node-role.kubernetes.io/edge', 'node-role.kubernetes.io/outposts'];
/** The machine-api controller publishes each MachineSet's architecture here for the autoscaler. */
const CAPACITY_LABELS_ANNOTATION = 'capacity.cluster-autoscaler.kubernetes.io/labels';
const DEFAULT_USER_DATA_SECRET = 'worker-user-data';
const DEFAULT_VOLUME_GIB = 120;
const MAX_VOLUME_GIB = 59000;
const MAX_TERMS = 30;
const MAX_TAGS_PER_TERM = 20;

export type Architecture = 'amd64' | 'arm64';
const STREAM_ARCH: Record<Architecture, string> = { amd64: 'x86_64', arm64: 'aarch64' };

type Term = Record<string, unknown>;

interface Worker {
  machineSet: KubeObject;
  object: string;
  spec: AwsProviderSpec;
  arch: Architecture;
}

const describeMachineSet = (ms: KubeObject): string =>
  `MachineSet ${ms.metadata.namespace ?? Names.machineApiNamespace}/${ms.metadata.name}`;

const field = (f: string): string => `${PROVIDER_SPEC_PATH}.${f}`;

function path(obj: unknown, ...keys: string[]): unknown {
  let v: unknown = obj;
  for (const k of keys) {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
    v = (v as Record<string, unknown>)[k];
  }
  return v;
}

function stringMap(v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

/** Rule 1: template role `worker` and no infra/edge/outposts node role. */
export function isWorkerMachineSet(ms: KubeObject): boolean {
  const templateLabels = stringMap(path(ms, 'spec', 'template', 'metadata', 'labels'));
  if (templateLabels[ROLE_LABEL] !== 'worker') return false;
  const nodeLabels = stringMap(path(ms, 'spec', 'template', 'spec', 'metadata', 'labels'));
  return !EXCLUDED_NODE_ROLES.some((k) => k in nodeLabels);
}

/**
 * The MachineSet's CPU architecture: the machine-api capacity annotation, then the node label in the
 * template, then the instance type (Graviton families carry a `g` after the generation, plus `a1`).
 */
export function architectureOf(ms: KubeObject, spec: AwsProviderSpec): Architecture {
  const capacity = ms.metadata.annotations?.[CAPACITY_LABELS_ANNOTATION];
  const fromCapacity = capacity ? /(?:^|,)\s*kubernetes\.io\/arch=([a-z0-9]+)/.exec(capacity)?.[1] : undefined;
  const nodeLabel = stringMap(path(ms, 'spec', 'template', 'spec', 'metadata', 'labels'))['kubernetes.io/arch'];
  const declared = fromCapacity ?? (typeof nodeLabel === 'string' ? nodeLabel : undefined);
  if (declared === 'arm64' || declared === 'amd64') return declared;
  const m = /^([a-z]+)(\d+)([a-z-]*)\./.exec(spec.instanceType ?? '');
  if (m && (m[3]!.includes('g') || (m[1] === 'a' && m[2] === '1'))) return 'arm64';
  return 'amd64';
}

/** The resource id (the last path segment) in an ARN such as `arn:aws:iam::1:instance-profile/path/name`. Pure. */
export const idFromArn = (arn: string | undefined, resource: string): string | undefined => {
  if (!arn) return undefined;
  const m = new RegExp(`:${resource}/(?:[^/]*/)*([^/]+)$`).exec(arn);
  return m?.[1];
};

/**
 * Cross product of filter values as tag maps: AWS ANDs filters and ORs the values of one filter, Karpenter
 * ANDs the keys of one term and ORs terms. Only `tag:<key>` filters translate.
 */
function tagTerms(filters: AwsFilter[], fail: (sub: string, detail: string) => never): Array<Record<string, string>> {
  const tagFilters = filters.filter((f) => f.name.startsWith('tag:') && f.name.length > 4);
  if (!tagFilters.length) return [];
  let terms: Array<Record<string, string>> = [{}];
  for (const f of tagFilters) {
    const key = f.name.slice(4);
    terms = terms.flatMap((t) => f.values.map((v) => ({ ...t, [key]: v })));
    if (terms.length > MAX_TERMS) fail('filters', `the tag filters expand to more than ${MAX_TERMS} selector terms`);
  }
  return terms;
}

/** Resolves one resource reference to selector terms; `idFilter` is the AWS filter name carrying ids. */
function refTerms(
  ref: AwsResourceRef,
  opts: { arnResource: string; idFilter: string; nameFilter?: string; idPattern: RegExp },
  fail: (sub: string, detail: string) => never,
): Term[] {
  const id = ref.id ?? idFromArn(ref.arn, opts.arnResource);
  if (ref.arn && !id) fail('arn', `cannot read a ${opts.arnResource} id from ${JSON.stringify(ref.arn)}`);
  if (id) {
    if (!opts.idPattern.test(id)) fail(ref.id ? 'id' : 'arn', `${JSON.stringify(id)} is not a valid ${opts.arnResource} id`);
    return [{ id }];
  }
  const terms: Term[] = [];
  ref.filters.forEach((f, i) => {
    if (f.name === opts.idFilter) {
      f.values.forEach((v, j) => {
        if (!opts.idPattern.test(v)) fail(`filters[${i}].values[${j}]`, `${JSON.stringify(v)} is not a valid ${opts.arnResource} id`);
        terms.push({ id: v });
      });
    } else if (opts.nameFilter && f.name === opts.nameFilter) {
      f.values.forEach((v) => terms.push({ name: v }));
    }
  });
  const tags = tagTerms(ref.filters, fail);
  tags.forEach((t) => {
    const bad = Object.entries(t).find(([, v]) => v === '');
    if (bad) fail('filters', `empty value for tag ${JSON.stringify(bad[0])}`);
    if (Object.keys(t).length > MAX_TAGS_PER_TERM) fail('filters', `more than ${MAX_TAGS_PER_TERM} tag filters`);
    terms.push({ tags: t });
  });
  if (!terms.length) {
    fail(ref.filters.length ? 'filters' : 'id', 'no id, ARN or tag:<key> filter that a Karpenter selector term can express');
  }
  return terms;
}

function pushUnique(list: Term[], seen: Set<string>, terms: Term[], onOverflow: () => never): void {
  for (const t of terms) {
    const k = canonicalJson(t);
    if (seen.has(k)) continue;
    if (list.length >= MAX_TERMS) onOverflow();
    seen.add(k);
    list.push(t);
  }
}

/** True when two selector-term lists hold the same terms, whatever the order or duplicates. Pure. */
export function sameTerms(a: unknown, b: unknown): boolean {
  if (!Array.isArray(a) || !Array.isArray(b)) return false;
  const sa = new Set(a.map(canonicalJson));
  const sb = new Set(b.map(canonicalJson));
  return sa.size === sb.size && [...sa].every((k) => sb.has(k));
}

/** Rule 9: the Infrastructure's tags, then the primary's (which win); the renderer drops restricted keys. */
export const sourceTags = (infra: ResourceTag[], machine: Array<{ name: string; value: string }>): NodeClassSource['tags'] => [
  ...infra.map((t) => ({ key: t.key, value: t.value })),
  ...machine.map((t) => ({ key: t.name, value: t.value })),
];

/** Who asks for a value: the object and field a missing value is reported against. */
export interface Asker {
  object: string;
  field: string;
}

/**
 * The pointer config in Secret `openshift-machine-api/<name>` (`worker-user-data` unless a MachineSet
 * names another). Throws `UserDataSecretMissing` against `asker` when the Secret is absent.
 */
export function readUserData(input: DiscoveryInput, name: string, asker: Asker): string {
  const secretName = `Secret ${Names.machineApiNamespace}/${name}`;
  const secret = input.secrets.find(
    (s) => s.metadata.name === name && (s.metadata.namespace ?? Names.machineApiNamespace) === Names.machineApiNamespace,
  );
  if (!secret) {
    throw new InvalidInputError('UserDataSecretMissing', asker.object, asker.field, `${secretName} not found`);
  }
  const stringData = path(secret, 'stringData', 'userData');
  const data = path(secret, 'data', 'userData');
  let userData: string | undefined;
  if (typeof data === 'string') userData = Buffer.from(data, 'base64').toString('utf8');
  else if (typeof stringData === 'string') userData = stringData;
  if (data !== undefined && typeof data !== 'string') {
    throw new InvalidInputError('UserDataSecretMissing', secretName, 'data.userData', 'not a base64 string');
  }
  if (!userData) throw new InvalidInputError('UserDataSecretMissing', secretName, 'data.userData', 'missing or empty');
  // Whatever is here becomes every NodeClass's userData: refuse anything but a worker pointer config, so
  // the NodeClasses keep their last good value (and their nodes) while the Secret is wrong.
  const problem = pointerConfigProblem(userData);
  if (problem) throw new InvalidInputError('InvalidUserData', secretName, 'data.userData', problem);
  return userData;
}

export const DEFAULT_USER_DATA_SECRET_NAME = DEFAULT_USER_DATA_SECRET;

/**
 * The RHCOS boot image of `arch` in the cluster's region, from ConfigMap
 * `openshift-machine-config-operator/coreos-bootimages`. Throws against `asker` (reason `reason`) when the
 * ConfigMap has none.
 */
export function bootImage(input: DiscoveryInput, arch: Architecture, asker: Asker, reason = 'InvalidProviderSpec'): string {
  const cmName = `ConfigMap ${Names.mcoNamespace}/${Names.bootImagesConfigMap}`;
  const missing = (detail: string): never => {
    throw new InvalidInputError(reason, asker.object, asker.field, `no AMI id, and ${detail}`);
  };
  if (!input.bootImages) return missing(`${cmName} is absent`);
  const raw = path(input.bootImages, 'data', 'stream');
  if (typeof raw !== 'string') return missing(`${cmName} has no data.stream`);
  let stream: unknown;
  try {
    stream = JSON.parse(raw);
  } catch (e) {
    throw new InvalidInputError('InvalidBootImages', cmName, 'data.stream', `not JSON: ${(e as Error).message}`, { cause: e });
  }
  const region = input.facts.region;
  if (!region) return missing('the cluster region is unknown (Infrastructure status.platformStatus.aws.region)');
  const image = path(stream, 'architectures', STREAM_ARCH[arch], 'images', 'aws', 'regions', region, 'image');
  if (typeof image !== 'string' || !/^ami-[0-9a-z]+$/.test(image)) {
    return missing(`${cmName} has no AMI for ${STREAM_ARCH[arch]} in ${region}`);
  }
  return image;
}

/** Rule 2 (plus the boot-image fallback): one `{id}` per distinct AMI, in order of first appearance. */
function amiTerms(input: DiscoveryInput, workers: Worker[]): Term[] {
  const terms: Term[] = [];
  const seen = new Set<string>();
  const needBootImage: Worker[] = [];
  for (const w of workers) {
    const fail = (sub: string, detail: string): never => {
      throw new InvalidInputError('InvalidProviderSpec', w.object, field(sub ? `ami.${sub}` : 'ami'), detail);
    };
    const { ami } = w.spec;
    if (!ami.id && !ami.arn && !ami.filters.length) {
      needBootImage.push(w);
      continue;
    }
    const own = refTerms(ami, { arnResource: 'image', idFilter: 'image-id', nameFilter: 'name', idPattern: /^ami-[0-9a-z]+$/ }, fail);
    pushUnique(terms, seen, own, () => fail('', `more than ${MAX_TERMS} distinct AMIs`));
  }
  const archs = new Set(terms.length ? [] : needBootImage.map((w) => w.arch));
  // MachineSets without any AMI reference borrow the RHCOS boot image of their architecture, unless
  // another MachineSet already names one (then the MachineSets' own choice of AMI wins).
  for (const w of needBootImage) {
    if (!archs.has(w.arch)) continue;
    archs.delete(w.arch);
    pushUnique(terms, seen, [{ id: bootImage(input, w.arch, { object: w.object, field: field('ami') }) }], () => {
      throw new InvalidInputError('InvalidProviderSpec', w.object, field('ami'), `more than ${MAX_TERMS} distinct AMIs`);
    });
  }
  return terms;
}

/** The primary's root volume, or undefined for the renderer's default (`DEFAULT_ROOT_VOLUME`). */
function rootVolume(primary: Worker): Record<string, unknown> | undefined {
  const i = primary.spec.blockDevices.findIndex((b) => b.ebs !== undefined);
  const ebs = i >= 0 ? primary.spec.blockDevices[i]!.ebs! : undefined;
  if (!ebs) return undefined;
  const f = field(`blockDevices[${i}].ebs`);
  const size = ebs.volumeSize || DEFAULT_VOLUME_GIB;
  if (size > MAX_VOLUME_GIB) {
    throw new InvalidInputError('InvalidProviderSpec', primary.object, `${f}.volumeSize`, `${size} GiB exceeds ${MAX_VOLUME_GIB} GiB`);
  }
  const out: Record<string, unknown> = { volumeSize: `${size}Gi` };
  if (ebs.volumeType) out.volumeType = ebs.volumeType;
  out.encrypted = ebs.encrypted ?? true;
  out.deleteOnTermination = true;
  if (ebs.iops && ebs.iops > 0) out.iops = ebs.iops;
  if (ebs.throughputMib && ebs.volumeType === 'gp3') out.throughput = ebs.throughputMib;
  const kms = ebs.kmsKey?.arn ?? ebs.kmsKey?.id;
  if (kms) out.kmsKeyID = kms;
  return out;
}

function instanceProfile(primary: Worker): string {
  const ref = primary.spec.iamInstanceProfile;
  const name = ref?.id ?? idFromArn(ref?.arn, 'instance-profile');
  if (!name) {
    throw new InvalidInputError(
      'InvalidProviderSpec',
      primary.object,
      field('iamInstanceProfile.id'),
      'the primary worker MachineSet names no instance profile (EC2NodeClass needs exactly one of role/instanceProfile)',
    );
  }
  return name;
}

/** Decodes and selects the worker MachineSets, sorted by name (rule 1). */
export function workerMachineSets(machineSets: KubeObject[]): Worker[] {
  return machineSets
    .filter(isWorkerMachineSet)
    .sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0))
    .map((ms) => {
      const object = describeMachineSet(ms);
      const spec = decodeProviderSpec(path(ms, 'spec', 'template', 'spec', 'providerSpec', 'value'), object);
      return { machineSet: ms, object, spec, arch: architectureOf(ms, spec) };
    });
}

/**
 * Renders EC2NodeClass `default` from the worker MachineSets: decodes them into a `NodeClassSource`
 * (`nodeClassSourceFromMachineSets`) and renders that (`renderEc2NodeClass`). Throws `InvalidInputError` with reason
 * `NoWorkerMachineSet`, `InvalidProviderSpec`, `UserDataSecretMissing`, `InvalidUserData` (the Secret holds no
 * usable Ignition pointer config) or `InvalidBootImages`. Pure.
 */
export function renderDefaultNodeClass(input: DiscoveryInput): DefaultNodeClass {
  return renderEc2NodeClass(nodeClassSourceFromMachineSets(input));
}

/** Worker MachineSets → the default NodeClass's source, by the rules above. Throws as `renderDefaultNodeClass`. Pure. */
export function nodeClassSourceFromMachineSets(input: DiscoveryInput): NodeClassSource {
  const workers = workerMachineSets(input.machineSets);
  const primary = workers[0];
  if (!primary) {
    throw new InvalidInputError(
      'NoWorkerMachineSet',
      `MachineSets in ${Names.machineApiNamespace}`,
      `spec.template.metadata.labels[${ROLE_LABEL}]`,
      `no MachineSet with ${ROLE_LABEL}=worker that is not infra, edge or outposts`,
    );
  }

  const amiSelectorTerms = amiTerms(input, workers);

  // Rule 3: subnets of every worker MachineSet, in order, de-duplicated.
  const subnetSelectorTerms: Term[] = [];
  const seenSubnets = new Set<string>();
  for (const w of workers) {
    const fail = (sub: string, detail: string): never => {
      throw new InvalidInputError('InvalidProviderSpec', w.object, field(sub ? `subnet.${sub}` : 'subnet'), detail);
    };
    const terms = refTerms(w.spec.subnet, { arnResource: 'subnet', idFilter: 'subnet-id', idPattern: /^subnet-[0-9a-z]+$/ }, fail);
    pushUnique(subnetSelectorTerms, seenSubnets, terms, () => fail('', `more than ${MAX_TERMS} distinct subnets`));
  }

  // Rule 4: security groups of the primary.
  const securityGroupSelectorTerms: Term[] = [];
  const seenSgs = new Set<string>();
  primary.spec.securityGroups.forEach((sg, i) => {
    const fail = (sub: string, detail: string): never => {
      throw new InvalidInputError('InvalidProviderSpec', primary.object, field(`securityGroups[${i}]${sub ? `.${sub}` : ''}`), detail);
    };
    const terms = refTerms(
      sg,
      { arnResource: 'security-group', idFilter: 'group-id', nameFilter: 'group-name', idPattern: /^sg-[0-9a-z]+$/ },
      fail,
    );
    pushUnique(securityGroupSelectorTerms, seenSgs, terms, () => fail('', `more than ${MAX_TERMS} distinct security groups`));
  });
  if (!securityGroupSelectorTerms.length) {
    throw new InvalidInputError(
      'InvalidProviderSpec',
      primary.object,
      field('securityGroups'),
      'the primary worker MachineSet has no security groups',
    );
  }

  const userData = readUserData(input, primary.spec.userDataSecret ?? DEFAULT_USER_DATA_SECRET, {
    object: primary.object,
    field: field('userDataSecret.name'),
  });
  const profile = instanceProfile(primary);
  const volume = rootVolume(primary);
  return {
    userData,
    imageSelectorTerms: amiSelectorTerms,
    instanceProfile: profile,
    subnetSelectorTerms,
    securityGroupSelectorTerms,
    tags: sourceTags(input.facts.resourceTags, primary.spec.tags),
    ...(volume ? { rootVolume: volume } : {}),
    metadataTokens: primary.spec.metadataAuthentication === 'Optional' ? 'optional' : 'required',
    ...(primary.spec.publicIp ? { associatePublicIp: true } : {}),
    maxPods: input.maxPods,
  };
}
