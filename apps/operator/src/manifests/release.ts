import { Names, Types, type KubeObject } from '@karpenter-operator/core';
import { payloadImages, releaseVersionPlaceholder } from './cvo.js';

/**
 * ClusterOperator `karpenter`. Status is a subresource, so the API server drops this one on create; the
 * CVO reads `versions` from the manifest and waits, during an upgrade, until the operator reports them.
 */
export function clusterOperator(): KubeObject {
  return {
    ...Types.ClusterOperator,
    metadata: { name: Names.clusterOperator },
    spec: {},
    status: { versions: [{ name: 'operator', version: releaseVersionPlaceholder }] },
  };
}

/** Lets namespace admins (the `admin` role aggregates it) manage Karpenter's user-facing objects. */
export function karpenterAdminClusterRole(): KubeObject {
  const verbs = ['get', 'list', 'watch', 'create', 'delete', 'patch', 'update'];
  return {
    ...Types.ClusterRole,
    metadata: { name: 'karpenter-admin', labels: { 'rbac.authorization.k8s.io/aggregate-to-admin': 'true' } },
    rules: [
      { apiGroups: ['karpenter.sh'], resources: ['nodepools', 'nodepools/status', 'nodeclaims', 'nodeclaims/status'], verbs },
      { apiGroups: ['karpenter.k8s.aws'], resources: ['ec2nodeclasses'], verbs },
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
