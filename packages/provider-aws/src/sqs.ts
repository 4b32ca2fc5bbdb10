import { GetQueueUrlCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { ClusterFacts } from '@karpenter-operator/core';
import { awsClientConfig, perRegion, type Ec2ClientOptions } from './aws-client.js';
import { mapAwsError } from './aws-errors.js';

// What SQS answers for a queue that does not exist: the JSON protocol's name and the query protocol's code.
const NO_SUCH_QUEUE = new Set(['QueueDoesNotExist', 'AWS.SimpleQueueService.NonExistentQueue']);

/** The operator's SQS calls: whether Karpenter's interruption queue exists. */
export class SqsAdapter {
  private readonly client: (facts: ClusterFacts) => SQSClient;

  constructor(
    options: Ec2ClientOptions,
    endpoint: string | undefined,
    clientFor: (region: string) => SQSClient = (region) => new SQSClient(awsClientConfig(options, region, endpoint)),
  ) {
    this.client = perRegion(options.region, clientFor);
  }

  /** GetQueueUrl by name, as Karpenter resolves the queue at start-up: true when found, false when SQS says it does not exist. */
  async queueExists(queueName: string, facts: ClusterFacts): Promise<boolean> {
    const client = this.client(facts);
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
