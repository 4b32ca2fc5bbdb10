import { EC2Client } from '@aws-sdk/client-ec2';
import { fromIni, fromTokenFile } from '@aws-sdk/credential-providers';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { Agent as HttpsAgent } from 'node:https';
import { InvalidInputError, type ClusterFacts } from '@karpenter-operator/core';

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

/**
 * One client per region, built on first use, for the region the options force or else the cluster's.
 * The returned function throws `InvalidInputError` `RegionMissing` when neither names one.
 */
export function perRegion<C>(regionOverride: string | undefined, make: (region: string) => C): (facts: ClusterFacts) => C {
  const clients = new Map<string, C>();
  return (facts) => {
    const region = regionOverride ?? facts.region;
    if (!region) {
      throw new InvalidInputError(
        'RegionMissing',
        'Infrastructure cluster',
        'status.platformStatus.aws.region',
        'the AWS region is not set',
      );
    }
    let c = clients.get(region);
    if (!c) {
      c = make(region);
      clients.set(region, c);
    }
    return c;
  };
}
