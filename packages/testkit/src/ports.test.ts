import { createServer, type Server } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { isLocalClusterError } from './errors.js';
import { assertPortFree, freePort, LOOPBACK, portFor } from './ports.js';

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
});
