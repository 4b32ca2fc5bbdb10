import {
  Names,
  type ClusterStore,
  type KubeObject,
  type Reconciler,
  type Result,
  type TypeRef,
  type Watch,
} from '@karpenter-operator/core';
import { HostedControlPlaneType } from '../hcp.js';
import { HcpScope } from './hcp-scope.js';
import { ADAPTER_FIELD_MANAGER } from './names.js';
import { OpenshiftEC2NodeClassType } from './openshift-nodeclass.js';

const OPENSHIFT_NODECLASS_GROUP = OpenshiftEC2NodeClassType.apiVersion.split('/')[0]!;
const OPENSHIFT_NODECLASS_KIND = OpenshiftEC2NodeClassType.kind;

export const NODECLASS_POLICY_CONTROLLER = 'validatingadmissionpolicy.managed-nodeclass';
export const NODECLASS_POLICY_NAME = 'karpenter-operator-managed-nodeclass';

export const ValidatingAdmissionPolicyType = {
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'ValidatingAdmissionPolicy',
} as const satisfies TypeRef;
export const ValidatingAdmissionPolicyBindingType = {
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'ValidatingAdmissionPolicyBinding',
} as const satisfies TypeRef;

/** A CEL string literal. Usernames are Kubernetes names and `system:` prefixes; escape anyway. */
const celString = (s: string): string => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/**
 * Which requests the policy judges (a CEL match condition): updates and deletions of OpenshiftEC2NodeClass
 * `default` and EC2NodeClass `default` (the sidecar keeps both), and updates of every EC2NodeClass an
 * OpenshiftEC2NodeClass owns (the sidecar translates it). Those others may be deleted: the sidecar deletes them
 * before it releases their OpenshiftEC2NodeClass, and the garbage collector follows the owner reference.
 * On DELETE `object` is null: the name is the old object's.
 */
export function managedNodeClassCondition(): string {
  const name = celString(Names.defaultNodeClass);
  const translated = `(has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, r.kind == ${celString(OPENSHIFT_NODECLASS_KIND)}))`;
  return [
    `request.operation == 'DELETE' ? oldObject.metadata.name == ${name} :`,
    `object.metadata.name == ${name} || (request.resource.resource == 'ec2nodeclasses' && ${translated})`,
  ].join(' ');
}

/**
 * The message HyperShift's own policy refuses a direct EC2NodeClass change with, verbatim: HyperShift's e2e
 * matches it, so a refused EC2NodeClass edit or deletion here starts with it.
 */
export const EC2NODECLASS_REFUSED_MESSAGE =
  "EC2NodeClass resource can't be created/updated/deleted directly, please use OpenshiftEC2NodeClass resource instead";

/**
 * The guest's ValidatingAdmissionPolicy and binding that refuse changes to the spec of the NodeClasses the
 * sidecar manages (`managedNodeClassCondition`), and the deletion of the two `default`s, by anyone but
 * `exempt`: a direct edit would be reverted at the next reconcile anyway, and a deletion of `default` makes
 * its NodePools not ready until it is back, so both are refused with a message saying where the setting
 * comes from (for an EC2NodeClass, HyperShift's own message first: `EC2NODECLASS_REFUSED_MESSAGE`). Metadata
 * and status stay writable (Karpenter's finalizers and conditions). Pure.
 */
export function renderNodeClassPolicy(exempt: readonly string[]): KubeObject[] {
  const users = [...new Set(exempt)].sort();
  const allowed = `(request.operation != 'DELETE' && object.spec == oldObject.spec) || request.userInfo.username in [${users.map(celString).join(', ')}]`;
  // One validation per resource, each judging only its own: the message says where that spec comes from.
  const forResource = (resource: string) => `request.resource.resource != ${celString(resource)} || ${allowed}`;
  return [
    {
      ...ValidatingAdmissionPolicyType,
      metadata: { name: NODECLASS_POLICY_NAME },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            { apiGroups: ['karpenter.k8s.aws'], apiVersions: ['*'], operations: ['UPDATE', 'DELETE'], resources: ['ec2nodeclasses'] },
            {
              apiGroups: [OPENSHIFT_NODECLASS_GROUP],
              apiVersions: ['*'],
              operations: ['UPDATE', 'DELETE'],
              resources: ['openshiftec2nodeclasses'],
            },
          ],
        },
        matchConditions: [{ name: 'operator-managed', expression: managedNodeClassCondition() }],
        validations: [
          {
            expression: forResource('ec2nodeclasses'),
            message: `${EC2NODECLASS_REFUSED_MESSAGE}: this EC2NodeClass is managed for this hosted cluster, its spec comes from the OpenshiftEC2NodeClass of the same name, its ignition configuration and the HostedCluster (resource tags, instance profile)`,
            reason: 'Forbidden',
          },
          {
            expression: forResource('openshiftec2nodeclasses'),
            message: `OpenshiftEC2NodeClass ${Names.defaultNodeClass} is managed for this hosted cluster: its spec comes from the hosted cluster's infra ID (HyperShift's default subnets and security groups); create another OpenshiftEC2NodeClass for other settings`,
            reason: 'Forbidden',
          },
        ],
      },
    },
    {
      ...ValidatingAdmissionPolicyBindingType,
      metadata: { name: NODECLASS_POLICY_NAME },
      spec: { policyName: NODECLASS_POLICY_NAME, validationActions: ['Deny'] },
    },
  ];
}

export interface NodeClassPolicyDeps {
  management: ClusterStore;
  guest: ClusterStore;
  namespace: string;
  hcpName: string;
  /**
   * The usernames allowed to change the managed spec: the identity this adapter (and the operator beside it)
   * uses in the guest, as the API server sees it (SelfSubjectReview). Undefined while it cannot be learnt.
   */
  exempt: () => Promise<readonly string[] | undefined>;
}

/**
 * `validatingadmissionpolicy.managed-nodeclass`: keeps the policy above in the guest while AutoNode is on;
 * re-run when the exempt identity changes (a rotated guest kubeconfig may authenticate as another user).
 */
export class NodeClassPolicyReconciler implements Reconciler {
  readonly name = NODECLASS_POLICY_CONTROLLER;
  readonly watches: Watch[];
  private readonly scope: HcpScope;

  constructor(private readonly deps: NodeClassPolicyDeps) {
    this.scope = new HcpScope(deps);
    const byName = `metadata.name=${NODECLASS_POLICY_NAME}`;
    this.watches = [
      { type: HostedControlPlaneType, cluster: 'control', namespace: deps.namespace, fieldSelector: `metadata.name=${deps.hcpName}` },
      { type: ValidatingAdmissionPolicyType, fieldSelector: byName },
      { type: ValidatingAdmissionPolicyBindingType, fieldSelector: byName },
    ];
  }

  keysFor(): string[] {
    return [this.deps.hcpName];
  }

  async resyncKeys(): Promise<string[]> {
    return [this.deps.hcpName];
  }

  reconcile(): Promise<Result> {
    const { guest, hcpName } = this.deps;
    return this.scope.each(hcpName, async (hcp) => {
      if (!hcp.autoNode || hcp.deleting) {
        // Teardown deletes NodeClasses' users first; the policy only guards updates, so it may go at once.
        for (const type of [ValidatingAdmissionPolicyBindingType, ValidatingAdmissionPolicyType])
          await guest.delete({ ...type, name: NODECLASS_POLICY_NAME });
        return {};
      }
      const exempt = await this.deps.exempt();
      if (!exempt?.length) return { requeueAfterMs: 5_000 };
      for (const o of renderNodeClassPolicy(exempt)) await guest.apply(o, { fieldManager: ADAPTER_FIELD_MANAGER });
      return {};
    });
  }
}
