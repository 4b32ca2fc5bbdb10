import type { KubeObject, Logger, TypeRef } from '@karpenter-operator/core';
import {
  CapiClusterType,
  ControlPlaneComponentType,
  HcpPodConventions,
  PodMonitorType,
  hcpRunAsUser,
  HostedControlPlaneType,
  soleHostedControlPlaneName,
} from '@karpenter-operator/topology-hypershift';
import { httpStatusOf, type KubeTransport } from '@karpenter-operator/kube-runtime';

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

/**
 * Management-cluster mode: the UID HyperShift runs the HCP's pods as, from the HCP namespace's annotation
 * (`hcpRunAsUser`), read once at start-up with a live GET of that one namespace (HyperShift writes the
 * annotation once, before it deploys anything there). HyperShift's Role grants no `namespaces`: on a 401/403
 * the operator reads its own pod instead (`pods` `get`, which that Role grants), whose
 * `spec.securityContext.runAsUser` HyperShift set from the same annotation. Undefined when neither names
 * one (the SCC assigns the UID) or neither may be read, which is logged naming the rules; a malformed
 * annotation is a start-up error naming it.
 */
export async function hostedControlPlaneRunAsUser(
  transport: KubeTransport,
  namespace: string,
  logger: Logger,
  podName?: string,
): Promise<number | undefined> {
  let ns: KubeObject;
  try {
    ns = await transport.request<KubeObject>({ verb: 'get', kind: 'Namespace', method: 'GET', path: `/api/v1/namespaces/${namespace}` });
  } catch (e) {
    const status = httpStatusOf(e);
    if (status !== 401 && status !== 403) throw e;
    const fromPod = podName ? await ownPodRunAsUser(transport, namespace, podName) : undefined;
    if (typeof fromPod === 'number') {
      logger.info("cannot read the HCP namespace; the operand runs as the UID HyperShift gave this operator's pod", {
        namespace,
        pod: podName,
        runAsUser: fromPod,
      });
      return fromPod;
    }
    logger.warn('cannot read the HCP namespace: the operand runs without the UID HyperShift may assign there', {
      namespace,
      annotation: HcpPodConventions.defaultSecurityContextUidAnnotation,
      missing: `get namespaces (Role in ${namespace})`,
      status,
      ...(podName ? { pod: podName, podLookup: fromPod ?? 'no spec.securityContext.runAsUser' } : {}),
    });
    return undefined;
  }
  return hcpRunAsUser(ns);
}

/** The `runAsUser` of this operator's own pod; a string says why there is none to read. */
async function ownPodRunAsUser(transport: KubeTransport, namespace: string, podName: string): Promise<number | string | undefined> {
  try {
    const pod = await transport.request<KubeObject & { spec?: { securityContext?: { runAsUser?: unknown } } }>({
      verb: 'get',
      kind: 'Pod',
      method: 'GET',
      path: `/api/v1/namespaces/${namespace}/pods/${encodeURIComponent(podName)}`,
    });
    const uid = pod.spec?.securityContext?.runAsUser;
    return typeof uid === 'number' && Number.isInteger(uid) && uid >= 0 ? uid : undefined;
  } catch (e) {
    return `get pods/${podName}: HTTP ${httpStatusOf(e) ?? 'error'}`;
  }
}

/** Whether the API server serves `type`: a discovery request for its group-version (open to every user). */
async function served(transport: KubeTransport, type: TypeRef): Promise<boolean> {
  try {
    const list = await transport.request<{ resources?: Array<{ kind: string }> }>({
      verb: 'discovery',
      kind: type.kind,
      method: 'GET',
      path: `/apis/${type.apiVersion}`,
    });
    return (list.resources ?? []).some((r) => r.kind === type.kind);
  } catch (e) {
    if (httpStatusOf(e) === 404) return false;
    throw e;
  }
}

/**
 * Management-cluster mode: which optional kinds the management cluster serves, checked once at start-up
 * (HyperShift installs them before it creates any HCP): PodMonitor (monitoring.coreos.com/v1), for the
 * operand's PodMonitor, CAPI's Cluster (cluster.x-k8s.io/v1beta1), whose deletion starts the teardown, and
 * HyperShift's ControlPlaneComponent, where the operand's rollout is reported. An absent kind is logged once
 * and neither watched nor written.
 */
export async function managementKindsServed(
  transport: KubeTransport,
  logger: Logger,
): Promise<{ podMonitor: boolean; capiCluster: boolean; controlPlaneComponent: boolean }> {
  const [podMonitor, capiCluster, controlPlaneComponent] = await Promise.all([
    served(transport, PodMonitorType),
    served(transport, CapiClusterType),
    served(transport, ControlPlaneComponentType),
  ]);
  for (const [type, ok, consequence] of [
    [PodMonitorType, podMonitor, 'no PodMonitor for the operand'],
    [CapiClusterType, capiCluster, "the teardown starts with the HCP's own deletion only"],
    [ControlPlaneComponentType, controlPlaneComponent, "no ControlPlaneComponent karpenter: HyperShift's AutoNodeEnabled stays False"],
  ] as const) {
    if (!ok) logger.warn(`the management cluster does not serve ${type.kind} (${type.apiVersion}): ${consequence}`);
  }
  return { podMonitor, capiCluster, controlPlaneComponent };
}
