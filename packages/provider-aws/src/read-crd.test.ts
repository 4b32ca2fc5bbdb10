import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readCrd } from './aws-cloud-provider.js';

const yaml = (name: string) =>
  `apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: ${name}\nspec:\n  group: karpenter.sh\n`;

describe('readCrd', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'read-crd-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('parses the YAML file when there is no JSON beside it', () => {
    writeFileSync(join(dir, 'karpenter.sh_nodepools.yaml'), yaml('nodepools.karpenter.sh'));
    expect(readCrd(join(dir, 'karpenter.sh_nodepools.yaml')).metadata.name).toBe('nodepools.karpenter.sh');
  });

  it("reads the build's parsed JSON beside the YAML instead", () => {
    writeFileSync(join(dir, 'karpenter.sh_nodepools.yaml'), yaml('from-yaml'));
    writeFileSync(
      join(dir, 'karpenter.sh_nodepools.json'),
      JSON.stringify({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'from-json' } }),
    );
    expect(readCrd(join(dir, 'karpenter.sh_nodepools.yaml')).metadata.name).toBe('from-json');
  });

  it('names the JSON file when it is not valid, or not one CRD', () => {
    writeFileSync(join(dir, 'a.yaml'), yaml('a'));
    writeFileSync(join(dir, 'a.json'), '{"kind":');
    expect(() => readCrd(join(dir, 'a.yaml'))).toThrow(/a\.json/);
    writeFileSync(join(dir, 'a.json'), JSON.stringify({ kind: 'ConfigMap', metadata: { name: 'x' } }));
    expect(() => readCrd(join(dir, 'a.yaml'))).toThrow(/a\.json/);
  });

  it('names a missing file', () => {
    expect(() => readCrd(join(dir, 'missing.yaml'))).toThrow(/missing\.yaml/);
  });
});
