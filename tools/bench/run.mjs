// `npm run bench -- <name> [args]`: bundles tools/bench/<name>.ts (workspace packages from source, npm
// dependencies external) into .local/bench/<name>.mjs and runs it on the repository's Node 24. The
// benchmark prints one JSON object on stdout and its progress on stderr; the exit code is the benchmark's.
// An unknown or missing name lists the benchmarks.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const node = join(root, 'node_modules/.bin/node');

/** Every `tools/bench/<name>.ts` is a benchmark; its first comment line describes it. */
function benchmarks() {
  return readdirSync(here)
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.endsWith('.d.ts'))
    .sort()
    .map((f) => {
      const first =
        readFileSync(join(here, f), 'utf8')
          .split('\n')
          .find((l) => l.startsWith('//')) ?? '';
      const name = f.replace(/\.ts$/, '');
      return { name, about: first.replace(/^\/\/\s*/, '').replace(`${name}: `, '') };
    });
}

const [name, ...args] = process.argv.slice(2);
const all = benchmarks();
if (!name || name === '--help' || name === '-h' || !all.some((b) => b.name === name)) {
  if (name && !name.startsWith('-')) console.error(`bench: no benchmark named ${JSON.stringify(name)}`);
  console.error('usage: npm run bench -- <name> [args]\n\nbenchmarks:');
  for (const b of all) console.error(`  ${b.name.padEnd(20)} ${b.about}`);
  process.exit(name && name !== '--help' && name !== '-h' ? 2 : 0);
}
if (!existsSync(node)) {
  console.error('bench: node_modules/.bin/node is missing: run `npm run setup` first');
  process.exit(1);
}

const outDir = join(root, '.local/bench');
mkdirSync(outDir, { recursive: true });
const outfile = join(outDir, `${name}.mjs`);
// The testkit's bundler: the same resolution as the integration tests and npm run dev.
const built = spawnSync(node, [join(root, 'tools/cluster/bundle.mjs'), join(here, `${name}.ts`), outfile], {
  cwd: root,
  stdio: ['ignore', 'inherit', 'inherit'],
});
if (built.status !== 0) {
  console.error(`bench: bundling tools/bench/${name}.ts failed`);
  process.exit(1);
}

const child = spawn(node, ['--enable-source-maps', outfile, ...args], { cwd: root, stdio: 'inherit' });
// The benchmark stops what it started on these signals; pass them on and wait for it.
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, () => child.kill(sig));
child.on('exit', (code, signal) => process.exit(code ?? 128 + (constants.signals[signal] ?? 0)));
