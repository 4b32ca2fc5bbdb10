import { request as httpsRequest, type RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

export interface KubeResponse<T = unknown> {
  status: number;
  body: T;
  text: string;
}

export interface KubeRequestOptions {
  body?: unknown;
  contentType?: string;
  timeoutMs?: number;
}

/**
 * One HTTP request to the API server with the kubeconfig's credentials. The testkit uses it where
 * client-node has no convenient call (status subresources, discovery, raw SSA); it never throws on an
 * HTTP status, only on a transport error.
 */
export async function kubeRequest<T = unknown>(
  kc: KubeConfig,
  method: string,
  path: string,
  opts: KubeRequestOptions = {},
): Promise<KubeResponse<T>> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const url = new URL(path, cluster.server);
  const options: RequestOptions = { method, headers: {} };
  await kc.applyToHTTPSOptions(options);
  const payload = opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
  const headers: Record<string, string> = { ...(options.headers as Record<string, string>), Accept: 'application/json' };
  if (payload !== undefined) {
    headers['Content-Type'] = opts.contentType ?? 'application/json';
    headers['Content-Length'] = String(Buffer.byteLength(payload));
  }
  return new Promise((resolveRes, reject) => {
    const req = httpsRequest(
      { ...options, hostname: url.hostname, port: url.port, path: url.pathname + url.search, headers, timeout: opts.timeoutMs ?? 30_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown = text;
          try {
            body = text ? JSON.parse(text) : undefined;
          } catch {
            // not JSON (e.g. /readyz)
          }
          resolveRes({ status: res.statusCode ?? 0, body: body as T, text });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timed out`)));
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}
