import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { scaffoldProvider, type FileTree } from './generator.js';
import { CLOUD_PROVIDER_PORT, readPort } from './port.js';
import { providerNames, quote, renderProviderPackage, type ProviderOptions } from './render.js';
import { insertAbove, MARKERS, OPERATOR_PACKAGE, PROVIDERS_FILE, wireOperatorPackage, wireProviders } from './wire.js';

const root = join(fileURLToPath(new URL('.', import.meta.url)), '../../../..');
const repoFile = (p: string): string => readFileSync(join(root, p), 'utf8');

/** A Tree over a map, recording writes. */
class MemoryTree implements FileTree {
  readonly root = '/memory';
  readonly writes: string[] = [];
  readonly files: Map<string, string>;
  constructor(files: Map<string, string>) {
    this.files = files;
  }
  exists(p: string): boolean {
    return this.files.has(p) || [...this.files.keys()].some((k) => k.startsWith(`${p}/`));
  }
  read(p: string): string | null {
    return this.files.get(p) ?? null;
  }
  write(p: string, content: string | Buffer): void {
    this.writes.push(p);
    this.files.set(p, content.toString());
  }
}

const repoTree = () => new MemoryTree(new Map([CLOUD_PROVIDER_PORT, PROVIDERS_FILE, OPERATOR_PACKAGE].map((p) => [p, repoFile(p)])));

describe('providerNames', () => {
  it.each([
    {
      name: 'one word',
      o: { name: 'foo' },
      className: 'FooCloudProvider',
      moduleFactory: 'fooProviderModule',
      platform: 'Foo',
      kind: 'FooNodeClass',
    },
    {
      name: 'kebab-case',
      o: { name: 'ibm-cloud' },
      className: 'IbmCloudCloudProvider',
      moduleFactory: 'ibmCloudProviderModule',
      platform: 'IbmCloud',
      kind: 'IbmCloudNodeClass',
    },
    {
      name: 'platform given',
      o: { name: 'gcp', platform: 'GCP' },
      className: 'GcpCloudProvider',
      moduleFactory: 'gcpProviderModule',
      platform: 'GCP',
      kind: 'GCPNodeClass',
    },
    {
      name: 'kind given',
      o: { name: 'gcp', platform: 'GCP', nodeClassKind: 'GCENodeClass' },
      className: 'GcpCloudProvider',
      moduleFactory: 'gcpProviderModule',
      platform: 'GCP',
      kind: 'GCENodeClass',
    },
  ])('$name', ({ o, className, moduleFactory, platform, kind }) => {
    const n = providerNames(o);
    expect(n).toMatchObject({
      className,
      moduleFactory,
      platform,
      dir: `packages/provider-${o.name}`,
      packageName: `@karpenter-operator/provider-${o.name}`,
    });
    expect(n.nodeClassType.kind).toBe(kind);
  });

  it.each<{ name: string; o: ProviderOptions; error: RegExp }>([
    { name: 'upper case', o: { name: 'Foo' }, error: /must be kebab-case/ },
    { name: 'underscore', o: { name: 'foo_bar' }, error: /must be kebab-case/ },
    { name: 'with prefix', o: { name: 'provider-foo' }, error: /without the "provider-" prefix/ },
    { name: 'taken', o: { name: 'aws' }, error: /is taken/ },
    { name: 'platform with a dash', o: { name: 'ovirt', platform: 'o-Virt' }, error: /platform "o-Virt" must be letters only/ },
    { name: 'bad apiVersion', o: { name: 'foo', nodeClassApiVersion: 'Foo/V1' }, error: /<group>\/v<version>/ },
  ])('refuses: $name', ({ o, error }) => {
    expect(() => providerNames(o)).toThrow(error);
  });
});

describe('readPort', () => {
  const port = readPort(repoFile(CLOUD_PROVIDER_PORT));

  it('reads every CloudProvider member with its TSDoc', () => {
    expect(port.map((m) => m.name)).toEqual(
      expect.arrayContaining([
        'platform',
        'nodeClassType',
        'assertSupported',
        'crds',
        'renderDefaultNodeClass',
        'verifyNodeClass',
        'describeInstances',
        'checkCredentials',
      ]),
    );
    for (const m of port) expect(m.doc.length, `${m.name} has TSDoc`).toBeGreaterThan(10);
    expect(port.find((m) => m.name === 'verifyNodeClass')).toMatchObject({
      kind: 'method',
      params: [
        { name: 'nodeClass', type: 'KubeObject', optional: false },
        { name: 'facts', type: 'ClusterFacts', optional: false },
      ],
      type: 'Promise<VerificationProblem[]>',
    });
    expect(port.find((m) => m.name === 'verifyNodeClass')!.typeNames.sort()).toEqual(['ClusterFacts', 'KubeObject', 'VerificationProblem']);
  });

  it('names a missing interface', () => {
    expect(() => readPort('export interface Other {}')).toThrow(/no interface CloudProvider/);
  });
});

describe('renderProviderPackage', () => {
  const n = providerNames({ name: 'foo' });
  const port = readPort(repoFile(CLOUD_PROVIDER_PORT));
  const files = renderProviderPackage(n, port);
  const cls = files['packages/provider-foo/src/foo-cloud-provider.ts']!;

  it('writes the package shape of provider-azure-stub', () => {
    expect(Object.keys(files).sort()).toEqual(
      [
        'package.json',
        'project.json',
        'tsconfig.json',
        'src/index.ts',
        'src/module.ts',
        'src/foo-cloud-provider.ts',
        'src/contract.test.ts',
      ]
        .map((f) => `packages/provider-foo/${f}`)
        .sort(),
    );
    expect(JSON.parse(files['packages/provider-foo/project.json']!)).toMatchObject({ name: 'provider-foo', tags: ['type:adapter'] });
    expect(JSON.parse(files['packages/provider-foo/package.json']!)).toMatchObject({
      name: '@karpenter-operator/provider-foo',
      type: 'module',
    });
  });

  it('gives every port method except assertSupported a body that says what to implement, from its TSDoc', () => {
    for (const m of port.filter((x) => x.kind === 'method' && x.name !== 'assertSupported')) {
      expect(cls).toContain(`throw implement(${quote(m.name)}, ${quote(m.doc)});`);
    }
    expect(cls).toContain('new Error(`provider-foo: implement ${member}: ${what}`)');
    expect(cls).toContain("readonly platform = 'Foo';");
  });

  it('imports inversify in module.ts only', () => {
    const importers = Object.entries(files)
      .filter(([, s]) => s.includes("from 'inversify'"))
      .map(([p]) => p);
    expect(importers).toEqual(['packages/provider-foo/src/module.ts']);
  });
});

describe('wiring', () => {
  const n = providerNames({ name: 'foo' });

  it('inserts above the marker with its indentation', () => {
    expect(insertAbove('a\n    // m here\nb', 'f.ts', '// m', 'x();')).toBe('a\n    x();\n    // m here\nb');
  });

  it.each([
    {
      name: 'providers.ts',
      file: PROVIDERS_FILE,
      wire: wireProviders,
      lines: ["import { fooProviderModule } from '@karpenter-operator/provider-foo';", '  Foo: () => fooProviderModule(),'],
    },
  ])('$name: the repository file carries the markers; one import and one line, refused twice', ({ file, wire, lines }) => {
    const before = repoFile(file);
    const after = wire(before, n);
    const added = after.split('\n').filter((l) => !before.split('\n').includes(l));
    expect(added).toEqual(lines);
    expect(() => wire(after, n)).toThrow(/already/);
  });

  it('names the missing marker', () => {
    expect(() => wireProviders('export const providerModules = {};\n', n)).toThrow(`marker comment "${MARKERS.imports}" not found`);
  });

  it('adds the package to the operator after the other providers, once', () => {
    const before = repoFile(OPERATOR_PACKAGE);
    const after = wireOperatorPackage(before, n);
    const deps = Object.keys((JSON.parse(after) as { dependencies: Record<string, string> }).dependencies);
    const providers = deps.filter((d) => d.startsWith('@karpenter-operator/provider-'));
    expect(providers.at(-1)).toBe('@karpenter-operator/provider-foo');
    expect(deps.indexOf('@karpenter-operator/provider-foo')).toBe(deps.indexOf(providers.at(-2)!) + 1);
    expect(wireOperatorPackage(after, n)).toBe(after);
  });
});

describe('scaffoldProvider', () => {
  it('writes the package and the two wiring files', () => {
    const tree = repoTree();
    scaffoldProvider(tree, { name: 'foo' });
    expect(tree.writes).toHaveLength(9);
    expect(tree.writes).toEqual(expect.arrayContaining([PROVIDERS_FILE, OPERATOR_PACKAGE, 'packages/provider-foo/src/contract.test.ts']));
  });

  it.each([
    {
      name: 'package exists',
      setup: (t: MemoryTree) => t.files.set('packages/provider-foo/package.json', '{}'),
      error: /packages\/provider-foo already exists/,
    },
    {
      name: 'marker removed',
      setup: (t: MemoryTree) => t.files.set(PROVIDERS_FILE, t.files.get(PROVIDERS_FILE)!.replace(MARKERS.modules, '//')),
      error: /generator:provider-modules/,
    },
    { name: 'port missing', setup: (t: MemoryTree) => t.files.delete(CLOUD_PROVIDER_PORT), error: /cloud-provider.ts not found/ },
  ])('refuses without writing anything: $name', ({ setup, error }) => {
    const tree = repoTree();
    setup(tree);
    tree.writes.length = 0;
    expect(() => scaffoldProvider(tree, { name: 'foo' })).toThrow(error);
    expect(tree.writes).toEqual([]);
  });
});
