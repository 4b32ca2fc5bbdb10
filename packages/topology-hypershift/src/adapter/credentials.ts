import { boundServiceAccountToken, Names, Types, type ClusterStore, type EventRecorder, type KubeObject, type Reconciler, type Result, type Watch } from '@karpenter-operator/core';
import { decodeHostedControlPlane, HCP_KARPENTER_FINALIZER, HostedControlPlaneType, type HostedControlPlane } from '../hcp.js';
import { ADAPTER_FIELD_MANAGER } from './default-nodeclass.js';

export const HCP_CREDENTIALS_CONTROLLER = 'hostedcontrolplane.credentials';

/**
 * Where Karpenter finds its web-identity token in an HCP namespace: HyperShift's token minter writes the
 * token of the guest ServiceAccount `kube-system/karpenter` there, beside the Karpenter container.
 */
export const WEB_IDENTITY_TOKEN_FILE = boundServiceAccountToken.file;

/** Marks the credentials Secret as the adapter's, so it only ever deletes its own. */
export const CREDENTIALS_MANAGED_LABEL = 'hypershift.openshift.io/karpenter-credentials';

/**
 * The AWS shared-config profile for `roleARN`: web identity, regional STS (the operand runs in the HCP's
 * region and may have no route to the global endpoint). Pure.
 */
export function webIdentityProfile(roleARN: string): string {
  return `[default]\nrole_arn = ${roleARN}\nweb_identity_token_file = ${WEB_IDENTITY_TOKEN_FILE}\nsts_regional_endpoints = regional\n`;
}

/** The credentials Secret the operator gates the operand on, rendered from the HCP. Pure. */
export function renderCredentialsSecret(hcp: HostedControlPlane, roleARN: string): KubeObject {
  return {
    ...Types.Secret,
    metadata: {
      name: Names.credentialsSecret,
      namespace: hcp.ref.namespace,
      labels: { [CREDENTIALS_MANAGED_LABEL]: 'true' },
      ownerReferences: [{ apiVersion: hcp.ref.apiVersion, kind: hcp.ref.kind, name: hcp.ref.name, uid: hcp.ref.uid, controller: true, blockOwnerDeletion: true }],
    },
    type: 'Opaque',
    data: { credentials: Buffer.from(webIdentityProfile(roleARN), 'utf8').toString('base64') },
  };
}

export interface HcpCredentialsDeps {
  management: ClusterStore;
  namespace: string;
  hcpName: string;
  events: EventRecorder;
}

/**
 * `hostedcontrolplane.credentials`: `spec.autoNode...aws.roleARN` → Secret `karpenter-cloud-credentials` in
 * the HCP namespace (the operand's AWS profile, the Secret the operator waits for before it deploys the
 * operand; a new role rolls the operand through the operator's credentials hash). Removed once AutoNode
 * is off and the operator's teardown is done; owned by the HCP, so it goes with it.
 */
export class HcpCredentialsReconciler implements Reconciler {
  readonly name = HCP_CREDENTIALS_CONTROLLER;
  readonly watches: Watch[];

  constructor(private readonly deps: HcpCredentialsDeps) {
    this.watches = [
      { type: HostedControlPlaneType, cluster: 'control', namespace: deps.namespace, fieldSelector: `metadata.name=${deps.hcpName}` },
      { type: Types.Secret, cluster: 'control', namespace: deps.namespace, fieldSelector: `metadata.name=${Names.credentialsSecret}` },
    ];
  }

  keysFor(): string[] {
    return [this.deps.hcpName];
  }

  async resyncKeys(): Promise<string[]> {
    return [this.deps.hcpName];
  }

  async reconcile(): Promise<Result> {
    const { management, namespace, hcpName, events } = this.deps;
    const obj = await management.get<KubeObject>({ ...HostedControlPlaneType, namespace, name: hcpName });
    if (!obj) return {};
    let hcp: HostedControlPlane;
    try {
      hcp = decodeHostedControlPlane(obj);
    } catch {
      return {}; // the operator reports the field; the watch wakes us when it is fixed
    }
    const ref = { ...Types.Secret, namespace, name: Names.credentialsSecret };
    if (hcp.deleting) return {};
    if (!hcp.autoNode) {
      const current = await management.get(ref);
      if (current?.metadata.labels?.[CREDENTIALS_MANAGED_LABEL] === 'true' && !hcp.finalizers.includes(HCP_KARPENTER_FINALIZER)) {
        if (await management.delete(ref)) events.record(hcp.ref, 'Normal', 'CredentialsRemoved', `AutoNode is off: removed Secret ${namespace}/${Names.credentialsSecret}`);
      }
      return {};
    }
    const r = await management.apply(renderCredentialsSecret(hcp, hcp.autoNode.roleARN), { fieldManager: ADAPTER_FIELD_MANAGER });
    if (r.changed) events.record(hcp.ref, 'Normal', 'CredentialsApplied', `Secret ${namespace}/${Names.credentialsSecret}: web identity for ${hcp.autoNode.roleARN}`);
    return {};
  }
}
