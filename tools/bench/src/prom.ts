import { readFileSync } from 'node:fs';

/** One sample of the Prometheus text exposition format. */
export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Parses the text format (comments and malformed lines skipped; label values unescaped). */
export function parsePromText(text: string): PromSample[] {
  const out: PromSample[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    const value = Number(m[3] === '+Inf' ? Infinity : m[3] === '-Inf' ? -Infinity : m[3]);
    out.push({ name: m[1]!, labels, value });
  }
  return out;
}

/** Sum of the samples named `name` whose labels include `match`; undefined when there is none. */
export function sumOf(samples: readonly PromSample[], name: string, match: Record<string, string> = {}): number | undefined {
  let found = false;
  let sum = 0;
  for (const s of samples) {
    if (s.name !== name) continue;
    if (!Object.entries(match).every(([k, v]) => s.labels[k] === v)) continue;
    found = true;
    sum += s.value;
  }
  return found ? sum : undefined;
}

/** Values of `name` grouped by one label (summed over the others). */
export function byLabel(samples: readonly PromSample[], name: string, label: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of samples) if (s.name === name) out[s.labels[label] ?? ''] = (out[s.labels[label] ?? ''] ?? 0) + s.value;
  return out;
}

/** Bytes as MiB with one decimal. */
export const mib = (bytes: number | undefined) => (bytes === undefined ? undefined : Math.round((bytes / 2 ** 20) * 10) / 10);

/**
 * Where the operator's memory is, from its `/metrics` (prom-client's process and Node metrics), in MiB:
 * RSS; the V8 heap (reserved and used, used per space); `external` (memory V8 objects hold outside the
 * heap: buffers, external strings); and `other`, the rest of RSS (Node and V8 native memory: code and
 * parser zones, malloc arenas, thread stacks).
 */
export function memoryBreakdown(samples: readonly PromSample[]) {
  const rss = sumOf(samples, 'process_resident_memory_bytes');
  const heapTotal = sumOf(samples, 'nodejs_heap_size_total_bytes');
  const external = sumOf(samples, 'nodejs_external_memory_bytes');
  const spaces = Object.fromEntries(
    Object.entries(byLabel(samples, 'nodejs_heap_space_size_used_bytes', 'space'))
      .filter(([, v]) => v >= 2 ** 20 / 10)
      .map(([k, v]) => [k, mib(v)]),
  );
  return {
    rssMiB: mib(rss),
    heapTotalMiB: mib(heapTotal),
    heapUsedMiB: mib(sumOf(samples, 'nodejs_heap_size_used_bytes')),
    externalMiB: mib(external),
    otherMiB: rss !== undefined && heapTotal !== undefined ? mib(rss - heapTotal - (external ?? 0)) : undefined,
    heapUsedBySpaceMiB: spaces,
  };
}

/**
 * The resident set split as the kernel counts it: file-backed pages (the node binary's code and data, shared
 * libraries) and anonymous ones (V8's heap, external buffers, malloc). Linux only; `{}` elsewhere.
 */
export function residentSplit(pid: number): { rssAnonMiB?: number; rssFileMiB?: number } {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return {};
  }
  const kib = (field: string) => {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
    return m ? mib(Number(m[1]) * 1024) : undefined;
  };
  return { rssAnonMiB: kib('RssAnon'), rssFileMiB: kib('RssFile') };
}

/**
 * The process's anonymous memory by mapping (`/proc/PID/smaps`), in MiB: `brkHeap` is glibc's main arena
 * (`[heap]`), `mallocArenas` the other arenas (glibc maps each in a 64 MiB-aligned reservation, seen as an
 * anonymous mapping whose size plus its inaccessible tail is 64 MiB), `otherAnon` the remaining anonymous
 * mappings (V8's heap pages and code space, thread stacks, large buffers mapped on their own). Linux only.
 */
export function anonymousMappings(pid: number): {
  brkHeapMiB?: number;
  mallocArenasMiB?: number;
  mallocArenas?: number;
  otherAnonMiB?: number;
} {
  let smaps: string;
  try {
    smaps = readFileSync(`/proc/${pid}/smaps`, 'utf8');
  } catch {
    return {};
  }
  const ARENA = 64 * 1024 * 1024;
  type Mapping = { start: number; end: number; perms: string; name: string; rssKiB: number };
  const maps: Mapping[] = [];
  for (const line of smaps.split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      maps.push({ start: parseInt(head[1]!, 16), end: parseInt(head[2]!, 16), perms: head[3]!, name: head[4]!.trim(), rssKiB: 0 });
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && maps.length) maps[maps.length - 1]!.rssKiB = Number(rss[1]);
  }
  let brk = 0;
  let arenas = 0;
  let arenaCount = 0;
  let other = 0;
  for (const [k, m] of maps.entries()) {
    if (m.name === '[heap]') brk += m.rssKiB;
    else if (m.name !== '') continue;
    else if (m.perms.startsWith('rw') && m.start % ARENA === 0) {
      // A thread arena: starts on a 64 MiB boundary; its reservation's rest follows as a ---p mapping.
      const next = maps[k + 1];
      const reserved =
        next && next.start === m.end && next.perms.startsWith('---') && next.name === '' ? next.end - m.start : m.end - m.start;
      if (reserved === ARENA) {
        arenas += m.rssKiB;
        arenaCount++;
      } else other += m.rssKiB;
    } else other += m.rssKiB;
  }
  const toMiB = (kib: number) => mib(kib * 1024);
  return { brkHeapMiB: toMiB(brk), mallocArenasMiB: toMiB(arenas), mallocArenas: arenaCount, otherAnonMiB: toMiB(other) };
}
