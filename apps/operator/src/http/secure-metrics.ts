import type { Server as HttpsServer } from 'node:https';
import type { Server } from 'node:net';
import { describeError, type Clock, type Logger, type Metrics } from '@karpenter-operator/core';
import { RuntimeMetrics, type KubeTransport } from '@karpenter-operator/kube-runtime';
import { DelegatingMetricsAuth } from './metrics-auth.js';
import { startHttpServer, type ProbeHandlers } from './server.js';
import { readServingCert, servingCertificate } from './serving-cert.js';

/** 1 while the metrics endpoint serves a self-signed certificate because the serving certificate is missing. */
export const SelfSignedMetricsCertMetric = RuntimeMetrics.metricsSelfSigned.name;

export interface SecureMetricsOptions {
  host: string;
  port: number;
  /** Directory of the mounted serving-certificate Secret (`tls.crt`, `tls.key`). */
  certDir: string | undefined;
  /** Names the self-signed fallback certificate is made for (the Service's DNS names). */
  hostnames: readonly string[];
  /** How often the certificate files are re-read (service-ca rotates them in place). */
  reloadIntervalMs?: number;
  /** Unfenced: TokenReviews and SubjectAccessReviews are creates, and a standby replica answers scrapes too. */
  transport: KubeTransport;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
}

/**
 * The metrics endpoint over HTTPS, each request authenticated (TokenReview) and authorised
 * (SubjectAccessReview) in process. The certificate is service-ca's, from `certDir`; when it cannot be read
 * the endpoint still serves, with a self-signed certificate, a warning naming the file and the gauge
 * `karpenter_operator_metrics_self_signed_certificate` at 1 — never a crash loop. The files are re-read
 * every `reloadIntervalMs` (default 60 s): a rotated or newly written certificate is served from then on.
 */
export async function startSecureMetricsServer(opts: SecureMetricsOptions, handlers: ProbeHandlers): Promise<Server> {
  const { logger, metrics } = opts;
  const auth = new DelegatingMetricsAuth({ transport: opts.transport, clock: opts.clock, logger });
  const initial = await servingCertificate(opts.certDir, opts.hostnames);
  const report = (selfSigned: boolean, reason?: string) => {
    metrics.set(SelfSignedMetricsCertMetric, selfSigned ? 1 : 0);
    if (selfSigned) {
      logger.warn('metrics: serving certificate unavailable; serving a self-signed certificate until it appears (is service-ca running?)', {
        reason,
        certDir: opts.certDir,
      });
    }
  };
  report(initial.source === 'self-signed', initial.reason);
  const server = (await startHttpServer(opts.host, opts.port, handlers, {
    tls: { cert: initial.cert, key: initial.key },
    guard: (req) => auth.check(req.headers.authorization, req.method ?? 'GET', (req.url ?? '/').split('?')[0]!),
  })) as HttpsServer;
  let served = initial.source === 'files' ? initial.cert + initial.key : '';
  const certDir = opts.certDir;
  if (certDir) {
    const timer = setInterval(() => {
      void readServingCert(certDir).then((read) => {
        if (!('cert' in read) || read.cert + read.key === served) return;
        try {
          server.setSecureContext({ cert: read.cert, key: read.key, minVersion: 'TLSv1.2' });
          served = read.cert + read.key;
          report(false);
          logger.info('metrics: serving the certificate from the cert directory', { certDir });
        } catch (e) {
          logger.error('metrics: the serving certificate in the cert directory is not usable; keeping the current one', {
            certDir,
            error: describeError(e),
          });
        }
      });
    }, opts.reloadIntervalMs ?? 60_000);
    timer.unref();
    server.once('close', () => clearInterval(timer));
  }
  return server;
}
