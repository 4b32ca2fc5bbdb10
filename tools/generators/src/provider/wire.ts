import type { ProviderNames } from './render.js';

/** The file where the provider of a platform is chosen, and the marker comments the generator inserts above. */
export const PROVIDERS_FILE = 'apps/operator/src/providers.ts';
export const OPERATOR_PACKAGE = 'apps/operator/package.json';
export const MARKERS = {
  imports: '// generator:provider-imports',
  modules: '// generator:provider-modules',
} as const;

/** Inserts `line` above the line holding `marker`, with the marker's indentation. Throws when it is absent. */
export function insertAbove(source: string, file: string, marker: string, line: string): string {
  const lines = source.split('\n');
  const i = lines.findIndex((l) => l.trim().startsWith(marker));
  if (i < 0)
    throw new Error(`${file}: marker comment "${marker}" not found; restore it (see CONTRIBUTING.md) or wire the provider by hand`);
  const indent = /^\s*/.exec(lines[i]!)![0];
  lines.splice(i, 0, `${indent}${line}`);
  return lines.join('\n');
}

/** `providerModules` in providers.ts (the operator, the offline commands, the sidecar): the import and one entry. */
export function wireProviders(source: string, n: ProviderNames): string {
  if (new RegExp(`^\\s*${n.platform}:`, 'm').test(source))
    throw new Error(`${PROVIDERS_FILE}: providerModules already has an entry for ${n.platform}`);
  const withImport = insertAbove(source, PROVIDERS_FILE, MARKERS.imports, `import { ${n.moduleFactory} } from '${n.packageName}';`);
  return insertAbove(withImport, PROVIDERS_FILE, MARKERS.modules, `${n.platform}: () => ${n.moduleFactory}(),`);
}

/** The operator app depends on the new package (the project graph and npm workspaces read this). */
export function wireOperatorPackage(source: string, n: ProviderNames): string {
  const pkg = JSON.parse(source) as { dependencies?: Record<string, string> };
  const deps = Object.entries(pkg.dependencies ?? {});
  if (deps.some(([k]) => k === n.packageName)) return source;
  const last = deps.map(([k]) => k.startsWith('@karpenter-operator/provider-')).lastIndexOf(true);
  deps.splice(last + 1, 0, [n.packageName, '*']);
  pkg.dependencies = Object.fromEntries(deps);
  return `${JSON.stringify(pkg, null, 2)}\n`;
}
