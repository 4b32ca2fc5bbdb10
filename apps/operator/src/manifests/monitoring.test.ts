import { Names, OperandNames, renderOperand, type KubeObject } from '@karpenter-operator/core';
import { anOperandInput } from '@karpenter-operator/core/testing';
import { awsOperandRbac } from '@karpenter-operator/provider-aws';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../config.js';
import { installFiles } from './install.js';
import { alertRules, dashboardConfigMap, metricsServiceHostnames, MonitoringNames } from './monitoring.js';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const all = installFiles().flatMap((f) => f.documents);
const find = (kind: string, name: string, namespace?: string): Obj => {
  const o = all.find((x) => x.kind === kind && x.metadata.name === name && x.metadata.namespace === namespace);
  if (!o) throw new Error(`install/ has no ${kind} ${namespace ?? ''}/${name}`);
  return o as Obj;
};
const ns = Names.operatorNamespace;
const matches = (selector: Record<string, string>, labels: Record<string, string> | undefined) =>
  Object.entries(selector).every(([k, v]) => labels?.[k] === v);

const operandPod = (() => {
  const input = anOperandInput({ providerRbac: awsOperandRbac(ns) });
  const dep = renderOperand(input).find((o: KubeObject) => o.kind === 'Deployment') as Obj;
  return dep['spec'].template;
})();

describe('monitoring manifests', () => {
  const deployment = find('Deployment', Names.operatorDeployment, ns);
  const pod = deployment['spec'].template;
  const container = pod.spec.containers[0];
  const service = find('Service', MonitoringNames.operatorService, ns);

  it('points the operator Service at the container port the operator serves metrics on', () => {
    expect(matches(service['spec'].selector, pod.metadata.labels)).toBe(true);
    const port = container.ports.find((p: Obj) => p['name'] === service['spec'].ports[0].targetPort);
    const parsed = parseConfig(container.args, { POD_NAMESPACE: ns, RELEASE_VERSION: '1' }, { crdDir: '/c' });
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.config.metricsBindAddress.port).toBe(port.containerPort);
    expect(parsed.config.metricsSecure).toBe(true);
  });

  it('mounts the Secret service-ca writes for the Service where the operator reads its certificate, optionally', () => {
    const secret = service['metadata'].annotations['service.beta.openshift.io/serving-cert-secret-name'];
    const volume = pod.spec.volumes.find((v: Obj) => v['secret']?.secretName === secret);
    expect(volume?.secret.optional).toBe(true);
    const mount = container.volumeMounts.find((m: Obj) => m['name'] === volume.name);
    const parsed = parseConfig(container.args, { POD_NAMESPACE: ns, RELEASE_VERSION: '1' }, { crdDir: '/c' });
    expect(parsed.ok && parsed.config.metricsCertDir).toBe(mount.mountPath);
  });

  it('keeps the probes on plain HTTP, on a port other than metrics', () => {
    const health = container.ports.find((p: Obj) => p['name'] === 'health');
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'health' });
    expect(container.livenessProbe.httpGet.scheme).toBeUndefined();
    expect(health.containerPort).not.toBe(MonitoringNames.operatorPort);
  });

  it('has Prometheus check the operator certificate against service-ca for the Service name, with its token', () => {
    const sm = find('ServiceMonitor', Names.operatorDeployment, ns);
    expect(matches(sm['spec'].selector.matchLabels, service['metadata'].labels)).toBe(true);
    expect(sm['spec'].endpoints).toEqual([
      expect.objectContaining({
        port: service['spec'].ports[0].name,
        scheme: 'https',
        bearerTokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token',
        tlsConfig: {
          caFile: '/etc/prometheus/configmaps/serving-certs-ca-bundle/service-ca.crt',
          serverName: `${MonitoringNames.operatorService}.${ns}.svc`,
        },
      }),
    ]);
    expect(metricsServiceHostnames(ns)).toContain(sm['spec'].endpoints[0].tlsConfig.serverName);
  });

  it('points the operand Service and ServiceMonitor at the metrics port of the pods the operator renders', () => {
    const svc = find('Service', MonitoringNames.operandService, ns);
    expect(matches(svc['spec'].selector, operandPod.metadata.labels)).toBe(true);
    const port = operandPod.spec.containers
      .flatMap((c: Obj) => c['ports'] ?? [])
      .find((p: Obj) => p['name'] === svc['spec'].ports[0].targetPort);
    expect(port?.containerPort).toBe(OperandNames.metricsPort);
    const sm = find('ServiceMonitor', OperandNames.role, ns);
    expect(matches(sm['spec'].selector.matchLabels, svc['metadata'].labels)).toBe(true);
    expect(sm['spec'].endpoints[0].port).toBe(svc['spec'].ports[0].name);
  });

  it('lets only the monitoring namespace reach the operand metrics port, and anyone its probe port', () => {
    const np = find('NetworkPolicy', Names.operandDeployment, ns);
    expect(matches(np['spec'].podSelector.matchLabels, operandPod.metadata.labels)).toBe(true);
    const named = operandPod.spec.containers.flatMap((c: Obj) => c['ports'] ?? []);
    const portOf = (p: string | number) => (typeof p === 'number' ? p : named.find((n: Obj) => n['name'] === p)?.containerPort);
    expect(np['spec'].ingress.map((r: Obj) => ({ from: r['from'], ports: r['ports'].map((p: Obj) => portOf(p['port'])) }))).toEqual([
      {
        from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'openshift-monitoring' } } }],
        ports: [OperandNames.metricsPort],
      },
      { from: undefined, ports: [OperandNames.healthPort] },
    ]);
    const probePorts = operandPod.spec.containers
      .flatMap((c: Obj) => [c['livenessProbe'], c['readinessProbe']])
      .filter(Boolean)
      .map((p: Obj) => p['httpGet'].port);
    for (const p of probePorts) expect(portOf(p)).toBe(OperandNames.healthPort);
  });

  it('binds prometheus-k8s of openshift-monitoring to a discovery-only Role, and the operator to token and access reviews only', () => {
    const rb = find('RoleBinding', 'prometheus-k8s', ns);
    expect(rb['subjects']).toEqual([{ kind: 'ServiceAccount', name: 'prometheus-k8s', namespace: 'openshift-monitoring' }]);
    const verbs = new Set((find('Role', 'prometheus-k8s', ns)['rules'] as Obj[]).flatMap((r) => r['verbs']));
    expect([...verbs].sort()).toEqual(['get', 'list', 'watch']);
    const crb = find('ClusterRoleBinding', MonitoringNames.metricsAuthRole);
    expect(crb['roleRef'].name).toBe(MonitoringNames.metricsAuthRole);
    expect(crb['subjects']).toEqual([{ kind: 'ServiceAccount', name: Names.operatorServiceAccount, namespace: ns }]);
    const rules = (find('ClusterRole', MonitoringNames.metricsAuthRole)['rules'] as Obj[]).map(
      (r) => `${r['apiGroups']}/${r['resources']}:${r['verbs']}`,
    );
    expect(rules).toEqual(['authentication.k8s.io/tokenreviews:create', 'authorization.k8s.io/subjectaccessreviews:create']);
  });

  it('gives every alert a severity, a summary and a description that says what to check', () => {
    const names = alertRules().map((r) => r.alert);
    expect(new Set(names).size).toBe(names.length);
    for (const r of alertRules()) {
      expect(['critical', 'warning', 'info'], r.alert).toContain(r.labels.severity);
      expect(r.annotations.summary.length, r.alert).toBeGreaterThan(20);
      expect(r.annotations.description, r.alert).toMatch(/Check/);
    }
  });

  it('ships a console dashboard the console picks up, in valid JSON with a query per panel', () => {
    const cm = dashboardConfigMap() as Obj;
    expect(cm['metadata']).toMatchObject({ namespace: 'openshift-config-managed', labels: { 'console.openshift.io/dashboard': 'true' } });
    const board = JSON.parse(cm['data']['karpenter.json']) as Obj;
    const panels = (board['rows'] as Obj[]).flatMap((r) => r['panels'] as Obj[]);
    expect(panels.length).toBeGreaterThan(4);
    for (const p of panels) expect(p['targets'].length, p['title']).toBeGreaterThan(0);
    expect(new Set(panels.map((p) => p['id'])).size).toBe(panels.length);
  });
});
