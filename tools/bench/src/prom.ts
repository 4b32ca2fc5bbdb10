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
