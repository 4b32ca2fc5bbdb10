// Bundles a TypeScript entry point of the testkit (or any workspace file) into one ESM file so plain
// Node runs it: `.js` import specifiers resolve to `.ts`, workspace packages are inlined from source,
// npm dependencies stay external and load from node_modules. Usage: node bundle.mjs <entry.ts> <out.mjs>
import { build } from 'esbuild';

const [entry, outfile] = process.argv.slice(2);
if (!entry || !outfile) {
  console.error('usage: node tools/cluster/bundle.mjs <entry.ts> <out.mjs>');
  process.exit(2);
}

const externalNpm = {
  name: 'external-npm',
  setup(b) {
    // Resolved from the importing file (nested node_modules win, as they would unbundled) and kept
    // external by absolute path, so the bundle works from any directory.
    b.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.path.startsWith('@karpenter-operator/') || args.pluginData === 'external-npm') return undefined;
      if (args.path.startsWith('node:')) return { path: args.path, external: true };
      const r = await b.resolve(args.path, { resolveDir: args.resolveDir, kind: args.kind, pluginData: 'external-npm' });
      if (r.errors.length > 0) return { errors: r.errors };
      return { path: r.external ? args.path : r.path, external: true };
    });
  },
};

await build({
  entryPoints: [entry],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node24',
  conditions: ['@karpenter-operator/source'],
  sourcemap: 'inline',
  logLevel: 'warning',
  plugins: [externalNpm],
});
