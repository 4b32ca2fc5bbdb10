import { InvalidInputError, type KubeObject } from '@karpenter-operator/core';
import { isRecord } from '../records.js';

/** A release as HyperShift reports it: its image, and its version once known. */
export interface Release {
  image: string;
  version?: string;
}

/** A control-plane upgrade in progress: the last release that completed and the one being rolled out. */
export interface ControlPlaneUpgrade {
  from: Release;
  to: Release;
}

/** `4.22.0`, or the image while the version is not known. */
export const releaseName = (r: Release): string => r.version || r.image;

/**
 * Whether the HostedControlPlane's control plane is upgrading, as HyperShift tells it. Pure.
 *
 * - The release asked for is the one the reporting side runs (HyperShift flips it the moment an upgrade is
 *   requested): for `status.controlPlaneVersion` `spec.controlPlaneReleaseImage`, else `spec.releaseImage`; for
 *   `status.versionStatus` (reported by the hosted CVO, which runs `spec.releaseImage`) `spec.releaseImage` only.
 * - What completed comes from `status.controlPlaneVersion` (the management-side components' rollout, in HyperShift
 *   versions that have it) or else `status.versionStatus` (the hosted cluster version): the newest `history`
 *   entry whose `state` is `Completed` (history is newest first).
 * - Upgrading: a release completed before and it is not the one asked for, the image compared as written, as
 *   HyperShift's own upgrade check does. No completed release yet is the first rollout, not an upgrade; no
 *   release asked for at all is not one either.
 *
 * A status of the wrong shape throws `InvalidInputError` naming the field (the CRD schema normally rules it out).
 */
export function controlPlaneUpgrade(hcp: KubeObject): ControlPlaneUpgrade | undefined {
  const object = `HostedControlPlane ${hcp.metadata.namespace ?? ''}/${hcp.metadata.name}`;
  const fail = (field: string, detail: string): never => {
    throw new InvalidInputError('InvalidHostedControlPlane', object, field, detail);
  };
  const spec = isRecord(hcp.spec) ? hcp.spec : {};
  const status = isRecord(hcp.status) ? hcp.status : {};
  const str = (v: unknown, field: string): string | undefined => {
    if (v === undefined || v === null || v === '') return undefined;
    return typeof v === 'string' ? v : fail(field, 'must be a string');
  };
  const field =
    isRecord(status.controlPlaneVersion) && Array.isArray(status.controlPlaneVersion.history) ? 'controlPlaneVersion' : 'versionStatus';
  // Compared with the release the reporting side runs: the management-side components run
  // `controlPlaneReleaseImage` when set; the hosted cluster version (the CVO) always runs `releaseImage`.
  const releaseImage = str(spec.releaseImage, 'spec.releaseImage');
  const askedImage =
    field === 'controlPlaneVersion' ? (str(spec.controlPlaneReleaseImage, 'spec.controlPlaneReleaseImage') ?? releaseImage) : releaseImage;
  const view = status[field];
  if (view === undefined || view === null) return undefined;
  if (!isRecord(view)) return fail(`status.${field}`, 'must be an object');
  const history = view.history ?? [];
  if (!Array.isArray(history)) return fail(`status.${field}.history`, 'must be a list');
  let completed: Release | undefined;
  for (const [i, entry] of history.entries()) {
    const at = `status.${field}.history[${i}]`;
    if (!isRecord(entry)) return fail(at, 'must be an object');
    if (entry.state !== 'Completed') continue;
    const image = str(entry.image, `${at}.image`);
    if (!image) return fail(`${at}.image`, 'missing on a Completed entry');
    const version = str(entry.version, `${at}.version`);
    completed = version ? { image, version } : { image };
    break;
  }
  const desired = view.desired === undefined || view.desired === null ? {} : view.desired;
  if (!isRecord(desired)) return fail(`status.${field}.desired`, 'must be an object');
  const desiredImage = str(desired.image, `status.${field}.desired.image`);
  const desiredVersion = str(desired.version, `status.${field}.desired.version`);
  const toImage = askedImage ?? desiredImage;
  if (!completed || !toImage || toImage === completed.image) return undefined;
  // The version of the release asked for is known once HyperShift reports it as the one it rolls out.
  const to: Release = desiredVersion && desiredImage === toImage ? { image: toImage, version: desiredVersion } : { image: toImage };
  return { from: completed, to };
}
