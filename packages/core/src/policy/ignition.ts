/**
 * RHCOS userData is an Ignition *pointer* config that merges the full config from the Machine Config
 * Server: `{"ignition":{"config":{"merge":[{"source":"https://api-int.<domain>:22623/config/worker"}]}, ...}}`.
 * These helpers read and rewrite the pool at the end of that path without touching anything else.
 */

const POOL_PATH = /^(https?:\/\/[^/]+\/config\/)([^/?#]+)(.*)$/;

interface PointerConfig {
  ignition?: { config?: { merge?: Array<{ source?: string }>; replace?: { source?: string } } };
}

/** The MCS pool names the pointer config merges from (e.g. `["worker"]`); empty when not a pointer config. */
export function ignitionPools(userData: string): string[] {
  const parsed = parsePointer(userData);
  if (!parsed) return [];
  return (parsed.ignition?.config?.merge ?? [])
    .map((m) => (typeof m?.source === 'string' ? POOL_PATH.exec(m.source)?.[2] : undefined))
    .filter((p): p is string => p !== undefined);
}

/**
 * Points every MCS merge source at `/config/<pool>`. Returns the input unchanged (same string) when it is
 * not a JSON pointer config or already points there, so callers can compare strings to detect a change.
 * Re-serialises the JSON only when a source actually changes.
 */
export function rewriteIgnitionPool(userData: string, pool: string): string {
  const parsed = parsePointer(userData);
  const merge = parsed?.ignition?.config?.merge;
  if (!parsed || !Array.isArray(merge)) return userData;
  let changed = false;
  for (const m of merge) {
    if (typeof m?.source !== 'string') continue;
    const match = POOL_PATH.exec(m.source);
    if (!match || match[2] === pool) continue;
    m.source = `${match[1]}${pool}${match[3]}`;
    changed = true;
  }
  return changed ? JSON.stringify(parsed) : userData;
}

/** The Ignition spec versions RHCOS boots from a pointer config (`ignition.version`). */
const SUPPORTED_VERSION = /^3\.\d+\.\d+$/;
const MCS_SOURCE = /^https:\/\/[^/]+\/config\/[^/?#]+$/;

/**
 * Why `userData` is not a usable worker pointer config, or `undefined` when it is. The checks, in order:
 *
 * 1. it is a JSON object (not a shell script, cloud-init or YAML);
 * 2. `ignition.version` is a supported spec version, `3.x.y`;
 * 3. `ignition.config.merge` names at least one source, and each is a Machine Config Server URL
 *    `https://<host>/config/<pool>` (the pool rewrite and the node's join depend on it);
 * 4. `ignition.security.tls.certificateAuthorities` holds at least one CA, each as a `data:` URL (the MCS
 *    CA: without it the node cannot fetch its config over TLS).
 *
 * The message never quotes the value: userData can carry secrets. Pure.
 */
export function pointerConfigProblem(userData: string): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(userData);
  } catch {
    return 'not an Ignition pointer config: not JSON';
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return 'not an Ignition pointer config: not a JSON object';
  const ignition = field(parsed, 'ignition');
  const version = field(ignition, 'version');
  if (typeof version !== 'string') return 'ignition.version is missing';
  if (!SUPPORTED_VERSION.test(version)) return `ignition.version ${JSON.stringify(version)} is not a supported spec version (3.x.y)`;
  const merge = field(field(ignition, 'config'), 'merge');
  if (!Array.isArray(merge) || merge.length === 0) return 'ignition.config.merge names no source (the Machine Config Server URL)';
  for (const [i, m] of merge.entries()) {
    const source = field(m, 'source');
    if (typeof source !== 'string' || !MCS_SOURCE.test(source)) {
      return `ignition.config.merge[${i}].source is not a Machine Config Server URL (https://<host>/config/<pool>)`;
    }
  }
  const cas = field(field(field(ignition, 'security'), 'tls'), 'certificateAuthorities');
  if (!Array.isArray(cas) || cas.length === 0)
    return 'ignition.security.tls.certificateAuthorities holds no CA (the Machine Config Server CA)';
  for (const [i, ca] of cas.entries()) {
    const source = field(ca, 'source');
    if (typeof source !== 'string' || !/^data:[^,]*,.+/s.test(source)) {
      return `ignition.security.tls.certificateAuthorities[${i}].source is not a data: URL`;
    }
  }
  return undefined;
}

function field(v: unknown, key: string): unknown {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>)[key] : undefined;
}

/** True when two userData strings mean the same thing (equal JSON, whatever the key order or spacing). */
export function sameUserData(a: string | undefined, b: string | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined) return false;
  try {
    return canonicalJson(JSON.parse(a)) === canonicalJson(JSON.parse(b));
  } catch {
    return false;
  }
}

function parsePointer(userData: string): PointerConfig | undefined {
  try {
    const v: unknown = JSON.parse(userData);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as PointerConfig) : undefined;
  } catch {
    return undefined;
  }
}

/** A JSON text of `v` with object keys sorted: equal for values that differ only in key order. Pure. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (typeof v === 'object' && v !== null) {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}
