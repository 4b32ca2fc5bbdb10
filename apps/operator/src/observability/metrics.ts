import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Labels, MetricDefinition, Metrics } from '@karpenter-operator/core';

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

  constructor(definitions: readonly MetricDefinition[] = [], options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
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

  private fit(names: string[], labels: Labels): Labels {
    const out: Labels = {};
    for (const n of names) out[n] = labels[n] ?? '';
    return out;
  }
}
