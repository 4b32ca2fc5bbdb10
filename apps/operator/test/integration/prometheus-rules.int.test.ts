import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { promtoolBinary } from '@karpenter-operator/testkit';
import { REPO } from '../support/operator-process.js';

/**
 * The PrometheusRule shipped in install/ through the real promtool (built from the pinned Prometheus module
 * by `npm run setup`): `promtool check rules` on the rule groups as shipped, and `promtool test rules` with
 * apps/operator/test/monitoring/alerts.rules-test.yaml on them.
 */
const RULE_FILE = join(REPO, 'install/0000_90_karpenter-operator_02_prometheusrule.yaml');
const TESTS = join(REPO, 'apps/operator/test/monitoring/alerts.rules-test.yaml');

interface RuleGroup {
  name: string;
  rules: Array<Record<string, unknown>>;
}

function shippedGroups(): RuleGroup[] {
  const docs = parseAllDocuments(readFileSync(RULE_FILE, 'utf8')).map((d) => d.toJS() as { kind: string; spec: { groups: RuleGroup[] } });
  const rule = docs.find((d) => d.kind === 'PrometheusRule');
  if (!rule) throw new Error(`${RULE_FILE} holds no PrometheusRule`);
  return rule.spec.groups;
}

function promtool(args: string[], cwd: string): { status: number | null; out: string } {
  const r = spawnSync(promtoolBinary(), args, { cwd, encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('alert rules (promtool)', () => {
  it('pass `promtool check rules` as shipped, one rule per alert', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rules-check-'));
    const groups = shippedGroups();
    writeFileSync(join(dir, 'rules.yaml'), stringify({ groups }));
    const r = promtool(['check', 'rules', 'rules.yaml'], dir);
    expect(r.status, r.out).toBe(0);
    const count = groups.reduce((n, g) => n + g.rules.length, 0);
    expect(r.out).toContain(`SUCCESS: ${count} rules found`);
  });

  it('fire when and with the labels the rules tests say (`promtool test rules`)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rules-test-'));
    const groups = shippedGroups().map((g) => ({ ...g, rules: g.rules.map(({ annotations: _annotations, ...rest }) => rest) }));
    writeFileSync(join(dir, 'rules.yaml'), stringify({ groups }));
    copyFileSync(TESTS, join(dir, 'tests.yaml'));
    const r = promtool(['test', 'rules', 'tests.yaml'], dir);
    expect(r.status, r.out).toBe(0);
    expect(r.out).toContain('SUCCESS');
  });

  it('has a rules test for every alert shipped', () => {
    const tested = new Set([...readFileSync(TESTS, 'utf8').matchAll(/alertname: (\w+)/g)].map((m) => m[1]));
    const shipped = shippedGroups().flatMap((g) => g.rules.map((r) => r['alert'] as string));
    expect(shipped.filter((a) => !tested.has(a))).toEqual([]);
  });

  it('would catch a wrong expectation (promtool test rules fails on it)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rules-test-wrong-'));
    writeFileSync(
      join(dir, 'rules.yaml'),
      stringify({ groups: shippedGroups().map((g) => ({ ...g, rules: g.rules.map(({ annotations: _a, ...rest }) => rest) })) }),
    );
    writeFileSync(
      join(dir, 'tests.yaml'),
      stringify({
        rule_files: ['rules.yaml'],
        evaluation_interval: '1m',
        tests: [
          {
            interval: '1m',
            input_series: [{ series: 'up{job="karpenter-operator-metrics",namespace="openshift-karpenter"}', values: '1x20' }],
            alert_rule_test: [
              { eval_time: '15m', alertname: 'KarpenterOperatorDown', exp_alerts: [{ exp_labels: { severity: 'warning' } }] },
            ],
          },
        ],
      }),
    );
    const r = promtool(['test', 'rules', 'tests.yaml'], dir);
    expect(r.status, r.out).not.toBe(0);
    expect(r.out).toContain('KarpenterOperatorDown');
  });
});
