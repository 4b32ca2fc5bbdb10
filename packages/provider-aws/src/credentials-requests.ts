import { Names, Types, type KubeObject, type RelatedObject } from '@karpenter-operator/core';

/** What the operand calls, by service (karpenter-provider-aws's controller policy, without EKS). */
export const operandAwsActions = {
  ec2: [
    'ec2:RunInstances',
    'ec2:CreateFleet',
    'ec2:CreateLaunchTemplate',
    'ec2:DeleteLaunchTemplate',
    'ec2:TerminateInstances',
    'ec2:CreateTags',
    'ec2:DescribeAvailabilityZones',
    'ec2:DescribeCapacityReservations',
    'ec2:DescribeImages',
    'ec2:DescribeInstances',
    'ec2:DescribeInstanceTypeOfferings',
    'ec2:DescribeInstanceTypes',
    'ec2:DescribeLaunchTemplates',
    'ec2:DescribeSecurityGroups',
    'ec2:DescribeSpotPriceHistory',
    'ec2:DescribeSubnets',
  ],
  iam: [
    'iam:AddRoleToInstanceProfile',
    'iam:CreateInstanceProfile',
    'iam:DeleteInstanceProfile',
    'iam:GetInstanceProfile',
    'iam:ListInstanceProfiles',
    'iam:PassRole',
    'iam:RemoveRoleFromInstanceProfile',
    'iam:TagInstanceProfile',
  ],
  ssm: ['ssm:GetParameter'],
  pricing: ['pricing:GetProducts'],
  // Interruption handling (the CR's spec.settings.interruptionQueue); unused while no queue is set.
  sqs: [
    // At start-up Karpenter resolves the queue's URL from its name.
    'sqs:GetQueueUrl',
    // It long-polls the queue for EventBridge's EC2 events (spot interruption warning, rebalance
    // recommendation, instance state change, scheduled change).
    'sqs:ReceiveMessage',
    // It deletes each message once handled. The pinned v1.14.1 reads no queue attributes.
    'sqs:DeleteMessage',
  ],
} as const;

/**
 * The operator's node-identity check looks instances up and does nothing else; discovery without
 * MachineSets reads the same call for the control-plane and worker instances (VPC, subnets, security
 * groups, instance profile to copy).
 */
export const nodeIdentityAwsActions = ['ec2:DescribeInstances'] as const;

/**
 * The operator's EC2 client also verifies what a NodeClass references (and proves the values discovery
 * without MachineSets derives: subnets, security groups, AMIs), checks that credentials work, its SQS
 * client looks the interruption queue up and its IAM client the instance profile; read-only calls, in a statement of their own so the node-identity one stays as narrow as it is.
 */
export const operatorVerificationAwsActions = [
  'ec2:DescribeAvailabilityZones',
  'ec2:DescribeImages',
  'ec2:DescribeSecurityGroups',
  'ec2:DescribeSubnets',
  // Whether the Karpenter CR's interruption queue exists.
  'sqs:GetQueueUrl',
  // Whether a NodeClass's instance profile exists and holds a role (verification), and the conventional
  // or worker instances' profile before discovery without MachineSets uses it. Read-only.
  'iam:GetInstanceProfile',
] as const;

function credentialsRequest(name: string, namespace: string, serviceAccount: string, actions: readonly (readonly string[])[]): KubeObject {
  return {
    ...Types.CredentialsRequest,
    metadata: {
      name,
      namespace: Names.credentialsRequestNamespace,
      annotations: { 'capability.openshift.io/name': 'CloudCredential' },
    },
    spec: {
      serviceAccountNames: [serviceAccount],
      secretRef: { name, namespace },
      providerSpec: {
        apiVersion: 'cloudcredential.openshift.io/v1',
        kind: 'AWSProviderSpec',
        statementEntries: actions.map((action) => ({ effect: 'Allow', action: [...action], resource: '*' })),
      },
    },
  };
}

/**
 * CredentialsRequests: `karpenter-cloud-credentials` for the operand and the narrow, read-only
 * `karpenter-node-identity-credentials` for the operator (instance lookups for node identity, NodeClass
 * verification); the cloud-credential operator writes each Secret into `namespace`. Pure.
 */
export function awsCredentialsRequests(namespace: string): KubeObject[] {
  return [
    credentialsRequest(Names.credentialsSecret, namespace, Names.operandServiceAccount, Object.values(operandAwsActions)),
    credentialsRequest(Names.nodeIdentityCredentialsSecret, namespace, Names.operatorServiceAccount, [
      nodeIdentityAwsActions,
      operatorVerificationAwsActions,
    ]),
  ];
}

/**
 * The AWS objects must-gather collects (ClusterOperator `relatedObjects`): every EC2NodeClass and the two
 * CredentialsRequests. Pure.
 */
export function awsRelatedObjects(): RelatedObject[] {
  return [
    { group: 'karpenter.k8s.aws', resource: 'ec2nodeclasses', name: '' },
    ...awsCredentialsRequests(Names.operatorNamespace).map((cr) => ({
      group: 'cloudcredential.openshift.io',
      resource: 'credentialsrequests',
      name: cr.metadata.name,
      namespace: Names.credentialsRequestNamespace,
    })),
  ];
}
