import type { ClusterFacts, KarpenterRequest, OperatorSettings } from '../model/cluster.js';
import type { KubeObject, ObjectRef } from '../model/kube.js';
import type { ConditionInput } from '../policy/conditions.js';
import type { OperandLayout } from '../policy/operand-layout.js';
import type { Watch } from '../runtime/reconciler.js';
import type { RelatedObject } from './cloud-provider.js';
import type { ClusterStore } from './cluster-store.js';
import { token } from './token.js';

export interface StatusReport {
  /** Available, Progressing, Degraded, Upgradeable (already folded from the use-cases' conditions). */
  conditions: ConditionInput[];
  /** `versions[name=operator]` to report, only once the operand rolled out at this release. */
  version?: string;
  relatedObjects: RelatedObject[];
  /** The use-cases' own conditions (e.g. NodeIdentityHealthy), shown beside the folded ones where the topology has room (the Karpenter CR). */
  useCaseConditions?: ConditionInput[];
  /**
   * The operand as the fold saw it, for a topology that reports it as a component of its own (HyperShift's
   * ControlPlaneComponent). Set only while Karpenter is requested, not being removed, on a supported platform.
   */
  operand?: OperandReport;
}

export interface OperandReport {
  /** The live operand Deployment; absent when it does not exist. */
  deployment?: KubeObject;
  /** It carries this release's pod template and every replica runs it, available (the fold's `rolledOut`). */
  rolledOut: boolean;
  /** What this release applies for the operand on the control cluster in its namespace; empty when not known yet. */
  objects: Array<{ group: string; kind: string; name: string }>;
}

/**
 * Where things live and how status is reported: standalone OpenShift or a HyperShift hosted control
 * plane. Use-cases never branch on the topology; they ask it.
 */
export interface Topology {
  /** A name for logs and messages; nothing branches on it. */
  readonly name: string;

  /** Store for the cluster where the operator and operand Deployments run. */
  readonly controlStore: ClusterStore;
  /** Store for the cluster where Karpenter objects, Nodes and CSRs live (same as controlStore standalone). */
  readonly workloadStore: ClusterStore;

  /** Namespace of the operand Deployment on `controlStore`. */
  readonly operandNamespace: string;

  /**
   * The request to run Karpenter, or undefined when none exists (standalone: no `Karpenter` CR named
   * `default`). Throws `InvalidInputError` when the request is malformed.
   */
  readRequest(): Promise<KarpenterRequest | undefined>;

  /** Cluster facts. Throws `InvalidInputError` naming the field when they are incomplete. */
  clusterFacts(): Promise<ClusterFacts>;

  /** Publishes folded status. Idempotent: writes only differences. */
  reportStatus(report: StatusReport, request: KarpenterRequest | undefined): Promise<void>;

  /** Objects whose changes can change `readRequest` or `clusterFacts`; every use-case watches them. */
  readonly watches: Watch[];

  /** Objects `reportStatus` reads or writes besides the status object; the status use-case watches them too. */
  readonly statusWatches?: Watch[];

  /** Object that events about the operator as a whole are recorded on. */
  readonly statusObject: ObjectRef;

  /**
   * The finalizer the teardown keeps on the request's owner while Karpenter is requested (standalone
   * `karpenter.autoscaling.openshift.io/teardown` on the Karpenter CR; HyperShift the one HyperShift itself
   * knows and resolves, `hypershift.openshift.io/karpenter-finalizer` on the HCP).
   */
  readonly teardownFinalizer: string;

  /**
   * How the operand is laid out here: the ServiceAccounts it runs and acts as, one cluster or two, leader
   * election, how Karpenter reaches its workload API, and the pod's placement and credential volumes.
   * Pure and stable for the life of the process (use-cases derive their watches from it).
   */
  operandLayout(settings: OperatorSettings): OperandLayout;
}

export const TopologyId = token<Topology>('Topology');
