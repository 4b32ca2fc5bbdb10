// Builds an image's runtime tree exactly as its Containerfile lays it out, into a directory outside the
// repository (so nothing can be resolved from node_modules), and starts it.
//   operator            images/operator.Containerfile: /opt/karpenter-operator = main.js + crds/, /manifests = install/,
//                       /usr/bin/karpenter-operator = images/karpenter-operator (the command HyperShift runs)
//   hypershift-adapter  images/hypershift-adapter.Containerfile: /opt/karpenter-operator-hypershift-adapter = adapter.js
//
//   node tools/image/runtime-tree.mjs [DIR]
// builds both trees (DIR/operator, DIR/hypershift-adapter; a temporary DIR by default), prints their paths
// and starts each: `main.js --help`; `adapter.js --help` (exit 0, usage) and `adapter.js` without flags (exit
// non-zero, one line naming the missing flag). Exits non-zero when any of that does not hold.
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * Each image: its Containerfile, the build.mjs entry it bundles, where the bundle goes, whether it ships
 * install/ as /manifests, and the executables it copies from the repository (`bin`: image path → source).
 */
export const images = {
  operator: {
    containerfile: 'images/operator.Containerfile',
    entry: 'main',
    opt: '/opt/karpenter-operator',
    manifests: true,
    bin: { '/usr/bin/karpenter-operator': 'images/karpenter-operator' },
  },
  'hypershift-adapter': {
    containerfile: 'images/hypershift-adapter.Containerfile',
    entry: 'adapter',
    opt: '/opt/karpenter-operator-hypershift-adapter',
    manifests: false,
  },
};

export function buildRuntimeTree(image = 'operator', dir = mkdtempSync(join(tmpdir(), `ko-image-${image}-`))) {
  const spec = images[image];
  if (!spec) throw new Error(`unknown image ${JSON.stringify(image)} (known: ${Object.keys(images).join(', ')})`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'opt'), { recursive: true });
  // The same build as the image's build stage, straight into the image's path (not apps/operator/dist,
  // which running tests may be executing).
  const r = spawnSync(process.execPath, [join(repo, 'apps/operator/scripts/build.mjs'), join(dir, spec.opt), '--entry', spec.entry], {
    cwd: repo,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`build failed: ${r.stderr || r.stdout}`);
  if (spec.manifests) cpSync(join(repo, 'install'), join(dir, 'manifests'), { recursive: true });
  for (const [dest, src] of Object.entries(spec.bin ?? {})) {
    mkdirSync(join(dir, dirname(dest)), { recursive: true });
    cpSync(join(repo, src), join(dir, dest));
    chmodSync(join(dir, dest), 0o755);
  }
  return dir;
}

/** Runs the image's entry point in its tree, as its ENTRYPOINT does, with no environment of ours. */
export function startImage(image, dir, args) {
  const spec = images[image];
  return spawnSync(process.execPath, [join(dir, spec.opt, `${spec.entry}.js`), ...args], {
    cwd: dir,
    encoding: 'utf8',
    env: { PATH: process.env.PATH },
    timeout: 30_000,
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = process.argv[2] ? resolve(process.argv[2]) : mkdtempSync(join(tmpdir(), 'ko-image-'));
  const problems = [];
  const check = (what, ok, r) => {
    process.stderr.write(`${ok ? 'ok  ' : 'FAIL'} ${what}: exit ${r.status}${r.stderr ? `, stderr: ${r.stderr.trim()}` : ''}\n`);
    if (!ok) problems.push(what);
  };
  for (const image of Object.keys(images)) {
    const dir = buildRuntimeTree(image, join(root, image));
    console.log(dir);
    const help = startImage(image, dir, ['--help']);
    check(`${image} --help`, help.status === 0 && help.stdout.startsWith('Usage: '), help);
    for (const bin of Object.keys(images[image].bin ?? {})) {
      const r = spawnSync(join(dir, bin), ['--help'], {
        cwd: dir,
        encoding: 'utf8',
        env: { PATH: `${dirname(process.execPath)}:${process.env.PATH}` },
        timeout: 30_000,
      });
      check(`${image} ${bin} --help`, r.status === 0 && r.stdout.startsWith('Usage: '), r);
    }
    if (image === 'hypershift-adapter') {
      const bare = startImage(image, dir, []);
      check(
        `${image} without flags`,
        bare.status !== 0 && bare.stderr.trim().split('\n').length === 1 && bare.stderr.includes('--namespace'),
        bare,
      );
    }
  }
  process.exit(problems.length ? 1 : 0);
}
