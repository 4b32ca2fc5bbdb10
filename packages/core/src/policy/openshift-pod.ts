import { Names } from '../model/names.js';

/**
 * OpenShift's short-lived cloud credentials (the cloud-credential operator in manual mode with STS, or
 * workload identity): the credentials file in the Secret names
 * `web_identity_token_file = /var/run/secrets/openshift/serviceaccount/token`, a projected token of the
 * pod's ServiceAccount for the audience `openshift`. Every standalone pod that reads such a Secret mounts
 * it (the operator and the operand); with long-lived keys it is simply unused.
 */
const boundTokenDir = '/var/run/secrets/openshift/serviceaccount';
export const boundServiceAccountToken = {
  volumeName: 'bound-sa-token',
  dir: boundTokenDir,
  file: `${boundTokenDir}/token`,
  audience: 'openshift',
  volume: (): Record<string, unknown> => ({
    name: 'bound-sa-token',
    projected: { sources: [{ serviceAccountToken: { audience: 'openshift', expirationSeconds: 3600, path: 'token' } }] },
  }),
  mount: (): Record<string, unknown> => ({ name: 'bound-sa-token', mountPath: boundTokenDir, readOnly: true }),
} as const;

/**
 * The cluster's trusted CA bundle (the cluster Proxy's `trustedCA` plus the system roots), injected by the
 * cluster network operator into a ConfigMap labelled `config.openshift.io/inject-trusted-cabundle`, and
 * mounted where RHEL-based images read the system trust store. Go reads that file itself; Node does with
 * `--use-system-ca` (`nodeSystemCaEnv`). Optional: the pod starts before the bundle is injected.
 */
const trustedCaDir = '/etc/pki/ca-trust/extracted/pem';
export const trustedCaBundle = {
  configMap: Names.trustedCaBundle,
  key: 'ca-bundle.crt',
  file: `${trustedCaDir}/tls-ca-bundle.pem`,
  volume: (): Record<string, unknown> => ({
    name: 'trusted-ca-bundle',
    configMap: { name: Names.trustedCaBundle, items: [{ key: 'ca-bundle.crt', path: 'tls-ca-bundle.pem' }], optional: true },
  }),
  mount: (): Record<string, unknown> => ({ name: 'trusted-ca-bundle', mountPath: trustedCaDir, readOnly: true }),
} as const;

/** Env that makes a Node process (the operator image) trust the system store as well as its built-in roots. */
export const nodeSystemCaEnv: ReadonlyArray<{ name: string; value: string }> = [{ name: 'NODE_OPTIONS', value: '--use-system-ca' }];

/**
 * Placement of a platform component on OpenShift control-plane nodes (the operand, and the operator's own
 * Deployment in install/): node selector, the NoSchedule taints of both role names, management-workload
 * partitioning, and the SCC the pod is written for.
 */
export const controlPlanePlacement = {
  nodeSelector: { 'node-role.kubernetes.io/control-plane': '' },
  tolerations: [
    { key: 'node-role.kubernetes.io/master', operator: 'Exists', effect: 'NoSchedule' },
    { key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' },
    // Fail over from a lost control-plane node in 2 minutes, not the 5 the API server defaults to.
    { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 120 },
    { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 120 },
  ],
  podAnnotations: {
    'target.workload.openshift.io/management': '{"effect": "PreferredDuringScheduling"}',
    'openshift.io/required-scc': 'restricted-v2',
  },
} as const;

/**
 * Pod security context accepted by the `restricted-v2` SCC and the `restricted` pod security level. No
 * runAsUser/runAsGroup/fsGroup: the SCC assigns them from the namespace's range and rejects fixed ones.
 */
export function restrictedPodSecurityContext(): Record<string, unknown> {
  return { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } };
}

/** Container security context for `restricted-v2`: no privilege escalation, no capabilities, read-only root. */
export function restrictedContainerSecurityContext(): Record<string, unknown> {
  return { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, readOnlyRootFilesystem: true, runAsNonRoot: true };
}
