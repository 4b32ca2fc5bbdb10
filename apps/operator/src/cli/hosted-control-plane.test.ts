import { describe, expect, it } from 'vitest';
import type { KubeRequest, KubeTransport } from '../kube/index.js';
import { hostedControlPlaneName } from './hosted-control-plane.js';

const hcp = (name: string, namespace = 'clusters-demo') => ({
  apiVersion: 'hypershift.openshift.io/v1beta1',
  kind: 'HostedControlPlane',
  metadata: { name, namespace },
});

function transport(items: unknown[]): KubeTransport & { requests: KubeRequest[] } {
  const requests: KubeRequest[] = [];
  return {
    requests,
    request: async <T>(req: KubeRequest) => {
      requests.push(req);
      return { items } as T;
    },
    watch: async () => {
      throw new Error('no watches here');
    },
  };
}

describe('hostedControlPlaneName', () => {
  it('HCP_NAME wins without a request', async () => {
    const t = transport([hcp('a'), hcp('b')]);
    expect(await hostedControlPlaneName(t, 'clusters-demo', 'b')).toBe('b');
    expect(t.requests).toEqual([]);
  });

  it('otherwise the only HostedControlPlane of the namespace, from one live list', async () => {
    const t = transport([hcp('demo')]);
    expect(await hostedControlPlaneName(t, 'clusters-demo', undefined)).toBe('demo');
    expect(t.requests).toEqual([
      {
        verb: 'list',
        kind: 'HostedControlPlane',
        method: 'GET',
        path: '/apis/hypershift.openshift.io/v1beta1/namespaces/clusters-demo/hostedcontrolplanes',
      },
    ]);
  });

  it.each([
    { name: 'none', items: [], message: /none found/ },
    { name: 'two', items: [hcp('a'), hcp('b')], message: /2 found \(a, b\); expected one, or HCP_NAME/ },
  ])('$name in the namespace is a start-up error naming metadata.name', async ({ items, message }) => {
    await expect(hostedControlPlaneName(transport(items), 'clusters-demo', undefined)).rejects.toMatchObject({
      field: 'metadata.name',
      message: expect.stringMatching(message),
    });
  });
});
