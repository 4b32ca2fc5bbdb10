import { access, readFile } from 'node:fs/promises';
import { DescribeInstancesCommand, EC2Client } from '@aws-sdk/client-ec2';
import { type ClusterFacts, type InstanceInfo, type KubeObject, type VerificationProblem } from '@karpenter-operator/core';
import { createEc2Client, perRegion, type Ec2ClientOptions } from './aws-client.js';
import { callAws, credentialFileUnreadable } from './aws-errors.js';
import { describeInstances } from './instances.js';
import { verifyNodeClassReferences } from './nodeclass-verification.js';

/**
 * The EC2 side of the AWS CloudProvider: one client per region, NodeClass verification, instance lookups
 * for node identity and the credentials check. Every SDK error leaves through `mapAwsError`.
 */
export class Ec2Adapter {
  /** The EC2 client of the cluster's region (or the configured override). */
  readonly client: (facts: ClusterFacts) => EC2Client;

  constructor(
    private readonly options: Ec2ClientOptions,
    clientFor: (region: string) => EC2Client = (region) => createEc2Client(options, region),
  ) {
    this.client = perRegion(options.region, clientFor);
  }

  /**
   * Resolves the NodeClass's subnet, security group and AMI terms (ids in one batched call per kind,
   * each tag/name term in its own call) and reports what is missing or foreign.
   */
  verifyNodeClass(nodeClass: KubeObject, facts: ClusterFacts): Promise<VerificationProblem[]> {
    return verifyNodeClassReferences(this.client(facts), nodeClass, facts);
  }

  /**
   * One batched DescribeInstances (filters `instance-id`, state `pending|running`), paginated; unknown
   * IDs are simply absent. `ownedByCluster`: the instance carries the cluster tag with the value `owned`.
   */
  async describeInstances(instanceIds: string[], facts: ClusterFacts): Promise<InstanceInfo[]> {
    if (!instanceIds.length) return [];
    return describeInstances(this.client(facts), instanceIds, facts);
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
        throw credentialFileUnreadable({ object: `credentials file ${file}`, field: file, path: file, cause: e });
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
          throw credentialFileUnreadable({
            object: `credentials file ${creds.path}`,
            field: 'web_identity_token_file',
            path: token,
            cause: e,
          });
        }
      }
    }
    const ec2 = this.client(facts);
    await callAws('checking credentials (DescribeInstances DryRun)', async () => {
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
