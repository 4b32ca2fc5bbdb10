import { Types } from '@karpenter-operator/core';
import { RecordingMetrics } from '@karpenter-operator/core/testing';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { KubeEventRecorder } from './event-recorder.js';
import { FakeTransport, apiError } from './testing/fake-transport.js';
import type { KubeRequest } from './transport.js';

const T0 = Date.UTC(2026, 0, 1);
const deploymentRef = { ...Types.Deployment, name: 'karpenter', namespace: 'openshift-karpenter', uid: 'u1' };
const clusterOperatorRef = { ...Types.ClusterOperator, name: 'karpenter' };

function setup() {
  const transport = new FakeTransport();
  transport.on({ method: 'POST' }, (req: KubeRequest) => req.body);
  transport.on({ method: 'PATCH' }, (req: KubeRequest) => req.body);
  const metrics = new RecordingMetrics();
  const warnings: string[] = [];
  const fields: Array<Record<string, unknown> | undefined> = [];
  const logger = {
    debug() {},
    info() {},
    warn: (m: string, f?: Record<string, unknown>) => {
      warnings.push(m);
      fields.push(f);
    },
    error() {},
    child: () => logger,
  };
  const recorder = new KubeEventRecorder({
    transport,
    reportingInstance: 'karpenter-operator-abc_1',
    clock: { now: () => Date.now() },
    metrics,
    logger,
  });
  return { transport, recorder, metrics, warnings, fields };
}

describe('KubeEventRecorder', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(T0);
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('creates an events.k8s.io/v1 Event in the object namespace', async () => {
    const { transport, recorder } = setup();
    recorder.record(deploymentRef, 'Normal', 'OperandApplied', 'applied Deployment karpenter');
    await recorder.flush();
    expect(transport.requests).toHaveLength(1);
    const req = transport.requests[0]!;
    expect(req).toMatchObject({ method: 'POST', path: '/apis/events.k8s.io/v1/namespaces/openshift-karpenter/events', kind: 'Event' });
    expect(req.body).toEqual({
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name: expect.stringMatching(/^karpenter\.[0-9a-f]+$/), namespace: 'openshift-karpenter' },
      eventTime: '2026-01-01T00:00:00.000000Z',
      reportingController: 'karpenter-operator',
      reportingInstance: 'karpenter-operator-abc_1',
      action: 'OperandApplied',
      reason: 'OperandApplied',
      note: 'applied Deployment karpenter',
      type: 'Normal',
      regarding: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'karpenter', namespace: 'openshift-karpenter', uid: 'u1' },
    });
  });

  it('puts events about cluster-scoped objects in the default namespace', async () => {
    const { transport, recorder } = setup();
    recorder.record(clusterOperatorRef, 'Warning', 'Degraded', 'x');
    await recorder.flush();
    expect(transport.requests[0]!.path).toBe('/apis/events.k8s.io/v1/namespaces/default/events');
  });

  it('aggregates identical events into a series and patches the count at most every flush period', async () => {
    const { transport, recorder } = setup();
    recorder.record(deploymentRef, 'Warning', 'ApplyFailed', 'forbidden');
    await vi.advanceTimersByTimeAsync(1_000);
    recorder.record(deploymentRef, 'Warning', 'ApplyFailed', 'forbidden');
    recorder.record(deploymentRef, 'Warning', 'ApplyFailed', 'forbidden');
    await vi.advanceTimersByTimeAsync(29_000);
    expect(transport.requests.map((r) => r.method)).toEqual(['POST']);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(transport.requests.map((r) => r.method)).toEqual(['POST', 'PATCH']);
    const name = (transport.requests[0]!.body as { metadata: { name: string } }).metadata.name;
    expect(transport.requests[1]).toMatchObject({
      path: `/apis/events.k8s.io/v1/namespaces/openshift-karpenter/events/${name}`,
      contentType: 'application/merge-patch+json',
      body: { series: { count: 3, lastObservedTime: '2026-01-01T00:00:01.000000Z' } },
    });
    await vi.advanceTimersByTimeAsync(120_000);
    expect(transport.requests).toHaveLength(2); // nothing new to report
  });

  it.each<{ name: string; second: Parameters<KubeEventRecorder['record']> }>([
    { name: 'a different message', second: [deploymentRef, 'Warning', 'ApplyFailed', 'other'] },
    { name: 'a different reason', second: [deploymentRef, 'Warning', 'Other', 'forbidden'] },
    { name: 'a different type', second: [deploymentRef, 'Normal', 'ApplyFailed', 'forbidden'] },
    { name: 'a different object', second: [{ ...deploymentRef, name: 'other' }, 'Warning', 'ApplyFailed', 'forbidden'] },
  ])('creates a separate Event for $name', async ({ second }) => {
    const { transport, recorder } = setup();
    recorder.record(deploymentRef, 'Warning', 'ApplyFailed', 'forbidden');
    recorder.record(...second);
    await recorder.flush();
    expect(transport.requests.map((r) => r.method)).toEqual(['POST', 'POST']);
  });

  it('starts a new Event once the series window has passed', async () => {
    const { transport, recorder } = setup();
    recorder.record(deploymentRef, 'Normal', 'R', 'm');
    await vi.advanceTimersByTimeAsync(6 * 60_000);
    recorder.record(deploymentRef, 'Normal', 'R', 'm');
    await recorder.flush();
    expect(transport.requests.map((r) => r.method)).toEqual(['POST', 'POST']);
  });

  it('never throws: failed writes are logged, with what the Event said, and counted', async () => {
    const { transport, recorder, metrics, warnings, fields } = setup();
    transport.on({ method: 'POST' }, () => {
      throw apiError(403, 'events.events.k8s.io is forbidden');
    });
    expect(() => recorder.record(deploymentRef, 'Normal', 'R', 'm')).not.toThrow();
    recorder.record(deploymentRef, 'Normal', 'R', 'm');
    await vi.advanceTimersByTimeAsync(60_000);
    await recorder.flush();
    expect(warnings).toEqual(['writing a Kubernetes Event failed']);
    // A Role without Events (HyperShift's): the log carries the Event instead.
    expect(fields[0]).toMatchObject({
      error: expect.stringContaining('forbidden'),
      event: { regarding: `Deployment ${deploymentRef.namespace}/${deploymentRef.name}`, type: 'Normal', reason: 'R', note: 'm' },
    });
    expect(metrics.counters.get('karpenter_operator_events_failed_total')).toBe(1);
    expect(transport.requests.map((r) => r.method)).toEqual(['POST']); // no series patch of an Event that does not exist
  });

  it('truncates long notes to the API limit', async () => {
    const { transport, recorder } = setup();
    recorder.record(deploymentRef, 'Warning', 'R', 'x'.repeat(5_000));
    await recorder.flush();
    expect((transport.requests[0]!.body as { note: string }).note).toHaveLength(1024);
  });
});
