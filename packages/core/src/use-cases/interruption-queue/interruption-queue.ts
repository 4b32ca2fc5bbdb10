import { describeError, isCoreError, isInvalidInputError, isTransientError } from '../../errors.js';
import type { ConditionInput } from '../../policy/conditions.js';
import type { CloudProvider } from '../../ports/cloud-provider.js';
import type { Logger } from '../../ports/logger.js';
import type { Topology } from '../../ports/topology.js';
import type { Reconciler, Result, Watch } from '../../runtime/reconciler.js';
import { activeRequest } from '../gate.js';
import type { StatusBoard } from '../status-board.js';

export const INTERRUPTION_QUEUE_CONTROLLER = 'interruption.queue';
const KEY = 'interruption-queue';

/** The condition this use-case reports on the Karpenter CR. */
export const InterruptionQueueCondition = 'InterruptionQueueVerified';

export const InterruptionQueueReasons = {
  AsExpected: 'AsExpected',
  /** `spec.settings.interruptionQueue` is empty: Karpenter does not handle interruptions (True: nothing is wrong). */
  NotConfigured: 'NotConfigured',
  QueueNotFound: 'QueueNotFound',
  CloudAccessDenied: 'CloudAccessDenied',
  VerificationFailed: 'VerificationFailed',
} as const;

export interface InterruptionQueueDeps {
  topology: Topology;
  cloud: CloudProvider;
  board: StatusBoard;
  logger: Logger;
  /** Re-check a queue that exists this often. Default 5 minutes. */
  recheckFoundMs?: number;
  /** Re-check a missing queue (or after a failure) this often, to see it created. Default 30 s. */
  recheckMissingMs?: number;
  /** Consecutive transient cloud failures before the condition turns False. Default 3. */
  failuresBeforeFalse?: number;
}

/**
 * `interruption.queue`: when the Karpenter CR names an interruption queue, checks with the cloud that it
 * exists (Karpenter resolves it by name at start-up and handles no interruption without it) and reports
 * `InterruptionQueueVerified` on the CR, naming the queue when it is missing. Writes nothing but status.
 */
export class InterruptionQueueReconciler implements Reconciler {
  readonly name = INTERRUPTION_QUEUE_CONTROLLER;
  readonly watches: Watch[];
  private failures = 0;

  constructor(private readonly deps: InterruptionQueueDeps) {
    this.watches = [...deps.topology.watches];
  }

  keysFor(): string[] {
    return [KEY];
  }

  async resyncKeys(): Promise<string[]> {
    return [KEY];
  }

  async reconcile(): Promise<Result> {
    const { topology, cloud, board } = this.deps;
    const missingMs = this.deps.recheckMissingMs ?? 30_000;
    const set = (c: ConditionInput | undefined) => board.setCondition(this.name, c);
    let request;
    try {
      request = await activeRequest(topology, cloud);
    } catch (e) {
      // Reported by the status use-case (KarpenterCheckFailed); a fixed CR re-triggers us.
      if (isInvalidInputError(e)) return {};
      throw e;
    }
    if (!request) {
      set(undefined);
      return {};
    }
    const queue = request.settings?.interruptionQueue;
    const c = (status: 'True' | 'False', reason: string, message: string): ConditionInput => ({
      type: InterruptionQueueCondition,
      status,
      reason,
      message,
    });
    if (!queue) {
      // True: nothing is wrong (a False use-case condition makes the operator Degraded), and a False left
      // from an earlier queue is replaced rather than kept.
      set(
        c(
          'True',
          InterruptionQueueReasons.NotConfigured,
          'spec.settings.interruptionQueue is empty: nothing to verify; Karpenter does not handle spot interruptions, rebalance recommendations or scheduled events',
        ),
      );
      return {};
    }
    let facts;
    try {
      facts = await topology.clusterFacts();
    } catch (e) {
      if (isInvalidInputError(e)) return {};
      throw e;
    }
    try {
      const exists = await cloud.interruptionQueueExists(queue, facts);
      this.failures = 0;
      if (exists) {
        set(c('True', InterruptionQueueReasons.AsExpected, `SQS queue ${queue} exists`));
        return { requeueAfterMs: this.deps.recheckFoundMs ?? 5 * 60_000 };
      }
      const where = facts.region ? ` in region ${facts.region}` : '';
      set(
        c(
          'False',
          InterruptionQueueReasons.QueueNotFound,
          `spec.settings.interruptionQueue: SQS queue ${queue} does not exist${where}; Karpenter handles no interruption until it does`,
        ),
      );
      return { requeueAfterMs: missingMs };
    } catch (e) {
      if (!isCoreError(e)) throw e;
      this.failures++;
      const message = `checking SQS queue ${queue}: ${describeError(e)}`;
      this.deps.logger.warn('interruption queue check failed', { queue, error: message, consecutiveFailures: this.failures });
      if (!isTransientError(e)) set(c('False', InterruptionQueueReasons.CloudAccessDenied, message));
      else if (this.failures >= (this.deps.failuresBeforeFalse ?? 3)) set(c('False', InterruptionQueueReasons.VerificationFailed, message));
      return { requeueAfterMs: missingMs };
    }
  }
}
