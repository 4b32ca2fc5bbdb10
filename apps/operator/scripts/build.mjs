// Bundles each image's entry point into an ESM file (plus chunks/, shared by the entries and loaded as the
// entry import()s them) with production dependencies inlined, and copies the
// CRDs each one serves (produced from the pinned Go modules by tools/cluster/fetch-crds.sh) beside it: the
// operator's Karpenter CRDs and (for management-cluster mode) OpenshiftEC2NodeClass, the HyperShift sidecar's
// OpenshiftEC2NodeClass.
//   build.mjs [OUTDIR] [--entry main|adapter]...
// OUTDIR is apps/operator/dist by default (the image test builds into a tree of its own); without --entry every
// entry is built.
import { build } from 'esbuild';
import { createRequire } from 'node:module';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { spawnSync } from 'node:child_process';
import { parse as parseYaml } from 'yaml';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const crdRoot = join(root, 'generated/crds');

// crds: the generated/crds group directories whose CRDs the entry serves. optionalCrds: bundled when present;
// the payload build (images/operator.rhel.Containerfile) has no Go toolchain to generate the OpenshiftEC2NodeClass
// CRD, and the operator then runs the HyperShift controllers without its translation (cli/run.ts says so).
const allEntries = [
  { in: 'apps/operator/src/main.ts', out: 'main', crds: ['karpenter'], optionalCrds: ['karpenter-hypershift'] }, // images/operator.Containerfile
  { in: 'apps/operator/src/adapter-main.ts', out: 'adapter', crds: ['karpenter-hypershift'] }, // images/hypershift-adapter.Containerfile
];

const fail = (msg) => {
  console.error(`build: ${msg}`);
  process.exit(1);
};
let args;
try {
  args = parseArgs({ allowPositionals: true, options: { entry: { type: 'string', multiple: true } } });
} catch (e) {
  fail(e.message);
}
if (args.positionals.length > 1) fail(`one OUTDIR at most, got ${args.positionals.join(' ')}`);
const out = args.positionals[0] ? resolve(args.positionals[0]) : join(root, 'apps/operator/dist');
const wanted = args.values.entry ?? allEntries.map((e) => e.out);
const unknown = wanted.filter((n) => !allEntries.some((e) => e.out === n));
if (unknown.length) fail(`unknown --entry ${unknown.join(', ')} (known: ${allEntries.map((e) => e.out).join(', ')})`);
const entries = allEntries.filter((e) => wanted.includes(e.out));
// Check every input before touching OUTDIR, so a failed build leaves the previous one in place.
for (const e of entries) if (!existsSync(join(root, e.in))) fail(`entry point ${e.in} (${e.out}.js) does not exist`);
const required = new Set(entries.flatMap((e) => e.crds));
for (const g of required)
  if (!existsSync(join(crdRoot, g)))
    fail(`${join(crdRoot, g)} is missing; run \`npm run setup\` (tools/cluster/fetch-crds.sh) to produce the runtime CRDs`);
const optional = [...new Set(entries.flatMap((e) => e.optionalCrds ?? []))].filter((g) => !required.has(g));
for (const g of optional) if (!existsSync(join(crdRoot, g))) console.error(`build: ${join(crdRoot, g)} is missing: not bundled`);
const crdGroups = [...required, ...optional.filter((g) => existsSync(join(crdRoot, g)))];
const withCrds = crdGroups.length > 0;

// `import ... from 'node:http'` in an ES module makes Node build the module's ESM facade, which reads every
// export, and three of node:http's exports (WebSocket, CloseEvent, MessageEvent) are getters that load Node's
// own copy of undici: +13 MiB resident and ~50 ms at start-up for a WebSocket client the operator never
// opens. require('node:http') reads nothing; so ESM imports of node:http resolve to a module that requires
// it and re-exports its other properties by name (importing one of the three fails the build).
const lazyHttpExports = new Set(['WebSocket', 'CloseEvent', 'MessageEvent']);
const httpNames = Object.keys(Object.getOwnPropertyDescriptors(createRequire(import.meta.url)('node:http'))).filter(
  (k) => !lazyHttpExports.has(k) && /^[A-Za-z_$][\w$]*$/.test(k),
);
const nodeHttpWithoutUndici = {
  name: 'node-http-without-undici',
  setup(b) {
    b.onResolve({ filter: /^(node:)?http$/ }, (args) =>
      args.kind === 'import-statement' || args.kind === 'dynamic-import' ? { path: 'node:http', namespace: 'ko-node-http' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'ko-node-http' }, () => ({
      contents:
        `const http = require('node:http');\nexport default http;\n` + httpNames.map((k) => `export const ${k} = http.${k};`).join('\n'),
      loader: 'js',
    }));
  },
};

// @kubernetes/client-node imports undici (`fetch`, `Agent`, `ProxyAgent`) at the top of config.js, watch.js and
// its fetch library, so loading KubeConfig evaluated all of undici: a second HTTP stack beside node:https, which
// the operator's transport uses (packages/kube-runtime/src/kube/transport.ts); client-node's undici paths are never
// taken. Those imports resolve to a module that require()s undici inside each function and constructor, the
// first time one is called. undici itself is built apart, into OUTDIR/node_modules/undici (found by that
// require from main.js and chunks/ alike), so its ~1 MB of source is not part of a chunk V8 keeps in memory
// (main.js --help: RSS 113.5 MiB with undici in a chunk, unevaluated, 112.0 MiB without). A name client-node
// imports that is not listed fails the build ("No matching export").
const lazyUndiciExports = { functions: ['fetch'], classes: ['Agent', 'ProxyAgent'] };
const lazyUndici = {
  name: 'lazy-undici',
  setup(b) {
    b.onResolve({ filter: /^undici$/ }, (args) => {
      if (args.namespace === 'ko-lazy-undici') return { path: 'undici', external: true };
      return args.kind === 'import-statement' ? { path: 'undici', namespace: 'ko-lazy-undici' } : undefined;
    });
    b.onLoad({ filter: /.*/, namespace: 'ko-lazy-undici' }, () => ({
      contents: [
        "let undici;\nconst load = () => (undici ??= require('undici'));",
        ...lazyUndiciExports.functions.map((f) => `export function ${f}(...a) { return load().${f}(...a); }`),
        ...lazyUndiciExports.classes.map((c) => `export const ${c} = function ${c}(...a) { return new (load().${c})(...a); };`),
      ].join('\n'),
      loader: 'js',
    }));
  },
};

// client-node's config.js (KubeConfig) takes two names from its generated client's index, gen/index.js, for
// makeApiClient: `createConfiguration` and `ServerConfiguration`. That index re-exports every generated model,
// and the models' static initialisers keep all of them in the bundle, run at load (444 KiB of the shared
// chunk). Resolved to a module that takes the two from the files defining them, KubeConfig is unchanged.
const clientNodeGenIndex = {
  name: 'client-node-gen-index',
  setup(b) {
    b.onResolve({ filter: /^\.\/gen\/index\.js$/ }, (args) =>
      /[\\/]@kubernetes[\\/]client-node[\\/]dist[\\/]config\.js$/.test(args.importer)
        ? { path: 'gen-index', namespace: 'ko-client-node-gen', pluginData: { resolveDir: args.resolveDir } }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'ko-client-node-gen' }, (args) => ({
      contents: "export { createConfiguration } from './gen/configuration.js';\nexport { ServerConfiguration } from './gen/servers.js';",
      resolveDir: args.pluginData.resolveDir,
      loader: 'js',
    }));
  },
};

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await build({
  plugins: [nodeHttpWithoutUndici, lazyUndici, clientNodeGenIndex],
  absWorkingDir: root,
  entryPoints: entries.map((e) => ({ in: e.in, out: e.out })),
  outdir: out,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node24',
  // No comments and no indentation (identifiers are kept, so stack traces still name functions): V8 keeps a
  // module's whole source for as long as the process runs, and one character outside Latin-1 in it (a few
  // dependencies' comments have typographic quotes) makes it a two-byte string. 9.4 MB as two bytes per
  // character was 18.8 MiB of every operator's memory; 6.6 MB of Latin-1 is 6.6 MiB (checked below).
  minifyWhitespace: true,
  // ESM builds of dependencies that ship both (the AWS SDK: `module` is dist-es, `main` one CommonJS file per
  // client), so esbuild can leave out what is never used: of @aws-sdk/client-ec2's ~750 commands the operator
  // sends four.
  mainFields: ['module', 'main'],
  // The same through `exports`: without the `module` condition, `node` picks the CommonJS build of a subpath
  // (`@aws-sdk/nested-clients/sts`), and a CommonJS module behind an import() is split into a chunk exporting
  // only `default`, so the web-identity credential provider's named import came back undefined.
  // (`@karpenter-operator/source`: this repository's packages as TypeScript source.)
  conditions: ['@karpenter-operator/source', 'module'],
  // main.ts import()s each command's module; without splitting esbuild wraps every module behind such an
  // import() into a lazily run closure, and a wrapped module keeps all of its exports (the whole EC2 client).
  // With it, each lazily imported part is a chunk of its own under chunks/, read when first imported.
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  sourcemap: 'linked',
  legalComments: 'linked',
  logLevel: 'warning',
  // Some dependencies are CommonJS and call require(); give the ESM bundle one.
  banner: { js: "import { createRequire as __ko_cr } from 'node:module'; const require = __ko_cr(import.meta.url);" },
});
writeFileSync(join(out, 'package.json'), JSON.stringify({ type: 'module' }) + '\n');
// undici as client-node would find it, as one CommonJS file (see lazyUndici).
await build({
  absWorkingDir: root,
  entryPoints: [createRequire(join(root, 'node_modules/@kubernetes/client-node/package.json')).resolve('undici')],
  outfile: join(out, 'node_modules/undici/index.js'),
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node24',
  minifyWhitespace: true,
  legalComments: 'linked',
  logLevel: 'warning',
});
// A bundle V8 can hold as a one-byte string: every character Latin-1 (see minifyWhitespace above).
const chunkDir = join(out, 'chunks');
const outputs = [
  ...entries.map((e) => `${e.out}.js`),
  ...(existsSync(chunkDir)
    ? readdirSync(chunkDir)
        .filter((n) => n.endsWith('.js'))
        .map((n) => `chunks/${n}`)
    : []),
];
for (const name of outputs) {
  const file = join(out, name);
  const text = readFileSync(file, 'utf8');
  const at = text.search(/[^\u0000-\u00ff]/u);
  if (at >= 0) {
    const line = text.slice(0, at).split('\n').length;
    fail(
      `${file}:${line} has ${JSON.stringify(text[at])} (U+${text.codePointAt(at).toString(16).toUpperCase()}), outside Latin-1: ` +
        'Node would keep the whole bundle as a two-byte string; write it as an escape (\\u....) in the source',
    );
  }
  if (/\bfrom\s*["'](node:)?http["']/.test(text)) fail(`${file} imports node:http as an ES module (see nodeHttpWithoutUndici)`);
  // A CommonJS module split behind an import() exports only `default`; the importers (the AWS SDK's credential
  // providers) destructure named exports, which would be undefined at run time. See `conditions` above.
  if (/export default require_\w+\(\);/.test(text)) {
    fail(`${file} is a CommonJS module behind an import(), exporting only default: bundle the package's ESM build`);
  }
}
// Proof of lazyUndici: loading each entry (`--help` loads the run path too) leaves undici unevaluated. undici
// registers its global dispatcher under this symbol as it loads; a hook reads it as the process exits.
const undiciLoadedSymbol = "Symbol.for('undici.globalDispatcher.2')";
const undiciProbe = `process.on('exit', () => process.stderr.write('ko-undici-loaded=' + (globalThis[${undiciLoadedSymbol}] !== undefined) + '\\n'))`;
for (const e of entries) {
  const file = join(out, `${e.out}.js`);
  const r = spawnSync(process.execPath, ['--import', `data:text/javascript,${encodeURIComponent(undiciProbe)}`, file, '--help'], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  const verdict = /ko-undici-loaded=(true|false)/.exec(r.stderr ?? '')?.[1];
  if (verdict !== 'false')
    fail(
      `${file} --help ${verdict === 'true' ? 'evaluated undici (see lazyUndici)' : `did not run to its end (${r.error?.message ?? `exit ${r.status}`}): ${r.stderr}`}`,
    );
}
// ...and that undici, when client-node calls it, is found from the entries where the bundle's require() looks, and
// sets the symbol the probe reads.
{
  const probe = `const u = require('node:module').createRequire(${JSON.stringify(join(out, 'chunks', 'x.js'))})('undici'); if (typeof u.Agent !== 'function') process.exit(3); if (globalThis[${undiciLoadedSymbol}] === undefined) process.exit(4);`;
  const r = spawnSync(process.execPath, ['-e', probe], { encoding: 'utf8', timeout: 60_000 });
  if (r.status === 4) fail(`undici no longer sets ${undiciLoadedSymbol} as it loads: update undiciLoadedSymbol`);
  if (r.status !== 0) fail(`${join(out, 'node_modules/undici')} does not load from the bundle: ${r.stderr || `exit ${r.status}`}`);
}
if (withCrds) {
  // generated/crds names files by CRD (`nodepools.karpenter.sh.yaml`); the provider reads them under the
  // names karpenter-provider-aws ships them with (`karpenter.sh_nodepools.yaml`).
  mkdirSync(join(out, 'crds'));
  // Each also as JSON beside it, which the provider reads instead (readCrd): parsing the YAML of the four
  // runtime CRDs was ~0.3 s of one synchronous stretch at every start, their JSON ~1 ms.
  for (const g of crdGroups)
    for (const f of readdirSync(join(crdRoot, g)).filter((n) => n.endsWith('.yaml'))) {
      const [plural, ...group] = f.replace(/\.yaml$/, '').split('.');
      const target = join(out, 'crds', `${group.join('.')}_${plural}`);
      copyFileSync(join(crdRoot, g, f), `${target}.yaml`);
      writeFileSync(`${target}.json`, JSON.stringify(parseYaml(readFileSync(join(crdRoot, g, f), 'utf8'))) + '\n');
    }
}
console.log(`build: ${entries.map((e) => `${e.out}.js`).join(', ')}${withCrds ? ' and crds/' : ''} in ${out}`);
