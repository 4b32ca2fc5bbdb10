import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LocalClusterError } from './errors.js';

/** Where `npm run setup` put the binaries, CRDs and the EC2 emulator (`.local/toolchain.json`). */
export interface Toolchain {
  repoRoot: string;
  binDir: string;
  crdDir: string;
  /** KWOK Stage documents (node and pod lifecycles). */
  kwokStages: string;
  motoServer: string;
  /** The real karpenter-provider-aws controller (`tools/cluster/build-karpenter.sh`); checked by `karpenterBinary()`. */
  karpenterBinary: string;
  /** promtool from the pinned Prometheus module (`tools/cluster/build-promtool.sh`); checked by `promtoolBinary()`. */
  promtool: string;
  /** The CVO's manifest filter (`tools/cluster/build-manifest-inclusion.sh`); checked by `manifestInclusionBinary()`. */
  manifestInclusion: string;
  /** The Machine Config Operator's controller, server and templates (`tools/cluster/build-mco.sh`); checked by `mcoBinaries()`. */
  mcoController: string;
  mcoServer: string;
  mcoTemplates: string;
  versions: Record<string, string>;
}

export const CLUSTER_BINARIES = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kwok'] as const;
export type ClusterBinary = (typeof CLUSTER_BINARIES)[number];

/** The repository root: the nearest ancestor holding nx.json, from this file, else from the cwd. */
export function findRepoRoot(): string {
  for (const start of [dirname(fileURLToPath(import.meta.url)), process.cwd()]) {
    let dir = resolve(start);
    for (;;) {
      if (existsSync(join(dir, 'nx.json')) && existsSync(join(dir, 'package.json'))) return dir;
      const parent = dirname(dir);
      if (parent === dir) break;
      dir = parent;
    }
  }
  throw new LocalClusterError('cannot find the repository root (no nx.json above this file or the current directory)');
}

const SETUP_HINT = 'run `npm run setup` first';

/**
 * Reads and checks `.local/toolchain.json`. Env overrides: `KO_BIN_DIR`, `KO_CRD_DIR`, `KO_MOTO_SERVER`.
 * Throws LocalClusterError (one line, naming the fix) when anything is missing.
 */
export function loadToolchain(repoRoot = findRepoRoot()): Toolchain {
  const file = join(repoRoot, '.local', 'toolchain.json');
  let raw: Partial<Toolchain> = {};
  if (existsSync(file)) {
    try {
      raw = JSON.parse(readFileSync(file, 'utf8')) as Partial<Toolchain>;
    } catch (e) {
      throw new LocalClusterError(`${file} is not valid JSON (${(e as Error).message}): ${SETUP_HINT}`);
    }
  } else if (!process.env.KO_BIN_DIR) {
    throw new LocalClusterError(`the local cluster toolchain is not set up (${file} is missing): ${SETUP_HINT}`);
  }
  const tc: Toolchain = {
    repoRoot,
    binDir: process.env.KO_BIN_DIR ?? raw.binDir ?? '',
    crdDir: process.env.KO_CRD_DIR ?? raw.crdDir ?? join(repoRoot, 'generated', 'crds'),
    kwokStages: raw.kwokStages ?? join(repoRoot, 'generated', 'kwok', 'stages.yaml'),
    motoServer: process.env.KO_MOTO_SERVER ?? raw.motoServer ?? '',
    karpenterBinary: process.env.KO_KARPENTER_BINARY ?? raw.karpenterBinary ?? '',
    promtool: process.env.KO_PROMTOOL ?? raw.promtool ?? '',
    manifestInclusion: process.env.KO_MANIFEST_INCLUSION ?? raw.manifestInclusion ?? '',
    mcoController: process.env.KO_MCO_CONTROLLER ?? raw.mcoController ?? '',
    mcoServer: process.env.KO_MCO_SERVER ?? raw.mcoServer ?? '',
    mcoTemplates: process.env.KO_MCO_TEMPLATES ?? raw.mcoTemplates ?? '',
    versions: raw.versions ?? {},
  };
  for (const b of CLUSTER_BINARIES) assertExecutable(join(tc.binDir, b), `binary ${b}`);
  if (!existsSync(tc.kwokStages)) throw new LocalClusterError(`the KWOK stages are missing (${tc.kwokStages}): ${SETUP_HINT}`);
  if (!existsSync(join(tc.crdDir, '.stamp'))) throw new LocalClusterError(`the CRDs are missing from ${tc.crdDir}: ${SETUP_HINT}`);
  return tc;
}

export function assertExecutable(path: string, what: string): void {
  try {
    accessSync(path, constants.X_OK);
  } catch {
    throw new LocalClusterError(`${what} is missing (${path}): ${SETUP_HINT}`);
  }
}

/**
 * The real Karpenter controller binary, or a LocalClusterError in one line naming the command that builds
 * it (never a silent skip: CI builds it in `npm run setup`). Env override: `KO_KARPENTER_BINARY`.
 */
export function karpenterBinary(tc: Toolchain = loadToolchain()): string {
  const path = tc.karpenterBinary;
  const build = 'build it with `bash tools/cluster/build-karpenter.sh` (or `npm run setup`; about 5 minutes cold)';
  if (!path) throw new LocalClusterError(`the karpenter-provider-aws controller binary is not in .local/toolchain.json: ${build}`);
  try {
    accessSync(path, constants.X_OK);
  } catch {
    throw new LocalClusterError(`the karpenter-provider-aws controller binary is missing (${path}): ${build}`);
  }
  return path;
}

/**
 * promtool (`promtool check rules`, `promtool test rules`), or a LocalClusterError in one line naming the
 * command that builds it. Env override: `KO_PROMTOOL`.
 */
export function promtoolBinary(tc: Toolchain = loadToolchain()): string {
  const build = 'build it with `bash tools/cluster/build-promtool.sh` (or `npm run setup`)';
  if (!tc.promtool) throw new LocalClusterError(`promtool is not in .local/toolchain.json: ${build}`);
  try {
    accessSync(tc.promtool, constants.X_OK);
  } catch {
    throw new LocalClusterError(`promtool is missing (${tc.promtool}): ${build}`);
  }
  return tc.promtool;
}

/**
 * machine-config-controller, machine-config-server and MCO's templates directory, or a LocalClusterError in one
 * line naming the command that builds them. Env overrides: `KO_MCO_CONTROLLER`, `KO_MCO_SERVER`, `KO_MCO_TEMPLATES`.
 */
export function mcoBinaries(tc: Toolchain = loadToolchain()): { controller: string; server: string; templates: string; version: string } {
  const build = 'build them with `bash tools/cluster/build-mco.sh` (or `npm run setup`; about 10 minutes cold)';
  if (!tc.mcoController || !tc.mcoServer || !tc.mcoTemplates) {
    throw new LocalClusterError(`the Machine Config Operator binaries are not in .local/toolchain.json: ${build}`);
  }
  for (const [path, what] of [
    [tc.mcoController, 'machine-config-controller'],
    [tc.mcoServer, 'machine-config-server'],
  ] as const) {
    try {
      accessSync(path, constants.X_OK);
    } catch {
      throw new LocalClusterError(`${what} is missing (${path}): ${build}`);
    }
  }
  if (!existsSync(tc.mcoTemplates)) throw new LocalClusterError(`MCO's templates are missing (${tc.mcoTemplates}): ${build}`);
  return { controller: tc.mcoController, server: tc.mcoServer, templates: tc.mcoTemplates, version: tc.versions.mco ?? '' };
}

/**
 * tools/manifest-inclusion (library-go's `pkg/manifest` inclusion over a manifest directory), or a
 * LocalClusterError in one line naming the command that builds it. Env override: `KO_MANIFEST_INCLUSION`.
 */
export function manifestInclusionBinary(tc: Toolchain = loadToolchain()): string {
  const build = 'build it with `bash tools/cluster/build-manifest-inclusion.sh` (or `npm run setup`)';
  if (!tc.manifestInclusion) throw new LocalClusterError(`manifest-inclusion is not in .local/toolchain.json: ${build}`);
  try {
    accessSync(tc.manifestInclusion, constants.X_OK);
  } catch {
    throw new LocalClusterError(`manifest-inclusion is missing (${tc.manifestInclusion}): ${build}`);
  }
  return tc.manifestInclusion;
}
