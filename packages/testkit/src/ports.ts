import { createServer } from 'node:net';
import { LocalClusterError } from './errors.js';

export const LOOPBACK = '127.0.0.1';

/**
 * Ports this process handed out: a port is only probed, then closed, so the OS may offer it again before
 * the server meant for it binds (seen: kube-scheduler given kube-apiserver's port). Never handed out twice.
 */
const handedOut = new Set<number>();

/** A TCP port free on 127.0.0.1 right now (the OS picks it), never one this process handed out before. */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await probeFreePort();
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    return port;
  }
  throw new LocalClusterError('no free TCP port on 127.0.0.1 after 50 attempts');
}

function probeFreePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, LOOPBACK, () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolvePort(port));
    });
  });
}

/** Throws a one-line LocalClusterError when 127.0.0.1:<port> cannot be bound. */
export function assertPortFree(port: number, what: string): Promise<void> {
  return new Promise((resolveFree, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EADDRINUSE') {
        reject(
          new LocalClusterError(
            `port ${LOOPBACK}:${port} (${what}) is already in use: stop what listens there (ss -ltnp 'sport = :${port}') or pick another port`,
          ),
        );
      } else {
        reject(new LocalClusterError(`cannot bind ${LOOPBACK}:${port} (${what}): ${e.message}`));
      }
    });
    srv.listen(port, LOOPBACK, () => srv.close(() => resolveFree()));
  });
}

/** The requested port after checking it is free, or a fresh free one. */
export async function portFor(requested: number | undefined, what: string): Promise<number> {
  if (requested !== undefined && requested !== 0) {
    await assertPortFree(requested, what);
    return requested;
  }
  return freePort();
}

/**
 * True when `e` (or its cause) says a process could not bind its port: a port is probed free, then bound by
 * the process meant for it later, and another process on the machine (a second test run starting its own
 * cluster) can take it in between.
 */
export function isPortClash(e: unknown): boolean {
  for (let cur: unknown = e, depth = 0; cur instanceof Error && depth < 5; cur = cur.cause, depth++) {
    if (/address already in use|EADDRINUSE/i.test(cur.message)) return true;
  }
  return false;
}

/**
 * Runs `start` until it succeeds, again (at most `attempts` times in all) only when it failed on a port
 * another process took between probe and bind (`isPortClash`): each attempt probes fresh ports.
 */
export async function retryOnPortClash<T>(
  start: () => Promise<T>,
  attempts: number,
  log: (line: string) => void = () => undefined,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (e) {
      if (attempt >= attempts || !isPortClash(e)) throw e;
      log(
        `a port was taken by another process before its server bound it; starting again with fresh ports (attempt ${attempt + 1} of ${attempts})`,
      );
    }
  }
}
