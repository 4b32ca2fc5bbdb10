// Projections the informers' caches apply: what the operator never reads is not kept in memory.
import { Types, type KubeObject, type TypeRef } from '@karpenter-operator/core/ports';

/** Drops what the operator never reads and what costs the most memory. */
export function defaultTransform(obj: KubeObject): KubeObject {
  const meta = obj.metadata as KubeObject['metadata'] & { managedFields?: unknown };
  if (meta?.managedFields === undefined) return obj;
  const { managedFields: _dropped, ...metadata } = meta;
  return { ...obj, metadata };
}

/**
 * What the cache keeps of a kind beyond `defaultTransform`, for the kinds the operator caches by the thousand.
 * A field is dropped here only when no controller reads it from the cache; who reads what is kept:
 * - Node: `metadata` (name, labels: default NodeClass discovery, node identity, HyperShift's autoNode
 *   status), `spec.providerID` and `spec.taints` (discovery, node identity). Nothing reads `status`, the bulk
 *   of a Node (conditions, addresses, nodeInfo, images) and what its kubelet rewrites on every heartbeat.
 * - CertificateSigningRequest: everything but `status.certificate`, the issued certificate. The policy only
 *   asks whether it is there (`csrState`: 'issued'), and a signer issues approved CSRs only, which count as
 *   'approved' without it (node identity treats the two alike); `spec.request` stays, parsed on demand.
 */
const kindProjections = new Map<string, (obj: KubeObject) => KubeObject>([
  [
    `${Types.Node.apiVersion}|${Types.Node.kind}`,
    (obj) => {
      if (obj.status === undefined) return obj;
      const { status: _dropped, ...rest } = obj;
      return rest as KubeObject;
    },
  ],
  [
    `${Types.CertificateSigningRequest.apiVersion}|${Types.CertificateSigningRequest.kind}`,
    (obj) => {
      const status = obj.status as { certificate?: unknown } | undefined;
      if (status?.certificate === undefined) return obj;
      const { certificate: _dropped, ...kept } = status;
      return { ...obj, status: kept };
    },
  ],
]);

/** The projection the cache applies to objects of `type` (managedFields dropped, then the kind's own). */
export function cacheProjection(type: TypeRef): (obj: KubeObject) => KubeObject {
  const kind = kindProjections.get(`${type.apiVersion}|${type.kind}`);
  return kind ? (o) => kind(defaultTransform(o)) : defaultTransform;
}
