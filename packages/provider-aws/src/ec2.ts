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
import { EC2_FILTER_VALUES_MAX, EC2_LIVE_INSTANCE_STATES } from './names.js';
import { Agent as HttpsAgent } from 'node:https';
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
  /**
   * `HTTP_PROXY` / `HTTPS_PROXY` / `NO_PROXY` (validated by the caller): EC2 and STS calls go through that
   * proxy. Node's `--use-env-proxy` reaches only its global agents, not the SDK's own.
   */
  proxyEnv?: Record<string, string>;
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
 * The configuration every AWS client of the operator shares (credentials, adaptive retries, timeouts, the
 * cluster-wide proxy), for `region` and a service `endpoint` when it is overridden. No I/O.
 */
export function awsClientConfig(options: Ec2ClientOptions, region: string, endpoint: string | undefined) {
  const requestHandler = new NodeHttpHandler({
    requestTimeout: options.requestTimeoutMs ?? EC2_DEFAULTS.requestTimeoutMs,
    connectionTimeout: options.connectionTimeoutMs ?? EC2_DEFAULTS.connectionTimeoutMs,
    // Without this the handler only logs a breached request timeout and keeps waiting.
    throwOnRequestTimeout: true,
    // The SDK's own default agent, plus the proxy when there is one.
    ...(options.proxyEnv ? { httpsAgent: new HttpsAgent({ keepAlive: true, maxSockets: 50, proxyEnv: options.proxyEnv }) } : {}),
  });
  // STS (web identity) uses the same handler: the same proxy and timeouts.
  const clientConfig = { region, ...(endpoint ? { endpoint } : {}), ...(options.proxyEnv ? { requestHandler } : {}) };
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
    requestHandler,
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
const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

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
const ownedBy = (tags: Tag[] | undefined, key: string): boolean =>
  (tags ?? []).some((t) => t.Key === key && t.Value === ClusterOwnedTagValue);

const MAX_PAGES = 100;

const chunks = <T>(list: T[], size: number): T[][] => {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += size) out.push(list.slice(i, i + size));
  return out;
};

async function paginate<T>(
  fetch: (token: string | undefined) => Promise<{ items: T[] | undefined; next: string | undefined }>,
): Promise<T[]> {
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
  return Object.entries(tags).map(([k, v]) => (v === '*' ? { Name: 'tag-key', Values: [k] } : { Name: `tag:${k}`, Values: [String(v)] }));
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

/** One selector term as EC2 resolved it: `id` for an `{id}` term (then at most one item). */
interface TermMatch<T> {
  field: string;
  term: Term;
  id?: string;
  items: T[];
}

/**
 * Resolves one list of selector terms, the same way for subnets, security groups and AMIs: `{id}` terms in
 * batched calls (`EC2_FILTER_VALUES_MAX` ids each, de-duplicated), every other term with the filters
 * `filtersOf` gives it in a call of its own (a term it gives undefined is skipped). `{id}` terms come first, in order,
 * then the others in order.
 */
async function resolveTerms<T>(
  terms: Term[],
  list: string,
  o: {
    idFilter: string;
    idOf: (item: T) => string | undefined;
    describe: (filters: Filter[], term?: Term) => Promise<T[]>;
    filtersOf: (t: Term) => Filter[] | undefined;
  },
): Promise<Array<TermMatch<T>>> {
  const idTerms = terms.flatMap((term, i) => (typeof term.id === 'string' ? [{ i, term, id: term.id }] : []));
  const byId = new Map<string, T>();
  for (const ids of chunks([...new Set(idTerms.map((t) => t.id))], EC2_FILTER_VALUES_MAX)) {
    for (const item of await o.describe([{ Name: o.idFilter, Values: ids }])) {
      const id = o.idOf(item);
      if (id) byId.set(id, item);
    }
  }
  const out: Array<TermMatch<T>> = idTerms.map(({ i, term, id }) => {
    const item = byId.get(id);
    return { field: `spec.${list}[${i}]`, term, id, items: item ? [item] : [] };
  });
  for (const [i, term] of terms.entries()) {
    if (typeof term.id === 'string') continue;
    const filters = o.filtersOf(term);
    if (filters) out.push({ field: `spec.${list}[${i}]`, term, items: await o.describe(filters, term) });
  }
  return out;
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
      throw new InvalidInputError(
        'RegionMissing',
        'Infrastructure cluster',
        'status.platformStatus.aws.region',
        'the AWS region is not set',
      );
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

    const tagsOf = (t: Term): Filter[] =>
      typeof t.tags === 'object' && t.tags !== null ? tagFilters(t.tags as Record<string, unknown>) : [];
    const nonEmpty = (filters: Filter[]): Filter[] | undefined => (filters.length ? filters : undefined);

    // Subnets.
    const subnetMatches = await resolveTerms<Subnet>(termsOf(spec, 'subnetSelectorTerms', problems), 'subnetSelectorTerms', {
      idFilter: 'subnet-id',
      idOf: (s) => s.SubnetId,
      describe: (filters) => this.subnets(ec2, filters),
      // A tags term is looked up even when its map is empty; a term without tags is not.
      filtersOf: (t) => (typeof t.tags === 'object' && t.tags !== null ? tagsOf(t) : undefined),
    });
    const found: Array<{ field: string; subnet: Subnet }> = [];
    for (const { field, term, id, items } of subnetMatches) {
      if (!items.length)
        problems.push({
          field,
          message: id ? `subnet ${id} not found` : `no subnet has tags ${describeTags(term.tags as Record<string, unknown>)}`,
        });
      for (const subnet of items) found.push({ field, subnet });
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
    const sgMatches = await resolveTerms<SecurityGroup>(
      termsOf(spec, 'securityGroupSelectorTerms', problems),
      'securityGroupSelectorTerms',
      {
        idFilter: 'group-id',
        idOf: (g) => g.GroupId,
        describe: (filters) => this.securityGroups(ec2, filters),
        filtersOf: (t) => nonEmpty([...(typeof t.name === 'string' ? [{ Name: 'group-name', Values: [t.name] }] : []), ...tagsOf(t)]),
      },
    );
    for (const { field, term, id, items } of sgMatches) {
      if (items.length) continue;
      if (id) problems.push({ field, message: `security group ${id} not found` });
      else
        problems.push({
          field,
          message: `no security group ${typeof term.name === 'string' ? `named ${term.name}` : `with tags ${describeTags(term.tags as Record<string, unknown>)}`}`,
        });
    }
    for (const { field, items } of sgMatches) {
      for (const group of items) {
        if (vpcId && group.VpcId !== vpcId) {
          problems.push({ field, message: `security group ${group.GroupId} is in ${group.VpcId}, not in the cluster's ${vpcId}` });
        }
      }
    }

    // AMIs. Aliases and SSM parameters resolve outside EC2; Karpenter reports them itself.
    const amiMatches = await resolveTerms<Image>(termsOf(spec, 'amiSelectorTerms', problems), 'amiSelectorTerms', {
      idFilter: 'image-id',
      idOf: (img) => img.ImageId,
      describe: (filters, term) =>
        this.images(
          ec2,
          filters,
          typeof term?.owner === 'string'
            ? term.owner
                .split(',')
                .map((o) => o.trim())
                .filter(Boolean)
            : undefined,
        ),
      filtersOf: (t) =>
        typeof t.alias === 'string' || typeof t.ssmParameter === 'string'
          ? undefined
          : nonEmpty([...(typeof t.name === 'string' ? [{ Name: 'name', Values: [t.name] }] : []), ...tagsOf(t)]),
    });
    for (const { field, term, id, items } of amiMatches) {
      if (id) {
        const img = items[0];
        if (!img) problems.push({ field, message: `AMI ${id} not found` });
        else if (img.State && img.State !== 'available') problems.push({ field, message: `AMI ${id} is ${img.State}` });
      } else if (!items.some((img) => img.State === undefined || img.State === 'available')) {
        problems.push({ field, message: `no available AMI matches ${JSON.stringify(term)}` });
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
    for (const chunk of chunks(ids, EC2_FILTER_VALUES_MAX)) {
      const page = await this.call('describing instances', () =>
        paginate(async (NextToken) => {
          const r = await ec2.send(
            new DescribeInstancesCommand({
              Filters: [
                { Name: 'instance-id', Values: chunk },
                { Name: 'instance-state-name', Values: [...EC2_LIVE_INSTANCE_STATES] },
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
    live: EC2_LIVE_INSTANCE_STATES.includes(i.State?.Name ?? ''),
    privateIpAddresses: [...priv],
    publicIpAddresses: [...pub],
    ownedByCluster: ownedBy(i.Tags, clusterTag),
  };
  if (i.PrivateDnsName) info.privateDnsName = i.PrivateDnsName;
  if (i.PublicDnsName) info.publicDnsName = i.PublicDnsName;
  return info;
}
