import { getObject, kubeRequest, type ClusterClient, type KubeObj } from '@karpenter-operator/testkit';

export interface Cond {
  type: string;
  status: string;
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

export async function clusterOperator(cluster: ClusterClient): Promise<KubeObj | undefined> {
  return getObject(cluster.kubeConfig(), 'config.openshift.io/v1', 'ClusterOperator', 'karpenter');
}

export function conditionOf(obj: KubeObj | undefined, type: string): Cond | undefined {
  return ((obj?.status as { conditions?: Cond[] } | undefined)?.conditions ?? []).find((c) => c.type === type);
}

/** Raw request as admin; returns status and body (for refusals the test asserts on). */
export async function adminRequest(
  cluster: ClusterClient,
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  path: string,
  body?: unknown,
  contentType?: string,
) {
  return kubeRequest<Record<string, unknown>>(cluster.kubeConfig(), method, path, {
    ...(body !== undefined ? { body } : {}),
    ...(contentType ? { contentType } : {}),
  });
}
