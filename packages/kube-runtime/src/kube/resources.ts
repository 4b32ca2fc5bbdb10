import { NotFoundError, Types, type TypeRef } from '@karpenter-operator/core/ports';
import { toCoreError } from './errors.js';
import type { KubeTransport } from './transport.js';

export interface ResourceInfo {
  /** Lower-case plural used in paths, e.g. `deployments`. */
  plural: string;
  namespaced: boolean;
  /**
   * Set for kinds whose CRD the operator itself installs (labelled as managed): their informers wait for
   * the CRD to be Established instead of listing a kind the API server does not serve yet.
   */
  installedCrd?: true;
}

const typeId = (t: TypeRef) => `${t.apiVersion}|${t.kind}`;

/** Kinds the operator uses, so that no discovery request is needed for them. */
export const knownResources: ReadonlyMap<string, ResourceInfo> = new Map<string, ResourceInfo>([
  [typeId(Types.Namespace), { plural: 'namespaces', namespaced: false }],
  [typeId(Types.Secret), { plural: 'secrets', namespaced: true }],
  [typeId(Types.ConfigMap), { plural: 'configmaps', namespaced: true }],
  [typeId(Types.ServiceAccount), { plural: 'serviceaccounts', namespaced: true }],
  [typeId(Types.Node), { plural: 'nodes', namespaced: false }],
  [typeId(Types.Pod), { plural: 'pods', namespaced: true }],
  [typeId(Types.Deployment), { plural: 'deployments', namespaced: true }],
  [typeId(Types.ClusterRole), { plural: 'clusterroles', namespaced: false }],
  [typeId(Types.ClusterRoleBinding), { plural: 'clusterrolebindings', namespaced: false }],
  [typeId(Types.Role), { plural: 'roles', namespaced: true }],
  [typeId(Types.RoleBinding), { plural: 'rolebindings', namespaced: true }],
  [typeId(Types.CustomResourceDefinition), { plural: 'customresourcedefinitions', namespaced: false }],
  [typeId(Types.CertificateSigningRequest), { plural: 'certificatesigningrequests', namespaced: false }],
  [typeId(Types.Lease), { plural: 'leases', namespaced: true }],
  [typeId(Types.Infrastructure), { plural: 'infrastructures', namespaced: false }],
  [typeId(Types.ClusterOperator), { plural: 'clusteroperators', namespaced: false }],
  [typeId(Types.ClusterVersion), { plural: 'clusterversions', namespaced: false }],
  [typeId(Types.MachineSet), { plural: 'machinesets', namespaced: true }],
  [typeId(Types.MachineConfigPool), { plural: 'machineconfigpools', namespaced: false }],
  [typeId(Types.KubeletConfig), { plural: 'kubeletconfigs', namespaced: false }],
  [typeId(Types.Karpenter), { plural: 'karpenters', namespaced: false }],
  [typeId(Types.NodePool), { plural: 'nodepools', namespaced: false, installedCrd: true }],
  [typeId(Types.NodeClaim), { plural: 'nodeclaims', namespaced: false, installedCrd: true }],
  [typeId(Types.NodeOverlay), { plural: 'nodeoverlays', namespaced: false, installedCrd: true }],
  [
    typeId({ apiVersion: 'karpenter.k8s.aws/v1', kind: 'EC2NodeClass' }),
    { plural: 'ec2nodeclasses', namespaced: false, installedCrd: true },
  ],
  [typeId(Types.CredentialsRequest), { plural: 'credentialsrequests', namespaced: true }],
  [typeId({ apiVersion: 'events.k8s.io/v1', kind: 'Event' }), { plural: 'events', namespaced: true }],
  [typeId({ apiVersion: 'v1', kind: 'Event' }), { plural: 'events', namespaced: true }],
  [typeId({ apiVersion: 'v1', kind: 'Service' }), { plural: 'services', namespaced: true }],
  [typeId({ apiVersion: 'apps/v1', kind: 'ReplicaSet' }), { plural: 'replicasets', namespaced: true }],
  [typeId({ apiVersion: 'policy/v1', kind: 'PodDisruptionBudget' }), { plural: 'poddisruptionbudgets', namespaced: true }],
  [typeId({ apiVersion: 'machine.openshift.io/v1beta1', kind: 'Machine' }), { plural: 'machines', namespaced: true }],
  [typeId({ apiVersion: 'machineconfiguration.openshift.io/v1', kind: 'MachineConfig' }), { plural: 'machineconfigs', namespaced: false }],
  [typeId({ apiVersion: 'config.openshift.io/v1', kind: 'FeatureGate' }), { plural: 'featuregates', namespaced: false }],
  [
    typeId({ apiVersion: 'hypershift.openshift.io/v1beta1', kind: 'HostedControlPlane' }),
    { plural: 'hostedcontrolplanes', namespaced: true },
  ],
  [typeId({ apiVersion: 'hypershift.openshift.io/v1beta1', kind: 'HostedCluster' }), { plural: 'hostedclusters', namespaced: true }],
  [
    typeId({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy' }),
    { plural: 'validatingadmissionpolicies', namespaced: false },
  ],
  [
    typeId({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding' }),
    { plural: 'validatingadmissionpolicybindings', namespaced: false },
  ],
]);

/** `<plural>.<group>`: the name of the CRD serving a kind of a named group. */
export function crdNameOf(type: TypeRef, info: ResourceInfo): string | undefined {
  const slash = type.apiVersion.indexOf('/');
  return slash > 0 ? `${info.plural}.${type.apiVersion.slice(0, slash)}` : undefined;
}

export interface PathOptions {
  namespace?: string | undefined;
  name?: string | undefined;
  subresource?: string | undefined;
}

/** `/api/v1` for the core group, `/apis/<group>/<version>` otherwise. */
export function groupVersionPath(apiVersion: string): string {
  return apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
}

/** The request path of a collection or object. A namespace given for a cluster-scoped kind is ignored. */
export function resourcePath(type: TypeRef, info: ResourceInfo, opts: PathOptions = {}): string {
  const parts = [groupVersionPath(type.apiVersion)];
  if (info.namespaced && opts.namespace) parts.push('namespaces', encodeURIComponent(opts.namespace));
  parts.push(info.plural);
  if (opts.name !== undefined) parts.push(encodeURIComponent(opts.name));
  if (opts.subresource) parts.push(opts.subresource);
  return parts.join('/');
}

interface ApiResourceList {
  resources?: Array<{ name: string; kind: string; namespaced: boolean }>;
}

/**
 * Plural and scope of a kind: from `knownResources`, else from discovery (`GET /apis/<group>/<version>`),
 * cached per group-version. A kind missing from discovery is looked up again on the next call (its CRD may
 * have been installed since).
 */
export class ResourceResolver {
  private readonly discovered = new Map<string, ResourceInfo>();

  constructor(
    private readonly transport: KubeTransport,
    private readonly table: ReadonlyMap<string, ResourceInfo> = knownResources,
  ) {}

  async resolve(type: TypeRef): Promise<ResourceInfo> {
    const id = typeId(type);
    const known = this.table.get(id) ?? this.discovered.get(id);
    if (known) return known;
    let list: ApiResourceList;
    try {
      list = await this.transport.request<ApiResourceList>({
        verb: 'discovery',
        kind: type.kind,
        method: 'GET',
        path: groupVersionPath(type.apiVersion),
      });
    } catch (e) {
      throw toCoreError(e, `discovering ${type.kind} in ${type.apiVersion}`);
    }
    for (const r of list.resources ?? []) {
      if (r.name.includes('/')) continue; // subresources
      this.discovered.set(typeId({ apiVersion: type.apiVersion, kind: r.kind }), { plural: r.name, namespaced: r.namespaced });
    }
    const found = this.discovered.get(id);
    if (!found)
      throw new NotFoundError(`discovering ${type.kind} in ${type.apiVersion}: the API server does not serve it (is its CRD installed?)`);
    return found;
  }
}
