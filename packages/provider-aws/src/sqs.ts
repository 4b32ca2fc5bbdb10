import { GetQueueUrlCommand, SQSClient } from '@aws-sdk/client-sqs';
import { InvalidInputError, type ClusterFacts } from '@karpenter-operator/core';
import { awsClientConfig, type Ec2ClientOptions } from './aws-client.js';
import { mapAwsError } from './aws-errors.js';

// What SQS answers for a queue that does not exist: the JSON protocol's name and the query protocol's code.
const NO_SUCH_QUEUE = new Set(['QueueDoesNotExist', 'AWS.SimpleQueueService.NonExistentQueue']);

/** The operator's SQS calls: whether Karpenter's interruption queue exists. */
export class SqsAdapter {
  private readonly clients = new Map<string, SQSClient>();

  constructor(
    private readonly options: Ec2ClientOptions,
    private readonly endpoint: string | undefined,
    private readonly clientFor: (region: string) => SQSClient = (region) => new SQSClient(awsClientConfig(options, region, endpoint)),
  ) {}

  /** GetQueueUrl by name, as Karpenter resolves the queue at start-up: true when found, false when SQS says it does not exist. */
  async queueExists(queueName: string, facts: ClusterFacts): Promise<boolean> {
    const region = this.options.region ?? facts.region;
    if (!region)
      throw new InvalidInputError(
        'RegionMissing',
        'Infrastructure cluster',
        'status.platformStatus.aws.region',
        'the AWS region is not set',
      );
    let client = this.clients.get(region);
    if (!client) {
      client = this.clientFor(region);
      this.clients.set(region, client);
    }
    try {
      await client.send(new GetQueueUrlCommand({ QueueName: queueName }));
      return true;
    } catch (e) {
      const name = (e as { name?: string; Code?: string } | null)?.name;
      if (name !== undefined && NO_SUCH_QUEUE.has(name)) return false;
      throw mapAwsError(`looking up SQS queue ${queueName}`, e);
    }
  }
}
