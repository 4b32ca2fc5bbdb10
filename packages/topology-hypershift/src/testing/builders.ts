import { mergePatch } from '@karpenter-operator/core/testing';
import { Types, type KubeObject } from '@karpenter-operator/core';
import { HostedControlPlaneType } from '../hcp.js';
import { IgnitionAnnotations, IgnitionLabels, nodePoolAnnotationFor } from '../ignition.js';

export const HCP_NAMESPACE = 'clusters-demo';
export const HCP_NAME = 'demo';
export const INFRA_ID = 'demo-x7k2p';
export const ROLE_ARN = 'arn:aws:iam::123456789012:role/demo-karpenter';

/** A HostedControlPlane with AutoNode (Karpenter on AWS) on; `overrides` merge-patch it (`null` deletes). */
export function aHostedControlPlane(overrides: Record<string, unknown> = {}): KubeObject {
  const base: KubeObject = {
    ...HostedControlPlaneType,
    metadata: {
      name: HCP_NAME,
      namespace: HCP_NAMESPACE,
      uid: 'hcp-uid-1',
      generation: 3,
      annotations: { 'hypershift.openshift.io/aws-karpenter-default-instance-profile': 'demo-x7k2p-worker' },
    },
    spec: {
      infraID: INFRA_ID,
      platform: {
        type: 'AWS',
        aws: { region: 'us-east-2', resourceTags: [{ key: 'red-hat-managed', value: 'true' }] },
      },
      autoNode: { provisionerConfig: { name: 'Karpenter', karpenter: { platform: 'AWS', aws: { roleARN: ROLE_ARN } } } },
    },
    status: { ready: true, initialized: true, conditions: [] },
  };
  return mergePatch(base, overrides) as KubeObject;
}

/**
 * A bare HostedControlPlane for the sidecar's controllers: AutoNode on unless `autoNode: false`, and only the
 * finalizers, deletion and status given.
 */
export function aSidecarHostedControlPlane(
  extra: { finalizers?: string[]; deletionTimestamp?: string; autoNode?: boolean; status?: Record<string, unknown> } = {},
): KubeObject {
  return {
    ...HostedControlPlaneType,
    metadata: {
      name: HCP_NAME,
      namespace: HCP_NAMESPACE,
      uid: 'hcp-uid-1',
      ...(extra.finalizers ? { finalizers: extra.finalizers } : {}),
      ...(extra.deletionTimestamp ? { deletionTimestamp: extra.deletionTimestamp } : {}),
    },
    spec: {
      infraID: INFRA_ID,
      ...(extra.autoNode === false
        ? {}
        : { autoNode: { provisionerConfig: { name: 'Karpenter', karpenter: { platform: 'AWS', aws: { roleARN: ROLE_ARN } } } } }),
    },
    ...(extra.status ? { status: extra.status } : {}),
  };
}

export interface IgnitionSecretOptions {
  name?: string;
  namespace?: string;
  nodeClass?: string;
  userData?: string;
  ami?: string;
  arm64Ami?: string;
  createdAt?: string;
  token?: boolean;
  /** No AMI label at all. */
  noAmi?: boolean;
}

/** A Secret the ignition generator would write for `nodeClass` (default `default`). */
export function anIgnitionSecret(o: IgnitionSecretOptions = {}): KubeObject {
  const namespace = o.namespace ?? HCP_NAMESPACE;
  const labels: Record<string, string> = { [IgnitionLabels.managedByKarpenter]: 'true' };
  if (o.ami !== undefined) labels[IgnitionLabels.ami] = o.ami;
  else if (o.arm64Ami === undefined && !o.noAmi) labels[IgnitionLabels.ami] = 'ami-0123456789abcdef0';
  if (o.arm64Ami !== undefined) labels[IgnitionLabels.arm64Ami] = o.arm64Ami;
  const annotations: Record<string, string> = {
    [IgnitionAnnotations.nodePool]: nodePoolAnnotationFor(namespace, o.nodeClass ?? 'default'),
  };
  if (o.token) annotations[IgnitionAnnotations.ignitionConfig] = 'true';
  const userData = o.userData ?? '{"ignition":{"version":"3.4.0","config":{"merge":[{"source":"https://ignition.demo:443/ignition"}]}}}';
  return {
    ...Types.Secret,
    metadata: {
      name: o.name ?? `user-data-${o.nodeClass ?? 'default'}-1a2b3c`,
      namespace,
      labels,
      annotations,
      creationTimestamp: o.createdAt ?? '2026-01-01T00:00:00Z',
    },
    data: { value: Buffer.from(userData, 'utf8').toString('base64') },
  };
}
