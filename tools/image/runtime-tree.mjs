// Builds the operator image's runtime tree exactly as images/operator.Containerfile lays it out
// (/opt/karpenter-operator = apps/operator/dist, /manifests = install/) into a directory outside the
// repository, so nothing can be resolved from node_modules, and prints its path.
//   node tools/image/runtime-tree.mjs [DIR]
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export function buildRuntimeTree(dir = mkdtempSync(join(tmpdir(), 'ko-image-'))) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'opt'), { recursive: true });
  // The same build as the image's build stage, straight into the image's path (not apps/operator/dist,
  // which running tests may be executing).
  const r = spawnSync(process.execPath, [join(repo, 'apps/operator/scripts/build.mjs'), join(dir, 'opt/karpenter-operator')], { cwd: repo, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`build failed: ${r.stderr || r.stdout}`);
  cpSync(join(repo, 'install'), join(dir, 'manifests'), { recursive: true });
  return dir;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = buildRuntimeTree(process.argv[2] ? resolve(process.argv[2]) : undefined);
  console.log(dir);
  const help = spawnSync(process.execPath, [join(dir, 'opt/karpenter-operator/main.js'), '--help'], { encoding: 'utf8', cwd: dir });
  process.stderr.write(help.stdout);
  process.exit(help.status ?? 1);
}
