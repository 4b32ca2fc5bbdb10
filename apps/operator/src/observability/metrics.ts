import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Labels, Metrics } from '@karpenter-operator/core';

type Metric = Counter<string> | Gauge<string> | Histogram<string>;

/**
 * The core `Metrics` port over prom-client. Metrics are declared on first use with the label names of that
 * first call; later calls fill missing labels with "" so a mismatched call never throws.
 */
export class PromMetrics implements Metrics {
  readonly registry = new Registry();
  private readonly metrics = new Map<string, { metric: Metric; labelNames: string[] }>();

  constructor(defaultMetrics = true) {
    if (defaultMetrics) collectDefaultMetrics({ register: this.registry });
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

  private ensure(name: string, labels: Labels, kind: 'counter' | 'gauge' | 'histogram') {
    let m = this.metrics.get(name);
    if (!m) {
      const labelNames = Object.keys(labels).sort();
      const cfg = { name, help: name.replace(/_/g, ' '), labelNames, registers: [this.registry] };
      const metric =
        kind === 'counter'
          ? new Counter(cfg)
          : kind === 'gauge'
            ? new Gauge(cfg)
            : new Histogram({ ...cfg, buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] });
      m = { metric, labelNames };
      this.metrics.set(name, m);
    }
    return m;
  }

  private fit(names: string[], labels: Labels): Labels {
    const out: Labels = {};
    for (const n of names) out[n] = labels[n] ?? '';
    return out;
  }
}
