import { manifestPrefix } from './cvo.js';
import type { InstallFile } from './install.js';
import {
  dashboardConfigMap,
  metricsAuthRbac,
  operandMetricsService,
  operatorMetricsService,
  prometheusRbac,
  prometheusRule,
  serviceMonitors,
} from './monitoring.js';

/** Run level 90: monitoring, applied after the component (as OpenShift components order theirs). */
export const monitoringPrefix = manifestPrefix.replace(/^0000_\d\d_/, '0000_90_');

/**
 * What the operator needs before it becomes healthy, at the component's own run level: the metrics
 * Services (service-ca mints the serving certificate from the annotation) and the right to review tokens.
 */
export function monitoringPrerequisiteFiles(): InstallFile[] {
  return [
    { name: `${manifestPrefix}02_rbac-metrics-auth.yaml`, documents: metricsAuthRbac() },
    { name: `${manifestPrefix}02_metrics-services.yaml`, documents: [operatorMetricsService(), operandMetricsService()] },
  ];
}

export function monitoringFiles(): InstallFile[] {
  return [
    { name: `${monitoringPrefix}00_prometheus-rbac.yaml`, documents: prometheusRbac() },
    { name: `${monitoringPrefix}01_servicemonitors.yaml`, documents: serviceMonitors() },
    { name: `${monitoringPrefix}02_prometheusrule.yaml`, documents: [prometheusRule()] },
    { name: `${monitoringPrefix}03_dashboard.yaml`, documents: [dashboardConfigMap()] },
  ];
}
