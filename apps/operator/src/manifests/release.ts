import { Names, relatedObjects, Types, type KubeObject } from '@karpenter-operator/core';
import { awsRelatedObjects } from '@karpenter-operator/provider-aws';
import { payloadImages, releaseVersionPlaceholder } from './cvo.js';

/**
 * ClusterOperator `karpenter`. Status is a subresource, so the API server drops this one on create; the
 * CVO reads `versions` from the manifest and waits, during an upgrade, until the operator reports them,
 * and copies `relatedObjects` onto the object it creates, so must-gather collects the operator's objects
 * even before the operator first runs (the same list the operator reports; AWS is the supported cloud).
 */
export function clusterOperator(): KubeObject {
  return {
    ...Types.ClusterOperator,
    metadata: { name: Names.clusterOperator },
    spec: {},
    status: {
      versions: [{ name: 'operator', version: releaseVersionPlaceholder }],
      relatedObjects: relatedObjects(Names.operatorNamespace, awsRelatedObjects()),
    },
  };
}

/**
 * Read access to Karpenter's objects for `cluster-reader` (OpenShift's cluster-reader aggregates roles with
 * this label). NodePools, NodeClaims and NodeClasses are cluster-scoped and launch cloud capacity: only
 * cluster administrators create or change them, so nothing is aggregated into the namespace `admin` role
 * (a ClusterRoleBinding to `admin` would otherwise grant the power to launch EC2 instances).
 */
export function karpenterReaderClusterRole(): KubeObject {
  const verbs = ['get', 'list', 'watch'];
  return {
    ...Types.ClusterRole,
    metadata: { name: 'karpenter-reader', labels: { 'rbac.authorization.k8s.io/aggregate-to-cluster-reader': 'true' } },
    rules: [
      {
        apiGroups: ['karpenter.sh'],
        resources: ['nodepools', 'nodepools/status', 'nodeclaims', 'nodeclaims/status', 'nodeoverlays', 'nodeoverlays/status'],
        verbs,
      },
      { apiGroups: ['karpenter.k8s.aws'], resources: ['ec2nodeclasses', 'ec2nodeclasses/status'], verbs },
      { apiGroups: ['autoscaling.openshift.io'], resources: ['karpenters', 'karpenters/status'], verbs },
    ],
  };
}

/** `image-references`: the payload images the manifests name, for the release tooling. */
export function imageReferences(): KubeObject {
  return {
    apiVersion: 'image.openshift.io/v1',
    kind: 'ImageStream',
    metadata: { name: Names.operatorDeployment },
    spec: {
      tags: Object.values(payloadImages).map((i) => ({ name: i.tag, from: { kind: 'DockerImage', name: i.pullSpec } })),
    },
  };
}
