import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../model/kube.js';
import { Types } from '../../model/kube.js';
import { Names } from '../../model/names.js';
import { isoNow } from '../../ports/clock.js';
import { silentLogger } from '../../ports/logger.js';
import { FakeClock } from '../../testing/fake-clock.js';
import { MemoryClusterStore } from '../../testing/memory-cluster-store.js';
import { RecordingEvents } from '../../testing/recording.js';
import { NodeConfigReconciler } from './node-config.js';
import { isPoolRendered, poolProblem, renderPool, renderRegistrationTaint } from './render.js';

const EC2NodeClass = { apiVersion: 'karpenter.k8s.aws/v1', kind: 'EC2NodeClass' } as const;

const aNodeClass = (name: string): KubeObject => ({ ...EC2NodeClass, metadata: { name }, spec: { amiFamily: 'Custom' } });
const poolRef = (name: string) => ({ ...Types.MachineConfigPool, name });
const taintRef = { ...Types.KubeletConfig, name: Names.registrationTaintKubeletConfig };

function world(initial: KubeObject[] = []) {
  const clock = new FakeClock();
  const store = new MemoryClusterStore(initial, () => isoNow(clock));
  const events = new RecordingEvents();
  const reconciler = new NodeConfigReconciler({
    store,
    nodeClassType: EC2NodeClass,
    nodeClassLabel: 'karpenter.k8s.aws/ec2nodeclass',
    clock,
    events,
    logger: silentLogger,
    upgradePolicy: 'MachineConfigOperator',
  });
  const poolNames = async () => (await store.list(Types.MachineConfigPool)).map((p) => p.metadata.name);
  return { clock, store, events, reconciler, poolNames };
}

describe('machineconfigpool.node-config', () => {
  it('creates a pool per NodeClass and the registration-taint KubeletConfig; the second pass writes nothing', async () => {
    const w = world([aNodeClass('default'), aNodeClass('gpu')]);
    await w.reconciler.reconcile(w.reconciler.keysFor()[0]!);
    expect(await w.poolNames()).toEqual(['karpenter-default', 'karpenter-gpu']);

    const pool = await w.store.get(poolRef('karpenter-gpu'));
    expect(pool!.metadata.labels).toEqual({
      [Names.managedLabel]: 'true',
      'pools.operator.machineconfiguration.openshift.io/karpenter-gpu': '',
    });
    expect(pool!.spec).toEqual({
      nodeSelector: { matchLabels: { 'karpenter.k8s.aws/ec2nodeclass': 'gpu' } },
      machineConfigSelector: {
        matchExpressions: [{ key: 'machineconfiguration.openshift.io/role', operator: 'In', values: ['worker', 'karpenter-gpu'] }],
      },
    });
    expect((pool!.spec as { paused?: boolean }).paused).toBeUndefined();

    const kc = await w.store.get(taintRef);
    expect(kc!.spec).toEqual({
      machineConfigPoolSelector: { matchLabels: { [Names.managedLabel]: 'true' } },
      kubeletConfig: { registerWithTaints: [{ key: 'karpenter.sh/unregistered', value: 'true', effect: 'NoExecute' }] },
    });
    expect(w.events.events.map((e) => e.reason)).toEqual(['MachineConfigPoolCreated', 'MachineConfigPoolCreated']);

    w.store.clearWrites();
    await w.reconciler.reconcile('node-config');
    expect(w.store.writes).toEqual([]);
  });

  it('pools follow NodeClasses: added, removed, and the KubeletConfig goes with the last one', async () => {
    const w = world([aNodeClass('default')]);
    await w.reconciler.reconcile('node-config');
    w.store.seed(aNodeClass('arm'));
    await w.reconciler.reconcile('node-config');
    expect(await w.poolNames()).toEqual(['karpenter-arm', 'karpenter-default']);

    w.store.remove({ ...EC2NodeClass, name: 'default' });
    await w.reconciler.reconcile('node-config');
    expect(await w.poolNames()).toEqual(['karpenter-arm']);
    expect(await w.store.get(taintRef)).toBeDefined();

    w.store.remove({ ...EC2NodeClass, name: 'arm' });
    w.store.clearWrites();
    await w.reconciler.reconcile('node-config');
    expect(await w.poolNames()).toEqual([]);
    expect(await w.store.get(taintRef)).toBeUndefined();
    expect(w.store.writes.map((x) => [x.verb, x.ref.kind, x.ref.name])).toEqual([
      ['delete', 'MachineConfigPool', 'karpenter-arm'],
      ['delete', 'KubeletConfig', 'set-karpenter-taint'],
    ]);

    w.store.clearWrites();
    await w.reconciler.reconcile('node-config');
    expect(w.store.writes).toEqual([]);
  });

  it.each([
    {
      name: 'a key added to the pool nodeSelector',
      ref: poolRef('karpenter-default'),
      edit: { nodeSelector: { matchLabels: { 'karpenter.k8s.aws/ec2nodeclass': 'default', 'team.example.com/zone': 'a' } } },
      field: 'nodeSelector',
      removed: 'spec.nodeSelector.matchLabels.team.example.com/zone',
    },
    {
      name: 'an expression added to the pool nodeSelector',
      ref: poolRef('karpenter-default'),
      edit: {
        nodeSelector: {
          matchLabels: { 'karpenter.k8s.aws/ec2nodeclass': 'default' },
          matchExpressions: [{ key: 'x', operator: 'Exists' }],
        },
      },
      field: 'nodeSelector',
      removed: 'spec.nodeSelector.matchExpressions',
    },
    {
      name: 'a key added to the KubeletConfig pool selector',
      ref: taintRef,
      edit: { machineConfigPoolSelector: { matchLabels: { [Names.managedLabel]: 'true', 'team.example.com/zone': 'a' } } },
      field: 'machineConfigPoolSelector',
      removed: undefined,
    },
  ])('reverts $name with one write, then writes nothing', async ({ ref, edit, field, removed }) => {
    const w = world([aNodeClass('default')]);
    await w.reconciler.reconcile('node-config');
    const before = await w.store.get(ref);
    w.store.seed({ ...before!, spec: { ...(before!.spec as object), ...edit } });
    w.store.clearWrites();
    await w.reconciler.reconcile('node-config');
    expect(w.store.writes.map((x) => [x.verb, x.ref.kind, x.ref.name])).toEqual([['apply', ref.kind, ref.name]]);
    expect(((await w.store.get(ref))!.spec as Record<string, unknown>)[field]).toEqual((before!.spec as Record<string, unknown>)[field]);
    if (removed) expect(w.events.events.at(-1)?.message).toContain(`removing ${removed}`);
    w.store.clearWrites();
    await w.reconciler.reconcile('node-config');
    expect(w.store.writes).toEqual([]);
  });

  it('keeps the pool while its NodeClass is being deleted', async () => {
    const deleting = {
      ...aNodeClass('old'),
      metadata: { name: 'old', deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['karpenter.k8s.aws/termination'] },
    };
    const w = world([deleting]);
    await w.reconciler.reconcile('node-config');
    expect(await w.poolNames()).toEqual(['karpenter-old']);
  });

  it('never touches pools or KubeletConfigs it does not manage, even on a name collision', async () => {
    const worker: KubeObject = {
      ...Types.MachineConfigPool,
      metadata: { name: 'worker', labels: { 'pools.operator.machineconfiguration.openshift.io/worker': '' } },
      spec: { nodeSelector: { matchLabels: { 'node-role.kubernetes.io/worker': '' } } },
    };
    const squatter: KubeObject = { ...Types.MachineConfigPool, metadata: { name: 'karpenter-default' }, spec: { paused: true } };
    const userKarpenterPool: KubeObject = { ...Types.MachineConfigPool, metadata: { name: 'karpenter-legacy' }, spec: {} };
    const userKc: KubeObject = { ...Types.KubeletConfig, metadata: { name: 'set-max-pods' }, spec: { kubeletConfig: { maxPods: 500 } } };
    const w = world([aNodeClass('default'), worker, squatter, userKarpenterPool, userKc]);

    await w.reconciler.reconcile('node-config');
    await w.reconciler.reconcile('node-config');
    expect(w.store.writes.map((x) => [x.verb, x.ref.kind, x.ref.name])).toEqual([['apply', 'KubeletConfig', 'set-karpenter-taint']]);
    expect(await w.store.get(poolRef('karpenter-default'))).toMatchObject({ spec: { paused: true } });
    expect((await w.store.get(poolRef('karpenter-default')))!.metadata.labels).toBeUndefined();
    expect(await w.poolNames()).toEqual(['karpenter-default', 'karpenter-legacy', 'worker']);
    expect(w.events.events.map((e) => [e.type, e.reason])).toContainEqual(['Warning', 'MachineConfigPoolConflict']);

    // No NodeClass left: still nothing unmanaged is deleted.
    w.store.remove({ ...EC2NodeClass, name: 'default' });
    w.store.clearWrites();
    await w.reconciler.reconcile('node-config');
    expect(w.store.writes.map((x) => [x.verb, x.ref.name])).toEqual([['delete', 'set-karpenter-taint']]);
    expect(await w.store.get({ ...Types.KubeletConfig, name: 'set-max-pods' })).toBeDefined();
  });

  it('leaves an unmanaged KubeletConfig named set-karpenter-taint alone', async () => {
    const theirs: KubeObject = {
      ...Types.KubeletConfig,
      metadata: { name: Names.registrationTaintKubeletConfig },
      spec: { kubeletConfig: {} },
    };
    const w = world([aNodeClass('default'), theirs]);
    await w.reconciler.reconcile('node-config');
    expect(w.store.writes.map((x) => [x.verb, x.ref.kind])).toEqual([['apply', 'MachineConfigPool']]);
  });

  it.each([
    { name: 'a short name', nodeClass: 'default', ok: true },
    { name: 'a dotted name', nodeClass: 'gpu.large', ok: true },
    { name: '53 characters (the longest)', nodeClass: 'a'.repeat(53), ok: true },
    { name: '54 characters', nodeClass: 'a'.repeat(54), ok: false },
  ])('pool name limits: $name', ({ nodeClass, ok }) => {
    expect(poolProblem(nodeClass) === undefined).toBe(ok);
  });

  it('reports a pool as rendered only once MCO set status.configuration.name', () => {
    expect(isPoolRendered(undefined)).toBe(false);
    expect(isPoolRendered({ ...renderPool('x', 'karpenter.k8s.aws/ec2nodeclass'), status: {} })).toBe(false);
    expect(
      isPoolRendered({
        ...renderPool('x', 'karpenter.k8s.aws/ec2nodeclass'),
        status: { configuration: { name: 'rendered-karpenter-x-abc' } },
      }),
    ).toBe(true);
  });
});

// --- the rendered objects against the real CRD schemas (generated/crds from `npm run setup`, or the Go module cache)

const OpenShiftApi =
  '/root/go/pkg/mod/github.com/openshift/api@v0.0.0-20260318185450-1f2fa3f09f4e/machineconfiguration/v1/zz_generated.crd-manifests';
const repoRoot = join(import.meta.dirname, '../../../../..');
const crdFile = (plural: string, goFile: string): string | undefined =>
  [join(repoRoot, 'generated/crds/openshift', `${plural}.machineconfiguration.openshift.io.yaml`), join(OpenShiftApi, goFile)].find((p) =>
    existsSync(p),
  );

interface Schema {
  type?: string;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  items?: Schema;
  required?: string[];
  enum?: unknown[];
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
}

/** A structural check: every field is known to the schema, of the right type, required fields present. */
function violations(value: unknown, schema: Schema, path: string): string[] {
  if (schema['x-kubernetes-int-or-string'])
    return typeof value === 'number' || typeof value === 'string' ? [] : [`${path}: not int-or-string`];
  if (schema.enum && !schema.enum.includes(value)) return [`${path}: ${String(value)} not in enum`];
  switch (schema.type) {
    case 'string':
      return typeof value === 'string' ? [] : [`${path}: not a string`];
    case 'boolean':
      return typeof value === 'boolean' ? [] : [`${path}: not a boolean`];
    case 'integer':
      return Number.isInteger(value) ? [] : [`${path}: not an integer`];
    case 'array':
      return Array.isArray(value) ? value.flatMap((v, i) => violations(v, schema.items ?? {}, `${path}[${i}]`)) : [`${path}: not an array`];
    case 'object': {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return [`${path}: not an object`];
      const obj = value as Record<string, unknown>;
      const out = (schema.required ?? []).filter((k) => !(k in obj)).map((k) => `${path}.${k}: required`);
      for (const [k, v] of Object.entries(obj)) {
        const sub = schema.properties?.[k] ?? (typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined);
        if (sub) out.push(...violations(v, sub, `${path}.${k}`));
        else if (!schema['x-kubernetes-preserve-unknown-fields'] && !schema.additionalProperties) out.push(`${path}.${k}: unknown field`);
      }
      return out;
    }
    default:
      return [];
  }
}

describe.each([
  {
    name: 'MachineConfigPool',
    object: renderPool('default', 'karpenter.k8s.aws/ec2nodeclass'),
    file: crdFile('machineconfigpools', '0000_80_machine-config_01_machineconfigpools-Default.crd.yaml'),
  },
  {
    name: 'KubeletConfig',
    object: renderRegistrationTaint(),
    file: crdFile('kubeletconfigs', '0000_80_machine-config_01_kubeletconfigs.crd.yaml'),
  },
])('$name validates against its CRD', ({ object, file }) => {
  it.skipIf(!file)('has only known fields of the right types', () => {
    const crd = parse(readFileSync(file!, 'utf8')) as {
      spec: { names: { kind: string }; versions: Array<{ name: string; schema: { openAPIV3Schema: Schema } }> };
    };
    expect(crd.spec.names.kind).toBe(object.kind);
    const version = crd.spec.versions.find((v) => `machineconfiguration.openshift.io/${v.name}` === object.apiVersion)!;
    const schema = version.schema.openAPIV3Schema;
    const { metadata: _metadata, apiVersion: _a, kind: _k, ...body } = object;
    expect(
      violations(
        { apiVersion: object.apiVersion, kind: object.kind, ...body },
        { ...schema, required: schema.required ?? [] },
        object.kind,
      ),
    ).toEqual([]);
    // The checker itself catches a stray field.
    expect(violations({ ...body, spec: { ...(body.spec as object), bogus: 1 } }, schema, object.kind)).toEqual([
      `${object.kind}.spec.bogus: unknown field`,
    ]);
  });
});
