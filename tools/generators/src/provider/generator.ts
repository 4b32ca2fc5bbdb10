import { existsSync, lstatSync, mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { Tree } from '@nx/devkit';
import { CLOUD_PROVIDER_PORT, readPort } from './port.js';
import { providerNames, renderProviderPackage, type ProviderNames, type ProviderOptions } from './render.js';
import { OPERATOR_PACKAGE, PROVIDERS_FILE, wireOperatorPackage, wireProviders } from './wire.js';

/** The part of Nx's `Tree` the generator uses (an in-memory map in unit tests). */
export type FileTree = Pick<Tree, 'root' | 'exists' | 'write'> & { read(path: string, encoding: 'utf-8'): string | null };

const readText = (tree: FileTree, path: string): string => {
  const s = tree.read(path, 'utf-8');
  if (s === null) throw new Error(`${path} not found: run the generator from the workspace root`);
  return s;
};

/**
 * Writes the package and wires it into the composition root. Everything is validated and rendered
 * before the first write, so a refusal leaves the tree untouched.
 */
export function scaffoldProvider(tree: FileTree, options: ProviderOptions): ProviderNames {
  const n = providerNames(options);
  if (tree.exists(n.dir)) throw new Error(`${n.dir} already exists`);
  const port = readPort(readText(tree, CLOUD_PROVIDER_PORT));
  const files = {
    ...renderProviderPackage(n, port),
    [PROVIDERS_FILE]: wireProviders(readText(tree, PROVIDERS_FILE), n),
    [OPERATOR_PACKAGE]: wireOperatorPackage(readText(tree, OPERATOR_PACKAGE), n),
  };
  for (const [path, content] of Object.entries(files)) tree.write(path, content);
  return n;
}

/**
 * Links the package into node_modules as npm workspaces would, so it resolves before the contributor's
 * next `npm install` (which also records it in package-lock.json).
 */
export function linkWorkspacePackage(root: string, n: ProviderNames): void {
  const scope = join(root, 'node_modules', '@karpenter-operator');
  const link = join(scope, n.projectName);
  if (!existsSync(join(root, 'node_modules'))) return;
  mkdirSync(scope, { recursive: true });
  try {
    lstatSync(link);
    return;
  } catch {
    symlinkSync(join('..', '..', n.dir), link, 'dir');
  }
}

/** `npx nx g @karpenter-operator/tools:provider <name> [--platform X]`. */
export async function providerGenerator(tree: Tree, options: ProviderOptions): Promise<() => void> {
  const n = scaffoldProvider(tree, options);
  return () => {
    linkWorkspacePackage(tree.root, n);
    console.log(
      [
        '',
        `${n.packageName} is wired into ${PROVIDERS_FILE} for platform ${n.platform}.`,
        'Next:',
        '  npm install                                   # records the workspace in package-lock.json',
        `  npx vitest run --project unit ${n.dir}   # the contract suite: each failure says what to implement`,
        '  then follow CONTRIBUTING.md, "Adding a provider" (CRDs, RBAC, CredentialsRequest, image, integration test).',
      ].join('\n'),
    );
  };
}
