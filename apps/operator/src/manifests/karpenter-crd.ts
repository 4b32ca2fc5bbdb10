import {
  karpenterFeatureGates,
  karpenterSpecRules,
  Names,
  NON_NEGATIVE_QUANTITY_PATTERN,
  Types,
  type KubeObject,
  type LogLevel,
  type SchemaRule,
} from '@karpenter-operator/core';

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
    observedGeneration: {
      type: 'integer',
      format: 'int64',
      minimum: 0,
      description: 'The metadata.generation this condition was computed from.',
    },
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

/** A rule as `x-kubernetes-validations` carries it. */
const cel = (r: SchemaRule) => [{ rule: r.rule, message: r.message }];

const quantityMap = (what: string) => ({
  type: 'object',
  description: `${what} of the Karpenter container by resource name (cpu, memory, ...), as quantities: 500m, 1, 1Gi.`,
  maxProperties: 8,
  additionalProperties: {
    'x-kubernetes-int-or-string': true,
    pattern: NON_NEGATIVE_QUANTITY_PATTERN,
  },
});

const duration = (what: string, rule: SchemaRule) => ({
  type: 'string',
  maxLength: 32,
  description: `${what} Unset: Karpenter's default.`,
  'x-kubernetes-validations': cel(rule),
});

/**
 * `spec.replicas`, `spec.resources` and `spec.settings`: Karpenter's own settings by the names of its Helm
 * chart, each checked by the rule in `karpenterSpecRules` that the decoder and `render` apply too.
 */
const settingsProperties = {
  replicas: {
    type: 'integer',
    format: 'int32',
    description:
      'Karpenter replicas (one leads, the others wait). Unset: 2, or 1 on a SingleReplica control plane. More than 1 adds a PodDisruptionBudget.',
    'x-kubernetes-validations': cel(karpenterSpecRules.replicas),
  },
  resources: {
    type: 'object',
    description: 'Resources of the Karpenter container; replaces the default (requests cpu 1, memory 1Gi) whole.',
    properties: { requests: quantityMap('Requests'), limits: quantityMap('Limits') },
  },
  settings: {
    type: 'object',
    description: "Karpenter's settings, as its Helm chart's settings values. Unset fields keep Karpenter's defaults.",
    properties: {
      batchIdleDuration: duration(
        'Pending pods arriving within this of each other are batched together (BATCH_IDLE_DURATION, default 1s).',
        karpenterSpecRules.batchIdleDuration,
      ),
      batchMaxDuration: duration(
        'The longest a batch of pending pods is held before provisioning (BATCH_MAX_DURATION, default 10s).',
        karpenterSpecRules.batchMaxDuration,
      ),
      featureGates: {
        type: 'object',
        description:
          "Karpenter feature gates to turn on or off (FEATURE_GATES); unset gates keep Karpenter's defaults. Only the gates this Karpenter knows are accepted.",
        properties: Object.fromEntries(karpenterFeatureGates.map((g) => [g, { type: 'boolean' }])),
      },
      interruptionQueue: {
        type: 'string',
        maxLength: 80,
        description:
          'Name of the SQS queue carrying EC2 spot interruption, rebalance, state-change and scheduled-change events (INTERRUPTION_QUEUE). Empty: interruption handling off.',
        'x-kubernetes-validations': cel(karpenterSpecRules.interruptionQueue),
      },
      vmMemoryOverheadPercent: {
        type: 'number',
        description:
          "Fraction of an instance type's memory taken as VM overhead when not yet measured (VM_MEMORY_OVERHEAD_PERCENT, default 0.075).",
        'x-kubernetes-validations': cel(karpenterSpecRules.vmMemoryOverheadPercent),
      },
      reservedENIs: {
        type: 'integer',
        format: 'int32',
        description: 'ENIs left out of the max-pods and kube-reserved computation (RESERVED_ENIS, default 0).',
        'x-kubernetes-validations': cel(karpenterSpecRules.reservedENIs),
      },
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
                {
                  rule: `self.metadata.name == '${Names.karpenterCr}'`,
                  message: `Karpenter is a singleton: metadata.name must be '${Names.karpenterCr}'`,
                },
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
                    ...settingsProperties,
                  },
                },
                status: {
                  type: 'object',
                  description: 'Observed state, mirroring ClusterOperator karpenter.',
                  properties: {
                    observedGeneration: {
                      type: 'integer',
                      format: 'int64',
                      minimum: 0,
                      description:
                        'The metadata.generation the operator last acted on; while Progressing is True the operand is still rolling it out.',
                    },
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
