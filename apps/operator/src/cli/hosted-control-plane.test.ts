import { describe, expect, it } from 'vitest';
import type { Logger } from '@karpenter-operator/core';
import type { KubeRequest, KubeTransport } from '@karpenter-operator/kube-runtime';
import { hostedControlPlaneName, hostedControlPlaneRunAsUser, managementKindsServed } from './hosted-control-plane.js';

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

describe('hostedControlPlaneRunAsUser', () => {
  const UID = 'hypershift.openshift.io/default-security-context-uid';
  const answering = (answer: () => unknown): KubeTransport & { requests: KubeRequest[] } => {
    const requests: KubeRequest[] = [];
    return {
      requests,
      request: async <T>(req: KubeRequest) => {
        requests.push(req);
        return answer() as T;
      },
      watch: async () => {
        throw new Error('no watches here');
      },
    };
  };
  const namespace = (annotations?: Record<string, string>) => () => ({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: 'clusters-demo', ...(annotations ? { annotations } : {}) },
  });
  const logger = () => {
    const lines: Array<{ level: string; msg: string; fields?: Record<string, unknown> }> = [];
    const log =
      (level: string) =>
      (msg: string, fields?: Record<string, unknown>): void => {
        lines.push({ level, msg, ...(fields ? { fields } : {}) });
      };
    const l: Logger = { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error'), child: () => l };
    return { l, lines };
  };

  it('the annotated UID, from one GET of the namespace', async () => {
    const t = answering(namespace({ [UID]: '1000710000' }));
    expect(await hostedControlPlaneRunAsUser(t, 'clusters-demo', logger().l)).toBe(1000710000);
    expect(t.requests).toEqual([{ verb: 'get', kind: 'Namespace', method: 'GET', path: '/api/v1/namespaces/clusters-demo' }]);
  });

  it('no annotation (an SCC assigns the UID): none, and nothing logged', async () => {
    const { l, lines } = logger();
    expect(await hostedControlPlaneRunAsUser(answering(namespace()), 'clusters-demo', l)).toBeUndefined();
    expect(lines).toEqual([]);
  });

  it("refused (HyperShift's Role grants no namespaces): none, with a warning naming the missing rule", async () => {
    const { l, lines } = logger();
    const refused = answering(() => {
      throw Object.assign(new Error('forbidden'), { code: 403 });
    });
    expect(await hostedControlPlaneRunAsUser(refused, 'clusters-demo', l)).toBeUndefined();
    expect(lines).toEqual([
      expect.objectContaining({ level: 'warn', fields: expect.objectContaining({ missing: 'get namespaces (Role in clusters-demo)' }) }),
    ]);
  });

  it("refused, the operator's own pod (HyperShift's Role grants pods get) gives the UID HyperShift set from the annotation", async () => {
    const { l, lines } = logger();
    const requests: KubeRequest[] = [];
    const t: KubeTransport = {
      request: async <T>(req: KubeRequest) => {
        requests.push(req);
        if (req.kind === 'Namespace') throw Object.assign(new Error('forbidden'), { code: 403 });
        return { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'op-1' }, spec: { securityContext: { runAsUser: 1000710000 } } } as T;
      },
      watch: async () => {
        throw new Error('no watches here');
      },
    };
    expect(await hostedControlPlaneRunAsUser(t, 'clusters-demo', l, 'op-1')).toBe(1000710000);
    expect(requests.map((r) => r.path)).toEqual(['/api/v1/namespaces/clusters-demo', '/api/v1/namespaces/clusters-demo/pods/op-1']);
    expect(lines.map((x) => x.level)).toEqual(['info']);
  });

  it('refused, and the own pod names no UID or cannot be read: none, with the warning', async () => {
    for (const pod of [() => ({ kind: 'Pod', spec: {} }), () => Promise.reject(Object.assign(new Error('nf'), { code: 404 }))]) {
      const { l, lines } = logger();
      const t: KubeTransport = {
        request: async <T>(req: KubeRequest) => {
          if (req.kind === 'Namespace') throw Object.assign(new Error('forbidden'), { code: 403 });
          return (await pod()) as T;
        },
        watch: async () => {
          throw new Error('no watches here');
        },
      };
      expect(await hostedControlPlaneRunAsUser(t, 'clusters-demo', l, 'op-1')).toBeUndefined();
      expect(lines).toEqual([expect.objectContaining({ level: 'warn', fields: expect.objectContaining({ pod: 'op-1' }) })]);
    }
  });

  it('any other failure is not taken for "no UID"', async () => {
    const down = answering(() => {
      throw Object.assign(new Error('unavailable'), { code: 503 });
    });
    await expect(hostedControlPlaneRunAsUser(down, 'clusters-demo', logger().l)).rejects.toThrow('unavailable');
  });

  it('a malformed UID is a start-up error naming the annotation', async () => {
    await expect(hostedControlPlaneRunAsUser(answering(namespace({ [UID]: 'x' })), 'clusters-demo', logger().l)).rejects.toMatchObject({
      field: `metadata.annotations[${UID}]`,
    });
  });
});

describe('managementKindsServed', () => {
  /** Discovery answers: group-version path -> served kinds, or an HTTP status to fail with. */
  function discovery(answers: Partial<Record<string, string[] | number>>): KubeTransport & { paths: string[] } {
    const paths: string[] = [];
    return {
      paths,
      request: async <T>(req: KubeRequest) => {
        paths.push(req.path);
        const a = answers[req.path];
        if (typeof a === 'number' || a === undefined) throw Object.assign(new Error(`HTTP ${a ?? 404}`), { code: a ?? 404 });
        return { resources: a.map((kind) => ({ kind })) } as T;
      },
      watch: async () => {
        throw new Error('no watches here');
      },
    };
  }
  const warnings = () => {
    const lines: string[] = [];
    const l: Logger = { debug: () => {}, info: () => {}, warn: (m: string) => void lines.push(m), error: () => {}, child: () => l };
    return { l, lines };
  };

  it.each([
    {
      name: 'all served',
      answers: {
        '/apis/monitoring.coreos.com/v1': ['ServiceMonitor', 'PodMonitor'],
        '/apis/cluster.x-k8s.io/v1beta1': ['Cluster'],
        '/apis/hypershift.openshift.io/v1beta1': ['HostedControlPlane', 'ControlPlaneComponent'],
      },
      want: { podMonitor: true, capiCluster: true, controlPlaneComponent: true },
      warned: [],
    },
    {
      name: 'group-version served without the kind, and a group not served',
      answers: { '/apis/monitoring.coreos.com/v1': ['ServiceMonitor'], '/apis/hypershift.openshift.io/v1beta1': ['HostedControlPlane'] },
      want: { podMonitor: false, capiCluster: false, controlPlaneComponent: false },
      warned: [
        /PodMonitor \(monitoring.coreos.com\/v1\)/,
        /Cluster \(cluster.x-k8s.io\/v1beta1\)/,
        /ControlPlaneComponent \(hypershift.openshift.io\/v1beta1\): no ControlPlaneComponent karpenter/,
      ],
    },
  ])('$name', async ({ answers, want, warned }) => {
    const t = discovery(answers);
    const { l, lines } = warnings();
    expect(await managementKindsServed(t, l)).toEqual(want);
    expect(t.paths.sort()).toEqual([
      '/apis/cluster.x-k8s.io/v1beta1',
      '/apis/hypershift.openshift.io/v1beta1',
      '/apis/monitoring.coreos.com/v1',
    ]);
    expect(lines).toHaveLength(warned.length);
    warned.forEach((re, i) => expect(lines[i]).toMatch(re));
  });

  it('another failure is not taken for "not served"', async () => {
    await expect(managementKindsServed(discovery({ '/apis/monitoring.coreos.com/v1': 503 }), warnings().l)).rejects.toThrow(/503/);
  });
});
