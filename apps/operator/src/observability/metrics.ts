import { Counter, Gauge, Histogram, Registry } from 'prom-client';
// prom-client's default metrics one by one, all but its event-loop lag (`EventLoopLag` reports that).
import gc from 'prom-client/lib/metrics/gc.js';
import heapSizeAndUsed from 'prom-client/lib/metrics/heapSizeAndUsed.js';
import heapSpacesSizeAndUsed from 'prom-client/lib/metrics/heapSpacesSizeAndUsed.js';
import osMemoryHeap from 'prom-client/lib/metrics/osMemoryHeap.js';
import processCpuTotal from 'prom-client/lib/metrics/processCpuTotal.js';
import processHandles from 'prom-client/lib/metrics/processHandles.js';
import processMaxFileDescriptors from 'prom-client/lib/metrics/processMaxFileDescriptors.js';
import processOpenFileDescriptors from 'prom-client/lib/metrics/processOpenFileDescriptors.js';
import processRequests from 'prom-client/lib/metrics/processRequests.js';
import processResources from 'prom-client/lib/metrics/processResources.js';
import processStartTime from 'prom-client/lib/metrics/processStartTime.js';
import version from 'prom-client/lib/metrics/version.js';
import type { Labels, MetricDefinition, Metrics } from '@karpenter-operator/core';
import { EventLoopLag, type LagReading } from './event-loop-lag.js';

type Metric = Counter<string> | Gauge<string> | Histogram<string>;

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * The core `Metrics` port over prom-client. Every definition is registered at construction, with its help
 * text and label names; calls fill missing labels with "" so a mismatched call never throws. A name
 * without a definition is still recorded (never lost, never a crash) with its name as help, and listed in
 * `undefinedNames` (the metric-definitions contract test keeps that list empty).
 */
export class PromMetrics implements Metrics {
  readonly registry = new Registry();
  readonly undefinedNames = new Set<string>();
  private readonly metrics = new Map<string, { metric: Metric; labelNames: string[] }>();
  private lag: EventLoopLag | undefined;
  /** Work is arriving: the transport's `onActivity` (see `EventLoopLag.wake`). */
  readonly loopActivity = (): void => this.lag?.wake();

  constructor(definitions: readonly MetricDefinition[] = [], options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics ?? true) this.registerDefaultMetrics();
    for (const d of definitions) this.register(d.name, d.type, d.help, [...d.labels]);
  }

  inc(name: string, labels: Labels = {}, value = 1): void {
    const m = this.ensure(name, labels, 'counter');
    (m.metric as Counter<string>).inc(this.fit(m.labelNames, labels), value);
  }

  observe(name: string, value: number, labels: Labels = {}): void {
    const m = this.ensure(name, labels, 'histogram');
    (m.metric as Histogram<string>).observe(this.fit(m.labelNames, labels), value);
  }

  set(name: string, value: number, labels: Labels = {}): void {
    const m = this.ensure(name, labels, 'gauge');
    (m.metric as Gauge<string>).set(this.fit(m.labelNames, labels), value);
  }

  async text(): Promise<string> {
    return this.registry.metrics();
  }

  private ensure(name: string, labels: Labels, kind: MetricDefinition['type']) {
    const m = this.metrics.get(name);
    if (m) return m;
    this.undefinedNames.add(name);
    return this.register(name, kind, name.replace(/_/g, ' '), Object.keys(labels).sort());
  }

  private register(name: string, kind: MetricDefinition['type'], help: string, labelNames: string[]) {
    const cfg = { name, help, labelNames, registers: [this.registry] };
    const metric = kind === 'counter' ? new Counter(cfg) : kind === 'gauge' ? new Gauge(cfg) : new Histogram({ ...cfg, buckets: BUCKETS });
    const m = { metric, labelNames };
    this.metrics.set(name, m);
    return m;
  }

  /**
   * prom-client's default metrics (what `collectDefaultMetrics` registers), with the `nodejs_eventloop_lag_*`
   * family read from `EventLoopLag` instead of a 10 ms timer that runs for the life of the process.
   */
  private registerDefaultMetrics(): void {
    for (const collect of [
      processCpuTotal,
      processStartTime,
      osMemoryHeap,
      processOpenFileDescriptors,
      processMaxFileDescriptors,
      processResources,
      processHandles,
      processRequests,
      heapSizeAndUsed,
      heapSpacesSizeAndUsed,
      version,
      gc,
    ])
      collect(this.registry, {});
    const lag = (this.lag = new EventLoopLag());
    const registers = [this.registry];
    // Measured on a scrape, reported on the next (as prom-client does): the wait of one setImmediate.
    const now = new Gauge({
      name: 'nodejs_eventloop_lag_seconds',
      help: 'Lag of event loop in seconds.',
      registers,
      collect() {
        const start = process.hrtime.bigint();
        setImmediate(() => now.set(Number(process.hrtime.bigint() - start) / 1e9));
      },
    });
    // One reading per scrape, shared by the gauges below; the max gauge's collect takes it (it is registered
    // first, and a scrape collects in registration order).
    let reading: LagReading | undefined;
    const stat = (key: keyof LagReading, help: string, first = false) =>
      new Gauge({
        name: `nodejs_eventloop_lag_${key}_seconds`,
        help,
        registers,
        collect() {
          if (first || !reading) reading = lag.readAndReset();
          this.set(reading[key]);
        },
      });
    stat('max', 'The maximum recorded event loop delay.', true);
    stat('min', 'The minimum recorded event loop delay.');
    stat('mean', 'The mean of the recorded event loop delays.');
    stat('stddev', 'The standard deviation of the recorded event loop delays.');
    stat('p50', 'The 50th percentile of the recorded event loop delays.');
    stat('p90', 'The 90th percentile of the recorded event loop delays.');
    stat('p99', 'The 99th percentile of the recorded event loop delays.');
  }

  private fit(names: string[], labels: Labels): Labels {
    const out: Labels = {};
    for (const n of names) out[n] = labels[n] ?? '';
    return out;
  }
}
