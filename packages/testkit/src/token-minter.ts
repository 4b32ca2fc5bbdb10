/**
 * A stand-in for HyperShift's token minter (`control-plane-operator token-minter`), the program the operand
 * runner starts for the token-minter sidecar's image. Same flags as the ones HyperShift's layout renders:
 * through the kubeconfig it is given (the guest's), it mints a TokenRequest token of
 * `--service-account-namespace`/`--service-account-name` for `--token-audience`, writes it to `--token-file`
 * (atomically: a reader never sees half a token) and mints a new one before the old one is 80 % through its
 * life. `--oneshot` mints once and exits. A ServiceAccount that does not exist yet is waited for.
 *
 * Runs as its own program (`node token-minter.ts ...`, Node strips the types), so it imports only Node's
 * modules and `yaml`; the argument and kubeconfig parsing are exported for unit tests.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/** YAML through `require` (the package is CommonJS; a plain Node program cannot take its named exports). */
const parseYaml = (text: string): unknown => (createRequire(import.meta.url)('yaml') as { parse: (t: string) => unknown }).parse(text);

export interface TokenMinterArgs {
  serviceAccountNamespace: string;
  serviceAccountName: string;
  tokenAudience: string;
  tokenFile: string;
  kubeconfig: string;
  /** Lifetime asked of each token. */
  expirationSeconds: number;
  oneshot: boolean;
}

const FLAGS: Record<string, keyof TokenMinterArgs> = {
  'service-account-namespace': 'serviceAccountNamespace',
  'service-account-name': 'serviceAccountName',
  'token-audience': 'tokenAudience',
  'token-file': 'tokenFile',
  kubeconfig: 'kubeconfig',
  'token-expiration-seconds': 'expirationSeconds',
  oneshot: 'oneshot',
};

/**
 * The flags (`--name=value` or `--name value`), after the `token-minter` subcommand when present (the image's
 * binary takes it first); an unknown or incomplete one throws, naming it. Pure.
 */
export function parseTokenMinterArgs(input: string[]): TokenMinterArgs {
  const argv = input[0] === 'token-minter' ? input.slice(1) : input;
  const out: Partial<Record<keyof TokenMinterArgs, string | boolean>> = {};
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([a-z-]+)(?:=(.*))?$/s.exec(argv[i]!);
    const key = m ? FLAGS[m[1]!] : undefined;
    if (!m || !key) throw new Error(`token-minter: unknown argument ${JSON.stringify(argv[i])}`);
    if (key === 'oneshot') {
      out.oneshot = m[2] === undefined ? true : m[2] === 'true';
      continue;
    }
    const value = m[2] ?? argv[++i];
    if (value === undefined || value === '') throw new Error(`token-minter: --${m[1]} needs a value`);
    out[key] = value;
  }
  const required = ['serviceAccountNamespace', 'serviceAccountName', 'tokenFile', 'kubeconfig'] as const;
  const missing = required.filter((k) => !out[k]);
  if (missing.length)
    throw new Error(`token-minter: missing ${missing.map((k) => `--${Object.keys(FLAGS).find((f) => FLAGS[f] === k)}`).join(', ')}`);
  const expiration = Number(out.expirationSeconds ?? 3600);
  if (!Number.isInteger(expiration) || expiration < 600)
    throw new Error(`token-minter: --token-expiration-seconds ${String(out.expirationSeconds)} is not an integer of at least 600`);
  return {
    serviceAccountNamespace: out.serviceAccountNamespace as string,
    serviceAccountName: out.serviceAccountName as string,
    tokenAudience: (out.tokenAudience as string | undefined) ?? 'openshift',
    tokenFile: out.tokenFile as string,
    kubeconfig: out.kubeconfig as string,
    expirationSeconds: expiration,
    oneshot: out.oneshot === true,
  };
}

/** How to reach the API server a kubeconfig's current context names. */
export interface ApiTarget {
  server: string;
  ca?: Buffer;
  token?: string;
  cert?: Buffer;
  key?: Buffer;
}

/**
 * The current context's server and credentials of a kubeconfig document (YAML or JSON): inline `*-data` or
 * files (relative to `baseDir`), a bearer token or a client certificate. Throws naming what is missing. Pure
 * but for reading the files the kubeconfig names.
 */
export function apiTargetOf(text: string, baseDir: string): ApiTarget {
  type Named<T> = Array<{ name: string } & T>;
  const doc = parseYaml(text) as {
    'current-context'?: string;
    contexts?: Named<{ context: { cluster: string; user: string } }>;
    clusters?: Named<{ cluster: Record<string, string> }>;
    users?: Named<{ user: Record<string, string> }>;
  };
  const ctx = doc.contexts?.find((c) => c.name === doc['current-context']) ?? doc.contexts?.[0];
  if (!ctx) throw new Error('kubeconfig: no context');
  const cluster = doc.clusters?.find((c) => c.name === ctx.context.cluster)?.cluster;
  const user = doc.users?.find((u) => u.name === ctx.context.user)?.user ?? {};
  if (!cluster?.['server']) throw new Error(`kubeconfig: cluster ${ctx.context.cluster} has no server`);
  const file = (p: string) => readFileSync(p.startsWith('/') ? p : join(baseDir, p));
  const blob = (data?: string, path?: string) => (data ? Buffer.from(data, 'base64') : path ? file(path) : undefined);
  const token = user['token'] ?? (user['tokenFile'] ? file(user['tokenFile']).toString('utf8').trim() : undefined);
  const target: ApiTarget = {
    server: cluster['server'].replace(/\/+$/, ''),
    ca: blob(cluster['certificate-authority-data'], cluster['certificate-authority']),
    token,
    cert: blob(user['client-certificate-data'], user['client-certificate']),
    key: blob(user['client-key-data'], user['client-key']),
  };
  if (!target.token && !(target.cert && target.key))
    throw new Error(`kubeconfig: user ${ctx.context.user} has no token or client certificate`);
  return target;
}

/** POSTs a TokenRequest; resolves with the token and its expiry, rejects with the API server's status and message. */
function mint(t: ApiTarget, a: TokenMinterArgs): Promise<{ token: string; expires: Date }> {
  const url = new URL(
    `${t.server}/api/v1/namespaces/${encodeURIComponent(a.serviceAccountNamespace)}/serviceaccounts/${encodeURIComponent(a.serviceAccountName)}/token`,
  );
  const body = JSON.stringify({
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { audiences: [a.tokenAudience], expirationSeconds: a.expirationSeconds },
  });
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        ca: t.ca,
        cert: t.cert,
        key: t.key,
        headers: {
          'Content-Type': 'application/json',
          Accept: 'application/json',
          ...(t.token ? { Authorization: `Bearer ${t.token}` } : {}),
        },
        timeout: 30_000,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          const parsed = (() => {
            try {
              return JSON.parse(text) as { status?: { token?: string; expirationTimestamp?: string }; message?: string };
            } catch {
              return {};
            }
          })();
          if (res.statusCode !== 201 || !parsed.status?.token)
            reject(
              new Error(
                `TokenRequest for ${a.serviceAccountNamespace}/${a.serviceAccountName}: HTTP ${res.statusCode}: ${parsed.message ?? text.slice(0, 200)}`,
              ),
            );
          else
            resolve({
              token: parsed.status.token,
              expires: new Date(parsed.status.expirationTimestamp ?? Date.now() + a.expirationSeconds * 1000),
            });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('TokenRequest timed out')));
    req.on('error', reject);
    req.end(body);
  });
}

/** Writes `token` to `file` through a temporary file and a rename. */
export function writeTokenFile(file: string, token: string): void {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, token, { mode: 0o640 });
  renameSync(tmp, file);
}

/** When to mint the next token: 80 % through the life of the current one, at least 10 s from now. Pure. */
export function nextMintAt(minted: Date, expires: Date, now: Date): Date {
  const at = minted.getTime() + 0.8 * (expires.getTime() - minted.getTime());
  return new Date(Math.max(at, now.getTime() + 10_000));
}

async function main(argv: string[]): Promise<void> {
  const args = parseTokenMinterArgs(argv);
  const log = (msg: string, extra: Record<string, unknown> = {}) =>
    process.stdout.write(`${JSON.stringify({ ts: new Date().toISOString(), msg, ...extra })}\n`);
  let stopped = false;
  let wake: (() => void) | undefined;
  for (const sig of ['SIGTERM', 'SIGINT'] as const)
    process.on(sig, () => {
      stopped = true;
      wake?.();
    });
  // A signal that came during a mint (no sleep to wake then) ends the next sleep before it starts.
  const sleep = (ms: number) =>
    new Promise<void>((r) => {
      if (stopped) return r();
      const t = setTimeout(r, ms);
      wake = () => {
        clearTimeout(t);
        r();
      };
    });
  let failures = 0;
  while (!stopped) {
    try {
      // Read each time: the kubeconfig's Secret may be rotated under the running pod.
      const target = apiTargetOf(readFileSync(args.kubeconfig, 'utf8'), dirname(args.kubeconfig));
      const minted = new Date();
      const { token, expires } = await mint(target, args);
      writeTokenFile(args.tokenFile, token);
      failures = 0;
      log('minted token', {
        serviceAccount: `${args.serviceAccountNamespace}/${args.serviceAccountName}`,
        audience: args.tokenAudience,
        expires,
      });
      if (args.oneshot) return;
      await sleep(nextMintAt(minted, expires, new Date()).getTime() - Date.now());
    } catch (e) {
      failures++;
      log('minting failed', { error: (e as Error).message, failures });
      await sleep(Math.min(1000 * 2 ** Math.min(failures - 1, 5), 30_000));
    }
  }
}

// Run as a program only when this very file is the entry point: bundled into another program (a benchmark
// bundles the testkit), `import.meta.url` is that program's, which must not start minting.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1] && /token-minter\.[cm]?[jt]s$/.test(process.argv[1])) {
  main(process.argv.slice(2)).catch((e: Error) => {
    process.stderr.write(`${e.message}\n`);
    process.exit(1);
  });
}

/** The path of this program, for a runner to start it with `process.execPath`. */
export const tokenMinterProgram = fileURLToPath(import.meta.url);
