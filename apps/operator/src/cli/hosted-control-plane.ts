import type { KubeObject } from '@karpenter-operator/core';
import { HostedControlPlaneType, soleHostedControlPlaneName } from '@karpenter-operator/topology-hypershift';
import type { KubeTransport } from '../kube/index.js';

/**
 * Management-cluster mode: the HCP's name. HCP_NAME when set; otherwise HyperShift's Deployment names it
 * nowhere (CLUSTER_NAME is the infra ID), so it is the one HostedControlPlane in the namespace, read once
 * at start-up with a live list (the caches are built with its name).
 */
export async function hostedControlPlaneName(transport: KubeTransport, namespace: string, configured: string | undefined): Promise<string> {
  if (configured) return configured;
  const [group, version] = HostedControlPlaneType.apiVersion.split('/');
  const list = await transport.request<{ items?: KubeObject[] }>({
    verb: 'list',
    kind: HostedControlPlaneType.kind,
    method: 'GET',
    path: `/apis/${group}/${version}/namespaces/${namespace}/hostedcontrolplanes`,
  });
  return soleHostedControlPlaneName(list.items ?? [], namespace);
}
