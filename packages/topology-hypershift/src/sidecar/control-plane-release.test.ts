import { InvalidInputError } from '@karpenter-operator/core';
import { describe, expect, it } from 'vitest';
import { aHostedControlPlane } from '../testing/builders.js';
import { controlPlaneUpgrade } from './control-plane-release.js';

const R1 = 'quay.io/openshift-release-dev/ocp-release:4.22.0-x86_64';
const R2 = 'quay.io/openshift-release-dev/ocp-release:4.23.0-x86_64';
const completed = (image: string, version: string) => ({ state: 'Completed', image, version, completionTime: '2026-01-01T00:00:00Z' });
const partial = (image: string, version: string) => ({ state: 'Partial', image, version });
const hcp = (releaseImage: string, status: Record<string, unknown>, spec: Record<string, unknown> = {}) =>
  aHostedControlPlane({ spec: { releaseImage, ...spec }, status });

describe('controlPlaneUpgrade', () => {
  it.each([
    { name: 'no release status yet', hcp: hcp(R1, {}), want: undefined },
    {
      name: 'first rollout (nothing completed): not an upgrade',
      hcp: hcp(R1, { versionStatus: { desired: { image: R1, version: '4.22.0' }, history: [partial(R1, '4.22.0')] } }),
      want: undefined,
    },
    {
      name: 'at the release asked for',
      hcp: hcp(R1, { versionStatus: { desired: { image: R1, version: '4.22.0' }, history: [completed(R1, '4.22.0')] } }),
      want: undefined,
    },
    {
      name: 'asked for, not picked up yet: the new release is named by its image',
      hcp: hcp(R2, { versionStatus: { desired: { image: R1, version: '4.22.0' }, history: [completed(R1, '4.22.0')] } }),
      want: { from: { image: R1, version: '4.22.0' }, to: { image: R2 } },
    },
    {
      name: 'rolling out',
      hcp: hcp(R2, {
        versionStatus: { desired: { image: R2, version: '4.23.0' }, history: [partial(R2, '4.23.0'), completed(R1, '4.22.0')] },
      }),
      want: { from: { image: R1, version: '4.22.0' }, to: { image: R2, version: '4.23.0' } },
    },
    {
      name: 'rolled out',
      hcp: hcp(R2, {
        versionStatus: { desired: { image: R2, version: '4.23.0' }, history: [completed(R2, '4.23.0'), completed(R1, '4.22.0')] },
      }),
      want: undefined,
    },
    {
      name: "controlPlaneVersion (the management-side rollout) wins over the hosted cluster's version: done there",
      hcp: hcp(R2, {
        controlPlaneVersion: { desired: { image: R2, version: '4.23.0' }, history: [completed(R2, '4.23.0'), completed(R1, '4.22.0')] },
        versionStatus: { desired: { image: R2, version: '4.23.0' }, history: [partial(R2, '4.23.0'), completed(R1, '4.22.0')] },
      }),
      want: undefined,
    },
    {
      name: 'controlPlaneVersion still rolling out',
      hcp: hcp(R2, {
        controlPlaneVersion: { desired: { image: R2, version: '4.23.0' }, history: [partial(R2, '4.23.0'), completed(R1, '4.22.0')] },
        versionStatus: { desired: { image: R1, version: '4.22.0' }, history: [completed(R1, '4.22.0')] },
      }),
      want: { from: { image: R1, version: '4.22.0' }, to: { image: R2, version: '4.23.0' } },
    },
    {
      name: 'spec.controlPlaneReleaseImage is what controlPlaneVersion is compared with when set',
      hcp: hcp(
        R1,
        { controlPlaneVersion: { desired: { image: R1, version: '4.22.0' }, history: [completed(R1, '4.22.0')] } },
        { controlPlaneReleaseImage: R2 },
      ),
      want: { from: { image: R1, version: '4.22.0' }, to: { image: R2 } },
    },
    {
      name: 'versionStatus (the hosted CVO, which runs spec.releaseImage) ignores spec.controlPlaneReleaseImage: no endless hold',
      hcp: hcp(
        R1,
        { versionStatus: { desired: { image: R1, version: '4.22.0' }, history: [completed(R1, '4.22.0')] } },
        { controlPlaneReleaseImage: R2 },
      ),
      want: undefined,
    },
  ])('$name', ({ hcp, want }) => {
    expect(controlPlaneUpgrade(hcp)).toEqual(want);
  });

  it.each([
    { name: 'history not a list', status: { versionStatus: { history: {} } }, field: 'status.versionStatus.history' },
    {
      name: 'a Completed entry without image',
      status: { versionStatus: { history: [{ state: 'Completed' }] } },
      field: 'status.versionStatus.history[0].image',
    },
    { name: 'desired not an object', status: { versionStatus: { desired: 'x', history: [] } }, field: 'status.versionStatus.desired' },
  ])('a status of the wrong shape names the field: $name', ({ status, field }) => {
    const err = (() => {
      try {
        controlPlaneUpgrade(hcp(R1, status));
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(InvalidInputError);
    expect(err).toMatchObject({ field, object: 'HostedControlPlane clusters-demo/demo' });
  });
});
