import { request } from 'node:https';
import type { PeerCertificate, TLSSocket } from 'node:tls';

export interface Scrape {
  status: number;
  body: string;
  /** The certificate the endpoint served. */
  cert: PeerCertificate;
}

/**
 * `GET /metrics` over HTTPS on 127.0.0.1, as Prometheus sends it: the bearer token when given, the TLS
 * server name of the Service. With `ca` the certificate is verified against it for `serverName`; without,
 * it is only read (the self-signed fallback).
 */
export function scrapeMetrics(
  port: number,
  opts: { token?: string | undefined; ca?: string | undefined; serverName: string; path?: string },
): Promise<Scrape> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: opts.path ?? '/metrics',
        method: 'GET',
        servername: opts.serverName,
        // A fresh connection each time: the certificate read is the one served now.
        agent: false,
        ...(opts.ca ? { ca: opts.ca } : { rejectUnauthorized: false }),
        headers: opts.token ? { authorization: `Bearer ${opts.token}` } : {},
        timeout: 30_000,
      },
      (res) => {
        let body = '';
        const cert = (res.socket as TLSSocket).getPeerCertificate();
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, cert }));
      },
    );
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('scrape timed out')));
    req.end();
  });
}
