import { NodeIdentityMetrics, type MetricDefinition } from '@karpenter-operator/core';
import { RuntimeMetrics } from '@karpenter-operator/kube-runtime';

/** Every metric either binary records (the controller runtime's and the use-cases'): what `PromMetrics` registers at start. */
export const AllMetricDefinitions: readonly MetricDefinition[] = [...Object.values(RuntimeMetrics), ...Object.values(NodeIdentityMetrics)];
