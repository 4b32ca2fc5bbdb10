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
