import { describe, expect, it } from 'vitest';
import { awsCredentialsRequests } from './credentials-requests.js';
import { awsOperandRbac } from './rbac.js';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const byName = (name: string): Obj => {
  const cr = awsCredentialsRequests('openshift-karpenter').find((o) => o.metadata.name === name);
  if (!cr) throw new Error(`no CredentialsRequest ${name}`);
  return cr as Obj;
};
const actions = (cr: Obj): string[] => cr['spec'].providerSpec.statementEntries.flatMap((s: Obj) => s['action']);

describe('awsCredentialsRequests', () => {
  it.each([
    { name: 'operand', cr: 'karpenter-cloud-credentials', sa: 'karpenter' },
    { name: 'node identity', cr: 'karpenter-node-identity-credentials', sa: 'karpenter-operator' },
  ])('$name: namespace, service account, secret and capability', ({ cr, sa }) => {
    const o = byName(cr);
    expect(o['metadata'].namespace).toBe('openshift-cloud-credential-operator');
    expect(o['metadata'].annotations).toEqual({ 'capability.openshift.io/name': 'CloudCredential' });
    expect(o['spec'].serviceAccountNames).toEqual([sa]);
    expect(o['spec'].secretRef).toEqual({ name: cr, namespace: 'openshift-karpenter' });
    expect(o['spec'].providerSpec.kind).toBe('AWSProviderSpec');
  });

  it.each([
    { name: 'launches through fleets', action: 'ec2:CreateFleet', operand: true, identity: false },
    { name: 'terminates', action: 'ec2:TerminateInstances', operand: true, identity: false },
    { name: 'reads capacity reservations', action: 'ec2:DescribeCapacityReservations', operand: true, identity: false },
    { name: 'manages instance profiles', action: 'iam:RemoveRoleFromInstanceProfile', operand: true, identity: false },
    { name: 'passes the node role', action: 'iam:PassRole', operand: true, identity: false },
    { name: 'resolves AMI aliases', action: 'ssm:GetParameter', operand: true, identity: false },
    { name: 'prices instances', action: 'pricing:GetProducts', operand: true, identity: false },
    { name: 'describes instances', action: 'ec2:DescribeInstances', operand: true, identity: true },
    { name: 'verifies subnets', action: 'ec2:DescribeSubnets', operand: true, identity: true },
    { name: 'resolves the interruption queue by name', action: 'sqs:GetQueueUrl', operand: true, identity: true },
    { name: 'proves instance profiles', action: 'iam:GetInstanceProfile', operand: true, identity: true },
    { name: 'never changes an instance profile from the operator', action: 'iam:CreateInstanceProfile', operand: true, identity: false },
    { name: 'receives interruption events', action: 'sqs:ReceiveMessage', operand: true, identity: false },
    { name: 'deletes handled interruption events', action: 'sqs:DeleteMessage', operand: true, identity: false },
    {
      name: 'reads no queue attributes (the pinned Karpenter does not)',
      action: 'sqs:GetQueueAttributes',
      operand: false,
      identity: false,
    },
  ])('$name', ({ action, operand, identity }) => {
    expect(actions(byName('karpenter-cloud-credentials')).includes(action)).toBe(operand);
    expect(actions(byName('karpenter-node-identity-credentials')).includes(action)).toBe(identity);
  });

  it('gives the operator credential read-only Describe and queue look-up calls, node identity in a statement of its own', () => {
    const entries = byName('karpenter-node-identity-credentials')['spec'].providerSpec.statementEntries as Obj[];
    expect(entries[0]!['action']).toEqual(['ec2:DescribeInstances']);
    for (const a of actions(byName('karpenter-node-identity-credentials')))
      expect(a).toMatch(/^(ec2:Describe|sqs:GetQueueUrl$|iam:GetInstanceProfile$)/);
  });
});

describe('awsOperandRbac', () => {
  it('binds ClusterRole karpenter to the operand ServiceAccount of the namespace', () => {
    const [role, binding] = awsOperandRbac('ns-x') as Obj[];
    expect(role!['rules']).toContainEqual({
      apiGroups: ['karpenter.k8s.aws'],
      resources: ['ec2nodeclasses', 'ec2nodeclasses/status'],
      verbs: ['patch', 'update'],
    });
    expect(binding!['roleRef']).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'karpenter' });
    expect(binding!['subjects']).toEqual([{ kind: 'ServiceAccount', name: 'karpenter', namespace: 'ns-x' }]);
  });
});
