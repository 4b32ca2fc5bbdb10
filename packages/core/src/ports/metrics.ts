import { token } from './token.js';

export type Labels = Record<string, string>;

/**
 * A metric as the Prometheus adapter registers it at start: every name the code records has one, with
 * real help text (a contract test in apps/operator fails on a name without one).
 */
export interface MetricDefinition {
  name: string;
  type: 'counter' | 'gauge' | 'histogram';
  help: string;
  labels: readonly string[];
}

/** Counters and histograms by name. Names are snake_case with the `karpenter_operator_` prefix. */
export interface Metrics {
  inc(name: string, labels?: Labels, value?: number): void;
  observe(name: string, value: number, labels?: Labels): void;
  set(name: string, value: number, labels?: Labels): void;
}

export const MetricsId = token<Metrics>('Metrics');

export const noopMetrics: Metrics = { inc: () => {}, observe: () => {}, set: () => {} };
