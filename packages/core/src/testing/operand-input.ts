import { Names } from '../model/names.js';
import type { OperandInput } from '../policy/operand-layout.js';
import { standaloneOperandLayout } from '../topology/standalone.js';

/**
 * The operand as a standalone AWS cluster's operator renders it, for tests of manifests built around it:
 * cluster `c-1` in us-east-1, release `1`, image `img`, Karpenter CR `default` at generation 1, no provider
 * env, volumes or RBAC unless `over` gives them.
 */
export function anOperandInput(over: Partial<OperandInput> = {}): OperandInput {
  const namespace = over.namespace ?? Names.operatorNamespace;
  return {
    namespace,
    facts: {
      platform: 'AWS',
      region: 'us-east-1',
      infrastructureName: 'c-1',
      apiServerInternalURL: 'https://api-int:6443',
      resourceTags: [],
    },
    settings: { namespace, releaseVersion: '1', operandImage: 'img', crdDir: '/crds' },
    request: {
      owner: { apiVersion: 'autoscaling.openshift.io/v1alpha1', kind: 'Karpenter', name: 'default', uid: 'u' },
      generation: 1,
      logLevel: 'info',
      deleting: false,
      finalizers: [],
    },
    cloud: { env: [], volumes: [], volumeMounts: [], credentialsSecret: Names.credentialsSecret },
    providerRbac: [],
    layout: standaloneOperandLayout(namespace),
    ...over,
  };
}
