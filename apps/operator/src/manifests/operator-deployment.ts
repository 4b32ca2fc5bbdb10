import {
  Names,
  Types,
  boundServiceAccountToken,
  controlPlanePlacement,
  nodeSystemCaEnv,
  trustedCaBundle,
  restrictedContainerSecurityContext,
  restrictedPodSecurityContext,
  type KubeObject,
} from '@karpenter-operator/core';
import { payloadImages, releaseVersionPlaceholder } from './cvo.js';
import { MonitoringNames } from './monitoring.js';

/** Where the operator's own (node-identity) credential is mounted. */
export const nodeIdentityCredentialsDir = '/etc/node-identity';

const operatorContainer = 'karpenter-operator';

/**
 * ConfigMap the cluster network operator fills with the cluster's trusted CA bundle (the Proxy's
 * `trustedCA` and the system roots). Created empty once and never updated by the CVO (`create-only`), so
 * the injected data is not reverted at each sync.
 */
export function trustedCaBundleConfigMap(): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: trustedCaBundle.configMap,
      namespace: Names.operatorNamespace,
      labels: { 'config.openshift.io/inject-trusted-cabundle': 'true' },
      annotations: { 'release.openshift.io/create-only': 'true' },
    },
  };
}

/** Deployment `karpenter-operator`, as the CVO creates it. */
export function operatorDeployment(): KubeObject {
  const labels = { 'k8s-app': Names.operatorDeployment };
  const fieldRef = (fieldPath: string) => ({ fieldRef: { apiVersion: 'v1', fieldPath } });
  return {
    ...Types.Deployment,
    metadata: {
      name: Names.operatorDeployment,
      namespace: Names.operatorNamespace,
      labels: { ...labels },
      // The CVO sets HTTP_PROXY, HTTPS_PROXY and NO_PROXY of this container from the cluster Proxy's status.
      annotations: { 'config.openshift.io/inject-proxy': operatorContainer },
    },
    spec: {
      // One active replica at a time: leader election (Lease karpenter-operator.openshift.io) keeps a
      // second one, when scaled up, on standby.
      replicas: 1,
      selector: { matchLabels: { ...labels } },
      template: {
        metadata: { labels: { ...labels }, annotations: { ...controlPlanePlacement.podAnnotations } },
        spec: {
          serviceAccountName: Names.operatorServiceAccount,
          priorityClassName: 'system-node-critical',
          nodeSelector: { ...controlPlanePlacement.nodeSelector },
          tolerations: controlPlanePlacement.tolerations.map((t) => ({ ...t })),
          securityContext: restrictedPodSecurityContext(),
          containers: [
            {
              name: operatorContainer,
              image: payloadImages.operator.pullSpec,
              imagePullPolicy: 'IfNotPresent',
              args: [
                '--namespace=$(POD_NAMESPACE)',
                // HTTPS with service-ca's certificate; each scrape is checked with a TokenReview and a
                // SubjectAccessReview. The probes stay plain HTTP on their own port.
                `--metrics-bind-address=:${MonitoringNames.operatorPort}`,
                '--metrics-secure',
                `--metrics-cert-dir=${MonitoringNames.metricsCertDir}`,
                '--health-probe-bind-address=:8081',
                '--leader-elect',
              ],
              env: [
                { name: 'POD_NAMESPACE', valueFrom: fieldRef('metadata.namespace') },
                // Leader-election identity.
                { name: 'POD_NAME', valueFrom: fieldRef('metadata.name') },
                { name: 'RELEASE_VERSION', value: releaseVersionPlaceholder },
                { name: 'KARPENTER_IMAGE_AWS', value: payloadImages.awsOperand.pullSpec },
                // The operand's credentials-check init container runs the operator image.
                { name: 'OPERATOR_IMAGE', value: payloadImages.operator.pullSpec },
                { name: 'NODE_IDENTITY_CREDENTIALS_FILE', value: `${nodeIdentityCredentialsDir}/credentials` },
                // Trust the cluster's CA bundle (mounted as the system store) besides Node's own roots.
                ...nodeSystemCaEnv.map((e) => ({ ...e })),
              ],
              ports: [
                { name: 'metrics', containerPort: MonitoringNames.operatorPort, protocol: 'TCP' },
                { name: 'health', containerPort: 8081, protocol: 'TCP' },
              ],
              livenessProbe: { httpGet: { path: '/healthz', port: 'health' }, initialDelaySeconds: 15, periodSeconds: 20 },
              readinessProbe: { httpGet: { path: '/readyz', port: 'health' }, initialDelaySeconds: 5, periodSeconds: 10 },
              resources: { requests: { cpu: '10m', memory: '128Mi' } },
              securityContext: restrictedContainerSecurityContext(),
              terminationMessagePolicy: 'FallbackToLogsOnError',
              volumeMounts: [
                { name: 'node-identity-credentials', mountPath: nodeIdentityCredentialsDir, readOnly: true },
                { name: 'metrics-tls', mountPath: MonitoringNames.metricsCertDir, readOnly: true },
                // Short-lived credentials (STS): the credentials file names this token.
                boundServiceAccountToken.mount(),
                trustedCaBundle.mount(),
              ],
            },
          ],
          volumes: [
            {
              name: 'node-identity-credentials',
              // Optional: the cloud-credential operator writes it after the CredentialsRequest is
              // reconciled; the pod must start (and report) before that.
              secret: { secretName: Names.nodeIdentityCredentialsSecret, optional: true },
            },
            boundServiceAccountToken.volume(),
            {
              name: 'metrics-tls',
              // Optional: service-ca writes it once the metrics Service exists; until then (or without
              // service-ca) the operator serves metrics with a self-signed certificate and says so.
              secret: { secretName: MonitoringNames.operatorCertSecret, optional: true },
            },
            trustedCaBundle.volume(),
          ],
        },
      },
    },
  };
}
