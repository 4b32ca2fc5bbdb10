/**
 * OpenshiftEC2NodeClass v1 (karpenter.hypershift.openshift.io/v1) field by field onto Karpenter's EC2NodeClass
 * (karpenter.k8s.aws/v1). v1 names its enums in PascalCase (`GP3`, `Detailed`, `Required`) where Karpenter uses
 * its own lowercase values and booleans; `ebs.volumeSizeGiB` is a number of GiB where Karpenter takes a quantity.
 * A value the translation does not know is refused, naming its field: nothing is dropped silently.
 */

import { isRecord } from '../records.js';

/** Why a v1 spec cannot be translated: the field (a path under `spec`) and what is wrong with it. */
export interface Refusal {
  field: string;
  message: string;
}

/** Thrown inside the translation, caught at its edge (`translateV1Spec`). */
class Refused extends Error {
  constructor(
    readonly field: string,
    readonly detail: string,
  ) {
    super(`${field}: ${detail}`);
  }
}

/**
 * Every v1 spec field, and whether it is translated into the EC2NodeClass (`ec2`) or read elsewhere:
 * `spec.version` is the release HyperShift's ignition generator resolves into the ignition Secret the
 * EC2NodeClass's userData comes from.
 */
export const V1_SPEC_FIELDS = [
  'subnetSelectorTerms',
  'securityGroupSelectorTerms',
  'capacityReservationSelectorTerms',
  'ipAddressAssociation',
  'tags',
  'blockDeviceMappings',
  'instanceStorePolicy',
  'monitoring',
  'metadataOptions',
  'kubelet',
  'version',
] as const;

/**
 * The kubelet settings Karpenter's EC2NodeClass has and v1 types: carried over as they are (Karpenter
 * simulates a node's capacity with them). v1 accepts other kubelet configuration keys too, unvalidated: those
 * are HyperShift's ignition generator's (it writes them into the node's kubelet configuration), and Karpenter's
 * EC2NodeClass has no place for them, so they are not copied into it.
 */
export const KUBELET_FIELDS = [
  'maxPods',
  'podsPerCore',
  'systemReserved',
  'kubeReserved',
  'evictionHard',
  'evictionSoft',
  'evictionSoftGracePeriod',
  'evictionMaxPodGracePeriod',
  'imageGCHighThresholdPercent',
  'imageGCLowThresholdPercent',
  'cpuCFSQuota',
] as const;

/**
 * v1's enums onto Karpenter's values, per field. `undefined` leaves the EC2NodeClass field unset:
 * `SubnetDefault` means the subnet's own public-IP setting decides, which is what Karpenter does when
 * `associatePublicIPAddress` is absent (`false` would turn public IPs off even on a subnet that maps them).
 */
const ENUMS = {
  ipAddressAssociation: { Public: true, SubnetDefault: undefined },
  monitoring: { Detailed: true, Basic: false },
  instanceStorePolicy: { RAID0: 'RAID0' },
  instanceMatchCriteria: { Open: 'open', Targeted: 'targeted' },
  rootVolume: { RootVolume: true, NotRootVolume: false },
  deleteOnTermination: { Delete: true, Retain: false },
  encrypted: { Encrypted: true, Unencrypted: false },
  volumeType: { Standard: 'standard', IO1: 'io1', IO2: 'io2', GP2: 'gp2', SC1: 'sc1', ST1: 'st1', GP3: 'gp3' },
  access: { HTTPEndpoint: 'enabled', None: 'disabled' },
  httpIPProtocol: { IPv4: 'disabled', IPv6: 'enabled' },
  httpTokens: { Required: 'required', Optional: 'optional' },
} as const satisfies Record<string, Record<string, string | boolean | undefined>>;

function enumValue<K extends keyof typeof ENUMS>(kind: K, field: string, v: unknown): (typeof ENUMS)[K][keyof (typeof ENUMS)[K]] {
  const table = ENUMS[kind] as Record<string, unknown>;
  if (typeof v !== 'string' || !Object.hasOwn(table, v))
    throw new Refused(field, `${JSON.stringify(v)} is not one of ${Object.keys(table).join(', ')}`);
  return table[v] as (typeof ENUMS)[K][keyof (typeof ENUMS)[K]];
}

/** An object with only `known` keys, or a refusal naming the first other one. */
function only(field: string, v: unknown, known: readonly string[]): Record<string, unknown> {
  if (!isRecord(v)) throw new Refused(field, `expected an object, got ${JSON.stringify(v)}`);
  for (const k of Object.keys(v)) if (!known.includes(k)) throw new Refused(`${field}.${k}`, 'not a field of OpenshiftEC2NodeClass v1');
  return v;
}

function list(field: string, v: unknown): Array<Record<string, unknown>> {
  if (!Array.isArray(v)) throw new Refused(field, `expected a list, got ${JSON.stringify(v)}`);
  return v.map((x, i) => {
    if (!isRecord(x)) throw new Refused(`${field}[${i}]`, `expected an object, got ${JSON.stringify(x)}`);
    return x;
  });
}

function integer(field: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new Refused(field, `expected an integer, got ${JSON.stringify(v)}`);
  return v;
}

function stringMap(field: string, v: unknown): Record<string, string> {
  if (!isRecord(v)) throw new Refused(field, `expected a map of strings, got ${JSON.stringify(v)}`);
  for (const [k, x] of Object.entries(v))
    if (typeof x !== 'string') throw new Refused(`${field}[${k}]`, `expected a string, got ${JSON.stringify(x)}`);
  return { ...(v as Record<string, string>) };
}

/** Copies the fields of `from` that are set, translated, into a new object; one translated to `undefined` stays out. */
function fields(from: Record<string, unknown>, map: Record<string, (v: unknown) => [string, unknown]>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, f] of Object.entries(map)) {
    if (from[k] === undefined) continue;
    const [key, value] = f(from[k]);
    if (value !== undefined) out[key] = value;
  }
  return out;
}

const selectorTerms = (field: string, v: unknown, keys: readonly string[]) =>
  list(field, v).map((t, i) => structuredClone(only(`${field}[${i}]`, t, keys)));

function capacityReservationTerms(v: unknown): Array<Record<string, unknown>> {
  const field = 'spec.capacityReservationSelectorTerms';
  return list(field, v).map((t, i) => {
    const at = `${field}[${i}]`;
    only(at, t, ['tags', 'id', 'ownerID', 'instanceMatchCriteria']);
    // v1 accepts a term of ownerID alone; Karpenter's EC2NodeClass wants tags, id or instanceMatchCriteria in each.
    if (t.tags === undefined && t.id === undefined && t.instanceMatchCriteria === undefined)
      throw new Refused(at, 'Karpenter needs tags, id or instanceMatchCriteria in a term (ownerID alone selects nothing there)');
    return fields(t, {
      tags: (x) => ['tags', stringMap(`${at}.tags`, x)],
      id: (x) => ['id', x],
      ownerID: (x) => ['ownerID', x],
      instanceMatchCriteria: (x) => ['instanceMatchCriteria', enumValue('instanceMatchCriteria', `${at}.instanceMatchCriteria`, x)],
    });
  });
}

function blockDeviceMappings(v: unknown): Array<Record<string, unknown>> {
  const field = 'spec.blockDeviceMappings';
  return list(field, v).map((m, i) => {
    const at = `${field}[${i}]`;
    only(at, m, ['deviceName', 'ebs', 'rootVolume']);
    return fields(m, {
      deviceName: (x) => ['deviceName', x],
      rootVolume: (x) => ['rootVolume', enumValue('rootVolume', `${at}.rootVolume`, x)],
      ebs: (x) => {
        const ebs = `${at}.ebs`;
        const e = only(ebs, x, [
          'deleteOnTermination',
          'encrypted',
          'iops',
          'kmsKeyID',
          'snapshotID',
          'throughput',
          'volumeSizeGiB',
          'volumeType',
        ]);
        return [
          'ebs',
          fields(e, {
            deleteOnTermination: (y) => ['deleteOnTermination', enumValue('deleteOnTermination', `${ebs}.deleteOnTermination`, y)],
            encrypted: (y) => ['encrypted', enumValue('encrypted', `${ebs}.encrypted`, y)],
            iops: (y) => ['iops', integer(`${ebs}.iops`, y)],
            kmsKeyID: (y) => ['kmsKeyID', y],
            snapshotID: (y) => ['snapshotID', y],
            throughput: (y) => ['throughput', integer(`${ebs}.throughput`, y)],
            volumeSizeGiB: (y) => ['volumeSize', `${integer(`${ebs}.volumeSizeGiB`, y)}Gi`],
            volumeType: (y) => ['volumeType', enumValue('volumeType', `${ebs}.volumeType`, y)],
          }),
        ];
      },
    });
  });
}

function metadataOptions(v: unknown): Record<string, unknown> {
  const field = 'spec.metadataOptions';
  const m = only(field, v, ['access', 'httpIPProtocol', 'httpPutResponseHopLimit', 'httpTokens']);
  return fields(m, {
    access: (x) => ['httpEndpoint', enumValue('access', `${field}.access`, x)],
    httpIPProtocol: (x) => ['httpProtocolIPv6', enumValue('httpIPProtocol', `${field}.httpIPProtocol`, x)],
    httpPutResponseHopLimit: (x) => ['httpPutResponseHopLimit', integer(`${field}.httpPutResponseHopLimit`, x)],
    httpTokens: (x) => ['httpTokens', enumValue('httpTokens', `${field}.httpTokens`, x)],
  });
}

/** Karpenter's duration format for `kubelet.evictionSoftGracePeriod` values (its CRD's pattern). */
const KARPENTER_DURATION = /^([0-9]+(s|m|h))+$/;

function kubelet(v: unknown): Record<string, unknown> {
  const field = 'spec.kubelet';
  if (!isRecord(v)) throw new Refused(field, `expected an object, got ${JSON.stringify(v)}`);
  const out: Record<string, unknown> = {};
  for (const k of KUBELET_FIELDS) {
    const x = v[k];
    if (x === undefined) continue;
    const at = `${field}.${k}`;
    switch (k) {
      case 'cpuCFSQuota':
        if (typeof x !== 'boolean') throw new Refused(at, `expected a boolean, got ${JSON.stringify(x)}`);
        out[k] = x;
        break;
      case 'systemReserved':
      case 'kubeReserved':
      case 'evictionHard':
      case 'evictionSoft':
        out[k] = stringMap(at, x);
        break;
      case 'evictionSoftGracePeriod': {
        const periods = stringMap(at, x);
        for (const [signal, d] of Object.entries(periods))
          if (!KARPENTER_DURATION.test(d))
            throw new Refused(
              `${at}[${signal}]`,
              `${JSON.stringify(d)} is not a duration Karpenter accepts (hours, minutes, seconds: e.g. 1m30s)`,
            );
        out[k] = periods;
        break;
      }
      default:
        out[k] = integer(at, x);
    }
  }
  return out;
}

/**
 * The EC2NodeClass spec fields an OpenshiftEC2NodeClass v1 spec sets, in Karpenter's terms (only those it sets;
 * the selectors and tags as given, for the caller's defaults and tag merge), or the first field that cannot be
 * translated. `metadataOptions` and `kubelet` hold only what the OpenshiftEC2NodeClass sets: the caller lays
 * them over its defaults. Pure.
 */
export function translateV1Spec(spec: Record<string, unknown>): { ok: true; spec: Record<string, unknown> } | ({ ok: false } & Refusal) {
  try {
    only('spec', spec, V1_SPEC_FIELDS);
    const out = fields(spec, {
      subnetSelectorTerms: (x) => ['subnetSelectorTerms', selectorTerms('spec.subnetSelectorTerms', x, ['tags', 'id'])],
      securityGroupSelectorTerms: (x) => [
        'securityGroupSelectorTerms',
        selectorTerms('spec.securityGroupSelectorTerms', x, ['tags', 'id', 'name']),
      ],
      capacityReservationSelectorTerms: (x) => ['capacityReservationSelectorTerms', capacityReservationTerms(x)],
      ipAddressAssociation: (x) => ['associatePublicIPAddress', enumValue('ipAddressAssociation', 'spec.ipAddressAssociation', x)],
      tags: (x) => ['tags', stringMap('spec.tags', x)],
      blockDeviceMappings: (x) => ['blockDeviceMappings', blockDeviceMappings(x)],
      instanceStorePolicy: (x) => ['instanceStorePolicy', enumValue('instanceStorePolicy', 'spec.instanceStorePolicy', x)],
      monitoring: (x) => ['detailedMonitoring', enumValue('monitoring', 'spec.monitoring', x)],
      metadataOptions: (x) => ['metadataOptions', metadataOptions(x)],
      kubelet: (x) => ['kubelet', kubelet(x)],
    });
    if (spec.version !== undefined && typeof spec.version !== 'string')
      throw new Refused('spec.version', `expected a string, got ${JSON.stringify(spec.version)}`);
    return { ok: true, spec: out };
  } catch (e) {
    if (e instanceof Refused) return { ok: false, field: e.field, message: e.detail };
    throw e;
  }
}

/** Karpenter's capacity-reservation status values onto v1's. */
const STATUS_ENUMS = {
  instanceMatchCriteria: { open: 'Open', targeted: 'Targeted' },
  reservationType: { default: 'Default', 'capacity-block': 'CapacityBlock' },
  state: { active: 'Active', expiring: 'Expiring' },
} as const satisfies Record<string, Record<string, string>>;

/**
 * An EC2NodeClass's `status.capacityReservations` as OpenshiftEC2NodeClass v1 reports them (PascalCase enums).
 * An entry v1 cannot hold (a required field missing, an unknown match criterion) is left out, and so is an
 * unknown optional value. Pure.
 */
export function capacityReservationsStatus(v: unknown): Array<Record<string, unknown>> {
  if (!Array.isArray(v)) return [];
  const out: Array<Record<string, unknown>> = [];
  for (const r of v) {
    if (!isRecord(r)) continue;
    const match = STATUS_ENUMS.instanceMatchCriteria[r.instanceMatchCriteria as keyof typeof STATUS_ENUMS.instanceMatchCriteria];
    const required = ['availabilityZone', 'id', 'instanceType', 'ownerID'] as const;
    if (!match || !required.every((k) => typeof r[k] === 'string' && r[k])) continue;
    const entry: Record<string, unknown> = {
      availabilityZone: r.availabilityZone,
      id: r.id,
      instanceMatchCriteria: match,
      instanceType: r.instanceType,
      ownerID: r.ownerID,
    };
    if (typeof r.endTime === 'string' && r.endTime) entry.endTime = r.endTime;
    const type = STATUS_ENUMS.reservationType[r.reservationType as keyof typeof STATUS_ENUMS.reservationType];
    if (type) entry.reservationType = type;
    const state = STATUS_ENUMS.state[r.state as keyof typeof STATUS_ENUMS.state];
    if (state) entry.state = state;
    out.push(entry);
  }
  return out;
}
