#!/usr/bin/env node
// Writes install/ (the CVO manifests) from the TypeScript definitions in apps/operator/src/manifests/.
// Usage, from the repository root: npx node apps/operator/scripts/generate-install.mjs
// The unit test apps/operator/src/manifests/install.test.ts fails when install/ and this output differ.
import { build } from 'esbuild';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const outDir = join(root, 'install');

// Workspace packages are bundled (they export TypeScript); every other package is imported as installed.
const thirdPartyExternal = {
  name: 'third-party-external',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) =>
      args.path.startsWith('@karpenter-operator/') ? undefined : { path: args.path, external: true },
    );
  },
};

// The workspace packages export TypeScript sources; bundle the definitions into one module to import.
// It lives under the app's node_modules so that packages resolve as they do for the app (yaml 2).
const cache = join(root, 'apps/operator/node_modules/.cache');
mkdirSync(cache, { recursive: true });
const work = mkdtempSync(join(cache, 'generate-install-'));
const bundle = join(work, 'install.mjs');
try {
  await build({
    entryPoints: [join(root, 'apps/operator/src/manifests/install.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    conditions: ['@karpenter-operator/source'],
    outfile: bundle,
    logLevel: 'warning',
    plugins: [thirdPartyExternal],
  });
  const { installFiles, renderInstallFile } = await import(pathToFileURL(bundle).href);
  mkdirSync(outDir, { recursive: true });
  const files = installFiles();
  const names = new Set(files.map((f) => f.name));
  for (const stale of readdirSync(outDir)) if (!names.has(stale)) rmSync(join(outDir, stale));
  for (const file of files) writeFileSync(join(outDir, file.name), renderInstallFile(file));
  console.log(`wrote ${files.length} files to ${outDir}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
