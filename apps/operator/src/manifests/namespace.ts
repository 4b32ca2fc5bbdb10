import { Names, Types, type KubeObject } from '@karpenter-operator/core';

export function operatorNamespace(): KubeObject {
  return {
    ...Types.Namespace,
    metadata: {
      name: Names.operatorNamespace,
      annotations: {
        // No project default node selector: the operator and operand pick control-plane nodes themselves.
        'openshift.io/node-selector': '',
        'workload.openshift.io/allowed': 'management',
      },
      labels: { 'openshift.io/cluster-monitoring': 'true' },
    },
  };
}
