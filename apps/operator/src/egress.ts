import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Names, trustedCaBundle } from '@karpenter-operator/core';

/**
 * The cluster-wide proxy and trusted CA as the operator receives them: the CVO injects `HTTP_PROXY`,
 * `HTTPS_PROXY` and `NO_PROXY` from the cluster Proxy's `status` into the container named by the
 * Deployment's `config.openshift.io/inject-proxy` annotation, and the cluster network operator fills the
 * trusted-CA ConfigMap that is mounted as the system trust store. Pure.
 */
export const PROXY_VARS = ['HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY'] as const;

const SOURCE: Record<(typeof PROXY_VARS)[number], string> = {
  HTTP_PROXY: 'status.httpProxy',
  HTTPS_PROXY: 'status.httpsProxy',
  NO_PROXY: 'status.noProxy',
};

/**
 * The proxy variables that are set (upper case, else lower case) and usable, and a message for each that
 * is not: a proxy must be an `http://` or `https://` URL with a host. An unusable proxy is left out (calls
 * go direct and fail visibly) rather than handed to Node, which exits at start-up on a malformed one
 * under `--use-env-proxy`.
 */
export function readProxyEnv(env: Readonly<Record<string, string | undefined>>): { proxyEnv?: Record<string, string>; problems: string[] } {
  const proxyEnv: Record<string, string> = {};
  const problems: string[] = [];
  for (const name of PROXY_VARS) {
    const value = (env[name] ?? env[name.toLowerCase()] ?? '').trim();
    if (!value) continue;
    if (name !== 'NO_PROXY') {
      let url: URL | undefined;
      try {
        url = new URL(value);
      } catch {
        url = undefined;
      }
      if (!url || !['http:', 'https:'].includes(url.protocol) || !url.hostname) {
        problems.push(
          `${name} (the cluster Proxy's ${SOURCE[name]}) must be an http:// or https:// URL with a host, got ${JSON.stringify(value)}`,
        );
        continue;
      }
    }
    proxyEnv[name] = value;
  }
  const usable = 'HTTP_PROXY' in proxyEnv || 'HTTPS_PROXY' in proxyEnv;
  return { ...(usable ? { proxyEnv } : {}), problems };
}

/**
 * Why the trusted CA bundle at `path` cannot be used, or `undefined`: every PEM certificate in it must
 * parse, and a non-empty file must hold at least one. Node's `--use-system-ca` skips what it cannot read
 * without a word, which would surface only as TLS failures later.
 */
export function caBundleProblem(text: string, path: string): string | undefined {
  const where = `trusted CA bundle ${path} (ConfigMap ${Names.operatorNamespace}/${trustedCaBundle.configMap}, key ${trustedCaBundle.key})`;
  if (!text.trim()) return undefined;
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (!blocks.length) return `${where} holds no PEM certificate`;
  for (const [i, block] of blocks.entries()) {
    try {
      new X509Certificate(block);
    } catch (e) {
      return `${where}: certificate ${i + 1} of ${blocks.length} does not parse (${(e as Error).message})`;
    }
  }
  return undefined;
}

/** Where the trusted CA bundle is read: `SSL_CERT_FILE` when set (Node's `--use-system-ca` honours it), else the mounted system store. */
export function caBundlePath(env: Readonly<Record<string, string | undefined>>): string {
  return env.SSL_CERT_FILE || trustedCaBundle.file;
}

/**
 * Every problem with the proxy variables and the trusted CA bundle, for a condition (the operator) or an
 * exit message (check-credentials). `read` returns the file's text, or `undefined` when it is absent (not
 * mounted, or not injected yet: nothing to check).
 */
export function clusterEgressProblems(
  env: Readonly<Record<string, string | undefined>>,
  read: (path: string) => string | undefined,
): string[] {
  const path = caBundlePath(env);
  const text = read(path);
  const ca = text === undefined ? undefined : caBundleProblem(text, path);
  return [...readProxyEnv(env).problems, ...(ca ? [ca] : [])];
}

/** `read` for `clusterEgressProblems`: the file's text, `undefined` when it does not exist. */
export function readIfPresent(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    return `unreadable: ${(e as Error).message}`;
  }
}
