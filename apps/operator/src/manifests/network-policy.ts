import { Names, type KubeObject } from '@karpenter-operator/core';
import { platformPrometheus } from './monitoring.js';

const networkPolicy = (name: string, spec: Record<string, unknown>): KubeObject => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name, namespace: Names.operatorNamespace },
  spec,
});

/** Cluster DNS: the openshift-dns pods answer on 5353 (the Service's 53 is translated before policy applies on most CNIs; both are allowed). */
const dnsEgress = {
  to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'openshift-dns' } } }],
  ports: [
    { protocol: 'UDP', port: 53 },
    { protocol: 'TCP', port: 53 },
    { protocol: 'UDP', port: 5353 },
    { protocol: 'TCP', port: 5353 },
  ],
};

/**
 * The API server (6443: host-network kube-apiserver endpoints, also what the `kubernetes` Service
 * translates to) and HTTPS to the cloud API (EC2, STS). Any destination: the API server's and the cloud's
 * addresses are not known when the manifest is written. A cluster-wide proxy on another port needs one
 * more policy allowing it (policies add up).
 */
const apiAndHttpsEgress = {
  ports: [
    { protocol: 'TCP', port: 6443 },
    { protocol: 'TCP', port: 443 },
  ],
};

/** Ingress to the named container ports only (metrics scraping, kubelet probes), from anywhere. */
const ingressTo = (...ports: string[]) => [{ ports: ports.map((port) => ({ protocol: 'TCP', port })) }];

/**
 * NetworkPolicies of `openshift-karpenter`: deny everything not allowed, then allow the operator and the
 * operand what they use (egress to DNS, the API server and HTTPS; ingress to metrics and health probes).
 * Applied by the CVO before the Deployment, so the operator starts under them.
 */
export function operatorNetworkPolicies(): KubeObject[] {
  return [
    networkPolicy('default-deny', { podSelector: {}, policyTypes: ['Ingress', 'Egress'] }),
    networkPolicy(Names.operatorDeployment, {
      podSelector: { matchLabels: { 'k8s-app': Names.operatorDeployment } },
      policyTypes: ['Ingress', 'Egress'],
      ingress: ingressTo('metrics', 'health'),
      egress: [dnsEgress, apiAndHttpsEgress],
    }),
    networkPolicy(Names.operandDeployment, {
      podSelector: { matchLabels: { app: 'karpenter' } },
      policyTypes: ['Ingress', 'Egress'],
      // Karpenter serves its metrics over plain HTTP without authentication: only the cluster's
      // Prometheus namespace may reach that port; the probe port is open to the kubelet.
      ingress: [
        {
          from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': platformPrometheus.namespace } } }],
          ports: [{ protocol: 'TCP', port: 'metrics' }],
        },
        ...ingressTo('http'),
      ],
      egress: [dnsEgress, apiAndHttpsEgress],
    }),
  ];
}
