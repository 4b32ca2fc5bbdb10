import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  applyObject,
  applyStatus,
  kubeRequest,
  listObjects,
  nodeBootstrapperObjects,
  startCluster,
  type ClusterClient,
  type ClusterHandle,
  type KubeObj,
} from '@karpenter-operator/testkit';
import type { SeededWorld } from '@karpenter-operator/testkit';
import { anIgnitionSecret } from '@karpenter-operator/topology-hypershift/testing';
import { GUEST_OPERATOR_SUBJECT, hostedGuestRbac, hostedManagementRbac } from '../../src/manifests/hypershift-rbac.js';
import { containerStart, hypershiftRbacObjects, operatorContainer } from './hypershift-deployment.js';
import { startOperator, type OperatorProcess } from './operator-process.js';

/**
 * The HyperShift side of the management-cluster integration tests: what HyperShift creates in an HCP
 * namespace (the HostedControlPlane, Secret `karpenter-credentials`, HyperShift's Role for the operator (or
 * this project's src/manifests/hypershift-rbac.ts), the PriorityClass), a guest cluster with the operator's
 * guest identity, and the operator started as HyperShift starts it.
 */

export const HCP_TYPE = { apiVersion: 'hypershift.openshift.io/v1beta1', kind: 'HostedControlPlane' } as const;
/** The one finalizer on the HCP: HyperShift's own, which HyperShift also resolves itself. */
export const HCP_FINALIZER = 'hypershift.openshift.io/karpenter-finalizer';
/** The ServiceAccount HyperShift runs the operator pod as in the HCP namespace. */
export const OPERATOR_SA = 'karpenter-operator';
export const AUTONODE = {
  provisionerConfig: {
    name: 'Karpenter',
    karpenter: { platform: 'AWS', aws: { roleARN: 'arn:aws:iam::123456789012:role/demo-karpenter' } },
  },
};

export const hcpPath = (namespace: string, name: string) =>
  `/apis/hypershift.openshift.io/v1beta1/namespaces/${namespace}/hostedcontrolplanes/${name}`;

/** A HostedControlPlane the real CRD admits (its required fields filled with plausible values), AutoNode on. */
export function hostedControlPlane(
  world: SeededWorld,
  o: { name: string; namespace: string; clusterID?: string; annotations?: Record<string, string> },
): KubeObj {
  const arn = (r: string) => `arn:aws:iam::123456789012:role/demo-${r}`;
  return {
    ...HCP_TYPE,
    metadata: {
      name: o.name,
      namespace: o.namespace,
      annotations: { 'hypershift.openshift.io/aws-karpenter-default-instance-profile': world.facts.instanceProfile, ...o.annotations },
    },
    spec: {
      infraID: world.facts.infraId,
      ...(o.clusterID ? { clusterID: o.clusterID } : {}),
      releaseImage: 'quay.io/openshift-release-dev/ocp-release:4.22.0-x86_64',
      issuerURL: 'https://oidc.demo.example.com',
      pullSecret: { name: 'pull-secret' },
      sshKey: { name: 'ssh-key' },
      dns: { baseDomain: 'demo.example.com' },
      etcd: {
        managementType: 'Unmanaged',
        unmanaged: { endpoint: 'https://etcd-client:2379', tls: { clientSecret: { name: 'etcd-client-tls' } } },
      },
      services: ['APIServer', 'OAuthServer', 'Konnectivity', 'Ignition'].map((service) => ({
        service,
        servicePublishingStrategy: { type: 'Route' },
      })),
      platform: {
        type: 'AWS',
        aws: {
          region: world.facts.region,
          resourceTags: [{ key: 'red-hat-managed', value: 'true' }],
          rolesRef: Object.fromEntries(
            [
              'controlPlaneOperatorARN',
              'imageRegistryARN',
              'ingressARN',
              'kubeCloudControllerARN',
              'networkARN',
              'nodePoolManagementARN',
              'storageARN',
            ].map((k) => [k, arn(k)]),
          ),
        },
      },
      autoNode: AUTONODE,
    },
    status: { ready: true, initialized: true },
  };
}

/**
 * Secret `karpenter-credentials` as HyperShift's control-plane operator renders it in the HCP namespace: an
 * AWS profile for the AutoNode role with the web-identity token the token minter writes (its template,
 * whitespace included).
 */
export function hyperShiftCredentialsSecret(
  namespace: string,
  roleARN: string = AUTONODE.provisionerConfig.karpenter.aws.roleARN,
): KubeObj {
  const profile = `[default]\n\trole_arn = ${roleARN}\n\tweb_identity_token_file = /var/run/secrets/openshift/serviceaccount/token\n\tsts_regional_endpoints = regional\n`;
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'karpenter-credentials', namespace },
    type: 'Opaque',
    data: { credentials: Buffer.from(profile).toString('base64') },
  } as KubeObj;
}

const HCP_CRD = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/hostedcontrolplanes.hypershift.openshift.io';

/**
 * The pinned hypershift/api CRD predates `status.autoNode` and `status.controlPlaneVersion`, which newer
 * HyperShift releases define (and the API server would otherwise prune): adds each that is missing
 * (idempotent; the rest of the real schema stays as it is).
 */
export async function addNewerStatusFieldsToCrd(mgmt: ClusterClient): Promise<void> {
  const crd = await kubeRequest<{
    spec: {
      versions: Array<{ name: string; schema: { openAPIV3Schema: { properties: { status: { properties: Record<string, unknown> } } } } }>;
    };
  }>(mgmt.kubeConfig(), 'GET', HCP_CRD);
  const versions = crd.body.spec.versions;
  const i = versions.findIndex((v) => v.name === 'v1beta1');
  const present = versions[i]!.schema.openAPIV3Schema.properties.status.properties;
  const int = { type: 'integer', format: 'int32' };
  const str = { type: 'string' };
  const fields: Record<string, unknown> = {
    autoNode: { type: 'object', properties: { nodeCount: int, nodeClaimCount: int, vcpus: int } },
    controlPlaneVersion: { type: 'object', properties: { desired: { type: 'object', properties: { version: str, image: str } } } },
  };
  const ops = Object.entries(fields)
    .filter(([name]) => !present[name])
    .map(([name, value]) => ({
      op: 'add',
      path: `/spec/versions/${i}/schema/openAPIV3Schema/properties/status/properties/${name}`,
      value,
    }));
  if (!ops.length) return;
  const r = await kubeRequest(mgmt.kubeConfig(), 'PATCH', HCP_CRD, { body: ops, contentType: 'application/json-patch+json' });
  if (r.status !== 200) throw new Error(`adding status fields to the HCP CRD: HTTP ${r.status} ${JSON.stringify(r.body)}`);
}

export interface HostedClusters {
  guest: ClusterHandle;
  /** A scratch directory (the guest kubeconfig lives here); the caller removes it. */
  dir: string;
  /** The guest kubeconfig of the operator's guest identity, as HyperShift mounts it. */
  guestKubeconfigPath: string;
}

/**
 * What HyperShift prepares before it starts the operator: a guest cluster with the operator's guest RBAC
 * and a kubeconfig for it; in the management cluster the HCP namespace (with `namespaceAnnotations`), the
 * operator's Role there and the `hypershift-control-plane` PriorityClass.
 */
export async function prepareHostedClusters(
  mgmt: ClusterClient,
  o: {
    namespace: string;
    namespaceAnnotations?: Record<string, string>;
    /**
     * The operator's Role in the HCP namespace: HyperShift's own, exactly as it renders it (no Events, no
     * namespaces: the default), or this project's hypershift-rbac.ts (what HyperShift should grant).
     */
    managementRole?: 'hypershift' | 'project';
  },
): Promise<HostedClusters> {
  await addNewerStatusFieldsToCrd(mgmt);
  const guest = await startCluster({ ec2: false });
  const dir = mkdtempSync(join(tmpdir(), 'ko-hcp-'));
  const g = guest.kubeConfig();
  await applyObject(g, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'openshift-machine-config-operator' } });
  for (const obj of [...nodeBootstrapperObjects(), ...hostedGuestRbac()]) await applyObject(g, obj as KubeObj);
  const m = mgmt.kubeConfig();
  await applyObject(m, {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: o.namespace, ...(o.namespaceAnnotations ? { annotations: o.namespaceAnnotations } : {}) },
  });
  const rbac =
    (o.managementRole ?? 'hypershift') === 'hypershift'
      ? hypershiftRbacObjects(o.namespace)
      : hostedManagementRbac(o.namespace, OPERATOR_SA);
  for (const obj of rbac) await applyObject(m, obj as KubeObj);
  // HyperShift creates this PriorityClass; the operand's pods are refused without it.
  await applyObject(m, {
    apiVersion: 'scheduling.k8s.io/v1',
    kind: 'PriorityClass',
    metadata: { name: 'hypershift-control-plane' },
    value: 100000000,
  } as KubeObj);
  const guestKubeconfigPath = await guest.writeKubeConfigFor(
    GUEST_OPERATOR_SUBJECT.namespace,
    GUEST_OPERATOR_SUBJECT.name,
    join(dir, 'guest.kubeconfig'),
    { expirationSeconds: 7200 },
  );
  return { guest, dir, guestKubeconfigPath };
}

/** Creates the HCP and writes its status as HyperShift reports it (ready, and `controlPlaneVersion` when given). */
export async function createHostedControlPlane(mgmt: ClusterClient, hcp: KubeObj, controlPlaneVersion?: string): Promise<KubeObj> {
  const created = await applyObject(mgmt.kubeConfig(), hcp);
  await applyStatus(mgmt.kubeConfig(), {
    ...created,
    status: {
      ready: true,
      initialized: true,
      ...(controlPlaneVersion
        ? {
            controlPlaneVersion: {
              desired: { version: controlPlaneVersion, image: 'quay.io/openshift-release-dev/ocp-release:4.22.0-x86_64' },
            },
          }
        : {}),
    },
  });
  return created;
}

/**
 * The operator as HyperShift's Deployment starts it (test/fixtures/hypershift/karpenter-operator.yaml): its args
 * and env, with only what a local process cannot take from a pod replaced: the guest kubeconfig file, the
 * cloud credentials file (the harness's, for the EC2 emulator) and no proxy. CLUSTER_NAME is the HCP's infra
 * ID, the HCP is not named, and there is no RELEASE_VERSION.
 */
export function startOperatorAsHyperShift(
  mgmt: ClusterClient,
  world: SeededWorld,
  o: {
    namespace: string;
    guestKubeconfigPath: string;
    name?: string;
    /** The pod name HyperShift's downward API gives the operator (MY_NAME). */
    podName?: string;
    /** More environment (test-only settings such as GUEST_UNREACHABLE_TIMEOUT). */
    env?: Record<string, string>;
  },
): Promise<OperatorProcess> {
  const start = containerStart(operatorContainer(), { namespace: o.namespace, name: o.podName ?? 'karpenter-operator-6c9f8d7b5-hcp' });
  const { AWS_SHARED_CREDENTIALS_FILE: _inPod, HTTP_PROXY: _h, HTTPS_PROXY: _s, NO_PROXY: _n, ...env } = start.env;
  const contractArgs = start.argv.slice(1).map((a) => a.replace(/^--target-kubeconfig=.*/, `--target-kubeconfig=${o.guestKubeconfigPath}`));
  return startOperator(mgmt, {
    namespace: o.namespace,
    serviceAccount: OPERATOR_SA,
    name: o.name ?? 'hcp-operator',
    contractArgs,
    env: {
      ...env,
      CLUSTER_NAME: world.facts.infraId,
      REGION: world.facts.region,
      RELEASE_VERSION: undefined,
      POD_NAME: undefined,
      ...o.env,
    },
  });
}

/**
 * The sidecar adapter beside it, for the HCP `hcpName`, running no controllers (the operator runs them): what
 * a deployment that still has the adapter container gets.
 */
export function startAdapter(
  mgmt: ClusterClient,
  o: { namespace: string; guestKubeconfigPath: string; hcpName: string; name?: string },
): Promise<OperatorProcess> {
  return startOperator(mgmt, {
    namespace: o.namespace,
    serviceAccount: OPERATOR_SA,
    leaderElect: false,
    name: o.name ?? 'hcp-adapter',
    entry: 'adapter',
    args: [`--guest-kubeconfig=${o.guestKubeconfigPath}`, `--hcp-name=${o.hcpName}`],
  });
}

/** The userData HyperShift's ignition generator writes for OpenshiftEC2NodeClass `nodeClass`: a pointer at its ignition server. */
export const ignitionUserData = (nodeClass: string) =>
  `{"ignition":{"version":"3.4.0","config":{"merge":[{"source":"https://ignition.demo:443/ignition?nodeclass=${nodeClass}"}]}}}`;

/**
 * A stand-in for HyperShift's ignition adapter, which HyperShift keeps in the standalone layout: it reacts only
 * to OpenshiftEC2NodeClass v1 objects in the guest (as HyperShift's does, which has no other version) and writes, in the HCP `namespace`, the
 * ignition Secret HyperShift would write for each one that has none yet (`ignitionUserData`, the seed's x86_64
 * AMI). It never rewrites a Secret (a new release's Secret is a test step of its own). Returns its stop.
 */
export function startIgnitionStandIn(mgmt: ClusterClient, guest: ClusterClient, world: SeededWorld, namespace: string): () => void {
  let stopped = false;
  const written = new Set<string>();
  void (async () => {
    while (!stopped) {
      try {
        for (const c of await listObjects(guest.kubeConfig(), 'karpenter.hypershift.openshift.io/v1', 'OpenshiftEC2NodeClass')) {
          const name = c.metadata.name;
          if (written.has(name)) continue;
          const secret = anIgnitionSecret({ namespace, nodeClass: name, ami: world.facts.amis.x86_64, userData: ignitionUserData(name) });
          await applyObject(mgmt.kubeConfig(), secret as KubeObj);
          written.add(name);
        }
      } catch {
        // The CRD is not served yet, or a cluster is restarting: look again.
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
  return () => {
    stopped = true;
  };
}

/**
 * The operator's own pod object in the HCP namespace, as HyperShift's component framework lays it out on a
 * management cluster without SCCs (`runAsUser` and `fsGroup` the namespace's UID); never scheduled. The operator
 * reads its UID from it when HyperShift's Role refuses it the namespace.
 */
export async function applyOperatorPod(mgmt: ClusterClient, o: { namespace: string; name: string; uid: number }): Promise<void> {
  await applyObject(mgmt.kubeConfig(), {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: o.name, namespace: o.namespace, labels: { app: 'karpenter-operator' } },
    spec: {
      serviceAccountName: OPERATOR_SA,
      securityContext: { runAsUser: o.uid, fsGroup: o.uid },
      nodeSelector: { 'karpenter-operator.test/never': 'scheduled' },
      containers: [{ name: 'karpenter-operator', image: operatorContainer().image ?? 'karpenter-operator' }],
    },
  } as KubeObj);
}

/** Karpenter's annotation on a NodeClaim it terminates without draining. */
export const TERMINATION_ANNOTATION = 'karpenter.sh/nodeclaim-termination-timestamp';

/**
 * What Karpenter does for a deleting NodeClaim once it may terminate the instance at once: removes its
 * `karpenter.sh/termination` finalizer. This stand-in does so only for NodeClaims in `guest` that carry
 * Karpenter's termination-timestamp annotation (the forced path), never for one still draining; it records when
 * it first saw each annotated in `forcedAt`. Returns its stop.
 */
export function startKarpenterStandIn(guest: ClusterClient, forcedAt: Map<string, number>): () => void {
  let stopped = false;
  void (async () => {
    while (!stopped) {
      try {
        for (const c of await listObjects(guest.kubeConfig(), 'karpenter.sh/v1', 'NodeClaim')) {
          const { name, deletionTimestamp, annotations, resourceVersion } = c.metadata as KubeObj['metadata'] & {
            deletionTimestamp?: string;
            resourceVersion?: string;
          };
          if (!deletionTimestamp || !annotations?.[TERMINATION_ANNOTATION]) continue;
          if (!forcedAt.has(name)) forcedAt.set(name, Date.now());
          await kubeRequest(guest.kubeConfig(), 'PATCH', `/apis/karpenter.sh/v1/nodeclaims/${name}`, {
            body: { metadata: { finalizers: [], resourceVersion } },
            contentType: 'application/merge-patch+json',
          });
        }
      } catch {
        // The CRD is not served yet, or a write raced another: look again.
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
  return () => {
    stopped = true;
  };
}
