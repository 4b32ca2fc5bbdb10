import {
  describeError,
  InvalidInputError,
  isConflictError,
  isForbiddenError,
  isInvalidInputError,
  isNotFoundError,
  isoNow,
  Names,
  ownerReferenceTo,
  setConditions,
  Types,
  token,
  type Clock,
  type ClusterFacts,
  type ClusterStore,
  type Condition,
  type ConditionInput,
  type KarpenterRequest,
  type KubeObject,
  type LogLevel,
  type ObjectRef,
  type OperandLayout,
  type OperatorSettings,
  type StatusReport,
  type Topology,
  type TypeRef,
  type Watch,
} from '@karpenter-operator/core';
import {
  decodeHostedControlPlane,
  HCP_INVALID_REASON,
  HCP_KARPENTER_FINALIZER,
  HostedControlPlaneType,
  type HostedControlPlane,
} from './hcp.js';
import { hcpDeploymentAnnotations, hcpOperandLayout } from './operand-layout.js';
import { ControlPlaneComponentType, OPERAND_COMPONENT, operandComponentStatus } from './control-plane-component.js';

/** Stores the composition root builds for management-cluster mode; the module resolves them by these tokens. */
export const ManagementClusterStoreId = token<ClusterStore>('ClusterStore/management');
export const GuestClusterStoreId = token<ClusterStore>('ClusterStore/guest');

/** Environment HyperShift sets on the operator in management-cluster mode, read once by the composition root. */
export interface HyperShiftEnv {
  /**
   * CLUSTER_NAME: HyperShift sets the HCP's infra ID (`spec.infraID`), not its name; when both are set they
   * must agree.
   */
  clusterName: string;
  /** CLUSTER_ENDPOINT: the guest API URL Karpenter and its nodes use. */
  clusterEndpoint: string;
  /** REGION; the HCP's `spec.platform.aws.region` wins. */
  region?: string;
  /** PLATFORM, e.g. `AWS`. */
  platform: string;
}

export interface HyperShiftTopologyOptions {
  /** The management cluster, scoped to the HCP namespace (HCP, Secrets, operand Deployment, Lease). */
  management: ClusterStore;
  /** The guest cluster (CRDs, NodeClasses, NodePools, NodeClaims, Nodes, CSRs). */
  guest: ClusterStore;
  /** The HCP namespace, e.g. `clusters-demo`. */
  namespace: string;
  /**
   * The HCP's name: HCP_NAME, or the one HostedControlPlane in `namespace` found at start-up
   * (`soleHostedControlPlaneName`); HyperShift's Deployment names it nowhere.
   */
  hcpName: string;
  clock: Clock;
  env: HyperShiftEnv;
  /** The HCP has no log-level field; the operand runs at this level. Default `info`. */
  logLevel?: LogLevel;
  /**
   * Whether the management cluster serves CAPI's `Cluster` (cluster.x-k8s.io), checked once at start-up: only
   * then is it watched and read (`hostedClusterDeletion`). Default false.
   */
  capiClusterServed?: boolean;
  /**
   * The UID HyperShift runs the HCP's pods as (`hcpRunAsUser` of the HCP namespace, read once at start-up:
   * HyperShift writes it once, before the namespace's workloads); absent where the SCC assigns it.
   */
  runAsUser?: number;
  /**
   * Whether the management cluster serves HyperShift's ControlPlaneComponent, checked once at start-up: only
   * then is ControlPlaneComponent `karpenter` watched and written (`reportStatus`). Default false.
   */
  controlPlaneComponentServed?: boolean;
}

/**
 * The name of the one HostedControlPlane among `items` (a list of an HCP namespace), for a Deployment that
 * does not name it (HyperShift's: one HCP per namespace). Throws `InvalidInputError` when there is none or
 * more than one. Pure.
 */
export function soleHostedControlPlaneName(items: readonly KubeObject[], namespace: string): string {
  const names = items.filter((h) => h.metadata.namespace === undefined || h.metadata.namespace === namespace).map((h) => h.metadata.name);
  if (names.length === 1) return names[0]!;
  throw new InvalidInputError(
    HCP_INVALID_REASON,
    `HostedControlPlanes in ${namespace}`,
    'metadata.name',
    names.length
      ? `${names.length} found (${names.join(', ')}); expected one, or HCP_NAME`
      : 'none found; the operator runs beside its HostedControlPlane',
  );
}

/**
 * CAPI's Cluster of a hosted cluster: HyperShift names it after the infra ID (`spec.infraID`) in the HCP
 * namespace and deletes it first when the hosted cluster is deleted, well before the HCP.
 */
export const CapiClusterType = { apiVersion: 'cluster.x-k8s.io/v1beta1', kind: 'Cluster' } as const satisfies TypeRef;

/** Why the hosted cluster counts as being deleted: the HCP's own deletion, or its CAPI Cluster's before it. */
export type HostedClusterDeletion = 'HostedControlPlane' | 'Cluster';

/**
 * Whether HyperShift is deleting the hosted cluster, as HyperShift's own Karpenter operator decides it: the
 * HCP has a deletionTimestamp, or the CAPI Cluster `<HCP namespace>/<spec.infraID>` has one. Any other Cluster
 * (another name or namespace, or none) says nothing. Pure.
 */
export function hostedClusterDeletion(
  hcp: Pick<HostedControlPlane, 'deleting' | 'infraID' | 'ref'>,
  capiCluster: KubeObject | undefined,
): HostedClusterDeletion | undefined {
  if (hcp.deleting) return 'HostedControlPlane';
  if (!hcp.infraID || !capiCluster) return undefined;
  const { name, namespace, deletionTimestamp } = capiCluster.metadata;
  if (name !== hcp.infraID || namespace !== hcp.ref.namespace) return undefined;
  return deletionTimestamp ? 'Cluster' : undefined;
}

/** How `readRequest` reads the HCP's lifecycle: whether a teardown runs, and what it removes. */
export type AutoNodeLifecycle = Pick<KarpenterRequest, 'deleting' | 'forceTermination' | 'keepOwnerFinalizer' | 'keepNodePools'>;

/**
 * The one decision of what an HCP's lifecycle asks of the operator, as HyperShift's own Karpenter operator
 * decides it. Pure. Undefined (no request) when AutoNode is off and HyperShift's finalizer is gone. Otherwise:
 *
 * - the hosted cluster being deleted (`hostedClusterDeletion`): a forced teardown of NodePools and NodeClaims
 *   (no drain), then the operand and the finalizer; while only the CAPI Cluster is being deleted (it goes
 *   first) the operand and the finalizer wait for the HCP's own deletion (`keepOwnerFinalizer`);
 * - AutoNode turned off while the finalizer is still there: the operand goes and the finalizer is released,
 *   while NodePools and NodeClaims stay (`keepNodePools`). They are the user's: HyperShift leaves them in the
 *   guest when it disables AutoNode, and tears them down only with the cluster;
 * - AutoNode on: no teardown.
 */
export function autoNodeLifecycle(
  hcp: Pick<HostedControlPlane, 'autoNode' | 'finalizers'>,
  deletion: HostedClusterDeletion | undefined,
): AutoNodeLifecycle | undefined {
  const enabled = hcp.autoNode !== undefined;
  if (!enabled && !hcp.finalizers.includes(HCP_KARPENTER_FINALIZER)) return undefined;
  if (deletion === 'Cluster') return { deleting: true, forceTermination: true, keepOwnerFinalizer: true };
  if (deletion === 'HostedControlPlane') return { deleting: true, forceTermination: true };
  return enabled ? { deleting: false } : { deleting: true, keepNodePools: true };
}

/** The condition this topology owns on the HCP, in the spirit of HyperShift's `AutoNodeEnabled`. */
export const AUTONODE_CONDITION = 'AutoNodeEnabled';

/**
 * The HCP condition present only while ControlPlaneComponent `karpenter` cannot be written (False, reason
 * `Forbidden`): HyperShift's AutoNodeEnabled on the HostedCluster then stays False however Karpenter runs.
 */
export const COMPONENT_CONDITION = 'KarpenterComponentReported';

export const AutoNodeReasons = {
  AsExpected: 'AsExpected',
  /** Enabling (operand not rolled out yet) or disabling (teardown running). */
  Progressing: 'AutoNodeProgressing',
  NotConfigured: 'AutoNodeNotConfigured',
  Degraded: 'AutoNodeDegraded',
} as const;

const conditionOf = (report: StatusReport, type: string): ConditionInput | undefined => report.conditions.find((c) => c.type === type);

/**
 * The AutoNode condition for a folded report. Pure. In order: a deleting request is disabling (False,
 * AutoNodeProgressing; its message says whether the hosted cluster itself is being deleted, or only AutoNode
 * is off and NodePools stay); Degraded=True is False/AutoNodeDegraded with its message; no request is
 * AutoNodeNotConfigured; Available=True and Progressing not True is True/AsExpected; anything else is
 * still enabling (False, AutoNodeProgressing).
 */
export function autoNodeCondition(report: StatusReport, request: KarpenterRequest | undefined, generation: number): ConditionInput {
  const base = { type: AUTONODE_CONDITION, observedGeneration: generation };
  const degraded = conditionOf(report, 'Degraded');
  const available = conditionOf(report, 'Available');
  const progressing = conditionOf(report, 'Progressing');
  if (request?.deleting) {
    return {
      ...base,
      status: 'False',
      reason: AutoNodeReasons.Progressing,
      message: request.forceTermination
        ? `The hosted cluster is being deleted: removing NodePools and NodeClaims without draining${request.keepOwnerFinalizer ? '; Karpenter stays until the HostedControlPlane is deleted' : ', then Karpenter'}`
        : 'Disabling AutoNode: removing Karpenter; NodePools and NodeClaims stay in the guest',
    };
  }
  if (degraded?.status === 'True') {
    return { ...base, status: 'False', reason: AutoNodeReasons.Degraded, message: degraded.message || degraded.reason };
  }
  if (!request) return { ...base, status: 'False', reason: AutoNodeReasons.NotConfigured, message: 'AutoNode is not enabled' };
  if (available?.status === 'True' && progressing?.status !== 'True') {
    return { ...base, status: 'True', reason: AutoNodeReasons.AsExpected, message: 'Karpenter is running' };
  }
  return {
    ...base,
    status: 'False',
    reason: AutoNodeReasons.Progressing,
    message: progressing?.message || 'Enabling AutoNode: Karpenter is rolling out',
  };
}

/**
 * HyperShift management-cluster mode: the operator and the operand run in the HCP namespace of the
 * management cluster, Karpenter's objects live in the guest; configuration comes from the HCP's
 * `spec.autoNode`, facts from the HCP and the environment, and status is one condition on the HCP
 * (`status.autoNode` counts belong to the sidecar adapter).
 */
export class HyperShiftTopology implements Topology {
  readonly name = 'hypershift';
  readonly controlStore: ClusterStore;
  readonly workloadStore: ClusterStore;
  readonly operandNamespace: string;
  readonly watches: Watch[];
  /**
   * The finalizer core's teardown keeps on the HCP: the one HyperShift knows and removes itself when it
   * disables AutoNode (deleting the operator at once) or the guest API is gone, so no finalizer of this
   * project can be left behind to block the HCP's deletion. While the HCP carries it and AutoNode is off,
   * the request reads as `deleting` with `keepNodePools` (`autoNodeLifecycle`): the operator removes the
   * operand and releases it, leaving the user's NodePools and NodeClaims.
   */
  readonly teardownFinalizer = HCP_KARPENTER_FINALIZER;
  /** The HCP events are recorded on. */
  readonly statusObject: ObjectRef;
  /** ControlPlaneComponent `karpenter`, when the management cluster serves the kind. */
  readonly statusWatches: Watch[];

  constructor(private readonly options: HyperShiftTopologyOptions) {
    this.controlStore = options.management;
    this.workloadStore = options.guest;
    this.operandNamespace = options.namespace;
    this.watches = [
      { type: HostedControlPlaneType, cluster: 'control', namespace: options.namespace, fieldSelector: `metadata.name=${options.hcpName}` },
      ...(options.capiClusterServed ? [{ type: CapiClusterType, cluster: 'control' as const, namespace: options.namespace }] : []),
    ];
    this.statusObject = { ...HostedControlPlaneType, namespace: options.namespace, name: options.hcpName };
    this.statusWatches = options.controlPlaneComponentServed
      ? [
          {
            type: ControlPlaneComponentType,
            cluster: 'control',
            namespace: options.namespace,
            fieldSelector: `metadata.name=${OPERAND_COMPONENT}`,
          },
        ]
      : [];
  }

  operandLayout(settings: OperatorSettings): OperandLayout {
    const { runAsUser } = this.options;
    return hcpOperandLayout(this.operandNamespace, settings, runAsUser !== undefined ? { runAsUser } : {});
  }

  /** The raw HCP from the management cache, or undefined. */
  async rawHostedControlPlane(): Promise<KubeObject | undefined> {
    const { management, namespace, hcpName } = this.options;
    return management.get({ ...HostedControlPlaneType, namespace, name: hcpName });
  }

  /** The decoded HCP, or undefined when absent. Throws `InvalidInputError` naming the field. */
  async hostedControlPlane(): Promise<HostedControlPlane | undefined> {
    const raw = await this.rawHostedControlPlane();
    return raw ? decodeHostedControlPlane(raw) : undefined;
  }

  /** The hosted cluster's CAPI Cluster (`<namespace>/<infraID>`) from the management cache, when that kind is served. */
  private async capiCluster(hcp: HostedControlPlane): Promise<KubeObject | undefined> {
    if (!this.options.capiClusterServed || !hcp.infraID) return undefined;
    return this.options.management.get({ ...CapiClusterType, namespace: this.options.namespace, name: hcp.infraID });
  }

  /**
   * The request from `spec.autoNode`: undefined when the HCP is absent, or AutoNode is off and the teardown
   * finalizer is gone. Whether it is deleting, and what core's teardown then removes, is
   * `autoNodeLifecycle`'s: AutoNode turned off removes the operand and releases the finalizer but leaves
   * NodePools and NodeClaims; the hosted cluster's deletion removes them too, forced, in order.
   */
  async readRequest(): Promise<KarpenterRequest | undefined> {
    const hcp = await this.hostedControlPlane();
    if (!hcp) return undefined;
    const lifecycle = autoNodeLifecycle(hcp, hostedClusterDeletion(hcp, await this.capiCluster(hcp)));
    if (!lifecycle) return undefined;
    const request: KarpenterRequest = {
      owner: hcp.ref,
      generation: hcp.generation,
      logLevel: this.options.logLevel ?? 'info',
      ...lifecycle,
      finalizers: hcp.finalizers,
    };
    if (hcp.resourceVersion) request.resourceVersion = hcp.resourceVersion;
    if (hcp.deletionRequestedAtMs !== undefined) request.deletionRequestedAtMs = hcp.deletionRequestedAtMs;
    const { karpenterProviderAws: operand, karpenterOperator: operator } = hcp.images;
    if (operand || operator) request.images = { ...(operand ? { operand } : {}), ...(operator ? { operator } : {}) };
    if (Object.keys(hcp.podOverrides).length) request.podOverrides = structuredClone(hcp.podOverrides);
    const annotations = hcpDeploymentAnnotations(hcp.controlPlaneVersion);
    if (annotations) request.deploymentAnnotations = annotations;
    return request;
  }

  /**
   * Facts from the HCP (`spec.infraID`, `spec.platform.type`, `spec.platform.aws.region` and
   * `.resourceTags`) and the environment (CLUSTER_ENDPOINT; PLATFORM and REGION as fallbacks).
   */
  async clusterFacts(): Promise<ClusterFacts> {
    const { env, namespace, hcpName } = this.options;
    const hcp = await this.hostedControlPlane();
    if (!hcp) {
      throw new InvalidInputError(HCP_INVALID_REASON, `HostedControlPlane ${namespace}/${hcpName}`, 'metadata.name', 'not found');
    }
    const fail = (field: string, detail: string): never => {
      throw new InvalidInputError(HCP_INVALID_REASON, hcp.object, field, detail);
    };
    if (!hcp.infraID) fail('spec.infraID', 'missing');
    if (env.clusterName && hcp.infraID !== env.clusterName)
      fail('spec.infraID', `${hcp.infraID} differs from CLUSTER_NAME=${env.clusterName} (HyperShift sets the infra ID there)`);
    const platform = hcp.platformType || env.platform;
    if (!platform) fail('spec.platform.type', 'missing, and PLATFORM is not set');
    if (hcp.platformType && env.platform && hcp.platformType.toLowerCase() !== env.platform.toLowerCase()) {
      fail('spec.platform.type', `${hcp.platformType} differs from PLATFORM=${env.platform}`);
    }
    if (!/^https:\/\/[^\s/]+/.test(env.clusterEndpoint)) {
      throw new InvalidInputError(
        HCP_INVALID_REASON,
        'operator environment',
        'CLUSTER_ENDPOINT',
        `must be an https URL, got ${JSON.stringify(env.clusterEndpoint)}`,
      );
    }
    const facts: ClusterFacts = {
      platform: platform.toLowerCase() === 'aws' ? 'AWS' : platform,
      infrastructureName: hcp.infraID as string,
      apiServerInternalURL: env.clusterEndpoint,
      // What OpenShift reports for a cluster whose control plane runs elsewhere.
      controlPlaneTopology: 'External',
      resourceTags: hcp.resourceTags,
    };
    const region = hcp.region || env.region;
    if (region) facts.region = region;
    return facts;
  }

  /**
   * Reports the operand as ControlPlaneComponent `karpenter` (`reportOperandComponent`), then sets the
   * AutoNode condition on the HCP (keeping `lastTransitionTime` while its status holds) and
   * `KarpenterComponentReported` while that component cannot be written; writes nothing when they already
   * say that. Other HCP conditions, `status.autoNode`, versions and related objects are left alone (no
   * ClusterOperator in this topology).
   */
  async reportStatus(report: StatusReport, request: KarpenterRequest | undefined): Promise<void> {
    const raw = await this.rawHostedControlPlane();
    if (!raw) return;
    // A component that cannot be reported now (its cache not synced, a 5xx) holds back neither AutoNodeEnabled
    // nor the other way round: the error is rethrown after the HCP's conditions are written, for a retry.
    let componentProblem: ConditionInput | undefined;
    let componentFailed: { error: unknown } | undefined;
    try {
      componentProblem = await this.reportOperandComponent(report, request, raw);
    } catch (error) {
      componentFailed = { error };
    }
    const status = (raw.status ?? {}) as { conditions?: unknown };
    const found = Array.isArray(status.conditions)
      ? status.conditions.filter(
          (c): c is Condition => typeof c === 'object' && c !== null && typeof (c as { type?: unknown }).type === 'string',
        )
      : [];
    // The component condition is there only while the problem lasts (left as it is while unknown).
    const current = componentProblem || componentFailed ? found : found.filter((c) => c.type !== COMPONENT_CONDITION);
    const generation = typeof raw.metadata.generation === 'number' ? raw.metadata.generation : 1;
    const next = [
      autoNodeCondition(report, request, generation),
      ...(componentProblem ? [{ ...componentProblem, observedGeneration: generation }] : []),
    ];
    const { conditions, changed } = setConditions(current, next, isoNow(this.options.clock));
    if (changed || current.length !== found.length) await this.patchHcpConditions(raw, conditions);
    if (componentFailed) throw componentFailed.error;
  }

  /** Writes the HCP's conditions over the resourceVersion they were read at; gone or moved on is left to the next event. */
  private async patchHcpConditions(raw: KubeObject, conditions: Condition[]): Promise<void> {
    const ref: ObjectRef = { ...HostedControlPlaneType, namespace: this.options.namespace, name: raw.metadata.name };
    try {
      // Over the conditions as read only: HyperShift writes the HCP's other conditions, and a list replaced
      // whole from a stale read would drop theirs.
      await this.options.management.patchStatus(
        ref,
        { conditions },
        raw.metadata.resourceVersion ? { resourceVersion: raw.metadata.resourceVersion } : {},
      );
    } catch (e) {
      // Gone (its deletion finished) or moved on: the HCP's watch event brings the next reconcile.
      if (!isNotFoundError(e) && !isConflictError(e)) throw e;
    }
  }

  /**
   * ControlPlaneComponent `karpenter` in the HCP namespace, which HyperShift's own Karpenter operator writes
   * for its Karpenter and HyperShift reads (AutoNodeEnabled, the control-plane version's completion, the HCP's
   * availability). While Karpenter is requested: created when missing (owned by the HCP, as the operand is),
   * its status set from the operand (`operandComponentStatus`) through the status subresource, nothing
   * written when it already says that. Once AutoNode is off or the hosted cluster is deleted, it goes with
   * the operand: deleted when the operand Deployment is gone. Nothing while the management cluster does not
   * serve the kind. Returns the HCP condition to set when the write is forbidden (403), else undefined.
   */
  private async reportOperandComponent(
    report: StatusReport,
    request: KarpenterRequest | undefined,
    raw: KubeObject,
  ): Promise<ConditionInput | undefined> {
    const { management: store, namespace, clock } = this.options;
    if (!this.options.controlPlaneComponentServed) return undefined;
    const ref: ObjectRef = { ...ControlPlaneComponentType, namespace, name: OPERAND_COMPONENT };
    try {
      if (request && !request.deleting && report.operand) {
        const hcp = decodeHostedControlPlane(raw);
        const want = operandComponentStatus(report.operand, hcp.controlPlaneVersion);
        const found =
          (await store.get(ref)) ??
          (
            await store.createIfAbsent<KubeObject>({
              ...ControlPlaneComponentType,
              metadata: { name: OPERAND_COMPONENT, namespace, ownerReferences: [ownerReferenceTo(request)] },
              spec: {},
            })
          ).object;
        const listed = (found?.status as { conditions?: unknown } | undefined)?.conditions;
        const current = Array.isArray(listed) ? (listed as Condition[]).filter((c) => typeof c?.type === 'string') : [];
        const { conditions } = setConditions(current, want.conditions, isoNow(clock));
        await store.patchStatus(ref, { conditions, resources: want.resources, ...(want.version ? { version: want.version } : {}) });
      } else if (request?.deleting || (!request && !report.operand)) {
        if (!(await store.get({ ...Types.Deployment, namespace, name: Names.operandDeployment }))) await store.delete(ref);
      }
      return undefined;
    } catch (e) {
      if (isForbiddenError(e)) {
        return {
          type: COMPONENT_CONDITION,
          status: 'False',
          reason: 'Forbidden',
          message: `Cannot write ${ControlPlaneComponentType.kind} ${namespace}/${OPERAND_COMPONENT}, which HyperShift reads for AutoNodeEnabled: ${describeError(e)}`,
        };
      }
      // Gone or moved on meanwhile: its watch event brings the next reconcile. A malformed HCP is reported in
      // AutoNodeEnabled.
      if (isNotFoundError(e) || isConflictError(e) || isInvalidInputError(e)) return undefined;
      throw e;
    }
  }
}
