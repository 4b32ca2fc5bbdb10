import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { AllMetricDefinitions } from './metric-definitions.js';
import { PromMetrics } from './metrics.js';

const repo = fileURLToPath(new URL('../../../../', import.meta.url));
const NAME = /\bkarpenter_operator_[a-z0-9_]*[a-z0-9]\b/g;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const p = join(dir, entry);
    if (statSync(p).isDirectory()) return entry === 'node_modules' || entry === 'dist' ? [] : sourceFiles(p);
    return p.endsWith('.ts') && !p.endsWith('.test.ts') ? [p] : [];
  });
}

/** Metric names written anywhere in production source (constants, calls, comments), by file. */
function namesInSource(): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const root of ['packages', 'apps']) {
    for (const pkg of readdirSync(join(repo, root))) {
      let files: string[];
      try {
        files = sourceFiles(join(repo, root, pkg, 'src'));
      } catch {
        continue;
      }
      for (const f of files) {
        for (const name of readFileSync(f, 'utf8').match(NAME) ?? []) out.set(name, [...(out.get(name) ?? []), relative(repo, f)]);
      }
    }
  }
  return out;
}

const defined = new Map(AllMetricDefinitions.map((d) => [d.name, d]));

describe('metric definitions (every metric the code records is registered with help text)', () => {
  it('names each metric once, with help text of its own and snake_case labels', () => {
    expect(defined.size).toBe(AllMetricDefinitions.length);
    for (const d of AllMetricDefinitions) {
      expect(d.help.length, d.name).toBeGreaterThan(10);
      expect(d.help, d.name).not.toBe(d.name.replace(/_/g, ' '));
      for (const l of d.labels) expect(l, d.name).toMatch(/^[a-z][a-z0-9_]*$/);
    }
  });

  it('finds no metric name in production source without a definition', () => {
    const found = namesInSource();
    // The scan itself must see the code's names, or an empty scan would pass.
    expect(found.has('karpenter_operator_csr_decisions_total')).toBe(true);
    expect(found.has('karpenter_operator_workqueue_depth')).toBe(true);
    const unknown = [...found].filter(([name]) => !defined.has(name)).map(([name, files]) => `${name} (${[...new Set(files)].join(', ')})`);
    expect(unknown).toEqual([]);
  });

  it('registers every definition at start with its help, and lists a name recorded without one', async () => {
    const metrics = new PromMetrics(AllMetricDefinitions, { defaultMetrics: false });
    const text = await metrics.text();
    for (const d of AllMetricDefinitions) expect(text).toContain(`# HELP ${d.name} ${d.help}`);
    metrics.inc('karpenter_operator_reconcile_total', { controller: 'x', result: 'success' });
    metrics.set('karpenter_operator_csr_pending', 3);
    expect([...metrics.undefinedNames]).toEqual([]);
    metrics.inc('karpenter_operator_not_defined_total', { a: 'b' });
    expect([...metrics.undefinedNames]).toEqual(['karpenter_operator_not_defined_total']);
    expect(await metrics.text()).toContain('karpenter_operator_not_defined_total{a="b"} 1');
  });
});
