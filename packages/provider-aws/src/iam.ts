import { GetInstanceProfileCommand, IAMClient } from '@aws-sdk/client-iam';
import type { ClusterFacts } from '@karpenter-operator/core';
import { awsClientConfig, perRegion, type Ec2ClientOptions } from './aws-client.js';
import { mapAwsError } from './aws-errors.js';

/** An instance profile as IAM reports it. */
export interface InstanceProfileInfo {
  name: string;
  arn: string;
  /** Names of the roles in the profile (an instance profile holds at most one). */
  roles: string[];
}

/** The IAM reads of the operator: whether an instance profile exists. IAM is global; signing uses the cluster's region. */
export class IamAdapter {
  private readonly client: (facts: ClusterFacts) => IAMClient;

  constructor(
    options: Ec2ClientOptions,
    endpoint: string | undefined,
    clientFor: (region: string) => IAMClient = (region) => new IAMClient(awsClientConfig(options, region, endpoint)),
  ) {
    this.client = perRegion(options.region, clientFor);
  }

  /**
   * `GetInstanceProfile` by name: the profile, or undefined when IAM answers `NoSuchEntity`. Other
   * failures leave through `mapAwsError`.
   */
  async instanceProfile(name: string, facts: ClusterFacts): Promise<InstanceProfileInfo | undefined> {
    const client = this.client(facts);
    try {
      const r = await client.send(new GetInstanceProfileCommand({ InstanceProfileName: name }));
      const p = r.InstanceProfile;
      return {
        name: p?.InstanceProfileName ?? name,
        arn: p?.Arn ?? '',
        roles: (p?.Roles ?? []).flatMap((role) => (role.RoleName ? [role.RoleName] : [])),
      };
    } catch (e) {
      const code = (e as { name?: unknown } | null)?.name;
      if (code === 'NoSuchEntity' || code === 'NoSuchEntityException') return undefined;
      throw mapAwsError(`getting instance profile ${name}`, e);
    }
  }
}
