import {
  InvalidInputError,
  isNotFoundError,
  isoNow,
  Names,
  setConditions,
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
  type StatusReport,
  type Topology,
  type Watch,
} from '@karpenter-operator/core';
import { decodeHostedControlPlane, HCP_INVALID_REASON, HostedControlPlaneType, type HostedControlPlane } from './hcp.js';

/** Stores the composition root builds for management-cluster mode; the module resolves them by these tokens. */
export const ManagementClusterStoreId = token<ClusterStore>('ClusterStore/management');
export const GuestClusterStoreId = token<ClusterStore>('ClusterStore/guest');

/** Environment HyperShift sets on the operator in management-cluster mode, read once by the composition root. */
export interface HyperShiftEnv {
  /** CLUSTER_NAME. */
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
  /** The HCP's name; when absent, the one HostedControlPlane in `namespace`. */
  hcpName?: string;
  clock: Clock;
  env: HyperShiftEnv;
  /** The HCP has no log-level field; the operand runs at this level. Default `info`. */
  logLevel?: LogLevel;
  /**
   * The finalizer core's teardown keeps on the request owner. While the HCP carries it and AutoNode is
   * off, the request reads as `deleting` so that disabling AutoNode tears down in order. Default
   * `Names.karpenterFinalizer`.
   */
  teardownFinalizer?: string;
}

/** The condition this topology owns on the HCP, in the spirit of HyperShift's `AutoNodeEnabled`. */
export const AUTONODE_CONDITION = 'AutoNodeEnabled';

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
 * AutoNodeProgressing); Degraded=True is False/AutoNodeDegraded with its message; no request is
 * AutoNodeNotConfigured; Available=True and Progressing not True is True/AsExpected; anything else is
 * still enabling (False, AutoNodeProgressing).
 */
export function autoNodeCondition(report: StatusReport, request: KarpenterRequest | undefined, generation: number): ConditionInput {
  const base = { type: AUTONODE_CONDITION, observedGeneration: generation };
  const degraded = conditionOf(report, 'Degraded');
  const available = conditionOf(report, 'Available');
  const progressing = conditionOf(report, 'Progressing');
  if (request?.deleting) {
    return { ...base, status: 'False', reason: AutoNodeReasons.Progressing, message: 'Disabling AutoNode: removing NodePools, NodeClaims and Karpenter' };
  }
  if (degraded?.status === 'True') {
    return { ...base, status: 'False', reason: AutoNodeReasons.Degraded, message: degraded.message || degraded.reason };
  }
  if (!request) return { ...base, status: 'False', reason: AutoNodeReasons.NotConfigured, message: 'AutoNode is not enabled' };
  if (available?.status === 'True' && progressing?.status !== 'True') {
    return { ...base, status: 'True', reason: AutoNodeReasons.AsExpected, message: 'Karpenter is running' };
  }
  return { ...base, status: 'False', reason: AutoNodeReasons.Progressing, message: progressing?.message || 'Enabling AutoNode: Karpenter is rolling out' };
}

/**
 * HyperShift management-cluster mode: the operator and the operand run in the HCP namespace of the
 * management cluster, Karpenter's objects live in the guest; configuration comes from the HCP's
 * `spec.autoNode`, facts from the HCP and the environment, and status is one condition on the HCP
 * (`status.autoNode` counts belong to the sidecar adapter).
 */
export class HyperShiftTopology implements Topology {
  readonly name = 'hypershift' as const;
  readonly controlStore: ClusterStore;
  readonly workloadStore: ClusterStore;
  readonly operandNamespace: string;
  readonly watches: Watch[];
  private discoveredName: string | undefined;

  constructor(private readonly options: HyperShiftTopologyOptions) {
    this.controlStore = options.management;
    this.workloadStore = options.guest;
    this.operandNamespace = options.namespace;
    const watch: Watch = { type: HostedControlPlaneType, cluster: 'control', namespace: options.namespace };
    if (options.hcpName) watch.fieldSelector = `metadata.name=${options.hcpName}`;
    this.watches = [watch];
  }

  /**
   * The HCP events are recorded on. Before the HCP has been read (when no `hcpName` was given), HyperShift's
   * convention that the HCP is named like the cluster (CLUSTER_NAME) stands in.
   */
  get statusObject(): ObjectRef {
    return { ...HostedControlPlaneType, namespace: this.options.namespace, name: this.options.hcpName ?? this.discoveredName ?? this.options.env.clusterName };
  }

  /** The raw HCP from the management cache, or undefined. Throws `InvalidInputError` when several match and no name was given. */
  async rawHostedControlPlane(): Promise<KubeObject | undefined> {
    const { management, namespace, hcpName } = this.options;
    if (hcpName) return management.get({ ...HostedControlPlaneType, namespace, name: hcpName });
    const all = await management.list(HostedControlPlaneType, { namespace });
    if (all.length > 1) {
      throw new InvalidInputError(
        HCP_INVALID_REASON,
        `HostedControlPlanes in ${namespace}`,
        'metadata.name',
        `${all.length} found (${all.map((h) => h.metadata.name).join(', ')}); expected one, or the HCP name in the configuration`,
      );
    }
    const hcp = all[0];
    if (hcp) this.discoveredName = hcp.metadata.name;
    return hcp;
  }

  /** The decoded HCP, or undefined when absent. Throws `InvalidInputError` naming the field. */
  async hostedControlPlane(): Promise<HostedControlPlane | undefined> {
    const raw = await this.rawHostedControlPlane();
    return raw ? decodeHostedControlPlane(raw) : undefined;
  }

  /**
   * The request from `spec.autoNode`: undefined when the HCP is absent or AutoNode is off. AutoNode off
   * while the HCP still carries the teardown finalizer reads as a deleting request, so core's teardown
   * removes NodePools, NodeClaims and the operand in order before the finalizer goes.
   */
  async readRequest(): Promise<KarpenterRequest | undefined> {
    const hcp = await this.hostedControlPlane();
    if (!hcp) return undefined;
    const teardownFinalizer = this.options.teardownFinalizer ?? Names.karpenterFinalizer;
    const enabled = hcp.autoNode !== undefined;
    if (!enabled && !hcp.finalizers.includes(teardownFinalizer)) return undefined;
    const request: KarpenterRequest = {
      owner: hcp.ref,
      generation: hcp.generation,
      logLevel: this.options.logLevel ?? 'info',
      deleting: hcp.deleting || !enabled,
      finalizers: hcp.finalizers,
    };
    if (hcp.deletionRequestedAtMs !== undefined) request.deletionRequestedAtMs = hcp.deletionRequestedAtMs;
    const { karpenterProviderAws: operand, karpenterOperator: operator } = hcp.images;
    if (operand || operator) request.images = { ...(operand ? { operand } : {}), ...(operator ? { operator } : {}) };
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
      throw new InvalidInputError(HCP_INVALID_REASON, `HostedControlPlane ${namespace}/${hcpName ?? '*'}`, 'metadata.name', 'not found');
    }
    const fail = (field: string, detail: string): never => {
      throw new InvalidInputError(HCP_INVALID_REASON, hcp.object, field, detail);
    };
    if (!hcp.infraID) fail('spec.infraID', 'missing');
    const platform = hcp.platformType || env.platform;
    if (!platform) fail('spec.platform.type', 'missing, and PLATFORM is not set');
    if (hcp.platformType && env.platform && hcp.platformType.toLowerCase() !== env.platform.toLowerCase()) {
      fail('spec.platform.type', `${hcp.platformType} differs from PLATFORM=${env.platform}`);
    }
    if (!/^https:\/\/[^\s/]+/.test(env.clusterEndpoint)) {
      throw new InvalidInputError(HCP_INVALID_REASON, 'operator environment', 'CLUSTER_ENDPOINT', `must be an https URL, got ${JSON.stringify(env.clusterEndpoint)}`);
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
   * Sets the AutoNode condition on the HCP (keeping `lastTransitionTime` while its status holds); writes
   * nothing when it already says that. Other HCP conditions, `status.autoNode`, versions and related
   * objects are left alone (no ClusterOperator in this topology).
   */
  async reportStatus(report: StatusReport, request: KarpenterRequest | undefined): Promise<void> {
    const raw = await this.rawHostedControlPlane();
    if (!raw) return;
    const ref: ObjectRef = { ...HostedControlPlaneType, namespace: this.options.namespace, name: raw.metadata.name };
    const status = (raw.status ?? {}) as { conditions?: unknown };
    const current = Array.isArray(status.conditions)
      ? status.conditions.filter((c): c is Condition => typeof c === 'object' && c !== null && typeof (c as { type?: unknown }).type === 'string')
      : [];
    const generation = typeof raw.metadata.generation === 'number' ? raw.metadata.generation : 1;
    const { conditions, changed } = setConditions(current, [autoNodeCondition(report, request, generation)], isoNow(this.options.clock));
    if (!changed) return;
    try {
      await this.options.management.patchStatus(ref, { conditions });
    } catch (e) {
      // The HCP may be gone between read and write (its deletion finished); the next reconcile sees that.
      if (!isNotFoundError(e)) throw e;
    }
  }
}
