import {
  isInvalidInputError,
  Names,
  OperandNames,
  operandLabels,
  operandPodLabels,
  ownerReferenceTo,
  wholeSelector,
  type EventRecorder,
  type KarpenterRequest,
  type KubeObject,
  type Reconciler,
  type Result,
  type TypeRef,
  type Watch,
} from '@karpenter-operator/core';
import type { HyperShiftTopology } from './hypershift-topology.js';

export const PodMonitorType = { apiVersion: 'monitoring.coreos.com/v1', kind: 'PodMonitor' } as const satisfies TypeRef;

/** The label HyperShift gives every metric of a hosted control plane: the hosted cluster's ID (telemetry). */
export const CLUSTER_ID_LABEL = '_id';

export const OPERAND_PODMONITOR_CONTROLLER = 'podmonitor.operand';

/**
 * PodMonitor `karpenter` in the HCP namespace, as HyperShift renders it for its Karpenter: the operand's pods
 * of that namespace (`app: karpenter`), port `metrics` over plain HTTP at `/metrics` every 30 s, and the
 * cluster-ID label `_id` set to `clusterID` on every target and every sample (HyperShift sets it from
 * `spec.clusterID`, empty when the HCP has none). Owned by the request's owner (the HCP). Pure.
 */
export function renderOperandPodMonitor(input: {
  namespace: string;
  clusterID: string | undefined;
  request: KarpenterRequest;
}): KubeObject {
  const { namespace, request } = input;
  const clusterId = { targetLabel: CLUSTER_ID_LABEL, action: 'replace', replacement: input.clusterID ?? '' };
  return {
    ...PodMonitorType,
    metadata: { name: Names.operandDeployment, namespace, labels: operandLabels(), ownerReferences: [ownerReferenceTo(request)] },
    spec: {
      namespaceSelector: { matchNames: [namespace] },
      selector: { matchLabels: operandPodLabels() },
      podMetricsEndpoints: [
        {
          port: 'metrics',
          path: '/metrics',
          interval: '30s',
          scheme: 'http',
          relabelings: [{ ...clusterId }],
          metricRelabelings: [{ ...clusterId }],
        },
      ],
    },
  };
}

/** Fields of the PodMonitor this operator owns whole: an entry another writer adds there is removed. */
const OWNED_WHOLE = [...wholeSelector('spec.selector'), 'spec.namespaceSelector.matchNames', 'spec.podMetricsEndpoints'];

export interface OperandPodMonitorDeps {
  topology: HyperShiftTopology;
  events: EventRecorder;
  /**
   * Whether the management cluster serves PodMonitor (monitoring.coreos.com/v1), checked once at start-up.
   * When it does not, nothing is watched or written and a Warning event on the HCP says so, once.
   */
  served: boolean;
}

/**
 * `podmonitor.operand`: PodMonitor `karpenter` (`renderOperandPodMonitor`) in the HCP namespace while
 * Karpenter runs there, created and repaired on drift; left alone during a teardown (the HCP owns it) and
 * deleted once AutoNode is off and the teardown finished, as HyperShift removes its component's objects.
 */
export class OperandPodMonitorReconciler implements Reconciler {
  readonly name = OPERAND_PODMONITOR_CONTROLLER;
  readonly watches: Watch[];
  private warned = false;
  private static readonly KEY = 'karpenter';

  constructor(private readonly deps: OperandPodMonitorDeps) {
    const { topology, served } = deps;
    this.watches = [
      ...topology.watches,
      ...(served
        ? [
            {
              type: PodMonitorType,
              cluster: 'control' as const,
              namespace: topology.operandNamespace,
              fieldSelector: `metadata.name=${Names.operandDeployment}`,
            },
          ]
        : []),
    ];
  }

  keysFor(): string[] {
    return [OperandPodMonitorReconciler.KEY];
  }

  async resyncKeys(): Promise<string[]> {
    return [OperandPodMonitorReconciler.KEY];
  }

  async reconcile(): Promise<Result> {
    const { topology, events, served } = this.deps;
    let request: KarpenterRequest | undefined;
    let clusterID: string | undefined;
    try {
      request = await topology.readRequest();
      clusterID = (await topology.hostedControlPlane())?.clusterID;
    } catch (e) {
      // A malformed HCP is reported on it by the status use-case; nothing here can act on it.
      if (isInvalidInputError(e)) return {};
      throw e;
    }
    if (!served) {
      if (request && !request.deleting && !this.warned) {
        events.record(
          topology.statusObject,
          'Warning',
          'PodMonitorNotServed',
          `the management cluster does not serve ${PodMonitorType.kind} (${PodMonitorType.apiVersion}): no PodMonitor ${Names.operandDeployment} for Karpenter's metrics (port ${OperandNames.metricsPort})`,
        );
        this.warned = true;
      }
      return {};
    }
    const store = topology.controlStore;
    if (!request) {
      await store.delete({ ...PodMonitorType, namespace: topology.operandNamespace, name: Names.operandDeployment });
      return {};
    }
    if (request.deleting) return {};
    await store.apply(renderOperandPodMonitor({ namespace: topology.operandNamespace, clusterID, request }), { ownedWhole: OWNED_WHOLE });
    return {};
  }
}
