import { token } from './token.js';

export type Labels = Record<string, string>;

/** Counters and histograms by name. Names are snake_case with the `karpenter_operator_` prefix. */
export interface Metrics {
  inc(name: string, labels?: Labels, value?: number): void;
  observe(name: string, value: number, labels?: Labels): void;
  set(name: string, value: number, labels?: Labels): void;
}

export const MetricsId = token<Metrics>('Metrics');

export const noopMetrics: Metrics = { inc: () => {}, observe: () => {}, set: () => {} };
