import { createServer, type Server } from 'node:http';

export interface ProbeHandlers {
  /** Liveness: the process and its event loop work. */
  healthy(): boolean;
  /** Readiness: caches synced and either leading or a ready standby. */
  ready(): { ok: boolean; detail: string };
  metrics?(): Promise<string>;
}

/** Serves `/healthz`, `/readyz` and (when given) `/metrics` on one address. */
export async function startHttpServer(host: string, port: number, handlers: ProbeHandlers): Promise<Server> {
  const server = createServer((req, res) => {
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
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) =>
      reject(new Error(e.code === 'EADDRINUSE' ? `address ${host}:${port} is already in use` : `listening on ${host}:${port}: ${e.message}`)),
    );
    server.listen(port, host, () => resolve());
  });
  return server;
}
