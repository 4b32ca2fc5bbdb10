import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { KARPENTER_AWS_CRDS_DIR } from '@karpenter-operator/provider-aws/testing';
import { aWorkerMachineSet, openShiftAws, openShiftAwsObjects } from '@karpenter-operator/testkit';
import type { KubeObject } from '@karpenter-operator/core';
import { providerFor } from '../providers.js';
import { InputError } from './load-objects.js';
import { formatObjects, renderFrom } from './render.js';

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

function dirWith(objects: KubeObject[], asList = false): string {
  const d = mkdtempSync(join(tmpdir(), 'ko-render-'));
  dirs.push(d);
  if (asList) writeFileSync(join(d, 'all.json'), JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
  else writeFileSync(join(d, 'cluster.yaml'), objects.map((o) => stringify(o)).join('---\n'));
  return d;
}

const settings = {
  namespace: 'openshift-karpenter',
  releaseVersion: '4.22.0',
  operandImage: 'quay.io/k:1',
  crdDir: KARPENTER_AWS_CRDS_DIR,
};
const render = (from: string, kind?: string) =>
  renderFrom({
    from,
    output: 'yaml',
    settings,
    providerFor: (p) => providerFor(p, { crdDir: settings.crdDir }),
    ...(kind ? { kind } : {}),
  });
const seed = () => openShiftAwsObjects('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n') as KubeObject[];

describe('render', () => {
  it('prints CRDs, CredentialsRequests, the operand, EC2NodeClass default and its pool from a must-gather-like directory', async () => {
    const { objects, notes } = await render(dirWith(seed()));
    const kinds = objects.map((o) => `${o.kind}/${o.metadata.name}`);
    expect(kinds).toEqual(
      expect.arrayContaining([
        'CustomResourceDefinition/nodepools.karpenter.sh',
        'CustomResourceDefinition/ec2nodeclasses.karpenter.k8s.aws',
        'CredentialsRequest/karpenter-cloud-credentials',
        'Deployment/karpenter',
        'ClusterRole/karpenter-core',
        'EC2NodeClass/default',
        'MachineConfigPool/karpenter-default',
        'KubeletConfig/set-karpenter-taint-default',
      ]),
    );
    expect(notes.some((n) => n.includes('no Karpenter named default'))).toBe(true);
    const nc = objects.find((o) => o.kind === 'EC2NodeClass')!;
    expect((nc.spec as { amiFamily: string }).amiFamily).toBe('Custom');
    expect((nc.spec as { subnetSelectorTerms: unknown[] }).subnetSelectorTerms).toHaveLength(3);
  });

  it('filters by kind and reads List documents', async () => {
    const { objects } = await render(dirWith(seed(), true), 'EC2NodeClass');
    expect(objects.map((o) => o.kind)).toEqual(['EC2NodeClass']);
    expect(JSON.parse(formatObjects(objects, 'json')).kind).toBe('EC2NodeClass');
  });

  it("renders the operand with the CR's settings", async () => {
    const karpenter = {
      apiVersion: 'autoscaling.openshift.io/v1alpha1',
      kind: 'Karpenter',
      metadata: { name: 'default' },
      spec: { replicas: 3, settings: { batchMaxDuration: '30s', featureGates: { NodeRepair: true } } },
    };
    const { objects } = await render(dirWith([...seed(), karpenter]));
    const dep = objects.find((o) => o.kind === 'Deployment')! as {
      spec: { replicas: number; template: { spec: { containers: Array<{ env: Array<{ name: string; value?: string }> }> } } };
    } & KubeObject;
    expect(dep.spec.replicas).toBe(3);
    expect(dep.spec.template.spec.containers[0]!.env).toEqual(
      expect.arrayContaining([
        { name: 'BATCH_MAX_DURATION', value: '30s' },
        { name: 'FEATURE_GATES', value: 'NodeRepair=true' },
      ]),
    );
    expect(objects.some((o) => o.kind === 'PodDisruptionBudget')).toBe(true);
  });

  it.each([
    {
      name: 'an unknown field of the Karpenter CR',
      mutate: (o: KubeObject[]) => [
        ...o,
        {
          apiVersion: 'autoscaling.openshift.io/v1alpha1',
          kind: 'Karpenter',
          metadata: { name: 'default' },
          spec: { settings: { batchMaxDuraton: '30s' } },
        },
      ],
      message: /Karpenter default is invalid: spec\.settings\.batchMaxDuraton: unknown field/,
    },
    {
      name: 'an invalid setting of the Karpenter CR',
      mutate: (o: KubeObject[]) => [
        ...o,
        {
          apiVersion: 'autoscaling.openshift.io/v1alpha1',
          kind: 'Karpenter',
          metadata: { name: 'default' },
          spec: { settings: { vmMemoryOverheadPercent: 7.5 } },
        },
      ],
      message: /spec\.settings\.vmMemoryOverheadPercent: .*fraction/,
    },
    {
      name: 'no Infrastructure',
      mutate: (o: KubeObject[]) => o.filter((x) => x.kind !== 'Infrastructure'),
      message: /Infrastructure cluster/,
    },
    {
      name: 'malformed providerSpec names the MachineSet and field',
      mutate: (o: KubeObject[]) => [
        ...o.filter((x) => x.kind !== 'MachineSet'),
        aWorkerMachineSet('us-east-1a', undefined, { providerSpec: { ami: 'not-an-object' } }) as KubeObject,
      ],
      message: /MachineSet openshift-machine-api\/.*providerSpec\.value\.ami/,
    },
    { name: 'no user-data Secret', mutate: (o: KubeObject[]) => o.filter((x) => x.kind !== 'Secret'), message: /worker-user-data/ },
  ])('exits with a message: $name', async ({ mutate, message }) => {
    let err: unknown;
    try {
      await render(dirWith(mutate(seed())));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InputError);
    expect((err as Error).message).toMatch(message);
  });
});

describe('render without worker MachineSets (offline conventions)', () => {
  it('renders the conventional names and marks each convention-derived value unverified in the notes', async () => {
    const { objects, notes } = await render(dirWith(seed().filter((o) => o.kind !== 'MachineSet')), 'EC2NodeClass');
    const spec = objects[0]!.spec as Record<string, unknown>;
    const infra = openShiftAws.infraId;
    expect(spec.securityGroupSelectorTerms).toEqual([{ name: `${infra}-node` }, { name: `${infra}-lb` }]);
    expect(spec.instanceProfile).toBe(`${infra}-worker-profile`);
    expect(spec.amiSelectorTerms).toEqual([{ id: openShiftAws.amis.x86_64 }]);
    expect(spec.subnetSelectorTerms).toEqual([{ tags: { [openShiftAws.clusterTagKey]: '*', 'kubernetes.io/role/internal-elb': '*' } }]);
    const unverified = notes.filter((n) => n.includes('unverified'));
    for (const field of ['subnetSelectorTerms', 'securityGroupSelectorTerms', 'instanceProfile', 'amiSelectorTerms']) {
      expect(unverified.some((n) => n.includes(`spec.${field}`))).toBe(true);
    }
    expect(notes).toContain(
      'EC2NodeClass default: DiscoveredFrom: subnets=Conventions, securityGroups=Conventions, instanceProfile=Conventions, ami=Conventions, userData=Conventions, blockDevice=Conventions',
    );
  });

  it('marks nothing unverified when MachineSets are the source', async () => {
    const { notes } = await render(dirWith(seed()), 'EC2NodeClass');
    expect(notes.filter((n) => n.includes('unverified'))).toEqual([]);
    expect(notes.some((n) => n.includes('subnets=MachineSets'))).toBe(true);
  });
});

describe('render through a pipe', () => {
  it('writes the whole output into a pipe before exiting (more than 64 KiB of JSON parses)', async () => {
    const { spawnSync } = await import('node:child_process');
    const { existsSync } = await import('node:fs');
    const repo = join(import.meta.dirname, '../../../..');
    const node = join(repo, 'node_modules/.bin/node');
    const main = join(repo, 'apps/operator/dist/main.js');
    if (!existsSync(main)) {
      const b = spawnSync(node, [join(repo, 'apps/operator/scripts/build.mjs')], { cwd: repo, encoding: 'utf8' });
      expect(b.status, b.stderr).toBe(0);
    }
    // stdout is a pipe here (spawnSync reads it), as in `render ... | python3 -c 'json.load(sys.stdin)'`.
    const r = spawnSync(node, [main, 'render', '--from', dirWith(seed()), '--output', 'json'], {
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
      timeout: 60_000,
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.length).toBeGreaterThan(64 * 1024);
    const parsed = JSON.parse(r.stdout) as { items?: unknown[] } | unknown[];
    expect(Array.isArray(parsed) ? parsed.length : (parsed.items ?? []).length).toBeGreaterThan(5);
  }, 90_000);

  it('renders the operand with the EC2 endpoint of OPERAND_AWS_ENDPOINT_URL_EC2, as run applies it', async () => {
    const { spawnSync } = await import('node:child_process');
    const repo = join(import.meta.dirname, '../../../..');
    const r = spawnSync(
      join(repo, 'node_modules/.bin/node'),
      [join(repo, 'apps/operator/dist/main.js'), 'render', '--from', dirWith(seed()), '--kind', 'Deployment', '--output', 'json'],
      { encoding: 'utf8', timeout: 60_000, env: { ...process.env, OPERAND_AWS_ENDPOINT_URL_EC2: 'http://ec2.example.invalid:4566' } },
    );
    expect(r.status, r.stderr).toBe(0);
    const dep = JSON.parse(r.stdout) as {
      spec: { template: { spec: { containers: Array<{ env?: Array<{ name: string; value?: string }> }> } } };
    };
    expect(dep.spec.template.spec.containers[0]!.env).toContainEqual({
      name: 'AWS_ENDPOINT_URL_EC2',
      value: 'http://ec2.example.invalid:4566',
    });
  }, 90_000);
});
