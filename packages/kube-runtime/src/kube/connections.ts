// The transport's connections: TLS material from the kubeconfig, keep-alive agents, and retiring an agent
// whose certificate or CA was rotated.
import { createHash } from 'node:crypto';
import { Agent as HttpAgent, request as httpRequest, type ClientRequest } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import type { KubeConfig } from './client-node.js';

export type HttpsOptions = RequestOptions & { headers: Record<string, string> };

export async function httpsOptionsOf(kc: KubeConfig): Promise<HttpsOptions> {
  const tls: HttpsOptions = { headers: {} };
  await kc.applyToHTTPSOptions(tls);
  return tls;
}

/** A digest of what an agent's connections authenticate with: CA, client certificate and key, server name. */
export function tlsMaterialDigest(tls: HttpsOptions): string {
  const h = createHash('sha256');
  for (const v of [tls.ca, tls.cert, tls.key, tls.pfx, tls.passphrase, tls.servername, tls.rejectUnauthorized]) {
    for (const part of Array.isArray(v) ? v : [v]) {
      if (Buffer.isBuffer(part) || typeof part === 'string') h.update(part);
      else if (part !== undefined) h.update(JSON.stringify(part) ?? '');
      h.update('\0');
    }
    h.update('\u0001');
  }
  return h.digest('base64');
}

/**
 * Makes sure client-node's cache for the cluster and current user no longer holds `agent`, so the next
 * `applyToHTTPSOptions` gives another one: drops it when it is still cached (an agent cached since, made by a
 * concurrent request, stays). False when this client-node keeps its cache elsewhere (the old agent then stays).
 */
export function dropCachedAgent(kc: KubeConfig, cluster: NonNullable<ReturnType<KubeConfig['getCurrentCluster']>>, agent: object): boolean {
  const internals = kc as unknown as { agentCache?: unknown; getAgentCacheKey?: unknown };
  if (!(internals.agentCache instanceof Map) || typeof internals.getAgentCacheKey !== 'function') return false;
  const key = (internals.getAgentCacheKey as (c: typeof cluster) => string).call(kc, cluster);
  if (internals.agentCache.get(key) === agent) internals.agentCache.delete(key);
  return true;
}

/**
 * An agent nothing sends on any more: its idle kept-alive connections (made with the old TLS material) are
 * closed now, and a connection still carrying a request closes when that request ends, instead of lingering
 * until the server's idle timeout.
 */
export function retire(agent: RequestOptions['agent']): void {
  const a = agent as (HttpAgent & { keepAlive?: boolean }) | undefined;
  if (!(a instanceof HttpAgent)) return;
  retiredAgents.add(a);
  a.keepAlive = false;
  for (const idle of Object.values(a.freeSockets)) for (const socket of [...(idle ?? [])]) socket.destroy();
}

/** Agents `retire` has closed: keep-alive is never turned on for them again. */
const retiredAgents = new WeakSet<HttpAgent>();

export function send(url: URL, options: RequestOptions): ClientRequest {
  return url.protocol === 'https:' ? httpsRequest(url, options) : httpRequest(url, options);
}

/**
 * The kubeconfig's agent (cached by client-node per cluster and user) with keep-alive on: Node agents close a
 * connection after each request by default, a new TLS handshake per request. Proxy agents are `http.Agent`s too.
 */
export function keepAlive(agent: RequestOptions['agent']): RequestOptions['agent'] {
  // `keepAlive` is read per request (ClientRequest, the agent's 'free' handler), not only by the constructor.
  const a = agent as (HttpAgent & { keepAlive?: boolean }) | undefined;
  if (a instanceof HttpAgent && !a.keepAlive && !retiredAgents.has(a)) a.keepAlive = true;
  return agent;
}
