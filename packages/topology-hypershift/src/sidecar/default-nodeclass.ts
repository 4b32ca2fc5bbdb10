import {
  isInvalidInputError,
  Names,
  Types,
  type CloudProvider,
  type ClusterStore,
  type EventRecorder,
  type Reconciler,
  type Result,
  type Watch,
} from '@karpenter-operator/core';
import { HostedControlPlaneType } from '../hcp.js';
import { hcpNodeClassSource, ignitionSecretWatch, IgnitionLabels, nodeClassInputsFromSecrets } from '../ignition.js';
import { HcpScope } from './hcp-scope.js';

export const HCP_DEFAULT_NODECLASS_CONTROLLER = 'hostedcontrolplane.default-nodeclass';
export const EC2NODECLASS_CRD = 'ec2nodeclasses.karpenter.k8s.aws';
/** Field manager of the adapter's writes to EC2NodeClass `default`. */
export const ADAPTER_FIELD_MANAGER = 'karpenter-operator-hypershift-adapter';

export interface HcpDefaultNodeClassDeps {
  management: ClusterStore;
  guest: ClusterStore;
  namespace: string;
  hcpName: string;
  events: EventRecorder;
  /** Renders NodeClass `default` from the decoded source (the composition root passes the AWS provider). */
  cloud: Pick<CloudProvider, 'nodeClassType' | 'renderNodeClass'>;
  /** Requeue while waiting for the operator's CRD. Default 10 s. */
  retryMs?: number;
}

/**
 * `hostedcontrolplane.default-nodeclass`: once the operator has installed the EC2NodeClass CRD in the
 * guest, keeps EC2NodeClass `default` there: the HCP and the ignition Secrets of its namespace decoded
 * into a `NodeClassSource` (`hcpNodeClassSource`), rendered by the provider (`renderNodeClass`). An invalid Secret (or a missing input) is an event and `problem()` naming the Secret and
 * field; it never throws out of the reconcile, and the last good NodeClass stays.
 */
export class HcpDefaultNodeClassReconciler implements Reconciler {
  readonly name = HCP_DEFAULT_NODECLASS_CONTROLLER;
  readonly watches: Watch[];
  private readonly scope: HcpScope;
  private lastProblem: string | undefined;

  constructor(private readonly deps: HcpDefaultNodeClassDeps) {
    this.scope = new HcpScope(deps);
    this.watches = [
      { type: HostedControlPlaneType, cluster: 'control', namespace: deps.namespace, fieldSelector: `metadata.name=${deps.hcpName}` },
      ignitionSecretWatch(deps.namespace),
      { type: deps.cloud.nodeClassType },
      { type: Types.CustomResourceDefinition, fieldSelector: `metadata.name=${EC2NODECLASS_CRD}` },
    ];
  }

  keysFor(): string[] {
    return [this.deps.hcpName];
  }

  async resyncKeys(): Promise<string[]> {
    return [this.deps.hcpName];
  }

  /** What keeps `default` from being rendered, as last found (undefined when all is well). */
  problem(): string | undefined {
    return this.lastProblem;
  }

  reconcile(): Promise<Result> {
    const { management, guest, namespace, hcpName, events } = this.deps;
    return this.scope.each(hcpName, async (hcp) => {
      const crd = await guest.get({ ...Types.CustomResourceDefinition, name: EC2NODECLASS_CRD });
      if (!crd) return { requeueAfterMs: this.deps.retryMs ?? 10_000 };
      if (!hcp.autoNode || hcp.deleting) return {};
      const secrets = await management.list(Types.Secret, { namespace, labels: { [IgnitionLabels.managedByKarpenter]: 'true' } });
      const problems: string[] = [];
      try {
        const nodeClassInputs = nodeClassInputsFromSecrets(secrets, namespace, { onInvalid: (e) => problems.push(e.message) });
        const current = await guest.get({ ...this.deps.cloud.nodeClassType, name: Names.defaultNodeClass });
        const currentTags = (current?.spec as { tags?: Record<string, string> } | undefined)?.tags;
        const { source } = hcpNodeClassSource({ hcp, nodeClassInputs, ...(currentTags ? { nodeClassTags: currentTags } : {}) });
        const rendered = this.deps.cloud.renderNodeClass(source);
        const r = await guest.apply(rendered.object, { fieldManager: ADAPTER_FIELD_MANAGER, force: true });
        if (r.changed)
          events.record(
            hcp.ref,
            'Normal',
            'DefaultNodeClassApplied',
            `EC2NodeClass ${Names.defaultNodeClass} follows the ignition Secrets`,
          );
      } catch (e) {
        if (!isInvalidInputError(e)) throw e;
        problems.push(e.message);
      }
      const problem = problems.length ? problems.join('; ') : undefined;
      if (problem && problem !== this.lastProblem) {
        events.record({ ...HostedControlPlaneType, namespace, name: hcpName }, 'Warning', 'InvalidIgnitionSecret', problem);
      }
      this.lastProblem = problem;
      return {};
    });
  }
}
