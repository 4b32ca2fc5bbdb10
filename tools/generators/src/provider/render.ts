import type { PortMember } from './port.js';

export interface ProviderOptions {
  /** kebab-case package suffix: `gcp` → `packages/provider-gcp`. */
  name: string;
  /** Infrastructure `status.platformStatus.type`; default: `name` in PascalCase. */
  platform?: string;
  nodeClassKind?: string;
  nodeClassApiVersion?: string;
}

/** Every name the scaffold derives from the options, in one place. */
export interface ProviderNames {
  name: string;
  dir: string;
  packageName: string;
  projectName: string;
  platform: string;
  className: string;
  moduleFactory: string;
  /** File of the provider class, without extension, relative to `src/`. */
  classFile: string;
  nodeClassType: { apiVersion: string; kind: string };
}

export const PROVIDER_NAME = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;
// The contract suite holds providers to these shapes; refuse them here, before anything is written.
const PLATFORM = /^[A-Z][A-Za-z]+$/;
const KIND = /^[A-Z][A-Za-z0-9]+$/;
const API_VERSION = /^[a-z0-9.-]+\/v[0-9a-z]+$/;
// Names the repository already uses for something else.
const RESERVED = new Set(['aws', 'azure-stub']);

const pascal = (kebab: string): string =>
  kebab
    .split('-')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');

/** Derives and validates every name; throws an Error saying which option is wrong and why. */
export function providerNames(o: ProviderOptions): ProviderNames {
  const name = o.name;
  if (!PROVIDER_NAME.test(name)) throw new Error(`provider name ${JSON.stringify(name)} must be kebab-case (e.g. gcp, ibm-cloud)`);
  if (name.startsWith('provider-')) throw new Error(`provider name ${JSON.stringify(name)}: give it without the "provider-" prefix`);
  if (RESERVED.has(name))
    throw new Error(`provider name ${JSON.stringify(name)} is taken: packages/provider-${name} exists in this repository`);
  const platform = o.platform ?? pascal(name);
  if (!PLATFORM.test(platform))
    throw new Error(
      `platform ${JSON.stringify(platform)} must be letters only, starting upper-case, as Infrastructure reports it (e.g. GCP)`,
    );
  const kind = o.nodeClassKind ?? `${platform}NodeClass`;
  if (!KIND.test(kind)) throw new Error(`NodeClass kind ${JSON.stringify(kind)} must be PascalCase`);
  const apiVersion = o.nodeClassApiVersion ?? `karpenter.${name}.example.com/v1`;
  if (!API_VERSION.test(apiVersion))
    throw new Error(`NodeClass apiVersion ${JSON.stringify(apiVersion)} must look like <group>/v<version>`);
  const p = pascal(name);
  return {
    name,
    dir: `packages/provider-${name}`,
    packageName: `@karpenter-operator/provider-${name}`,
    projectName: `provider-${name}`,
    platform,
    className: `${p}CloudProvider`,
    moduleFactory: `${p.charAt(0).toLowerCase()}${p.slice(1)}ProviderModule`,
    classFile: `${name}-cloud-provider`,
    nodeClassType: { apiVersion, kind },
  };
}

/** A single-quoted TypeScript string literal. */
export const quote = (s: string): string => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

const json = (v: unknown): string => `${JSON.stringify(v, null, 2)}\n`;

function packageJson(n: ProviderNames): string {
  return json({
    name: n.packageName,
    version: '0.1.0',
    private: true,
    type: 'module',
    exports: {
      '.': { '@karpenter-operator/source': './src/index.ts', types: './src/index.ts', default: './src/index.ts' },
    },
    dependencies: { '@karpenter-operator/core': '*', inversify: '8.2.3' },
  });
}

/** The targets' commands are nx.json's `targetDefaults`; a provider has no `build` (the operator bundles its source). */
function projectJson(n: ProviderNames): string {
  return json({
    name: n.projectName,
    $schema: '../../node_modules/nx/schemas/project-schema.json',
    sourceRoot: `${n.dir}/src`,
    projectType: 'library',
    tags: ['type:adapter'],
    targets: { typecheck: {}, lint: {}, test: {} },
  });
}

const tsconfig = (): string => json({ extends: '../../tsconfig.base.json', include: ['src/**/*.ts', 'test/**/*.ts'] });

function memberSource(n: ProviderNames, m: PortMember): string {
  const what = m.doc || `see CloudProvider.${m.name} in @karpenter-operator/core`;
  const todo = `implement(${quote(m.name)}, ${quote(what)})`;
  if (m.kind === 'property') {
    if (m.name === 'platform') return `  readonly platform = ${quote(n.platform)};`;
    if (m.name === 'nodeClassType') {
      return [
        "  // The upstream Karpenter provider's NodeClass group, version and kind.",
        `  readonly nodeClassType: ${m.type} = { apiVersion: ${quote(n.nodeClassType.apiVersion)}, kind: ${quote(n.nodeClassType.kind)} };`,
      ].join('\n');
    }
    return `  get ${m.name}(): ${m.type} {\n    throw ${todo};\n  }`;
  }
  const params = m.params.map((p) => `_${p.name}${p.optional ? '?' : ''}: ${p.type}`).join(', ');
  if (m.name === 'assertSupported') {
    return [
      '  // Supported, so the contract suite holds every member to the full contract. A provider that ships',
      '  // as a stub throws UnsupportedPlatformError here instead (see provider-azure-stub).',
      `  assertSupported(${params}): ${m.type} {}`,
    ].join('\n');
  }
  const async = /^Promise</.test(m.type) ? 'async ' : '';
  return `  ${async}${m.name}(${params}): ${m.type} {\n    throw ${todo};\n  }`;
}

function providerSource(n: ProviderNames, port: PortMember[]): string {
  const types = [...new Set(['CloudProvider', ...port.flatMap((m) => m.typeNames)])].sort();
  return [
    'import {',
    ...types.map((t) => `  type ${t},`),
    "} from '@karpenter-operator/core';",
    '',
    "// Every member below that throws is work to do: the message is what the port's TSDoc asks of it.",
    '// Replace each with an implementation and watch `npx vitest run --project unit ' + n.dir + '` turn green.',
    'const implement = (member: string, what: string): Error =>',
    `  new Error(\`${n.projectName}: implement \${member}: \${what}\`);`,
    '',
    `/** The ${n.platform} \`CloudProvider\`. */`,
    `export class ${n.className} implements CloudProvider {`,
    port.map((m) => memberSource(n, m)).join('\n\n'),
    '}',
    '',
  ].join('\n');
}

function moduleSource(n: ProviderNames): string {
  return [
    "import { ContainerModule } from 'inversify';",
    "import { CloudProviderId } from '@karpenter-operator/core';",
    `import { ${n.className} } from './${n.classFile}.js';`,
    '',
    `/** Binds the ${n.platform} provider as the CloudProvider. The only file of this package that imports inversify. */`,
    `export const ${n.moduleFactory} = (): ContainerModule =>`,
    '  new ContainerModule(({ bind }) => {',
    `    bind(CloudProviderId).toResolvedValue(() => new ${n.className}()).inSingletonScope();`,
    '  });',
    '',
  ].join('\n');
}

function indexSource(n: ProviderNames): string {
  return [`export { ${n.className} } from './${n.classFile}.js';`, `export { ${n.moduleFactory} } from './module.js';`, ''].join('\n');
}

function contractSource(n: ProviderNames): string {
  const nc = n.nodeClassType;
  return [
    "import { describeCloudProviderContract } from '@karpenter-operator/core/testing';",
    `import { ${n.className} } from './${n.classFile}.js';`,
    '',
    '// The fixtures are placeholders: replace them with builders of real cluster objects as the provider',
    '// takes shape (provider-aws/src/testing/builders.ts shows the pattern). See CONTRIBUTING.md.',
    'const facts = {',
    `  platform: ${quote(n.platform)},`,
    "  region: 'region-1',",
    "  infrastructureName: 'demo-x7k2p',",
    "  apiServerInternalURL: 'https://api-int.demo.example.com:6443',",
    '  resourceTags: [],',
    '};',
    '',
    `describeCloudProviderContract(${quote(n.name)}, () => ({`,
    `  provider: new ${n.className}(),`,
    '  facts,',
    "  settings: { namespace: 'openshift-karpenter', releaseVersion: '4.22.0', operandImage: '', crdDir: '/nonexistent' },",
    '  // A cluster the provider derives a default NodeClass from: worker MachineSets and their user-data Secret.',
    '  discovery: { facts, machineSets: [], secrets: [], maxPods: 250 },',
    `  nodeClass: { apiVersion: ${quote(nc.apiVersion)}, kind: ${quote(nc.kind)}, metadata: { name: 'default' }, spec: {} },`,
    '  // The same provider pointed at a cloud endpoint that does not answer (e.g. http://127.0.0.1:9, one',
    '  // attempt, short timeouts): its cloud calls must fail with TransientError.',
    `  unreachable: () => new ${n.className}(),`,
    '}));',
    '',
  ].join('\n');
}

/** The files of a new provider package, keyed by path relative to the workspace root. */
export function renderProviderPackage(n: ProviderNames, port: PortMember[]): Record<string, string> {
  return {
    [`${n.dir}/package.json`]: packageJson(n),
    [`${n.dir}/project.json`]: projectJson(n),
    [`${n.dir}/tsconfig.json`]: tsconfig(),
    [`${n.dir}/src/index.ts`]: indexSource(n),
    [`${n.dir}/src/module.ts`]: moduleSource(n),
    [`${n.dir}/src/${n.classFile}.ts`]: providerSource(n, port),
    [`${n.dir}/src/contract.test.ts`]: contractSource(n),
  };
}
