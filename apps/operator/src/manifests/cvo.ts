import { Names } from '@karpenter-operator/core';

/** On every document of `install/`: which clusters get it, and the feature gate that turns it on. */
export const cvoAnnotations: Readonly<Record<string, string>> = {
  'include.release.openshift.io/self-managed-high-availability': 'true',
  'exclude.release.openshift.io/internal-openshift-hosted': 'true',
  'release.openshift.io/feature-gate': Names.featureGate,
};

/** File names start with the CVO run level and component; the CVO applies them in name order. */
export const manifestPrefix = '0000_50_karpenter-operator_';

/** Replaced by the release tooling with the payload's version. */
export const releaseVersionPlaceholder = '0.0.1-snapshot';

/**
 * Payload images by `image-references` tag name. The release tooling rewrites every occurrence of these
 * pull specs in the manifests to the payload's digests.
 */
export const payloadImages = {
  operator: { tag: 'karpenter-operator', pullSpec: 'quay.io/openshift/origin-karpenter-operator:latest' },
  awsOperand: { tag: 'aws-karpenter-provider-aws', pullSpec: 'quay.io/openshift/origin-aws-karpenter-provider-aws:latest' },
} as const;
