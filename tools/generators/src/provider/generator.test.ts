import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const repo = join(fileURLToPath(new URL('.', import.meta.url)), '../../../..');

interface Run {
  code: number;
  out: string;
}

// A child vitest must not think it is a worker of this one.
const childEnv = (): NodeJS.ProcessEnv =>
  Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('VITEST') && k !== 'NODE_OPTIONS' && k !== 'NODE_ENV'));

const run = (cwd: string, args: string[]): Promise<Run> =>
  new Promise((resolve) => {
    execFile(
      'npx',
      args,
      { cwd, env: { ...childEnv(), NX_DAEMON: 'false', NX_TUI: 'false', NX_NO_CLOUD: 'true' }, maxBuffer: 64 << 20 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, out: `${stdout}${stderr}` });
      },
    );
  });

const git = (args: string[]): Promise<string> =>
  new Promise((resolve, reject) =>
    execFile('git', args, { cwd: repo, maxBuffer: 64 << 20 }, (err, stdout) => (err ? reject(err) : resolve(stdout))),
  );

/**
 * The working tree (tracked and untracked, not ignored) copied to a scratch directory. node_modules is a
 * real directory of links into the repository's, except that the workspace packages link to the
 * scratch copies, so the generated package resolves there and nothing in the shared one changes.
 */
async function scratchCopy(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'provider-generator-'));
  const files = (await git(['ls-files', '-z', '--cached', '--others', '--exclude-standard'])).split('\0').filter(Boolean);
  for (const f of files) {
    if (!existsSync(join(repo, f))) continue;
    mkdirSync(dirname(join(dir, f)), { recursive: true });
    copyFileSync(join(repo, f), join(dir, f));
  }
  const nm = join(repo, 'node_modules');
  mkdirSync(join(dir, 'node_modules', '@karpenter-operator'), { recursive: true });
  for (const e of readdirSync(nm)) if (e !== '@karpenter-operator') symlinkSync(join(nm, e), join(dir, 'node_modules', e));
  for (const group of ['packages', 'apps']) {
    for (const p of readdirSync(join(dir, group))) {
      if (existsSync(join(dir, group, p, 'package.json')))
        symlinkSync(join('..', '..', group, p), join(dir, 'node_modules', '@karpenter-operator', p));
      // npm puts a package's own versions (e.g. yaml 2 next to a root yaml 1) in its node_modules.
      const own = join(repo, group, p, 'node_modules');
      if (existsSync(own)) symlinkSync(own, join(dir, group, p, 'node_modules'));
    }
  }
  return dir;
}

interface VitestJson {
  numPassedTests: number;
  numFailedTests: number;
  testResults: Array<{ assertionResults: Array<{ title: string; status: string; failureMessages: string[] }> }>;
}

describe('npx nx g @karpenter-operator/tools:provider, in a scratch copy of the repository', () => {
  let dir = '';
  let generate: Run;

  beforeAll(async () => {
    dir = await scratchCopy();
    generate = await run(dir, ['nx', 'g', '@karpenter-operator/tools:provider', 'foo', '--no-interactive']);
  }, 60_000);

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('scaffolds packages/provider-foo and wires it into the composition root', () => {
    expect(generate.code, generate.out).toBe(0);
    expect(generate.out).toContain('CREATE packages/provider-foo/src/foo-cloud-provider.ts');
    expect(readFileSync(join(dir, 'apps/operator/src/providers.ts'), 'utf8')).toContain('  Foo: () => fooProviderModule(),');
    expect(existsSync(join(dir, 'node_modules/@karpenter-operator/provider-foo/src/index.ts'))).toBe(true);
  });

  it('builds, lints, and the composition root compiles with it', async () => {
    writeFileSync(
      join(dir, 'tsconfig.wiring.json'),
      JSON.stringify({ extends: './tsconfig.base.json', files: ['apps/operator/src/container.ts', 'apps/operator/src/providers.ts'] }),
    );
    // One after the other: on a two-core machine, parallel compilers only slow each other down.
    const pkg = await run(dir, ['tsc', '-p', 'packages/provider-foo/tsconfig.json', '--noEmit']);
    expect(pkg.code, pkg.out).toBe(0);
    const wiring = await run(dir, ['tsc', '-p', 'tsconfig.wiring.json', '--noEmit']);
    expect(wiring.code, wiring.out).toBe(0);
    const lint = await run(dir, ['eslint', 'packages/provider-foo/src', '--max-warnings', '0']);
    expect(lint.code, lint.out).toBe(0);
  }, 180_000);

  it('its contract suite runs and fails on the unimplemented members, saying what to implement', async () => {
    const report = join(dir, 'vitest-report.json');
    const r = await run(dir, ['vitest', 'run', '--project', 'unit', 'packages/provider-foo', '--reporter=json', `--outputFile=${report}`]);
    expect(r.code, r.out).not.toBe(0);
    const json = JSON.parse(readFileSync(report, 'utf8')) as VitestJson;
    const tests = json.testResults.flatMap((t) => t.assertionResults);
    const failed = tests.filter((t) => t.status === 'failed');
    expect(tests.length).toBeGreaterThan(0);
    expect(failed.length).toBeGreaterThan(0);
    for (const t of failed) expect(t.failureMessages.join('\n'), t.title).toMatch(/provider-foo: implement [A-Za-z]+: \S/);
    const members = new Set(
      failed.flatMap((t) => [...t.failureMessages.join('\n').matchAll(/provider-foo: implement ([A-Za-z]+):/g)].map((m) => m[1])),
    );
    expect([...members].sort()).toEqual(
      expect.arrayContaining(['crds', 'describeInstances', 'operandCloudConfig', 'renderDefaultNodeClass']),
    );
  }, 60_000);
});
