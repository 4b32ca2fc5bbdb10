// Bundles each image's entry point into one ESM file with production dependencies inlined, and copies the
// runtime CRDs (produced from the pinned Go modules by tools/cluster/fetch-crds.sh) beside it.
import { build } from 'esbuild';
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
// `build.mjs [OUTDIR]`: apps/operator/dist by default; the image test builds into a tree of its own.
const out = process.argv[2] ? resolve(process.argv[2]) : join(root, 'apps/operator/dist');
const crdSrc = join(root, 'generated/crds/karpenter');

const entries = [
  { in: 'apps/operator/src/main.ts', out: 'main' },
  { in: 'packages/topology-hypershift/src/adapter-main.ts', out: 'adapter' },
].filter((e) => existsSync(join(root, e.in)));

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await build({
  absWorkingDir: root,
  entryPoints: entries.map((e) => ({ in: e.in, out: e.out })),
  outdir: out,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node24',
  conditions: ['@karpenter-operator/source'],
  sourcemap: 'linked',
  legalComments: 'linked',
  logLevel: 'warning',
  // Some dependencies are CommonJS and call require(); give the ESM bundle one.
  banner: { js: "import { createRequire as __ko_cr } from 'node:module'; const require = __ko_cr(import.meta.url);" },
});
writeFileSync(join(out, 'package.json'), JSON.stringify({ type: 'module' }) + '\n');
if (existsSync(crdSrc)) {
  // generated/crds names files by CRD (`nodepools.karpenter.sh.yaml`); the provider reads them under the
  // names karpenter-provider-aws ships them with (`karpenter.sh_nodepools.yaml`).
  mkdirSync(join(out, 'crds'));
  for (const f of readdirSync(crdSrc).filter((n) => n.endsWith('.yaml'))) {
    const [plural, ...group] = f.replace(/\.yaml$/, '').split('.');
    copyFileSync(join(crdSrc, f), join(out, 'crds', `${group.join('.')}_${plural}.yaml`));
  }
} else {
  console.error(`build: ${crdSrc} is missing; run \`npm run setup\` (tools/cluster/fetch-crds.sh) to produce the runtime CRDs`);
  process.exit(1);
}
console.log(`build: ${entries.map((e) => `${e.out}.js`).join(', ')} and crds/ in ${out}`);
