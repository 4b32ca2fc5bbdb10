import type { KubeObject } from '@karpenter-operator/core';
import { MemoryClusterStore } from '@karpenter-operator/core/testing';
import { describe, expect, it } from 'vitest';
import { aHostedControlPlane, HCP_NAME, HCP_NAMESPACE } from '../testing/builders.js';
import {
  NODECLASS_POLICY_NAME,
  NodeClassPolicyReconciler,
  renderNodeClassPolicy,
  ValidatingAdmissionPolicyBindingType,
  ValidatingAdmissionPolicyType,
} from './nodeclass-policy.js';

const ME = 'system:serviceaccount:kube-system:karpenter-operator';
type Obj = KubeObject & {
  spec: {
    validations: Array<{ expression: string; message: string }>;
    matchConditions: Array<{ expression: string }>;
    matchConstraints: { resourceRules: Array<{ operations: string[]; resources: string[] }> };
  };
};

function setup(hcp: KubeObject | undefined, exempt: () => Promise<readonly string[] | undefined> = async () => [ME]) {
  const management = new MemoryClusterStore(hcp ? [hcp] : []);
  const guest = new MemoryClusterStore();
  const r = new NodeClassPolicyReconciler({ management, guest, namespace: HCP_NAMESPACE, hcpName: HCP_NAME, exempt });
  return { management, guest, r };
}
const policy = (guest: MemoryClusterStore) => guest.get({ ...ValidatingAdmissionPolicyType, name: NODECLASS_POLICY_NAME });
const binding = (guest: MemoryClusterStore) => guest.get({ ...ValidatingAdmissionPolicyBindingType, name: NODECLASS_POLICY_NAME });

describe('renderNodeClassPolicy', () => {
  it('guards the managed NodeClasses, lets the exempt identities (sorted, once each) through, denies through its binding', () => {
    const [p, b] = renderNodeClassPolicy([ME, 'system:serviceaccount:kube-system:b', ME]) as [Obj, KubeObject];
    expect(p.spec.matchConstraints.resourceRules).toEqual([
      { apiGroups: ['karpenter.k8s.aws'], apiVersions: ['*'], operations: ['UPDATE', 'DELETE'], resources: ['ec2nodeclasses'] },
      {
        apiGroups: ['karpenter.hypershift.openshift.io'],
        apiVersions: ['*'],
        operations: ['UPDATE', 'DELETE'],
        resources: ['openshiftec2nodeclasses'],
      },
    ]);
    expect(p.spec.matchConditions[0]!.expression).toBe(
      "request.operation == 'DELETE' ? oldObject.metadata.name == 'default' : object.metadata.name == 'default' || " +
        "(request.resource.resource == 'ec2nodeclasses' && (has(object.metadata.ownerReferences) && " +
        "object.metadata.ownerReferences.exists(r, r.kind == 'OpenshiftEC2NodeClass')))",
    );
    const allowed = `(request.operation != 'DELETE' && object.spec == oldObject.spec) || request.userInfo.username in ['system:serviceaccount:kube-system:b', '${ME}']`;
    expect(p.spec.validations.map((v) => v.expression)).toEqual([
      `request.resource.resource != 'ec2nodeclasses' || ${allowed}`,
      `request.resource.resource != 'openshiftec2nodeclasses' || ${allowed}`,
    ]);
    expect(b.spec).toEqual({ policyName: NODECLASS_POLICY_NAME, validationActions: ['Deny'] });
  });

  it("refuses an EC2NodeClass change with HyperShift's own message (its e2e matches it), OpenshiftEC2NodeClass default with one naming it", () => {
    const [p] = renderNodeClassPolicy([ME]) as [Obj];
    const [ec2, openshift] = p.spec.validations;
    // Verbatim, as HyperShift's e2e asserts it of a refused update and deletion of EC2NodeClass default.
    expect(ec2!.message).toContain(
      "EC2NodeClass resource can't be created/updated/deleted directly, please use OpenshiftEC2NodeClass resource instead",
    );
    expect(openshift!.message).toMatch(/^OpenshiftEC2NodeClass default is managed for this hosted cluster/);
  });

  it('escapes quotes in a username (CEL string literal)', () => {
    const [p] = renderNodeClassPolicy(["o'brien"]) as [Obj];
    expect(p.spec.validations[0]!.expression).toContain("['o\\'brien']");
  });
});

describe('NodeClassPolicyReconciler', () => {
  it('applies the policy and binding while AutoNode is on; a second reconcile writes nothing', async () => {
    const { guest, r } = setup(aHostedControlPlane());
    await r.reconcile();
    expect(await policy(guest)).toBeDefined();
    expect(await binding(guest)).toBeDefined();
    guest.clearWrites();
    await r.reconcile();
    expect(guest.writes).toEqual([]);
  });

  it('a new identity (rotated kubeconfig) rewrites the exemption', async () => {
    let who = [ME];
    const { guest, r } = setup(aHostedControlPlane(), async () => who);
    await r.reconcile();
    who = ['system:serviceaccount:kube-system:rotated'];
    await r.reconcile();
    const spec = JSON.stringify((await policy(guest))?.['spec']);
    expect(spec).toContain('kube-system:rotated');
    expect(spec).not.toContain(ME);
  });

  it('waits (requeue, no write) until the identity is known', async () => {
    const { guest, r } = setup(aHostedControlPlane(), async () => undefined);
    expect(await r.reconcile()).toEqual({ requeueAfterMs: 5_000 });
    expect(guest.writes).toEqual([]);
  });

  it.each([
    { name: 'AutoNode turned off', hcp: aHostedControlPlane({ spec: { autoNode: null } }) },
    { name: 'HCP deleting', hcp: aHostedControlPlane({ metadata: { deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['x'] } }) },
  ])('removes both: $name', async ({ hcp }) => {
    const { guest, management, r } = setup(aHostedControlPlane());
    await r.reconcile();
    expect(await policy(guest)).toBeDefined();
    management.seed(hcp);
    await r.reconcile();
    expect(await policy(guest)).toBeUndefined();
    expect(await binding(guest)).toBeUndefined();
  });

  it('does nothing without an HCP', async () => {
    const none = setup(undefined);
    await none.r.reconcile();
    expect(none.guest.writes).toEqual([]);
  });
});
