/**
 * Monitoring of the operator and its operand as OpenShift's cluster monitoring expects it: metrics Services,
 * ServiceMonitors for the platform Prometheus (`prometheus-k8s` in `openshift-monitoring`), its Role and
 * RoleBinding, a PrometheusRule and a console dashboard. Run level 90 (after the component's own
 * manifests, as cluster-machine-approver and cluster-autoscaler-operator ship theirs) except what the operator
 * needs to become healthy: its metrics Service (service-ca writes the serving certificate for it) and its
 * right to review tokens, both at run level 50 with the rest of the component.
 */
import {
  CsrPendingMetric,
  CsrUnmatchedPendingMetric,
  Names,
  NodeIdentityConditionType,
  OperandNames,
  Types,
  operandPodLabels,
  type KubeObject,
} from '@karpenter-operator/core';

/** The platform Prometheus: its ServiceAccount and namespace. */
export const platformPrometheus = { serviceAccount: 'prometheus-k8s', namespace: 'openshift-monitoring' } as const;

export const MonitoringNames = {
  /** Service in front of the operator's HTTPS metrics; also the `job` label of its series. */
  operatorService: 'karpenter-operator-metrics',
  /** The service-ca serving-certificate Secret of `operatorService`, mounted at `metricsCertDir`. */
  operatorCertSecret: 'karpenter-operator-metrics-tls',
  /** Service in front of Karpenter's plain-HTTP metrics; also the `job` label of its series. */
  operandService: 'karpenter-metrics',
  operatorPort: 8443,
  metricsCertDir: '/etc/tls/private',
  metricsAuthRole: 'karpenter-operator-metrics-auth',
  prometheusRule: 'karpenter-operator',
  dashboard: 'dashboard-karpenter',
  dashboardNamespace: 'openshift-config-managed',
  /** The CA bundle cluster monitoring mounts into Prometheus, signed by service-ca. */
  serviceCaFile: '/etc/prometheus/configmaps/serving-certs-ca-bundle/service-ca.crt',
  bearerTokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token',
} as const;

/** DNS names of the operator's metrics Service: what service-ca's certificate names and Prometheus checks. */
export function metricsServiceHostnames(namespace: string): string[] {
  const svc = MonitoringNames.operatorService;
  return [`${svc}.${namespace}.svc`, `${svc}.${namespace}.svc.cluster.local`];
}

const operatorPodLabels = { 'k8s-app': Names.operatorDeployment };
const ns = Names.operatorNamespace;

/** Service `karpenter-operator-metrics`; the annotation asks service-ca for its serving certificate. */
export function operatorMetricsService(): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: MonitoringNames.operatorService,
      namespace: ns,
      labels: { ...operatorPodLabels },
      annotations: { 'service.beta.openshift.io/serving-cert-secret-name': MonitoringNames.operatorCertSecret },
    },
    spec: {
      selector: { ...operatorPodLabels },
      ports: [{ name: 'https', port: MonitoringNames.operatorPort, targetPort: 'metrics', protocol: 'TCP' }],
    },
  };
}

/**
 * The operator authenticates and authorises scrapes itself (TokenReview + SubjectAccessReview): a
 * ClusterRole of exactly those two creates (what the built-in `system:auth-delegator` holds), bound to
 * the operator's ServiceAccount.
 */
export function metricsAuthRbac(): KubeObject[] {
  const name = MonitoringNames.metricsAuthRole;
  return [
    {
      ...Types.ClusterRole,
      metadata: { name },
      rules: [
        {
          apiGroups: ['authentication.k8s.io'],
          resources: ['tokenreviews'],
          verbs: ['create'],
          why: 'authenticate scrapes of the metrics endpoint (the bearer token)',
        },
        {
          apiGroups: ['authorization.k8s.io'],
          resources: ['subjectaccessreviews'],
          verbs: ['create'],
          why: 'authorise scrapes of the metrics endpoint (get on /metrics)',
        },
      ],
    },
    {
      ...Types.ClusterRoleBinding,
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: [{ kind: 'ServiceAccount', name: Names.operatorServiceAccount, namespace: ns }],
    },
  ];
}

/**
 * Role and RoleBinding `prometheus-k8s`: the platform Prometheus discovers targets in this namespace
 * (Services, EndpointSlices, Endpoints, Pods). Scraping the operator's `/metrics` is allowed to it
 * cluster-wide by cluster monitoring's own ClusterRole (`get` on the non-resource URL `/metrics`).
 */
export function prometheusRbac(): KubeObject[] {
  const discover = ['get', 'list', 'watch'];
  return [
    {
      ...Types.Role,
      metadata: { name: platformPrometheus.serviceAccount, namespace: ns },
      rules: [
        {
          apiGroups: [''],
          resources: ['services', 'endpoints', 'pods'],
          verbs: discover,
          why: 'target discovery of the ServiceMonitors in this namespace',
        },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: discover, why: 'target discovery through EndpointSlices' },
      ],
    },
    {
      ...Types.RoleBinding,
      metadata: { name: platformPrometheus.serviceAccount, namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: platformPrometheus.serviceAccount },
      subjects: [{ kind: 'ServiceAccount', ...{ name: platformPrometheus.serviceAccount, namespace: platformPrometheus.namespace } }],
    },
  ];
}

/**
 * Service `karpenter-metrics` in front of Karpenter's metrics port. Karpenter serves them over plain HTTP
 * with no authentication; the operand's NetworkPolicy (`network-policy.ts`) lets only the monitoring
 * namespace reach that port.
 */
export function operandMetricsService(): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: MonitoringNames.operandService, namespace: ns, labels: operandPodLabels() },
    spec: {
      selector: operandPodLabels(),
      ports: [{ name: 'http-metrics', port: OperandNames.metricsPort, targetPort: 'metrics', protocol: 'TCP' }],
    },
  };
}

export function serviceMonitors(): KubeObject[] {
  const common = { interval: '30s', path: '/metrics' };
  return [
    {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'ServiceMonitor',
      metadata: { name: Names.operatorDeployment, namespace: ns, labels: { ...operatorPodLabels } },
      spec: {
        endpoints: [
          {
            ...common,
            port: 'https',
            scheme: 'https',
            bearerTokenFile: MonitoringNames.bearerTokenFile,
            tlsConfig: { caFile: MonitoringNames.serviceCaFile, serverName: metricsServiceHostnames(ns)[0] },
          },
        ],
        namespaceSelector: { matchNames: [ns] },
        selector: { matchLabels: { ...operatorPodLabels } },
      },
    },
    {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'ServiceMonitor',
      metadata: { name: OperandNames.role, namespace: ns, labels: operandPodLabels() },
      spec: {
        endpoints: [{ ...common, port: 'http-metrics', scheme: 'http' }],
        namespaceSelector: { matchNames: [ns] },
        selector: { matchLabels: operandPodLabels() },
      },
    },
  ];
}

interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels: { severity: 'critical' | 'warning' | 'info' };
  annotations: { summary: string; description: string };
}

const operatorJob = `job="${MonitoringNames.operatorService}",namespace="${ns}"`;
const co = `name="${Names.clusterOperator}"`;

/** Alerts an administrator can act on; each description says what to check. */
export function alertRules(): AlertRule[] {
  return [
    {
      alert: 'KarpenterOperatorDown',
      expr: `absent(up{${operatorJob}} == 1)`,
      for: '10m',
      labels: { severity: 'warning' },
      annotations: {
        summary: 'The Karpenter operator has not been scraped for 10 minutes.',
        description:
          `No replica of Deployment ${ns}/${Names.operatorDeployment} answers on its metrics endpoint, so nobody approves Karpenter nodes' ` +
          `CSRs or reconciles Karpenter. Check: oc -n ${ns} get pods -l k8s-app=${Names.operatorDeployment}; oc -n ${ns} logs deploy/${Names.operatorDeployment}; ` +
          `the Secret ${MonitoringNames.operatorCertSecret} exists (service-ca writes it; without it the endpoint serves a self-signed certificate Prometheus rejects, ` +
          `and the metric karpenter_operator_metrics_self_signed_certificate is 1).`,
      },
    },
    {
      alert: 'KarpenterOperatorDegraded',
      expr: `cluster_operator_conditions{${co},condition="Degraded"} == 1`,
      for: '15m',
      labels: { severity: 'warning' },
      annotations: {
        summary: 'ClusterOperator karpenter has been Degraded for 15 minutes.',
        description:
          'The operator cannot bring Karpenter to the state the Karpenter resource asks for. Check the reason and message: ' +
          `oc get clusteroperator ${Names.clusterOperator} -o yaml (status.conditions), oc get karpenter ${Names.karpenterCr} -o yaml, ` +
          `and Warning events in ${ns}: oc -n ${ns} get events --field-selector type=Warning.`,
      },
    },
    {
      alert: 'KarpenterNodeIdentityUnhealthy',
      expr: `cluster_operator_conditions{${co},condition="${NodeIdentityConditionType}"} == 0`,
      for: '10m',
      labels: { severity: 'warning' },
      annotations: {
        summary: "Approval of Karpenter nodes' kubelet CSRs is paused.",
        description:
          `Condition ${NodeIdentityConditionType} of ClusterOperator ${Names.clusterOperator} is False: more kubelet CSRs are pending than the approval cap allows, ` +
          'so new Karpenter nodes cannot join. Check the condition message (oc get clusteroperator karpenter -o yaml), the pending CSRs (oc get csr), ' +
          'and whether something floods the cluster with CSRs before approving any by hand.',
      },
    },
    {
      alert: 'KarpenterCSRsPendingTooLong',
      expr: `max(${CsrPendingMetric}{${operatorJob}}) > 0`,
      for: '15m',
      labels: { severity: 'warning' },
      annotations: {
        summary: 'Kubelet CSRs of Karpenter nodes have been pending for 15 minutes.',
        description:
          "{{ $value }} kubelet CSR(s) of Karpenter instances are still pending: their nodes cannot join or serve. Check the operator's events on them " +
          '(oc get events --field-selector involvedObject.kind=CertificateSigningRequest), that the operator can call EC2 DescribeInstances ' +
          `(Secret ${ns}/${Names.nodeIdentityCredentialsSecret}), and the ${NodeIdentityConditionType} condition of ClusterOperator ${Names.clusterOperator}.`,
      },
    },
    {
      alert: 'KarpenterUnmatchedCSRsPending',
      expr: `max(${CsrUnmatchedPendingMetric}{${operatorJob}}) > 0`,
      for: '1h',
      labels: { severity: 'info' },
      annotations: {
        summary: 'Kubelet CSRs that match no Karpenter instance have been pending for an hour.',
        description:
          '{{ $value }} pending kubelet CSR(s) name nodes that are not Karpenter instances; the operator leaves them to cluster-machine-approver or an administrator. ' +
          'Check them with oc get csr and oc describe csr <name>: approve those of nodes you expect (oc adm certificate approve), deny the rest.',
      },
    },
    {
      alert: 'KarpenterEC2NodeClassNotReady',
      expr: `max by (name) (operator_ec2nodeclass_status_condition_count{name="default",type="Ready",status!="True"}) == 1`,
      for: '15m',
      labels: { severity: 'warning' },
      annotations: {
        summary: 'EC2NodeClass default has not been Ready for 15 minutes.',
        description:
          'Karpenter launches no instances for NodePools of EC2NodeClass default while it is not Ready. Check its conditions: oc get ec2nodeclass default -o yaml ' +
          "(status.conditions: subnets, security groups, AMIs, instance profile), and ClusterOperator karpenter's message; the operator keeps the class's " +
          'discovered fields in step with the worker MachineSets.',
      },
    },
    {
      alert: 'KarpenterOperandUnavailable',
      expr: `kube_deployment_status_replicas_available{namespace="${ns}",deployment="${Names.operandDeployment}"} == 0`,
      for: '10m',
      labels: { severity: 'warning' },
      annotations: {
        summary: 'No Karpenter controller pod has been available for 10 minutes.',
        description:
          `Deployment ${ns}/${Names.operandDeployment} has no available replica: pending pods are not scheduled and empty nodes are not removed. Check ` +
          `oc -n ${ns} get pods -l app=karpenter, the logs of its check-credentials init container (cloud credentials, Secret ${Names.credentialsSecret}) and ` +
          "of its controller container, and ClusterOperator karpenter's conditions.",
      },
    },
    {
      alert: 'KarpenterNodeClaimsFailingToRegister',
      expr: `sum by (nodepool, reason) (increase(karpenter_nodeclaims_disrupted_total{reason=~"registration_timeout|launch_timeout"}[30m])) > 0`,
      labels: { severity: 'warning' },
      annotations: {
        summary: 'Karpenter deleted NodeClaims of NodePool {{ $labels.nodepool }} that failed to launch or register.',
        description:
          'In the last 30 minutes Karpenter deleted {{ $value | humanize }} NodeClaim(s) of NodePool {{ $labels.nodepool }} ({{ $labels.reason }}): instances ' +
          "that did not launch or whose node never joined. Check the NodePool's NodeRegistrationHealthy condition (oc get nodepool -o yaml), the operator's " +
          `events on CSRs of those nodes, the EC2 console output of a failed instance (user data, ignition from the machine-config-server), and oc -n ${ns} logs deploy/${Names.operandDeployment}.`,
      },
    },
  ];
}

export function prometheusRule(): KubeObject {
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: { name: MonitoringNames.prometheusRule, namespace: ns, labels: { prometheus: 'k8s', role: 'alert-rules' } },
    spec: { groups: [{ name: 'karpenter-operator.rules', rules: alertRules() }] },
  };
}

/** The rule groups as `promtool check rules` reads them: the PrometheusRule's `spec`. */
export function ruleFile(): { groups: unknown[] } {
  return prometheusRule()['spec'] as { groups: unknown[] };
}

interface Panel {
  title: string;
  exprs: Array<{ expr: string; legend: string }>;
  unit?: string;
}

/** Grafana JSON in the subset the OpenShift console renders (rows of graph panels, datasource `$datasource`). */
export function dashboardJson(): Record<string, unknown> {
  const rows: Array<{ title: string; panels: Panel[] }> = [
    {
      title: 'Karpenter operator',
      panels: [
        {
          title: 'Pending kubelet CSRs',
          exprs: [
            { expr: `max(${CsrPendingMetric}{${operatorJob}})`, legend: 'Karpenter' },
            { expr: `max(${CsrUnmatchedPendingMetric}{${operatorJob}})`, legend: 'unmatched' },
          ],
        },
        {
          title: 'CSR decisions / 5m',
          exprs: [
            {
              expr: `sum by (outcome, reason) (increase(karpenter_operator_csr_decisions_total{${operatorJob}}[5m]))`,
              legend: '{{outcome}} {{reason}}',
            },
          ],
        },
        {
          title: 'Reconcile errors / 5m',
          exprs: [
            {
              expr: `sum by (controller) (increase(karpenter_operator_reconcile_errors_total{${operatorJob}}[5m]))`,
              legend: '{{controller}}',
            },
          ],
        },
        { title: 'ClusterOperator conditions', exprs: [{ expr: `cluster_operator_conditions{${co}}`, legend: '{{condition}}' }] },
      ],
    },
    {
      title: 'Karpenter',
      panels: [
        {
          title: 'Karpenter nodes by NodePool',
          exprs: [{ expr: 'count by (nodepool) (karpenter_nodes_allocatable{resource_type="cpu"})', legend: '{{nodepool}}' }],
        },
        {
          title: 'NodeClaims created / terminated / disrupted (1h)',
          exprs: [
            { expr: 'sum by (nodepool) (increase(karpenter_nodeclaims_created_total[1h]))', legend: 'created {{nodepool}}' },
            { expr: 'sum by (nodepool) (increase(karpenter_nodeclaims_terminated_total[1h]))', legend: 'terminated {{nodepool}}' },
            {
              expr: 'sum by (nodepool, reason) (increase(karpenter_nodeclaims_disrupted_total[1h]))',
              legend: 'disrupted {{nodepool}} {{reason}}',
            },
          ],
        },
        { title: 'Pods by phase', exprs: [{ expr: 'sum by (phase) (karpenter_pods_state)', legend: '{{phase}}' }] },
        {
          title: 'Cloud provider errors / 5m',
          exprs: [{ expr: 'sum by (method, error) (increase(karpenter_cloudprovider_errors_total[5m]))', legend: '{{method}} {{error}}' }],
        },
      ],
    },
  ];
  let id = 0;
  return {
    title: 'Karpenter',
    uid: 'karpenter-operator',
    editable: false,
    schemaVersion: 16,
    tags: ['karpenter', 'openshift'],
    time: { from: 'now-6h', to: 'now' },
    refresh: '30s',
    templating: { list: [{ name: 'datasource', type: 'datasource', query: 'prometheus', label: 'Data source', hide: 0 }] },
    rows: rows.map((r) => ({
      title: r.title,
      showTitle: true,
      collapse: false,
      panels: r.panels.map((p) => ({
        id: ++id,
        type: 'graph',
        title: p.title,
        datasource: '$datasource',
        span: 6,
        lines: true,
        fill: 1,
        legend: { show: true },
        targets: p.exprs.map((e, i) => ({ expr: e.expr, legendFormat: e.legend, refId: String.fromCharCode(65 + i) })),
      })),
    })),
  };
}

/** ConfigMap `dashboard-karpenter`: the console lists it under Observe → Dashboards. */
export function dashboardConfigMap(): KubeObject {
  return {
    ...Types.ConfigMap,
    metadata: {
      name: MonitoringNames.dashboard,
      namespace: MonitoringNames.dashboardNamespace,
      labels: { 'console.openshift.io/dashboard': 'true' },
    },
    data: { 'karpenter.json': JSON.stringify(dashboardJson(), null, 2) + '\n' },
  };
}
