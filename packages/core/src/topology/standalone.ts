import { isNotFoundError } from '../errors.js';
import type { ClusterFacts, KarpenterRequest, OperatorSettings } from '../model/cluster.js';
import type { Condition, KubeObject, ObjectRef } from '../model/kube.js';
import { Types } from '../model/kube.js';
import { Names } from '../model/names.js';
import { setConditions } from '../policy/conditions.js';
import { decodeInfrastructure } from '../policy/infrastructure.js';
import { operandPodServiceAccount, type OperandLayout } from '../policy/operand-layout.js';
import { boundServiceAccountToken, controlPlanePlacement, trustedCaBundle } from '../policy/openshift-pod.js';
import { isoNow, type Clock } from '../ports/clock.js';
import type { ClusterStore } from '../ports/cluster-store.js';
import type { StatusReport, Topology } from '../ports/topology.js';
import type { Watch } from '../runtime/reconciler.js';
import { decodeKarpenter } from './karpenter-cr.js';

export interface StandaloneTopologyOptions {
  store: ClusterStore;
  namespace: string;
  clock: Clock;
  clusterNameOverride?: string;
  clusterEndpointOverride?: string;
}

/**
 * The operand on standalone OpenShift: one cluster, the pods' own ServiceAccount is the identity Karpenter
 * acts as, leader election on; on the control-plane nodes at node-critical priority, with the bound
 * ServiceAccount token that short-lived cloud credentials name. Pure.
 */
export function standaloneOperandLayout(namespace: string): OperandLayout {
  const podServiceAccount = operandPodServiceAccount(namespace);
  return {
    podServiceAccount,
    apiIdentity: { ...podServiceAccount },
    singleCluster: true,
    leaderElection: true,
    pod: {
      priorityClassName: 'system-node-critical',
      nodeSelector: { ...controlPlanePlacement.nodeSelector },
      tolerations: controlPlanePlacement.tolerations.map((t) => ({ ...t })),
      annotations: { ...controlPlanePlacement.podAnnotations },
      credentialVolumes: [
        { volume: boundServiceAccountToken.volume(), mount: boundServiceAccountToken.mount() },
        { volume: trustedCaBundle.volume(), mount: trustedCaBundle.mount() },
      ],
    },
  };
}

const CR_CONDITIONS = new Set(['Available', 'Progressing', 'Degraded']);

/**
 * Standalone OpenShift: one cluster; configuration from the `Karpenter` CR named `default`; facts from
 * Infrastructure `cluster`; status on ClusterOperator `karpenter` and on the CR.
 */
export class StandaloneTopology implements Topology {
  readonly name = 'standalone';
  readonly controlStore: ClusterStore;
  readonly workloadStore: ClusterStore;
  readonly operandNamespace: string;
  readonly statusObject: ObjectRef = { ...Types.ClusterOperator, name: Names.clusterOperator };
  readonly teardownFinalizer = Names.karpenterFinalizer;
  readonly watches: Watch[] = [
    { type: Types.Karpenter },
    { type: Types.Infrastructure, fieldSelector: `metadata.name=${Names.infrastructure}` },
  ];

  constructor(private readonly options: StandaloneTopologyOptions) {
    this.controlStore = options.store;
    this.workloadStore = options.store;
    this.operandNamespace = options.namespace;
  }

  operandLayout(_settings: OperatorSettings): OperandLayout {
    return standaloneOperandLayout(this.operandNamespace);
  }

  async readRequest(): Promise<KarpenterRequest | undefined> {
    const cr = await this.options.store.get({ ...Types.Karpenter, name: Names.karpenterCr });
    return cr ? decodeKarpenter(cr) : undefined;
  }

  async clusterFacts(): Promise<ClusterFacts> {
    const infra = await this.options.store.get({ ...Types.Infrastructure, name: Names.infrastructure });
    const overrides: { clusterName?: string; clusterEndpoint?: string } = {};
    if (this.options.clusterNameOverride) overrides.clusterName = this.options.clusterNameOverride;
    if (this.options.clusterEndpointOverride) overrides.clusterEndpoint = this.options.clusterEndpointOverride;
    return decodeInfrastructure(infra, overrides);
  }

  async reportStatus(report: StatusReport, request: KarpenterRequest | undefined): Promise<void> {
    const store = this.options.store;
    const now = isoNow(this.options.clock);
    const ref = this.statusObject;
    let co = await store.get(ref);
    if (!co) {
      co = (await store.createIfAbsent({ ...Types.ClusterOperator, metadata: { name: Names.clusterOperator } })).object;
    }
    const current = (co?.status ?? {}) as { conditions?: Condition[]; versions?: Array<{ name: string; version: string }> };
    const { conditions } = setConditions(current.conditions ?? [], report.conditions.map(stripGeneration), now);
    const status: Record<string, unknown> = {
      conditions,
      relatedObjects: report.relatedObjects,
    };
    // CVO protocol: the operator version moves only once the operand rolled out at this release.
    if (report.version) status.versions = [{ name: 'operator', version: report.version }];
    await store.patchStatus(ref, status);

    if (request) {
      const crRef: ObjectRef = { ...Types.Karpenter, name: request.owner.name };
      const cr = await store.get<KubeObject>(crRef);
      if (!cr) return;
      const crConditions = (cr.status as { conditions?: Condition[] } | undefined)?.conditions ?? [];
      const next = [...report.conditions.filter((c) => CR_CONDITIONS.has(c.type)), ...(report.useCaseConditions ?? [])].map((c) => ({
        ...c,
        observedGeneration: request.generation,
      }));
      const r = setConditions(crConditions, next, now);
      try {
        // The generation these conditions describe: its settings are in the operand's Deployment, and
        // Progressing says whether the pods run them yet.
        await store.patchStatus(crRef, { observedGeneration: request.generation, conditions: r.conditions });
      } catch (e) {
        // The CR may vanish between read and write (teardown finished); the next reconcile sees that.
        if (!isNotFoundError(e)) throw e;
      }
    }
  }
}

/** ClusterOperator conditions carry no observedGeneration. */
function stripGeneration<T extends { observedGeneration?: number }>(c: T): Omit<T, 'observedGeneration'> {
  const { observedGeneration: _g, ...rest } = c;
  return rest;
}
