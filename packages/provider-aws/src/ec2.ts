import { access, readFile } from 'node:fs/promises';
import {
  DescribeImagesCommand,
  DescribeInstancesCommand,
  DescribeSecurityGroupsCommand,
  DescribeSubnetsCommand,
  EC2Client,
  type Filter,
  type Image,
  type Instance,
  type SecurityGroup,
  type Subnet,
  type Tag,
} from '@aws-sdk/client-ec2';
import { fromIni, fromTokenFile } from '@aws-sdk/credential-providers';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import {
  ForbiddenError,
  InvalidInputError,
  isCoreError,
  RejectedError,
  TransientError,
  type ClusterFacts,
  type CoreError,
  type InstanceInfo,
  type KubeObject,
  type VerificationProblem,
} from '@karpenter-operator/core';

/** Where the adapter's AWS credentials come from. */
export type AwsCredentialsSource =
  /** The CCO-minted Secret mounted as a shared credentials file (static keys or `role_arn` + token file). */
  | { type: 'sharedCredentialsFile'; path: string; profile?: string }
  /** STS web identity: a projected ServiceAccount token exchanged for the role. */
  | { type: 'webIdentity'; roleArn: string; tokenFile: string; roleSessionName?: string }
  /** The SDK's default chain (env, shared files, IMDS): development only. */
  | { type: 'default' };

export interface Ec2ClientOptions {
  /** Overrides the region from the cluster facts. */
  region?: string;
  /** Overrides the EC2 (and STS) endpoint: tests, emulators, private endpoints. */
  endpoint?: string;
  credentials?: AwsCredentialsSource;
  /** Attempts per call including the first (adaptive retry mode: backoff with jitter, client-side rate limiting). */
  maxAttempts?: number;
  requestTimeoutMs?: number;
  connectionTimeoutMs?: number;
}

export const EC2_DEFAULTS = { maxAttempts: 5, requestTimeoutMs: 10_000, connectionTimeoutMs: 3_000 } as const;

/** How often static keys from the mounted Secret are re-read (CCO rotates them in place). */
export const SHARED_FILE_REREAD_MS = 10 * 60 * 1000;

type CredentialProvider = () => ReturnType<ReturnType<typeof fromIni>>;

/**
 * Static keys carry no expiration, so the SDK would cache them for the life of the process and never see
 * a rotated Secret. Giving them one makes the SDK call the provider again (it refreshes five minutes
 * before expiry); credentials that expire on their own (STS) keep their expiration.
 */
export function rereadEvery(ms: number, provider: CredentialProvider, now: () => number = Date.now): CredentialProvider {
  return async () => {
    const c = await provider();
    return c.expiration ? c : { ...c, expiration: new Date(now() + ms) };
  };
}

/** Builds an EC2 client for `region`. No I/O: credentials are read on the first call. */
export function createEc2Client(options: Ec2ClientOptions, region: string): EC2Client {
  return new EC2Client(awsClientConfig(options, region, options.endpoint));
}

/**
 * The configuration every AWS client of the operator shares (credentials, adaptive retries, timeouts),
 * for `region` and a service `endpoint` when it is overridden. No I/O.
 */
export function awsClientConfig(options: Ec2ClientOptions, region: string, endpoint: string | undefined) {
  const clientConfig = { region, ...(endpoint ? { endpoint } : {}) };
  const creds = options.credentials ?? { type: 'default' };
  const credentials =
    creds.type === 'sharedCredentialsFile'
      ? rereadEvery(
          SHARED_FILE_REREAD_MS,
          fromIni({ filepath: creds.path, ...(creds.profile ? { profile: creds.profile } : {}), clientConfig, ignoreCache: true }),
        )
      : creds.type === 'webIdentity'
        ? fromTokenFile({
            roleArn: creds.roleArn,
            webIdentityTokenFile: creds.tokenFile,
            roleSessionName: creds.roleSessionName ?? 'karpenter-operator',
            clientConfig,
          })
        : undefined;
  return {
    ...clientConfig,
    ...(credentials ? { credentials } : {}),
    retryMode: 'adaptive',
    maxAttempts: options.maxAttempts ?? EC2_DEFAULTS.maxAttempts,
    requestHandler: new NodeHttpHandler({
      requestTimeout: options.requestTimeoutMs ?? EC2_DEFAULTS.requestTimeoutMs,
      connectionTimeout: options.connectionTimeoutMs ?? EC2_DEFAULTS.connectionTimeoutMs,
      // Without this the handler only logs a breached request timeout and keeps waiting.
      throwOnRequestTimeout: true,
    }),
  };
}

// Error codes, from the EC2 API reference and the SDK's retry classification.
const THROTTLING = new Set([
  'Throttling',
  'ThrottlingException',
  'ThrottledException',
  'RequestThrottled',
  'RequestThrottledException',
  'RequestLimitExceeded',
  'TooManyRequestsException',
  'BandwidthLimitExceeded',
  'SlowDown',
  'PriorRequestNotComplete',
  'EC2ThrottledException',
]);
const AUTH = new Set([
  'UnauthorizedOperation',
  'AuthFailure',
  'AccessDenied',
  'AccessDeniedException',
  'InvalidClientTokenId',
  'SignatureDoesNotMatch',
  'IncompleteSignature',
  'ExpiredToken',
  'ExpiredTokenException',
  'RequestExpired',
  'MissingAuthenticationToken',
  'UnrecognizedClientException',
  'OptInRequired',
  'Blocked',
  'InvalidIdentityToken',
]);
const TRANSIENT = new Set([
  'InternalError',
  'InternalFailure',
  'ServiceUnavailable',
  'Unavailable',
  'RequestTimeout',
  'RequestTimeoutException',
  'TimeoutError',
  'NetworkingError',
  'AbortError',
  'IDPCommunicationError',
]);
const NETWORK_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'ECONNABORTED', 'EPIPE', 'ETIMEDOUT', 'EAI_AGAIN', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH']);

interface SdkErrorShape {
  name?: string;
  message?: string;
  code?: string;
  $fault?: 'client' | 'server';
  $retryable?: unknown;
  $metadata?: { httpStatusCode?: number };
}

/**
 * Maps an SDK error to a core error with the original as `cause`, so nothing AWS-shaped crosses the port.
 * Message: "<operation>: <code>: <message>".
 */
export function mapAwsError(operation: string, e: unknown): CoreError {
  if (isCoreError(e)) return e;
  const err = (typeof e === 'object' && e !== null ? e : {}) as SdkErrorShape;
  const name = err.name ?? 'Error';
  const detail = err.message ?? String(e);
  const cause = name !== 'Error' && !detail.startsWith(name) ? `${name}: ${detail}` : detail;
  const message = `${operation}: ${cause}`;
  const status = err.$metadata?.httpStatusCode;
  if (name === 'CredentialsProviderError') {
    return new InvalidInputError('CloudCredentialsInvalid', 'AWS credentials', 'credentials', message, { cause: e });
  }
  if (THROTTLING.has(name) || status === 429) return new TransientError(message, { cause: e });
  if (AUTH.has(name) || status === 401 || status === 403) return new ForbiddenError(message, { cause: e });
  if (
    TRANSIENT.has(name) ||
    (err.code !== undefined && NETWORK_CODES.has(err.code)) ||
    (status !== undefined && status >= 500) ||
    err.$fault === 'server' ||
    err.$retryable
  ) {
    return new TransientError(message, { cause: e });
  }
  if ((status !== undefined && status >= 400) || err.$fault === 'client') return new RejectedError(message, { cause: e });
  // No HTTP response at all: the request never completed (DNS, TLS, socket).
  return new TransientError(message, { cause: e });
}

/** `aws:///us-east-1a/i-0abc` (or `aws:///i-0abc`) → `i-0abc`; undefined for other clouds. Pure. */
export function instanceIdFromProviderId(providerID: string): string | undefined {
  const m = /^aws:\/\/\/(?:[a-z0-9-]+\/)?(i-[0-9a-f]+)$/.exec(providerID.trim());
  return m?.[1];
}

export const clusterTagKey = (facts: ClusterFacts): string => `kubernetes.io/cluster/${facts.infrastructureName}`;

const hasTag = (tags: Tag[] | undefined, key: string): boolean => (tags ?? []).some((t) => t.Key === key);

/**
 * The cluster tag's value on what belongs to this cluster alone (the installer's resources and the
 * instances Karpenter launches); `shared` marks resources several clusters use, never a node of this one.
 */
export const ClusterOwnedTagValue = 'owned';
const ownedBy = (tags: Tag[] | undefined, key: string): boolean => (tags ?? []).some((t) => t.Key === key && t.Value === ClusterOwnedTagValue);

/** EC2 allows up to 200 values per filter. */
const FILTER_VALUES_MAX = 200;
const MAX_PAGES = 100;

const chunks = <T>(list: T[], size: number): T[][] => {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += size) out.push(list.slice(i, i + size));
  return out;
};

async function paginate<T>(fetch: (token: string | undefined) => Promise<{ items: T[] | undefined; next: string | undefined }>): Promise<T[]> {
  const all: T[] = [];
  let token: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const { items, next } = await fetch(token);
    all.push(...(items ?? []));
    if (!next) break;
    token = next;
  }
  return all;
}

/** Tags of a selector term as EC2 filters (`*` selects any value of the key). */
function tagFilters(tags: Record<string, unknown>): Filter[] {
  return Object.entries(tags).map(([k, v]) =>
    v === '*' ? { Name: 'tag-key', Values: [k] } : { Name: `tag:${k}`, Values: [String(v)] },
  );
}

const describeTags = (tags: Record<string, unknown>): string =>
  `{${Object.entries(tags)
    .map(([k, v]) => `${k}=${String(v)}`)
    .join(', ')}}`;

type Term = Record<string, unknown>;

function termsOf(spec: Record<string, unknown>, key: string, problems: VerificationProblem[]): Term[] {
  const v = spec[key];
  if (!Array.isArray(v) || !v.length) {
    problems.push({ field: `spec.${key}`, message: 'no selector terms' });
    return [];
  }
  return v.map((t) => (typeof t === 'object' && t !== null ? (t as Term) : {}));
}

/**
 * The EC2 side of the AWS CloudProvider: NodeClass verification, instance lookups for node identity and
 * the credentials check. Every SDK error leaves through `mapAwsError`.
 */
export class Ec2Adapter {
  private readonly clients = new Map<string, EC2Client>();

  constructor(
    private readonly options: Ec2ClientOptions,
    private readonly clientFor: (region: string) => EC2Client = (region) => createEc2Client(options, region),
  ) {}

  private client(facts: ClusterFacts): EC2Client {
    const region = this.options.region ?? facts.region;
    if (!region) {
      throw new InvalidInputError('RegionMissing', 'Infrastructure cluster', 'status.platformStatus.aws.region', 'the AWS region is not set');
    }
    let c = this.clients.get(region);
    if (!c) {
      c = this.clientFor(region);
      this.clients.set(region, c);
    }
    return c;
  }

  private async call<T>(operation: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (e) {
      throw mapAwsError(operation, e);
    }
  }

  private subnets(ec2: EC2Client, filters: Filter[]): Promise<Subnet[]> {
    return this.call('describing subnets', () =>
      paginate(async (NextToken) => {
        const r = await ec2.send(new DescribeSubnetsCommand({ Filters: filters, ...(NextToken ? { NextToken } : {}) }));
        return { items: r.Subnets, next: r.NextToken };
      }),
    );
  }

  private securityGroups(ec2: EC2Client, filters: Filter[]): Promise<SecurityGroup[]> {
    return this.call('describing security groups', () =>
      paginate(async (NextToken) => {
        const r = await ec2.send(new DescribeSecurityGroupsCommand({ Filters: filters, ...(NextToken ? { NextToken } : {}) }));
        return { items: r.SecurityGroups, next: r.NextToken };
      }),
    );
  }

  private images(ec2: EC2Client, filters: Filter[], owners?: string[]): Promise<Image[]> {
    return this.call('describing images', () =>
      paginate(async (NextToken) => {
        const r = await ec2.send(
          new DescribeImagesCommand({
            Filters: filters,
            // RHCOS boot images older than two years are deprecated by AWS but still launch.
            IncludeDeprecated: true,
            ...(owners ? { Owners: owners } : {}),
            ...(NextToken ? { NextToken } : {}),
          }),
        );
        return { items: r.Images, next: r.NextToken };
      }),
    );
  }

  /**
   * Resolves the NodeClass's subnet, security group and AMI terms (ids in one batched call per kind,
   * each tag/name term in its own call) and reports what is missing or foreign: subnets absent, in
   * another VPC than the cluster's or without the cluster tag; security groups absent or in another VPC;
   * AMIs absent or not `available`.
   *
   * The instance profile is not checked: that needs IAM `GetInstanceProfile` (`@aws-sdk/client-iam`),
   * which this package does not depend on; Karpenter reports a bad profile on the NodeClass itself.
   */
  async verifyNodeClass(nodeClass: KubeObject, facts: ClusterFacts): Promise<VerificationProblem[]> {
    const ec2 = this.client(facts);
    const spec = (nodeClass.spec ?? {}) as Record<string, unknown>;
    const problems: VerificationProblem[] = [];
    const clusterTag = clusterTagKey(facts);

    // Subnets.
    const subnetTerms = termsOf(spec, 'subnetSelectorTerms', problems);
    const found: Array<{ field: string; subnet: Subnet }> = [];
    const idTerms = subnetTerms.flatMap((t, i) => (typeof t.id === 'string' ? [{ i, id: t.id }] : []));
    const byId = new Map<string, Subnet>();
    for (const ids of chunks([...new Set(idTerms.map((t) => t.id))], FILTER_VALUES_MAX)) {
      for (const s of await this.subnets(ec2, [{ Name: 'subnet-id', Values: ids }])) if (s.SubnetId) byId.set(s.SubnetId, s);
    }
    for (const { i, id } of idTerms) {
      const s = byId.get(id);
      if (s) found.push({ field: `spec.subnetSelectorTerms[${i}]`, subnet: s });
      else problems.push({ field: `spec.subnetSelectorTerms[${i}]`, message: `subnet ${id} not found` });
    }
    for (const [i, t] of subnetTerms.entries()) {
      if (typeof t.id === 'string' || typeof t.tags !== 'object' || t.tags === null) continue;
      const tags = t.tags as Record<string, unknown>;
      const subnets = await this.subnets(ec2, tagFilters(tags));
      if (!subnets.length) problems.push({ field: `spec.subnetSelectorTerms[${i}]`, message: `no subnet has tags ${describeTags(tags)}` });
      for (const s of subnets) found.push({ field: `spec.subnetSelectorTerms[${i}]`, subnet: s });
    }
    // The cluster's VPC: that of the first subnet carrying the cluster tag (else the first subnet).
    const vpcId = (found.find((f) => hasTag(f.subnet.Tags, clusterTag)) ?? found[0])?.subnet.VpcId;
    const reported = new Set<string>();
    for (const { field, subnet } of found) {
      const key = `${field}|${subnet.SubnetId}`;
      if (reported.has(key)) continue;
      reported.add(key);
      if (vpcId && subnet.VpcId !== vpcId) {
        problems.push({ field, message: `subnet ${subnet.SubnetId} is in ${subnet.VpcId}, not in the cluster's ${vpcId}` });
      }
      if (!hasTag(subnet.Tags, clusterTag)) {
        problems.push({ field, message: `subnet ${subnet.SubnetId} lacks the cluster tag ${clusterTag}` });
      }
    }

    // Security groups.
    const sgTerms = termsOf(spec, 'securityGroupSelectorTerms', problems);
    const sgIdTerms = sgTerms.flatMap((t, i) => (typeof t.id === 'string' ? [{ i, id: t.id }] : []));
    const sgById = new Map<string, SecurityGroup>();
    for (const ids of chunks([...new Set(sgIdTerms.map((t) => t.id))], FILTER_VALUES_MAX)) {
      for (const g of await this.securityGroups(ec2, [{ Name: 'group-id', Values: ids }])) if (g.GroupId) sgById.set(g.GroupId, g);
    }
    const sgFound: Array<{ field: string; group: SecurityGroup }> = [];
    for (const { i, id } of sgIdTerms) {
      const g = sgById.get(id);
      if (g) sgFound.push({ field: `spec.securityGroupSelectorTerms[${i}]`, group: g });
      else problems.push({ field: `spec.securityGroupSelectorTerms[${i}]`, message: `security group ${id} not found` });
    }
    for (const [i, t] of sgTerms.entries()) {
      if (typeof t.id === 'string') continue;
      const filters: Filter[] = [];
      if (typeof t.name === 'string') filters.push({ Name: 'group-name', Values: [t.name] });
      if (typeof t.tags === 'object' && t.tags !== null) filters.push(...tagFilters(t.tags as Record<string, unknown>));
      if (!filters.length) continue;
      const groups = await this.securityGroups(ec2, filters);
      const what = typeof t.name === 'string' ? `named ${t.name}` : `with tags ${describeTags(t.tags as Record<string, unknown>)}`;
      if (!groups.length) problems.push({ field: `spec.securityGroupSelectorTerms[${i}]`, message: `no security group ${what}` });
      for (const g of groups) sgFound.push({ field: `spec.securityGroupSelectorTerms[${i}]`, group: g });
    }
    for (const { field, group } of sgFound) {
      if (vpcId && group.VpcId !== vpcId) {
        problems.push({ field, message: `security group ${group.GroupId} is in ${group.VpcId}, not in the cluster's ${vpcId}` });
      }
    }

    // AMIs.
    const amiTerms = termsOf(spec, 'amiSelectorTerms', problems);
    const amiIdTerms = amiTerms.flatMap((t, i) => (typeof t.id === 'string' ? [{ i, id: t.id }] : []));
    const imageById = new Map<string, Image>();
    for (const ids of chunks([...new Set(amiIdTerms.map((t) => t.id))], FILTER_VALUES_MAX)) {
      for (const img of await this.images(ec2, [{ Name: 'image-id', Values: ids }])) if (img.ImageId) imageById.set(img.ImageId, img);
    }
    for (const { i, id } of amiIdTerms) {
      const img = imageById.get(id);
      if (!img) problems.push({ field: `spec.amiSelectorTerms[${i}]`, message: `AMI ${id} not found` });
      else if (img.State && img.State !== 'available') problems.push({ field: `spec.amiSelectorTerms[${i}]`, message: `AMI ${id} is ${img.State}` });
    }
    for (const [i, t] of amiTerms.entries()) {
      if (typeof t.id === 'string') continue;
      // Aliases and SSM parameters resolve outside EC2; Karpenter reports them itself.
      if (typeof t.alias === 'string' || typeof t.ssmParameter === 'string') continue;
      const filters: Filter[] = [];
      if (typeof t.name === 'string') filters.push({ Name: 'name', Values: [t.name] });
      if (typeof t.tags === 'object' && t.tags !== null) filters.push(...tagFilters(t.tags as Record<string, unknown>));
      if (!filters.length) continue;
      const owners = typeof t.owner === 'string' ? t.owner.split(',').map((o) => o.trim()).filter(Boolean) : undefined;
      const images = await this.images(ec2, filters, owners);
      if (!images.some((img) => img.State === undefined || img.State === 'available')) {
        problems.push({ field: `spec.amiSelectorTerms[${i}]`, message: `no available AMI matches ${JSON.stringify(t)}` });
      }
    }
    return problems;
  }

  /**
   * One batched DescribeInstances (filters `instance-id`, state `pending|running`), paginated; unknown
   * IDs are simply absent. `ownedByCluster`: the instance carries the cluster tag with the value `owned`.
   */
  async describeInstances(instanceIds: string[], facts: ClusterFacts): Promise<InstanceInfo[]> {
    const ids = [...new Set(instanceIds)];
    if (!ids.length) return [];
    const ec2 = this.client(facts);
    const clusterTag = clusterTagKey(facts);
    const instances: Instance[] = [];
    for (const chunk of chunks(ids, FILTER_VALUES_MAX)) {
      const page = await this.call('describing instances', () =>
        paginate(async (NextToken) => {
          const r = await ec2.send(
            new DescribeInstancesCommand({
              Filters: [
                { Name: 'instance-id', Values: chunk },
                { Name: 'instance-state-name', Values: ['pending', 'running'] },
              ],
              ...(NextToken ? { NextToken } : {}),
            }),
          );
          return { items: (r.Reservations ?? []).flatMap((res) => res.Instances ?? []), next: r.NextToken };
        }),
      );
      instances.push(...page);
    }
    return instances.filter((i) => i.InstanceId).map((i) => toInstanceInfo(i, clusterTag));
  }

  /**
   * A cheap read proving the credentials work: DescribeInstances with `DryRun`, which every credential of
   * this operator may call (the operand's and the narrow node-identity one); AWS answers
   * `DryRunOperation` when the call would have succeeded. Throws `InvalidInputError` when the credentials
   * file is missing or unusable, `ForbiddenError` when AWS refuses them, `TransientError` when EC2 cannot
   * be reached.
   */
  async checkCredentials(facts: ClusterFacts): Promise<void> {
    const creds = this.options.credentials;
    const file = creds?.type === 'sharedCredentialsFile' ? creds.path : creds?.type === 'webIdentity' ? creds.tokenFile : undefined;
    if (file) {
      try {
        await access(file);
      } catch (e) {
        throw new InvalidInputError('CloudCredentialsMissing', `credentials file ${file}`, file, 'not readable', { cause: e });
      }
    }
    if (creds?.type === 'sharedCredentialsFile') {
      // Short-lived credentials (STS): the profile names a projected ServiceAccount token that the pod
      // must mount; say so, instead of the SDK's generic "could not load credentials".
      const token = webIdentityTokenFileOf(await readFile(creds.path, 'utf8').catch(() => ''), creds.profile ?? 'default');
      if (token !== undefined) {
        try {
          await access(token);
        } catch (e) {
          throw new InvalidInputError(
            'WebIdentityTokenMissing',
            `credentials file ${creds.path}`,
            'web_identity_token_file',
            `${token} is not readable: mount the projected ServiceAccount token (audience openshift) there`,
            { cause: e },
          );
        }
      }
    }
    const ec2 = this.client(facts);
    await this.call('checking credentials (DescribeInstances DryRun)', async () => {
      try {
        // Some emulators ignore DryRun and answer normally: that proves the credentials just as well.
        await ec2.send(new DescribeInstancesCommand({ DryRun: true, MaxResults: 5 }));
      } catch (e) {
        if ((e as { name?: unknown } | null)?.name !== 'DryRunOperation') throw e;
      }
    });
  }
}

/** `web_identity_token_file` of `profile` in an AWS shared credentials/config file, if it names one. Pure. */
export function webIdentityTokenFileOf(text: string, profile: string): string | undefined {
  let section: string | undefined;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[\s*(?:profile\s+)?([^\]]+?)\s*\]$/.exec(line);
    if (header) {
      section = header[1];
      continue;
    }
    const kv = /^([A-Za-z0-9_]+)\s*=\s*(.*)$/.exec(line);
    if (section === profile && kv && kv[1] === 'web_identity_token_file' && kv[2]) return kv[2].trim();
  }
  return undefined;
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
    state: i.State?.Name ?? 'unknown',
    privateIpAddresses: [...priv],
    publicIpAddresses: [...pub],
    ownedByCluster: ownedBy(i.Tags, clusterTag),
  };
  if (i.PrivateDnsName) info.privateDnsName = i.PrivateDnsName;
  if (i.PublicDnsName) info.publicDnsName = i.PublicDnsName;
  return info;
}
