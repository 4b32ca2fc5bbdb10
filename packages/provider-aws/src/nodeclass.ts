import { Names, type DefaultNodeClass, type NodeClassSource } from '@karpenter-operator/core';
import { EC2NodeClassType } from './names.js';

/** OpenShift's kubelet reservations (MCO defaults); Karpenter's own defaults model AWS-CNI/EKS nodes. */
export const OPENSHIFT_SYSTEM_RESERVED = { cpu: '500m', memory: '1Gi', 'ephemeral-storage': '1Gi' } as const;
/** OpenShift reserves nothing for kube daemons separately; zeros override Karpenter's EKS formula. */
export const OPENSHIFT_KUBE_RESERVED = { cpu: '0', memory: '0', 'ephemeral-storage': '0' } as const;

/** The root volume when the source names none (the installer's worker default). */
export const DEFAULT_ROOT_VOLUME = { volumeSize: '120Gi', volumeType: 'gp3', encrypted: true, deleteOnTermination: true } as const;

/** Keys Karpenter's CRD (or Karpenter itself) rejects in `EC2NodeClass.spec.tags`. */
export function isRestrictedTagKey(key: string): boolean {
  return (
    key === '' ||
    key.startsWith('kubernetes.io/cluster') ||
    key.startsWith('karpenter.sh/') ||
    key.startsWith('karpenter.k8s.aws/') ||
    key.startsWith('eks:')
  );
}

/**
 * The image selector a NodeClass holds while MachineConfigPool `pool` does not serve the registration taint:
 * one tag term no AMI carries, so Karpenter resolves no AMI, reports the NodeClass not Ready and launches
 * nothing from it. The tag says what it waits for. Pure.
 */
export function ec2LaunchHold(pool: string): Record<string, unknown> {
  return { amiSelectorTerms: [{ tags: { [Names.launchHoldKey]: pool } }] };
}

/** True for the term `ec2LaunchHold` writes (verification does not look it up). Pure. */
export function isLaunchHoldTerm(term: Record<string, unknown>): boolean {
  const tags = term.tags;
  return typeof tags === 'object' && tags !== null && Names.launchHoldKey in tags;
}

/**
 * EC2NodeClass `default` from a decoded source, whichever topology decoded it (worker MachineSets
 * standalone, ignition Secrets on HyperShift): the one place its spec, the kubelet reservations and the
 * protected fields are decided. Tags are applied in order (a later key wins); restricted keys are dropped.
 * Pure.
 */
export function renderEc2NodeClass(source: NodeClassSource): DefaultNodeClass {
  const tags: Record<string, string> = {};
  for (const t of source.tags) if (!isRestrictedTagKey(t.key)) tags[t.key] = t.value;
  const amiSelectorTerms = structuredClone(source.imageSelectorTerms);
  const spec: Record<string, unknown> = {
    amiFamily: 'Custom',
    amiSelectorTerms,
    subnetSelectorTerms: structuredClone(source.subnetSelectorTerms),
    securityGroupSelectorTerms: structuredClone(source.securityGroupSelectorTerms),
    instanceProfile: source.instanceProfile,
    blockDeviceMappings: [{ deviceName: '/dev/xvda', rootVolume: true, ebs: { ...(source.rootVolume ?? DEFAULT_ROOT_VOLUME) } }],
    metadataOptions: {
      httpEndpoint: 'enabled',
      httpProtocolIPv6: 'disabled',
      httpPutResponseHopLimit: 1,
      httpTokens: source.metadataTokens ?? 'required',
    },
  };
  if (source.associatePublicIp) spec.associatePublicIPAddress = true;
  if (Object.keys(tags).length) spec.tags = tags;
  spec.userData = source.userData;
  spec.kubelet = {
    ...(source.maxPods !== undefined ? { maxPods: source.maxPods } : {}),
    systemReserved: { ...OPENSHIFT_SYSTEM_RESERVED },
    kubeReserved: { ...OPENSHIFT_KUBE_RESERVED },
  };
  return {
    object: { ...EC2NodeClassType, metadata: { name: Names.defaultNodeClass }, spec },
    protectedSpec: { amiFamily: 'Custom', amiSelectorTerms: structuredClone(amiSelectorTerms), userData: source.userData },
  };
}
