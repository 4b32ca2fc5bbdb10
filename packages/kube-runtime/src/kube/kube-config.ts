import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readFile as fsReadFile } from 'node:fs/promises';
import { delimiter, dirname } from 'node:path';
import { KubeConfig, type User } from './client-node.js';
import { describeError, silentLogger, type Logger } from '@karpenter-operator/core/ports';
import { systemTimers, type TimerHandle, type Timers } from '../runtime/timers.js';

export interface KubeConfigSource {
  /** `--kubeconfig`. */
  kubeconfig?: string | undefined;
  /** The process environment (passed in: read once by the app). */
  env: Record<string, string | undefined>;
  /** Prefix of the in-cluster ServiceAccount files (tests). */
  inClusterPathPrefix?: string;
}

export interface LoadedKubeConfig {
  config: KubeConfig;
  /** Where it came from, for the start-up log: a path or `in-cluster`. */
  source: string;
  /**
   * Re-reads credentials that live in a file (the in-cluster ServiceAccount token); true when they changed.
   * Give it to the transport as `onUnauthorized`: a 401 then retries at once with a rotated token instead of
   * failing until the next periodic re-read.
   */
  refreshCredentials?: () => boolean;
}

/**
 * The operator's own kubeconfig: `--kubeconfig`, else `KUBECONFIG` (a path list, merged like kubectl does),
 * else the in-cluster ServiceAccount (when `KUBERNETES_SERVICE_HOST` is set). Throws a message naming
 * all three when none applies or the chosen one is unusable.
 */
export function loadKubeConfig(source: KubeConfigSource): LoadedKubeConfig {
  const kc = new KubeConfig();
  const fail = (where: string, e: unknown): never => {
    throw new Error(`loading the kubeconfig from ${where}: ${describeError(e)}`);
  };
  if (source.kubeconfig) {
    try {
      kc.loadFromFile(source.kubeconfig);
    } catch (e) {
      fail(`--kubeconfig ${source.kubeconfig}`, e);
    }
    return checked(kc, source.kubeconfig);
  }
  const paths = (source.env.KUBECONFIG ?? '').split(delimiter).filter(Boolean);
  if (paths.length) {
    try {
      kc.loadFromFile(paths[0]!);
      for (const p of paths.slice(1)) {
        const more = new KubeConfig();
        more.loadFromFile(p);
        // Like kubectl: the first file that sets a value wins.
        kc.mergeConfig(more, true);
      }
    } catch (e) {
      fail(`KUBECONFIG=${source.env.KUBECONFIG}`, e);
    }
    return checked(kc, paths.join(delimiter));
  }
  if (source.env.KUBERNETES_SERVICE_HOST) {
    try {
      kc.loadFromCluster(source.inClusterPathPrefix);
    } catch (e) {
      fail('the in-cluster ServiceAccount', e);
    }
    const loaded = checked(kc, 'in-cluster');
    const tokenFile = useTokenFileAuth(kc);
    return tokenFile ? { ...loaded, refreshCredentials: () => tokenFile.refresh() } : loaded;
  }
  throw new Error('no kubeconfig: pass --kubeconfig, set KUBECONFIG, or run in a pod (in-cluster ServiceAccount)');
}

/**
 * A bearer token read from a file (the ServiceAccount token the kubelet rotates). Like client-go it is
 * re-read every minute; unlike client-node's own `FileAuth` it can also be re-read on demand, when the API
 * server refuses it.
 */
export class TokenFileAuth {
  static readonly providerName = 'karpenter-operator-token-file';
  private token: string | undefined;
  private readAt = 0;

  constructor(
    readonly path: string,
    private readonly now: () => number = Date.now,
    private readonly readFile: (path: string) => string = (p) => readFileSync(p, 'utf8'),
  ) {}

  isAuthProvider(user: User): boolean {
    return (user.authProvider as { name?: unknown } | undefined)?.name === TokenFileAuth.providerName;
  }

  async applyAuthentication(_user: User, opts: { headers?: Record<string, unknown> | unknown }): Promise<void> {
    if (this.token === undefined || this.now() - this.readAt > 60_000) this.refresh();
    const headers = ((opts as { headers?: Record<string, unknown> }).headers ??= {});
    if (this.token) headers['Authorization'] = `Bearer ${this.token}`;
  }

  /** Re-reads the file now; true when the token changed. An unreadable file keeps the last token. */
  refresh(): boolean {
    let next: string;
    try {
      next = this.readFile(this.path).trim();
    } catch {
      return false;
    }
    this.readAt = this.now();
    const changed = next !== this.token;
    this.token = next;
    return changed;
  }
}

/**
 * Puts the current user's token file (client-node's in-cluster `tokenFile` auth provider) under a
 * `TokenFileAuth`, which the transport can ask to re-read; `undefined` when the user has no token file.
 */
export function useTokenFileAuth(kc: KubeConfig): TokenFileAuth | undefined {
  const user = kc.getCurrentUser();
  const path = (user?.authProvider as { config?: { tokenFile?: unknown } } | undefined)?.config?.tokenFile;
  if (!user || typeof path !== 'string' || !path) return undefined;
  const auth = new TokenFileAuth(path);
  kc.users = kc.users.map((u) => (u.name === user.name ? { ...u, authProvider: { name: TokenFileAuth.providerName, config: {} } } : u));
  kc.addAuthenticator(auth);
  return auth;
}

function checked(kc: KubeConfig, source: string): LoadedKubeConfig {
  if (!kc.getCurrentCluster()) throw new Error(`loading the kubeconfig from ${source}: it has no current context with a cluster`);
  return { config: kc, source };
}

/** Parses kubeconfig text; relative certificate paths are taken relative to `baseDir`. */
export function parseKubeConfig(text: string, where: string, baseDir?: string): KubeConfig {
  const kc = new KubeConfig();
  try {
    kc.loadFromString(text);
  } catch (e) {
    throw new Error(`parsing the kubeconfig ${where}: ${describeError(e)}`);
  }
  if (baseDir) kc.makePathsAbsolute(baseDir);
  if (!kc.getCurrentCluster()) throw new Error(`parsing the kubeconfig ${where}: it has no current context with a cluster`);
  return kc;
}

export interface WatchedKubeConfigOptions {
  /** How often the file is re-read. Default 10 s (Secret volumes update by symlink swap, which file watchers miss). */
  pollMs?: number;
  readFile?: (path: string) => Promise<string>;
  timers?: Timers;
  logger?: Logger;
}

/**
 * A kubeconfig read from a file (the HyperShift guest kubeconfig Secret mount) and re-read when its content
 * changes. `current()` always returns the last valid one; an unreadable or invalid update is logged and
 * ignored. Pass `() => watched.current()` to `NodeHttpTransport` so new requests use new credentials.
 */
export class WatchedKubeConfig {
  private config: KubeConfig | undefined;
  private digest = '';
  private timer: TimerHandle | undefined;
  private stopped = false;
  private readonly listeners = new Set<(kc: KubeConfig) => void>();
  private readonly pollMs: number;
  private readonly readFile: (path: string) => Promise<string>;
  private readonly timers: Timers;
  private readonly logger: Logger;

  constructor(
    readonly path: string,
    options: WatchedKubeConfigOptions = {},
  ) {
    this.pollMs = options.pollMs ?? 10_000;
    this.readFile = options.readFile ?? ((p) => fsReadFile(p, 'utf8'));
    this.timers = options.timers ?? systemTimers;
    this.logger = (options.logger ?? silentLogger).child({ kubeconfig: path });
  }

  /** Reads the file once (throwing when it is missing or invalid), then polls it. */
  async start(): Promise<void> {
    const text = await this.readFile(this.path).catch((e: unknown) => {
      throw new Error(`reading the kubeconfig ${this.path}: ${describeError(e)}`);
    });
    this.config = parseKubeConfig(text, this.path, dirname(this.path));
    this.digest = sha256(text);
    this.schedule();
  }

  current(): KubeConfig {
    if (!this.config) throw new Error(`the kubeconfig ${this.path} has not been loaded yet`);
    return this.config;
  }

  onChange(listener: (kc: KubeConfig) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
  }

  /** Re-reads the file now; true when a new valid kubeconfig was loaded. */
  async reload(): Promise<boolean> {
    let text: string;
    try {
      text = await this.readFile(this.path);
    } catch (e) {
      this.logger.warn('reading the kubeconfig failed; keeping the last one', { error: describeError(e) });
      return false;
    }
    const digest = sha256(text);
    if (digest === this.digest) return false;
    let kc: KubeConfig;
    try {
      kc = parseKubeConfig(text, this.path, dirname(this.path));
    } catch (e) {
      this.logger.warn('the kubeconfig changed but is invalid; keeping the last one', { error: describeError(e) });
      return false;
    }
    this.digest = digest;
    this.config = kc;
    this.logger.info('the kubeconfig changed; using the new one');
    for (const l of this.listeners) {
      try {
        l(kc);
      } catch (e) {
        this.logger.error('a kubeconfig change listener failed', { error: describeError(e) });
      }
    }
    return true;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = this.timers.setTimeout(() => {
      void this.reload().finally(() => this.schedule());
    }, this.pollMs);
  }
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
