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

/** True when two userData strings mean the same thing (equal JSON, whatever the key order or spacing). */
export function sameUserData(a: string | undefined, b: string | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined) return false;
  try {
    return canonical(JSON.parse(a)) === canonical(JSON.parse(b));
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

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (typeof v === 'object' && v !== null) {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}
