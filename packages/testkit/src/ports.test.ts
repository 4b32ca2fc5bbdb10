import { createServer, type Server } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { isLocalClusterError } from './errors.js';
import { assertPortFree, freePort, isPortClash, LOOPBACK, portFor, retryOnPortClash } from './ports.js';

describe('ports', () => {
  const servers: Server[] = [];
  afterAll(() => servers.forEach((s) => s.close()));

  it('a busy port fails with one line that names the port and what wanted it', async () => {
    const port = await freePort();
    const srv = createServer();
    servers.push(srv);
    await new Promise<void>((r) => srv.listen(port, LOOPBACK, () => r()));
    const err = await assertPortFree(port, 'kube-apiserver').catch((e: unknown) => e);
    expect(isLocalClusterError(err)).toBe(true);
    expect((err as Error).message).toContain(`${LOOPBACK}:${port} (kube-apiserver) is already in use`);
    expect((err as Error).message).not.toContain('\n');
    await expect(portFor(port, 'etcd client')).rejects.toThrow(/already in use/);
  });

  it('a free port passes and an unset one is picked', async () => {
    const port = await freePort();
    await expect(assertPortFree(port, 'etcd')).resolves.toBeUndefined();
    expect(await portFor(undefined, 'etcd')).toBeGreaterThan(0);
  });

  it('never hands out the same port twice in one process (a probed port is closed again until its server binds)', async () => {
    const ports = await Promise.all(Array.from({ length: 200 }, () => freePort()));
    expect(new Set(ports).size).toBe(ports.length);
  });

  it('starts again on a port another process took between probe and bind, and only on that', async () => {
    // As the cluster reports it: a component's log line, wrapped in the start's error.
    const clash = new Error('starting the local cluster failed: kube-scheduler exited', {
      cause: new Error('listen tcp 127.0.0.1:37099: bind: address already in use'),
    });
    let calls = 0;
    const lines: string[] = [];
    const started = await retryOnPortClash(
      async () => {
        if (++calls < 3) throw calls === 1 ? clash : new Error('OSError: [Errno 98] Address already in use');
        return 'up';
      },
      3,
      (l) => lines.push(l),
    );
    expect(started).toBe('up');
    expect(calls).toBe(3);
    expect(lines).toHaveLength(2);

    // Any other failure is not retried; nor is a clash past the last attempt.
    calls = 0;
    await expect(
      retryOnPortClash(async () => {
        calls++;
        throw new Error('etcd exited: bad flag');
      }, 3),
    ).rejects.toThrow('bad flag');
    expect(calls).toBe(1);
    calls = 0;
    await expect(
      retryOnPortClash(async () => {
        calls++;
        throw clash;
      }, 2),
    ).rejects.toBe(clash);
    expect(calls).toBe(2);
    expect(isPortClash(new Error('port 127.0.0.1:6443 (kube-apiserver) is already in use: stop what listens there'))).toBe(false);
  });
});
