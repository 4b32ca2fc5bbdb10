import { createServer, request as httpRequest, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { connect, type Socket } from 'node:net';
import { createCertificateAuthority } from './pki.js';
import { LOOPBACK } from './ports.js';

/**
 * A forward proxy on 127.0.0.1 in front of an HTTP service, as a cluster-wide egress proxy sees it: the
 * service has a name that resolves nowhere (`host`, port 443) and is served over TLS with a certificate of
 * a CA of its own (`caPem`), so a client reaches it only by `CONNECT host:443` through this proxy and only
 * when it trusts that CA. The TLS front ends TLS and forwards the plain HTTP to `upstream` (e.g. the EC2
 * emulator). CONNECT to anything else is refused (403); so is every request that is not a CONNECT.
 */
export interface ForwardProxy {
  /** `http://127.0.0.1:<port>`: the value of `HTTPS_PROXY`. */
  readonly url: string;
  /** `https://<host>`: the endpoint to give the client. */
  readonly endpoint: string;
  /** PEM of the CA that signed the service's certificate (what the client must trust). */
  readonly caPem: string;
  /** CONNECT targets seen, in order, refused ones included (`host:port`). */
  connects(): string[];
  close(): Promise<void>;
}

export async function startForwardProxy(upstream: string, options: { host?: string } = {}): Promise<ForwardProxy> {
  const host = options.host ?? 'ec2.emulator.invalid';
  const ca = await createCertificateAuthority('karpenter-operator test egress CA', 2);
  const leaf = await ca.issue({ commonName: host, dnsNames: [host], usage: 'server', validDays: 2 });
  const target = new URL(upstream);

  const front = createTlsServer({ key: leaf.privateKeyPem, cert: leaf.certPem }, (req, res) => {
    const up = httpRequest(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, host: target.host } },
      (upRes) => {
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        upRes.pipe(res);
      },
    );
    up.on('error', (e) => {
      if (res.headersSent) res.destroy();
      else res.writeHead(502, { 'content-type': 'text/plain' }).end(`tls front: upstream error: ${e.message}`);
    });
    req.pipe(up);
  });
  await listen(front);
  const frontPort = port(front);

  const seen: string[] = [];
  const sockets = new Set<Socket>();
  const proxy = createServer((_req, res) => res.writeHead(403, { 'content-type': 'text/plain' }).end('forward proxy: CONNECT only\n'));
  proxy.on('connect', (req, client: Socket, head: Buffer) => {
    const wanted = req.url ?? '';
    seen.push(wanted);
    if (wanted !== `${host}:443`) {
      client.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    const up = connect(frontPort, LOOPBACK, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) up.write(head);
      up.pipe(client);
      client.pipe(up);
    });
    for (const s of [client, up]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    up.on('error', () => client.destroy());
    client.on('error', () => up.destroy());
  });
  await listen(proxy);

  return {
    url: `http://${LOOPBACK}:${port(proxy)}`,
    endpoint: `https://${host}`,
    caPem: ca.certPem,
    connects: () => [...seen],
    close: async () => {
      for (const s of sockets) s.destroy();
      front.closeAllConnections();
      await Promise.all([close(proxy), close(front)]);
    },
  };
}

function listen(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, LOOPBACK, () => resolve());
  });
}

function port(server: Server): number {
  const addr = server.address();
  return typeof addr === 'object' && addr ? addr.port : 0;
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}
