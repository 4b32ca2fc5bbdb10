import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { openShiftAwsObjects } from '@karpenter-operator/testkit';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const node = join(repo, 'node_modules/.bin/node');

interface Stage {
  from: string;
  name?: string;
  lines: string[];
}

/** The stages of a Containerfile: FROM lines and the instructions under each (continuations joined). */
function stages(file: string): Stage[] {
  const text = readFileSync(file, 'utf8').replace(/\\\n\s*/g, ' ');
  const out: Stage[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const from = /^FROM\s+(\S+)(?:\s+AS\s+(\S+))?/i.exec(line);
    if (from) out.push({ from: from[1]!, ...(from[2] ? { name: from[2] } : {}), lines: [] });
    else out.at(-1)!.lines.push(line);
  }
  return out;
}

describe('operator image', () => {
  let tree: string;
  beforeAll(async () => {
    const { buildRuntimeTree } = (await import(join(repo, 'tools/image/runtime-tree.mjs'))) as { buildRuntimeTree: () => string };
    tree = buildRuntimeTree();
  }, 120_000);
  afterAll(() => rmSync(tree, { recursive: true, force: true }));

  const file = join(repo, 'images/operator.Containerfile');

  it('is multi-stage on Red Hat UBI with Node.js 24, non-root, with the CVO label and /manifests', () => {
    const s = stages(file);
    expect(s.map((x) => x.name ?? 'final')).toEqual(['crds', 'build', 'final']);
    expect(s[1]!.from).toMatch(/^registry\.access\.redhat\.com\/ubi9\/nodejs-24:/);
    const final = s[2]!;
    expect(final.from).toMatch(/^registry\.access\.redhat\.com\/ubi9\/nodejs-24-minimal:/);
    expect(final.lines).toContain('COPY install/ /manifests/');
    expect(final.lines.some((l) => /^LABEL .*io\.openshift\.release\.operator=true/.test(l))).toBe(true);
    const user = final.lines.filter((l) => l.startsWith('USER ')).at(-1);
    expect(user).toMatch(/^USER [1-9][0-9]*$/);
  });

  it('copies only paths that exist, and its entry point is the bundled main.js', () => {
    const s = stages(file);
    for (const st of s.slice(0, 2)) {
      for (const l of st.lines.filter((x) => x.startsWith('COPY ') && !x.includes('--from='))) {
        const parts = l.split(/\s+/).filter((p) => !p.startsWith('--'));
        for (const src of parts.slice(1, -1)) expect(existsSync(join(repo, src)), `${src} (stage ${st.name}) exists`).toBe(true);
      }
    }
    const final = s[2]!;
    const copy = final.lines.find((l) => l.includes('--from=build'))!;
    expect(copy).toMatch(/\/src\/apps\/operator\/dist\/ \/opt\/karpenter-operator\//);
    const entry = final.lines.find((l) => l.startsWith('ENTRYPOINT'))!;
    const argv = JSON.parse(entry.slice('ENTRYPOINT'.length)) as string[];
    expect(argv).toEqual(['node', '/opt/karpenter-operator/main.js']);
    expect(existsSync(join(tree, 'opt/karpenter-operator/main.js'))).toBe(true);
    expect(existsSync(join(tree, 'opt/karpenter-operator/crds/karpenter.k8s.aws_ec2nodeclasses.yaml'))).toBe(true);
    expect(existsSync(join(tree, 'manifests/0000_50_karpenter-operator_03_deployment.yaml'))).toBe(true);
  });

  it('the runtime tree starts without node_modules: --help, and render on fixtures', () => {
    const main = join(tree, 'opt/karpenter-operator/main.js');
    const help = spawnSync(node, [main, '--help'], { cwd: tree, encoding: 'utf8' });
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('karpenter-operator render --from DIR');

    const fixtures = mkdtempSync(join(tmpdir(), 'ko-fixtures-'));
    writeFileSync(join(fixtures, 'cluster.yaml'), openShiftAwsObjects('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n').map((o) => stringify(o)).join('---\n'));
    const r = spawnSync(node, [main, 'render', '--from', fixtures, '--kind', 'EC2NodeClass', '--output', 'json'], { cwd: tree, encoding: 'utf8' });
    rmSync(fixtures, { recursive: true, force: true });
    expect(r.status, r.stderr).toBe(0);
    const nc = JSON.parse(r.stdout) as { kind: string; spec: { amiFamily: string } };
    expect([nc.kind, nc.spec.amiFamily]).toEqual(['EC2NodeClass', 'Custom']);

    const bad = spawnSync(node, [main, 'render', '--from', '/nonexistent-dir'], { cwd: tree, encoding: 'utf8' });
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/render: reading \/nonexistent-dir/);
  });
});
