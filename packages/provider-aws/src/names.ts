import type { TypeRef } from '@karpenter-operator/core';

/** Karpenter's AWS NodeClass kind. */
export const EC2NodeClassType = { apiVersion: 'karpenter.k8s.aws/v1', kind: 'EC2NodeClass' } as const satisfies TypeRef;

/** The label Karpenter puts on every node it launched, naming its EC2NodeClass. */
export const EC2NodeClassLabel = 'karpenter.k8s.aws/ec2nodeclass';

/** EC2 takes at most 200 values per filter (DescribeInstances `instance-id`, DescribeSubnets, ...). */
export const EC2_FILTER_VALUES_MAX = 200;

/** The instance states in which a node can still register: what `InstanceInfo.live` means on EC2. */
export const EC2_LIVE_INSTANCE_STATES: readonly string[] = ['pending', 'running'];
