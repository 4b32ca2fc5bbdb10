import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { manifestInclusionBinary } from '@karpenter-operator/testkit';
import { REPO } from '../support/operator-process.js';

/**
 * install/ through the CVO's own inclusion filter: tools/manifest-inclusion runs library-go's
 * `pkg/manifest` (`Manifest.Include`) at the pinned version, with the enabled feature gates taken from the
 * pinned openshift/api's feature table for the feature set and cluster profile. Nothing here restates which
 * feature set enables the gate: that comes from openshift/api.
 */
const INSTALL = join(REPO, 'install');

interface Judged {
  featureSet: string;
  profile: string;
  gates: Record<string, boolean>;
  capabilities: string[];
  manifests: Array<{ file: string; kind: string; namespace?: string; name: string; included: boolean; reason?: string }>;
}

function judge(dir: string, args: string[]): Judged {
  const r = spawnSync(manifestInclusionBinary(), ['--dir', dir, ...args], { encoding: 'utf8', timeout: 60_000 });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Judged;
}

/** Every document of every manifest file in DIR, as `file kind namespace/name`. */
function documents(dir: string): string[] {
  const out: string[] = [];
  for (const f of readdirSync(dir).filter((x) => /\.(ya?ml|json)$/.test(x))) {
    for (const d of parseAllDocuments(readFileSync(join(dir, f), 'utf8'))) {
      const o = d.toJS() as { kind?: string; metadata?: { name?: string; namespace?: string } } | null;
      if (o?.kind) out.push(`${f} ${o.kind} ${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`);
    }
  }
  return out.sort();
}
const ids = (j: Judged) => j.manifests.map((m) => `${m.file} ${m.kind} ${m.namespace ?? ''}/${m.name}`).sort();

const scratch: string[] = [];
afterAll(() => scratch.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('install/ under the CVO inclusion filter (library-go pkg/manifest)', () => {
  it('judges every document in install/', () => {
    const j = judge(INSTALL, ['--feature-set', 'Default']);
    expect(ids(j)).toEqual(documents(INSTALL));
    expect(j.manifests.length).toBeGreaterThan(20);
  });

  it.each([
    {
      name: 'Default, self-managed HA',
      args: ['--feature-set', 'Default'],
      applies: false,
      gate: false,
      reason: /feature gate KarpenterOperator is required but not enabled/,
    },
    {
      name: 'TechPreviewNoUpgrade, self-managed HA',
      args: ['--feature-set', 'TechPreviewNoUpgrade'],
      applies: false,
      gate: false,
      reason: /feature gate KarpenterOperator is required but not enabled/,
    },
    {
      name: 'DevPreviewNoUpgrade, self-managed HA',
      args: ['--feature-set', 'DevPreviewNoUpgrade'],
      applies: true,
      gate: true,
      reason: undefined,
    },
    {
      // HyperShift's hosted CVO: the hosted profile and the internal-openshift-hosted exclusion.
      name: 'DevPreviewNoUpgrade, hosted (ibm-cloud-managed, EXCLUDE_MANIFESTS=internal-openshift-hosted)',
      args: ['--feature-set', 'DevPreviewNoUpgrade', '--profile', 'ibm-cloud-managed', '--exclude', 'internal-openshift-hosted'],
      applies: false,
      gate: false,
      reason: /exclude\.release\.openshift\.io\/internal-openshift-hosted=true/,
    },
    {
      name: 'DevPreviewNoUpgrade, hosted profile without the exclusion',
      args: ['--feature-set', 'DevPreviewNoUpgrade', '--profile', 'ibm-cloud-managed'],
      applies: false,
      gate: false,
      reason: /feature gate KarpenterOperator is required but not enabled|include\.release\.openshift\.io\/ibm-cloud-managed unset/,
    },
  ])('$name: applies all = $applies, none otherwise', ({ args, applies, gate, reason }) => {
    const j = judge(INSTALL, args);
    expect(j.gates).toEqual({ KarpenterOperator: gate });
    const included = j.manifests.filter((m) => m.included);
    expect(included.length, JSON.stringify(j.manifests.filter((m) => m.included !== applies).slice(0, 3))).toBe(
      applies ? j.manifests.length : 0,
    );
    for (const m of j.manifests.filter((x) => !x.included)) expect(m.reason, `${m.file} ${m.kind}/${m.name}`).toMatch(reason!);
  });

  it('leaves out the CredentialsRequests, and only them, without the CloudCredential capability', () => {
    const j = judge(INSTALL, ['--feature-set', 'DevPreviewNoUpgrade', '--capabilities', 'baremetal,Console,Ingress']);
    const excluded = j.manifests.filter((m) => !m.included);
    expect(excluded.map((m) => m.kind)).toEqual(['CredentialsRequest', 'CredentialsRequest']);
    for (const m of excluded) expect(m.reason).toMatch(/CloudCredential/);
  });

  it('would catch a manifest without the gate annotation: it applies on Default', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ko-inclusion-'));
    scratch.push(dir);
    cpSync(INSTALL, dir, { recursive: true });
    const file = join(dir, '0000_50_karpenter-operator_00_namespace.yaml');
    const docs = parseAllDocuments(readFileSync(file, 'utf8')).map(
      (d) => d.toJS() as { metadata: { annotations: Record<string, string> } },
    );
    for (const d of docs) delete d.metadata.annotations['release.openshift.io/feature-gate'];
    writeFileSync(file, docs.map((d) => stringify(d)).join('---\n'));
    const j = judge(dir, ['--feature-set', 'Default']);
    expect(j.manifests.filter((m) => m.included).map((m) => `${m.kind}/${m.name}`)).toEqual(['Namespace/openshift-karpenter']);
  });

  it('refuses an unknown feature set in one line', () => {
    const r = spawnSync(manifestInclusionBinary(), ['--dir', INSTALL, '--feature-set', 'NoSuchSet'], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(1);
    expect(r.stderr.trimEnd()).toBe('manifest-inclusion: --feature-set "NoSuchSet" is not a fixed feature set of openshift/api');
  });
});
