import { Names, Types, type KubeObject, type LogLevel } from '@karpenter-operator/core';

/** The values `spec.logLevel` accepts; the operand's `--log-level` takes the same words. */
export const logLevels = ['debug', 'info', 'error'] as const satisfies readonly LogLevel[];
export const defaultLogLevel: LogLevel = 'info';

const [group, version] = Types.Karpenter.apiVersion.split('/') as [string, string];

/** metav1.Condition, as the API server validates it in OpenShift's CRDs. */
const conditionSchema = {
  type: 'object',
  description: 'A condition of the Karpenter deployment: Available, Progressing or Degraded.',
  required: ['lastTransitionTime', 'message', 'reason', 'status', 'type'],
  properties: {
    lastTransitionTime: { type: 'string', format: 'date-time', description: 'When the status last changed.' },
    message: { type: 'string', maxLength: 32768, description: 'Human-readable details.' },
    observedGeneration: { type: 'integer', format: 'int64', minimum: 0, description: 'The metadata.generation this condition was computed from.' },
    reason: {
      type: 'string',
      maxLength: 1024,
      minLength: 1,
      pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$',
      description: 'PascalCase reason for the last transition.',
    },
    status: { type: 'string', enum: ['True', 'False', 'Unknown'] },
    type: {
      type: 'string',
      maxLength: 316,
      pattern: '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$',
    },
  },
};

const conditionColumn = (type: string) => ({
  name: type,
  type: 'string',
  jsonPath: `.status.conditions[?(@.type=="${type}")].status`,
});

/**
 * CRD `karpenters.autoscaling.openshift.io`: the cluster-scoped singleton `default` that asks for Karpenter.
 * Other names are refused by a CEL rule at the schema root, where `self.metadata.name` is one of the few
 * metadata fields a CRD validation rule may read (as OpenShift's own singletons do).
 */
export function karpenterCrd(): KubeObject {
  return {
    ...Types.CustomResourceDefinition,
    metadata: { name: Names.karpenterCrd },
    spec: {
      group,
      names: { kind: Types.Karpenter.kind, listKind: `${Types.Karpenter.kind}List`, plural: 'karpenters', singular: 'karpenter' },
      scope: 'Cluster',
      versions: [
        {
          name: version,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [conditionColumn('Available'), conditionColumn('Progressing'), conditionColumn('Degraded')],
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: `Karpenter runs Karpenter on this cluster while it exists. The only instance is named "${Names.karpenterCr}".`,
              'x-kubernetes-validations': [
                { rule: `self.metadata.name == '${Names.karpenterCr}'`, message: `Karpenter is a singleton: metadata.name must be '${Names.karpenterCr}'` },
              ],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: {
                  type: 'object',
                  description: 'How Karpenter runs.',
                  // An object without spec still gets spec.logLevel defaulted.
                  default: {},
                  properties: {
                    logLevel: {
                      type: 'string',
                      description: "Karpenter's log verbosity: debug, info or error.",
                      enum: [...logLevels],
                      default: defaultLogLevel,
                    },
                  },
                },
                status: {
                  type: 'object',
                  description: 'Observed state, mirroring ClusterOperator karpenter.',
                  properties: {
                    conditions: {
                      type: 'array',
                      maxItems: 16,
                      items: conditionSchema,
                      'x-kubernetes-list-type': 'map',
                      'x-kubernetes-list-map-keys': ['type'],
                    },
                  },
                },
              },
            },
          },
        },
      ],
    },
  };
}
