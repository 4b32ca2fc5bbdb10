import { beforeEach, describe, expect, it } from 'vitest';
import { ForbiddenError, TransientError } from '../../errors.js';
import type { ClusterFacts, KarpenterRequest } from '../../model/cluster.js';
import { silentLogger } from '../../ports/logger.js';
import type { Topology } from '../../ports/topology.js';
import { standaloneOperandLayout } from '../../topology/standalone.js';
import { FakeCloudProvider, MemoryClusterStore } from '../../testing/index.js';
import { StatusBoard } from '../status-board.js';
import { INTERRUPTION_QUEUE_CONTROLLER, InterruptionQueueReconciler } from './interruption-queue.js';

const facts: ClusterFacts = {
  platform: 'AWS',
  region: 'us-east-1',
  infrastructureName: 'demo-x7k2p',
  apiServerInternalURL: 'https://api-int:6443',
  resourceTags: [],
};
const owner = { apiVersion: 'autoscaling.openshift.io/v1alpha1', kind: 'Karpenter', name: 'default', uid: 'u' };

describe('interruption.queue', () => {
  let request: KarpenterRequest | undefined;
  let cloud: FakeCloudProvider;
  let board: StatusBoard;
  let reconciler: InterruptionQueueReconciler;
  const condition = () => board.get(INTERRUPTION_QUEUE_CONTROLLER)?.condition;

  beforeEach(() => {
    request = {
      owner,
      generation: 1,
      logLevel: 'info',
      deleting: false,
      finalizers: [],
      settings: { interruptionQueue: 'demo-karpenter' },
    };
    cloud = new FakeCloudProvider();
    board = new StatusBoard();
    const store = new MemoryClusterStore();
    const topology = {
      name: 'standalone',
      controlStore: store,
      workloadStore: store,
      operandNamespace: 'openshift-karpenter',
      readRequest: async () => request,
      clusterFacts: async () => facts,
      reportStatus: async () => {},
      watches: [],
      statusObject: { apiVersion: 'config.openshift.io/v1', kind: 'ClusterOperator', name: 'karpenter' },
      teardownFinalizer: 'x',
      operandLayout: () => standaloneOperandLayout('openshift-karpenter'),
    } as Topology;
    reconciler = new InterruptionQueueReconciler({
      topology,
      cloud,
      board,
      logger: silentLogger,
      recheckFoundMs: 300_000,
      recheckMissingMs: 30_000,
    });
  });

  it('a missing queue: False, naming the queue and region, re-checked soon', async () => {
    expect(await reconciler.reconcile()).toEqual({ requeueAfterMs: 30_000 });
    expect(condition()).toMatchObject({ type: 'InterruptionQueueVerified', status: 'False', reason: 'QueueNotFound' });
    expect(condition()?.message).toMatch(/^spec\.settings\.interruptionQueue: SQS queue demo-karpenter does not exist in region us-east-1/);
    expect(cloud.callsOf('interruptionQueueExists').map((c) => c.args[0])).toEqual(['demo-karpenter']);
  });

  it('once created: True, re-checked rarely', async () => {
    await reconciler.reconcile();
    cloud.queues.add('demo-karpenter');
    expect(await reconciler.reconcile()).toEqual({ requeueAfterMs: 300_000 });
    expect(condition()).toMatchObject({ status: 'True', reason: 'AsExpected', message: 'SQS queue demo-karpenter exists' });
  });

  it('not configured: True NotConfigured (not Degraded), replacing an earlier False, no cloud call', async () => {
    request = { ...request!, settings: {} };
    await reconciler.reconcile();
    expect(condition()).toMatchObject({ status: 'True', reason: 'NotConfigured' });
    expect(cloud.callsOf('interruptionQueueExists')).toEqual([]);
  });

  it('refused credentials: CloudAccessDenied at once; transient errors only after three in a row', async () => {
    cloud.failNext('interruptionQueueExists', new ForbiddenError('GetQueueUrl: AccessDenied'));
    await reconciler.reconcile();
    expect(condition()).toMatchObject({ status: 'False', reason: 'CloudAccessDenied' });
    cloud.queues.add('demo-karpenter');
    await reconciler.reconcile();
    cloud.failAlways('interruptionQueueExists', new TransientError('throttled'));
    await reconciler.reconcile();
    await reconciler.reconcile();
    expect(condition()?.status).toBe('True');
    await reconciler.reconcile();
    expect(condition()).toMatchObject({ status: 'False', reason: 'VerificationFailed' });
  });

  it('no CR: no condition', async () => {
    await reconciler.reconcile();
    request = undefined;
    await reconciler.reconcile();
    expect(condition()).toBeUndefined();
  });
});
