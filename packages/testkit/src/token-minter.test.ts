import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createCertificateAuthority } from './pki.js';
import { apiTargetOf, nextMintAt, parseTokenMinterArgs, tokenMinterProgram, writeTokenFile } from './token-minter.js';

// The args HyperShift's layout renders for the sidecar (packages/topology-hypershift/src/operand-layout.ts).
const RENDERED = [
  'token-minter',
  '--service-account-namespace=kube-system',
  '--service-account-name=karpenter',
  '--token-audience=openshift',
  '--token-file=/var/run/secrets/openshift/serviceaccount/token',
  '--kubeconfig=/etc/karpenter/guest-kubeconfig/kubeconfig',
];

describe('token-minter stand-in', () => {
  it('takes the rendered args after the subcommand', () => {
    expect(parseTokenMinterArgs(RENDERED)).toEqual({
      serviceAccountNamespace: 'kube-system',
      serviceAccountName: 'karpenter',
      tokenAudience: 'openshift',
      tokenFile: '/var/run/secrets/openshift/serviceaccount/token',
      kubeconfig: '/etc/karpenter/guest-kubeconfig/kubeconfig',
      expirationSeconds: 3600,
      oneshot: false,
    });
    expect(parseTokenMinterArgs(['--service-account-namespace', 'ns', ...RENDERED.slice(2), '--oneshot'])).toMatchObject({
      serviceAccountNamespace: 'ns',
      oneshot: true,
    });
  });

  it.each([
    { args: [...RENDERED, '--bogus=1'], error: /unknown argument "--bogus=1"/ },
    { args: RENDERED.filter((a) => !a.startsWith('--kubeconfig')), error: /missing --kubeconfig/ },
    { args: [...RENDERED, '--token-expiration-seconds=5'], error: /at least 600/ },
    { args: [...RENDERED, '--token-file'], error: /--token-file needs a value/ },
  ])('refuses $args.length args naming the problem ($error)', ({ args, error }) => {
    expect(() => parseTokenMinterArgs(args)).toThrow(error);
  });

  it('reads the current context of a kubeconfig: inline CA and token, or files relative to it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'minter-test-'));
    try {
      writeFileSync(join(dir, 'ca.crt'), 'CA');
      const inline = JSON.stringify({
        'current-context': 'b',
        contexts: [
          { name: 'a', context: { cluster: 'x', user: 'x' } },
          { name: 'b', context: { cluster: 'guest', user: 'karpenter' } },
        ],
        clusters: [
          {
            name: 'guest',
            cluster: { server: 'https://127.0.0.1:6443/', 'certificate-authority-data': Buffer.from('PEM').toString('base64') },
          },
        ],
        users: [{ name: 'karpenter', user: { token: 'tok' } }],
      });
      expect(apiTargetOf(inline, dir)).toEqual({
        server: 'https://127.0.0.1:6443',
        ca: Buffer.from('PEM'),
        token: 'tok',
        cert: undefined,
        key: undefined,
      });
      const files = [
        'apiVersion: v1',
        'current-context: c',
        'contexts: [{name: c, context: {cluster: k, user: u}}]',
        'clusters: [{name: k, cluster: {server: "https://kube-apiserver:6443", certificate-authority: ca.crt}}]',
        'users: [{name: u, user: {}}]',
      ].join('\n');
      expect(() => apiTargetOf(files, dir)).toThrow(/user u has no token or client certificate/);
      expect(apiTargetOf(files.replace('user: {}', 'user: {token: t}'), dir).ca).toEqual(Buffer.from('CA'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('renews at 80 % of the lifetime, never sooner than 10 s from now', () => {
    const minted = new Date('2026-01-01T00:00:00Z');
    const expires = new Date('2026-01-01T01:00:00Z');
    expect(nextMintAt(minted, expires, minted).toISOString()).toBe('2026-01-01T00:48:00.000Z');
    const late = new Date('2026-01-01T00:59:00Z');
    expect(nextMintAt(minted, expires, late).toISOString()).toBe('2026-01-01T00:59:10.000Z');
  });

  it('writes the token whole, replacing the old one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'minter-test-'));
    try {
      const file = join(dir, 'sub', 'token');
      writeTokenFile(file, 'one');
      writeTokenFile(file, 'two');
      expect(readFileSync(file, 'utf8')).toBe('two');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs as a program under Node and exits 1 naming a bad argument', () => {
    const r = spawnSync(process.execPath, [tokenMinterProgram, 'token-minter', '--nope'], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('unknown argument "--nope"');
  });

  it('bundled into another program (a benchmark, `npm run dev`), does not run as the minter', () => {
    const dir = mkdtempSync(join(tmpdir(), 'minter-bundle-'));
    try {
      const entry = join(dir, 'program.ts');
      writeFileSync(
        entry,
        `import { tokenMinterProgram } from ${JSON.stringify(join(import.meta.dirname, 'token-minter.ts'))};\nconsole.log('program ran', typeof tokenMinterProgram);\n`,
      );
      const out = join(dir, 'program.mjs');
      const root = join(import.meta.dirname, '../../..');
      const b = spawnSync(process.execPath, [join(root, 'tools/cluster/bundle.mjs'), entry, out], {
        cwd: root,
        encoding: 'utf8',
        timeout: 120_000,
      });
      expect(b.status, b.stderr).toBe(0);
      const r = spawnSync(process.execPath, [out, '--detached'], { encoding: 'utf8', timeout: 60_000 });
      expect(r.stderr).not.toContain('token-minter');
      expect(r.stdout).toContain('program ran string');
      expect(r.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a SIGTERM during a mint ends the program once the token is written, not after the next sleep', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'minter-test-'));
    const ca = await createCertificateAuthority('minter-test-ca');
    const leaf = await ca.issue({ commonName: '127.0.0.1', ipAddresses: ['127.0.0.1'], usage: 'server' });
    const server = createServer({ key: leaf.privateKeyPem, cert: leaf.certPem });
    let pending: ServerResponse | undefined;
    const requested = new Promise<void>((resolve) => {
      server.on('request', (_req, res: ServerResponse) => {
        pending = res;
        resolve();
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as AddressInfo).port;
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        'current-context': 'c',
        contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }],
        clusters: [
          {
            name: 'k',
            cluster: { server: `https://127.0.0.1:${port}`, 'certificate-authority-data': Buffer.from(ca.certPem).toString('base64') },
          },
        ],
        users: [{ name: 'u', user: { token: 'tok' } }],
      }),
    );
    const tokenFile = join(dir, 'token');
    const child = spawn(
      process.execPath,
      [tokenMinterProgram, ...RENDERED.slice(0, 4), `--token-file=${tokenFile}`, `--kubeconfig=${kubeconfig}`],
      {
        stdio: 'ignore',
      },
    );
    const exited = once(child, 'exit') as Promise<[number | null, string | null]>;
    try {
      await requested;
      // The signal lands while the TokenRequest is in flight; the answer (a token good for an hour, so the
      // next mint 48 minutes away) comes after it.
      child.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 1000));
      pending!.writeHead(201, { 'Content-Type': 'application/json' });
      pending!.end(JSON.stringify({ status: { token: 'minted', expirationTimestamp: new Date(Date.now() + 3600_000).toISOString() } }));
      const timeout = new Promise<'still running'>((r) => setTimeout(() => r('still running'), 30_000).unref());
      expect(await Promise.race([exited.then(([code]) => code), timeout])).toBe(0);
      expect(readFileSync(tokenFile, 'utf8')).toBe('minted');
    } finally {
      child.kill('SIGKILL');
      server.close();
      server.closeAllConnections();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
