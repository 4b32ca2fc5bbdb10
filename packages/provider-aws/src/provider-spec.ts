import { InvalidInputError } from '@karpenter-operator/core';

/**
 * A small, validated projection of `AWSMachineProviderConfig` (machine.openshift.io/v1beta1), the
 * providerSpec of an OpenShift MachineSet on AWS. Only what the default EC2NodeClass needs is kept;
 * unknown fields are ignored, fields of the wrong shape are rejected with the field path.
 */

export const PROVIDER_SPEC_PATH = 'spec.template.spec.providerSpec.value';

export interface AwsFilter {
  name: string;
  values: string[];
}

/** `AWSResourceReference`: by id, ARN or filters (the API allows one of them). */
export interface AwsResourceRef {
  id?: string;
  arn?: string;
  filters: AwsFilter[];
}

export interface AwsEbs {
  encrypted?: boolean;
  iops?: number;
  kmsKey?: { id?: string; arn?: string };
  /** GiB. */
  volumeSize?: number;
  volumeType?: string;
  throughputMib?: number;
}

export interface AwsBlockDevice {
  deviceName?: string;
  ebs?: AwsEbs;
}

export type MetadataAuthentication = 'Required' | 'Optional';

export interface AwsProviderSpec {
  ami: AwsResourceRef;
  instanceType?: string;
  subnet: AwsResourceRef;
  securityGroups: AwsResourceRef[];
  iamInstanceProfile?: AwsResourceRef;
  blockDevices: AwsBlockDevice[];
  metadataAuthentication?: MetadataAuthentication;
  publicIp: boolean;
  tags: Array<{ name: string; value: string }>;
  userDataSecret?: string;
  placement: { region?: string; availabilityZone?: string; tenancy?: string };
  /** Present (possibly empty) when the MachineSet runs spot instances. */
  spotMarketOptions?: { maxPrice?: string };
}

const ID_PATTERNS: Record<string, RegExp> = {
  ami: /^ami-[0-9a-z]+$/,
  subnet: /^subnet-[0-9a-z]+$/,
  securityGroup: /^sg-[0-9a-z]+$/,
};

const VOLUME_TYPES = ['standard', 'io1', 'io2', 'gp2', 'sc1', 'st1', 'gp3'] as const;

type Json = Record<string, unknown>;

/** Decodes with a field path, so every rejection names the field at fault. */
class Decoder {
  constructor(private readonly object: string) {}

  fail(path: string, detail: string): never {
    throw new InvalidInputError('InvalidProviderSpec', this.object, path, detail);
  }

  obj(v: unknown, path: string): Json {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) this.fail(path, `expected an object, got ${kindOf(v)}`);
    return v as Json;
  }

  optObj(o: Json, key: string, path: string): Json | undefined {
    const v = o[key];
    return v === undefined || v === null ? undefined : this.obj(v, `${path}.${key}`);
  }

  optStr(o: Json, key: string, path: string): string | undefined {
    const v = o[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string') this.fail(`${path}.${key}`, `expected a string, got ${kindOf(v)}`);
    return v;
  }

  optBool(o: Json, key: string, path: string): boolean | undefined {
    const v = o[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'boolean') this.fail(`${path}.${key}`, `expected a boolean, got ${kindOf(v)}`);
    return v;
  }

  optInt(o: Json, key: string, path: string): number | undefined {
    const v = o[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
      this.fail(`${path}.${key}`, `expected a non-negative integer, got ${kindOf(v)} ${JSON.stringify(v)}`);
    }
    return v;
  }

  optArr(o: Json, key: string, path: string): unknown[] {
    const v = o[key];
    if (v === undefined || v === null) return [];
    if (!Array.isArray(v)) this.fail(`${path}.${key}`, `expected a list, got ${kindOf(v)}`);
    return v;
  }

  ref(v: unknown, path: string, idKind?: keyof typeof ID_PATTERNS): AwsResourceRef {
    const o = this.obj(v, path);
    const id = this.optStr(o, 'id', path) || undefined;
    const arn = this.optStr(o, 'arn', path) || undefined;
    if (id !== undefined && idKind && !ID_PATTERNS[idKind]!.test(id)) {
      this.fail(`${path}.id`, `${JSON.stringify(id)} is not a valid ${idKind} id`);
    }
    if (arn !== undefined && !arn.startsWith('arn:')) this.fail(`${path}.arn`, `${JSON.stringify(arn)} is not an ARN`);
    const filters = this.optArr(o, 'filters', path).map((f, i) => {
      const fp = `${path}.filters[${i}]`;
      const fo = this.obj(f, fp);
      const name = this.optStr(fo, 'name', fp);
      if (!name) this.fail(`${fp}.name`, 'a filter needs a name');
      const values = this.optArr(fo, 'values', fp).map((x, j) => {
        if (typeof x !== 'string') this.fail(`${fp}.values[${j}]`, `expected a string, got ${kindOf(x)}`);
        return x;
      });
      return { name, values };
    });
    const ref: AwsResourceRef = { filters };
    if (id !== undefined) ref.id = id;
    if (arn !== undefined) ref.arn = arn;
    return ref;
  }
}

function kindOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  return typeof v;
}

/**
 * Decodes `spec.template.spec.providerSpec.value` of a MachineSet. `object` names the MachineSet in
 * errors (`MachineSet openshift-machine-api/worker-a`). Throws `InvalidInputError` with reason
 * `InvalidProviderSpec` and the field path for anything malformed. Pure.
 */
export function decodeProviderSpec(value: unknown, object: string): AwsProviderSpec {
  const d: Decoder = new Decoder(object);
  const p = PROVIDER_SPEC_PATH;
  if (value === undefined || value === null) d.fail(p, 'missing (not an AWS MachineSet?)');
  const o = d.obj(value, p);
  const kind = d.optStr(o, 'kind', p);
  if (kind !== undefined && kind !== 'AWSMachineProviderConfig') {
    d.fail(`${p}.kind`, `expected AWSMachineProviderConfig, got ${JSON.stringify(kind)}`);
  }

  const ami = o.ami === undefined || o.ami === null ? { filters: [] } : d.ref(o.ami, `${p}.ami`, 'ami');
  const subnet = o.subnet === undefined || o.subnet === null ? { filters: [] } : d.ref(o.subnet, `${p}.subnet`, 'subnet');
  const securityGroups = d.optArr(o, 'securityGroups', p).map((sg, i) => d.ref(sg, `${p}.securityGroups[${i}]`, 'securityGroup'));
  const iamInstanceProfile =
    o.iamInstanceProfile === undefined || o.iamInstanceProfile === null
      ? undefined
      : d.ref(o.iamInstanceProfile, `${p}.iamInstanceProfile`);

  const blockDevices = d.optArr(o, 'blockDevices', p).map((bd, i): AwsBlockDevice => {
    const bp = `${p}.blockDevices[${i}]`;
    const bo = d.obj(bd, bp);
    const out: AwsBlockDevice = {};
    const deviceName = d.optStr(bo, 'deviceName', bp);
    if (deviceName) out.deviceName = deviceName;
    const ebs = d.optObj(bo, 'ebs', bp);
    if (ebs) out.ebs = decodeEbs(d, ebs, `${bp}.ebs`);
    return out;
  });

  const mso = d.optObj(o, 'metadataServiceOptions', p);
  const auth = mso ? d.optStr(mso, 'authentication', `${p}.metadataServiceOptions`) : undefined;
  if (auth !== undefined && auth !== '' && auth !== 'Required' && auth !== 'Optional') {
    d.fail(`${p}.metadataServiceOptions.authentication`, `expected Required or Optional, got ${JSON.stringify(auth)}`);
  }

  const tags = d.optArr(o, 'tags', p).map((t, i) => {
    const tp = `${p}.tags[${i}]`;
    const to = d.obj(t, tp);
    const name = d.optStr(to, 'name', tp);
    if (!name) d.fail(`${tp}.name`, 'a tag needs a name');
    return { name, value: d.optStr(to, 'value', tp) ?? '' };
  });

  const uds = d.optObj(o, 'userDataSecret', p);
  const userDataSecret = uds ? d.optStr(uds, 'name', `${p}.userDataSecret`) : undefined;

  const po = d.optObj(o, 'placement', p) ?? {};
  const placement: AwsProviderSpec['placement'] = {};
  const region = d.optStr(po, 'region', `${p}.placement`);
  const zone = d.optStr(po, 'availabilityZone', `${p}.placement`);
  const tenancy = d.optStr(po, 'tenancy', `${p}.placement`);
  if (region) placement.region = region;
  if (zone) placement.availabilityZone = zone;
  if (tenancy) placement.tenancy = tenancy;

  const spec: AwsProviderSpec = {
    ami,
    subnet,
    securityGroups,
    blockDevices,
    publicIp: d.optBool(o, 'publicIp', p) ?? false,
    tags,
    placement,
  };
  const instanceType = d.optStr(o, 'instanceType', p);
  if (instanceType) spec.instanceType = instanceType;
  if (iamInstanceProfile) spec.iamInstanceProfile = iamInstanceProfile;
  if (auth === 'Required' || auth === 'Optional') spec.metadataAuthentication = auth;
  if (userDataSecret) spec.userDataSecret = userDataSecret;
  const spot = d.optObj(o, 'spotMarketOptions', p);
  if (spot) {
    const maxPrice = d.optStr(spot, 'maxPrice', `${p}.spotMarketOptions`);
    spec.spotMarketOptions = maxPrice ? { maxPrice } : {};
  }
  return spec;
}

function decodeEbs(d: Decoder, o: Json, path: string): AwsEbs {
  const ebs: AwsEbs = {};
  const encrypted = d.optBool(o, 'encrypted', path);
  if (encrypted !== undefined) ebs.encrypted = encrypted;
  const iops = d.optInt(o, 'iops', path);
  if (iops !== undefined) ebs.iops = iops;
  const size = d.optInt(o, 'volumeSize', path);
  if (size !== undefined) ebs.volumeSize = size;
  const type = d.optStr(o, 'volumeType', path);
  if (type) {
    if (!(VOLUME_TYPES as readonly string[]).includes(type)) {
      d.fail(`${path}.volumeType`, `expected one of ${VOLUME_TYPES.join(', ')}, got ${JSON.stringify(type)}`);
    }
    ebs.volumeType = type;
  }
  const throughput = d.optInt(o, 'throughputMib', path);
  if (throughput !== undefined) ebs.throughputMib = throughput;
  const kms = d.optObj(o, 'kmsKey', path);
  if (kms) {
    const k = d.ref(kms, `${path}.kmsKey`);
    if (k.id || k.arn) ebs.kmsKey = { ...(k.id ? { id: k.id } : {}), ...(k.arn ? { arn: k.arn } : {}) };
  }
  return ebs;
}
