import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Server } from 'node:net';

export interface ProbeHandlers {
  /** Liveness: the process and its event loop work. */
  healthy(): boolean;
  /** Readiness: caches synced and either leading or a ready standby. */
  ready(): { ok: boolean; detail: string };
  metrics?(): Promise<string>;
}

export interface HttpServerOptions {
  /** Serve HTTPS with this certificate and key (PEM); plain HTTP without. */
  tls?: { cert: string; key: string };
  /**
   * Checked before every request is served: `undefined` lets it pass, otherwise it is answered with the
   * status and message returned (the metrics endpoint's authentication and authorisation).
   */
  guard?(req: IncomingMessage): Promise<{ status: number; message: string } | undefined>;
}

/** Serves `/healthz`, `/readyz` and (when given) `/metrics` on one address. */
export async function startHttpServer(
  host: string,
  port: number,
  handlers: ProbeHandlers,
  options: HttpServerOptions = {},
): Promise<Server> {
  const route = (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz') {
      const ok = handlers.healthy();
      res.writeHead(ok ? 200 : 500, { 'content-type': 'text/plain' }).end(ok ? 'ok' : 'unhealthy');
    } else if (path === '/readyz') {
      const r = handlers.ready();
      res.writeHead(r.ok ? 200 : 503, { 'content-type': 'text/plain' }).end(r.detail);
    } else if (path === '/metrics' && handlers.metrics) {
      handlers.metrics().then(
        (text) => res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(text),
        (e: unknown) => res.writeHead(500).end(String(e)),
      );
    } else {
      res.writeHead(404).end('not found');
    }
  };
  const guard = options.guard;
  const handle = guard
    ? (req: IncomingMessage, res: ServerResponse) => {
        guard(req).then(
          (refusal) =>
            refusal ? res.writeHead(refusal.status, { 'content-type': 'text/plain' }).end(refusal.message + '\n') : route(req, res),
          (e: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${String(e)}\n`),
        );
      }
    : route;
  const server: Server = options.tls ? createHttpsServer({ ...options.tls, minVersion: 'TLSv1.2' }, handle) : createServer(handle);
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) =>
      reject(
        new Error(e.code === 'EADDRINUSE' ? `address ${host}:${port} is already in use` : `listening on ${host}:${port}: ${e.message}`),
      ),
    );
    server.listen(port, host, () => resolve());
  });
  return server;
}
