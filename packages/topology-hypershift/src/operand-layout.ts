import {
  boundServiceAccountToken,
  Names,
  OperandNames,
  operandPodServiceAccount,
  restrictedContainerSecurityContext,
  type OperandLayout,
  type OperatorSettings,
  type VolumeAndMount,
} from '@karpenter-operator/core';

/** Names the operand's layout on a hosted control plane uses. */
export const HcpOperandNames = {
  /**
   * The guest kubeconfig Secret in the HCP namespace when `OperatorSettings.guestKubeconfigSecret` is unset:
   * HyperShift keeps the guest's admin kubeconfig for control-plane components (reaching the guest API
   * through the `kube-apiserver` Service) under this name, key `kubeconfig`.
   */
  defaultGuestKubeconfigSecret: 'service-network-admin-kubeconfig',
  /** The guest namespace of the ServiceAccount Karpenter acts as (its web-identity token is minted for it). */
  guestIdentityNamespace: 'kube-system',
  /** HyperShift's priority class for control-plane workloads. */
  priorityClassName: 'hypershift-control-plane',
  /**
   * `FEATURE_GATES` as HyperShift's AutoNode Deployment sets it. Karpenter v1 has Drift always on and
   * ignores gates it does not know, keeping its defaults for the rest.
   */
  featureGates: 'Drift=true',
  /**
   * The Secret HyperShift's control-plane operator writes in the HCP namespace with the operand's AWS
   * profile (web identity for `spec.autoNode.provisioner.karpenter.aws.roleARN`), key `credentials`.
   */
  credentialsSecret: 'karpenter-credentials',
  tokenMinterContainer: 'token-minter',
  /** The volume the token minter writes the guest ServiceAccount's token into and Karpenter reads it from. */
  tokenVolume: 'serviceaccount-token',
  /** The token minter's binary and subcommand in HyperShift's control-plane-operator image. */
  tokenMinterCommand: ['/usr/bin/control-plane-operator', 'token-minter'],
  /** The audience AWS STS expects of the token (the web-identity provider's client ID). */
  tokenAudience: 'openshift',
} as const;

/**
 * The token volume (empty, pod-lived) and where it is mounted: the directory the credentials profile's
 * `web_identity_token_file` names.
 */
function tokenVolume(readOnly: boolean): VolumeAndMount {
  return {
    volume: { name: HcpOperandNames.tokenVolume, emptyDir: {} },
    mount: { name: HcpOperandNames.tokenVolume, mountPath: boundServiceAccountToken.dir, ...(readOnly ? { readOnly: true } : {}) },
  };
}

/**
 * The token minter as HyperShift runs it beside its Karpenter: a sidecar that, through the guest
 * kubeconfig, mints a token of the guest ServiceAccount `kube-system/karpenter` for the audience
 * `openshift` and keeps it fresh in the shared token volume. Its startup probe holds the containers after
 * it back until the token file exists. Pure.
 */
export function tokenMinterSidecar(image: string): Record<string, unknown> {
  const { guestKubeconfigVolume, guestKubeconfigDir, guestKubeconfigKey } = OperandNames;
  return {
    name: HcpOperandNames.tokenMinterContainer,
    image,
    imagePullPolicy: 'IfNotPresent',
    command: [...HcpOperandNames.tokenMinterCommand],
    args: [
      `--service-account-namespace=${HcpOperandNames.guestIdentityNamespace}`,
      `--service-account-name=${Names.operandServiceAccount}`,
      `--token-audience=${HcpOperandNames.tokenAudience}`,
      `--token-file=${boundServiceAccountToken.file}`,
      `--kubeconfig=${guestKubeconfigDir}/${guestKubeconfigKey}`,
    ],
    restartPolicy: 'Always',
    startupProbe: { exec: { command: ['cat', boundServiceAccountToken.file] }, failureThreshold: 10 },
    resources: { requests: { cpu: '10m', memory: '30Mi' } },
    securityContext: restrictedContainerSecurityContext(),
    terminationMessagePolicy: 'FallbackToLogsOnError',
    volumeMounts: [{ name: guestKubeconfigVolume, mountPath: guestKubeconfigDir, readOnly: true }, tokenVolume(false).mount],
  };
}

/**
 * The operand on a hosted control plane: pods in the HCP namespace of the management cluster, the guest
 * reached through the guest kubeconfig Secret, identity `kube-system/karpenter` on the guest, one replica
 * without leader election, HyperShift's control-plane priority, and no node selector or tolerations of
 * its own (the HCP namespace's scheduling applies). Credentials as HyperShift provides them: its Secret
 * `karpenter-credentials` and, with TOKEN_MINTER_IMAGE, the token minter writing the guest ServiceAccount's
 * web-identity token into a volume Karpenter mounts where that profile looks. Nothing of the management
 * cluster's own tokens is mounted. Pure.
 */
export function hcpOperandLayout(namespace: string, settings: Pick<OperatorSettings, 'guestKubeconfigSecret' | 'tokenMinterImage'>): OperandLayout {
  const minter = settings.tokenMinterImage;
  return {
    podServiceAccount: operandPodServiceAccount(namespace),
    apiIdentity: { namespace: HcpOperandNames.guestIdentityNamespace, name: Names.operandServiceAccount },
    singleCluster: false,
    leaderElection: false,
    guestKubeconfigSecret: settings.guestKubeconfigSecret ?? HcpOperandNames.defaultGuestKubeconfigSecret,
    featureGates: HcpOperandNames.featureGates,
    credentialsSecret: HcpOperandNames.credentialsSecret,
    pod: {
      priorityClassName: HcpOperandNames.priorityClassName,
      annotations: {},
      credentialVolumes: minter ? [tokenVolume(true)] : [],
      ...(minter ? { sidecars: [tokenMinterSidecar(minter)] } : {}),
    },
  };
}
