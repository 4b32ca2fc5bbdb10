import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  describeError,
  type Clock,
  type ClusterStore,
  type EventRecorder,
  type KubeObject,
  type Logger,
  type Reconciler,
} from '@karpenter-operator/core';
import {
  AutoNodeStatusReconciler,
  GuestIdentity,
  guestProbe,
  HcpFinalizerReconciler,
  NODECLASS_POLICY_CONTROLLER,
  NodeClassPolicyReconciler,
  OPENSHIFT_NODECLASS_CRD,
  OpenshiftNodeClassReconciler,
  type SelfSubjectReviewStatus,
} from '@karpenter-operator/topology-hypershift/sidecar';
import { isConnectionFailure, toCoreError, type KubeTransport } from '@karpenter-operator/kube-runtime';
import { loadObjects } from './cli/load-objects.js';
import { providerFor } from './providers.js';

/**
 * The HCP-side controllers HyperShift's contract needs beyond the operand: HCP `status.autoNode`, the
 * release of HyperShift's finalizer when the guest stays unreachable during deletion, and (with the HCP's
 * name) the OpenshiftEC2NodeClass CRD, OpenshiftEC2NodeClass `default`, its translation into EC2NodeClasses
 * with their ignition userData, ConfigMaps `set-karpenter-taint` and `karpenter-subnets`, and the
 * ValidatingAdmissionPolicy guarding the translated NodeClasses. One wiring for the two processes that
 * can run them: the operator in management-cluster mode (always, behind its leader election) and the
 * sidecar adapter binary (only when told to, for an operator that predates this).
 */
export interface HostedControllersInputs {
  management: ClusterStore;
  guest: ClusterStore;
  namespace: string;
  /** The HCP; without it only status.autoNode and the finalizer release run (every HCP of the namespace). */
  hcpName?: string;
  events: EventRecorder;
  clock: Clock;
  logger: Logger;
  /** Live calls to the guest API (not cache reads): the finalizer-release probe and who this process is there. */
  guestCalls: GuestCalls;
  /** The OpenshiftEC2NodeClass CRD served in the guest (v1 only, `loadOpenshiftNodeClassCrd`); needed with `hcpName`. */
  openshiftNodeClassCrd?: KubeObject;
  /** How long the guest API may be unreachable during HCP deletion before the finalizer is released. Default 5 minutes. */
  unreachableAfterMs?: number;
}

/** The two live requests the hosted controllers make to the guest API. */
export interface GuestCalls {
  /** `GET /version`: throws `GuestUnreachableError` when the guest cannot be connected to. */
  probeGuest: () => Promise<void>;
  /** Creates a SelfSubjectReview in the guest. */
  selfSubjectReview: () => Promise<SelfSubjectReviewStatus>;
}

export interface HostedControllers {
  reconcilers: Reconciler[];
  /**
   * To call when the guest kubeconfig file changed: it may authenticate as another identity, which the
   * admission policy exempts; `enqueue` is the controller runtime's.
   */
  guestKubeconfigChanged(enqueue: (controller: string, key: string) => void): void;
}

/** The guest calls over the guest cluster's transport. */
export function guestCallsOver(transport: KubeTransport): GuestCalls {
  return {
    probeGuest: guestProbe({
      request: () => transport.request({ verb: 'get', kind: 'Version', method: 'GET', path: '/version' }),
      isConnectionFailure,
      describe: (e) => describeError(toCoreError(e, 'GET /version')),
    }),
    selfSubjectReview: () =>
      transport
        .request<SelfSubjectReviewStatus>({
          verb: 'create',
          kind: 'SelfSubjectReview',
          method: 'POST',
          path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
          body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
        })
        .catch((e: unknown) => {
          throw toCoreError(e, 'SelfSubjectReview');
        }),
  };
}

/**
 * The OpenshiftEC2NodeClass CRD from `crdDir` (the build bundles it beside each entry point, as JSON too:
 * that file alone is read rather than every CRD of the directory). Throws naming the directory when absent.
 */
export function loadOpenshiftNodeClassCrd(crdDir: string): KubeObject | undefined {
  const [plural, ...group] = OPENSHIFT_NODECLASS_CRD.split('.');
  const bundled = join(crdDir, `${group.join('.')}_${plural}.json`);
  if (!existsSync(bundled) && !existsSync(crdDir)) return undefined;
  const crd = loadObjects(existsSync(bundled) ? bundled : crdDir).find(
    (o) => o.kind === 'CustomResourceDefinition' && o.metadata.name === OPENSHIFT_NODECLASS_CRD,
  );
  return crd;
}

export function hostedControllers(inputs: HostedControllersInputs): HostedControllers {
  const { management, guest, namespace, hcpName, events, clock, logger, guestCalls } = inputs;
  const base = { management, guest, namespace, ...(hcpName ? { hcpName } : {}) };
  const reconcilers: Reconciler[] = [
    new AutoNodeStatusReconciler(base),
    new HcpFinalizerReconciler({
      ...base,
      clock,
      events,
      probeGuest: guestCalls.probeGuest,
      ...(inputs.unreachableAfterMs !== undefined ? { unreachableAfterMs: inputs.unreachableAfterMs } : {}),
    }),
  ];
  const identity = new GuestIdentity({ logger, selfSubjectReview: guestCalls.selfSubjectReview });
  // Without the CRD (an image built without it) the translation cannot serve its kind: it is off, and the
  // composition root says so; the rest of the HyperShift controllers run.
  if (hcpName && inputs.openshiftNodeClassCrd) {
    // HyperShift's autoNode is AWS only. The translation uses the provider's pure NodeClass members, no CRDs or EC2.
    const cloud = providerFor('AWS', { crdDir: '' });
    const now = () => new Date(clock.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
    reconcilers.push(
      new OpenshiftNodeClassReconciler({ ...base, hcpName, events, cloud, crd: inputs.openshiftNodeClassCrd, now }),
      new NodeClassPolicyReconciler({ management, guest, namespace, hcpName, exempt: () => identity.usernames() }),
    );
  }
  return {
    reconcilers,
    guestKubeconfigChanged(enqueue) {
      identity.forget();
      if (hcpName && inputs.openshiftNodeClassCrd) enqueue(NODECLASS_POLICY_CONTROLLER, hcpName);
    },
  };
}
