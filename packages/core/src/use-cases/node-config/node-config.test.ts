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
import { isPoolRendered, poolProblem, poolServing, renderPool, renderRegistrationTaint } from './render.js';
import { StatusBoard } from '../status-board.js';

const EC2NodeClass = { apiVersion: 'karpenter.k8s.aws/v1', kind: 'EC2NodeClass' } as const;

const aNodeClass = (name: string): KubeObject => ({ ...EC2NodeClass, metadata: { name }, spec: { amiFamily: 'Custom' } });
const poolRef = (name: string) => ({ ...Types.MachineConfigPool, name });
const taintRef = (nodeClass = 'default') => ({ ...Types.KubeletConfig, name: `set-karpenter-taint-${nodeClass}` });
const TAINT = { key: 'karpenter.sh/unregistered', value: 'true', effect: 'NoExecute' };

function world(initial: KubeObject[] = []) {
  const clock = new FakeClock();
  const store = new MemoryClusterStore(initial, () => isoNow(clock));
  const events = new RecordingEvents();
  const board = new StatusBoard();
  const reconciler = new NodeConfigReconciler({
    store,
    nodeClassType: EC2NodeClass,
    nodeClassLabel: 'karpenter.k8s.aws/ec2nodeclass',
    clock,
    events,
    logger: silentLogger,
    upgradePolicy: 'MachineConfigOperator',
    board,
  });
  const poolNames = async () => (await store.list(Types.MachineConfigPool)).map((p) => p.metadata.name);
  const kcNames = async () => (await store.list(Types.KubeletConfig)).map((p) => p.metadata.name);
  /** What MCC's render controller does to a new pool: configure it (from the worker MachineConfigs only). */
  const render = async (pool: string, extraSources: string[] = []) => {
    const current = (await store.get(poolRef(pool)))!;
    const configuration = { name: `rendered-${pool}-1`, source: [{ name: '00-worker' }, ...extraSources.map((name) => ({ name }))] };
    store.seed({ ...current, spec: { ...(current.spec as object), configuration }, status: { configuration } });
  };
  /** What MCC's kubelet-config controller does once it synced a KubeletConfig: the suffix annotation, its finalizer. */
  const syncKc = async (name: string, suffix = '') => {
    const kc = (await store.get({ ...Types.KubeletConfig, name }))!;
    const pool = `karpenter-${name.replace('set-karpenter-taint-', '')}`;
    store.seed({
      ...kc,
      metadata: {
        ...kc.metadata,
        annotations: { 'machineconfiguration.openshift.io/mc-name-suffix': suffix },
        finalizers: [`99-${pool}-generated-kubelet${suffix ? `-${suffix}` : ''}`],
      },
    });
  };
  return { clock, store, events, board, reconciler, poolNames, kcNames, render, syncKc };
}

describe('machineconfigpool.node-config', () => {
  it('creates a pool per NodeClass, and its registration-taint KubeletConfig once MCO configured it; then writes nothing', async () => {
    const w = world([aNodeClass('default'), aNodeClass('gpu')]);
    await w.reconciler.reconcile(w.reconciler.keysFor()[0]!);
    expect(await w.poolNames()).toEqual(['karpenter-default', 'karpenter-gpu']);
    // MCO's kubelet-config controller refuses a pool it has not configured and never retries on a pool event.
    expect(await w.kcNames()).toEqual([]);

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
    expect(w.events.events.map((e) => e.reason)).toEqual(['MachineConfigPoolCreated', 'MachineConfigPoolCreated']);

    await w.render('karpenter-gpu');
    await w.reconciler.reconcile('node-config');
    expect(await w.kcNames()).toEqual(['set-karpenter-taint-gpu']);
    const kc = await w.store.get(taintRef('gpu'));
    expect(kc!.metadata.labels).toEqual({ [Names.managedLabel]: 'true' });
    expect(kc!.spec).toEqual({
      machineConfigPoolSelector: { matchLabels: { 'pools.operator.machineconfiguration.openshift.io/karpenter-gpu': '' } },
      kubeletConfig: { registerWithTaints: [TAINT] },
    });
    await w.render('karpenter-default');
    await w.reconciler.reconcile('node-config');
    expect(await w.kcNames()).toEqual(['set-karpenter-taint-default', 'set-karpenter-taint-gpu']);

    w.store.clearWrites();
    await w.reconciler.reconcile('node-config');
    expect(w.store.writes).toEqual([]);
  });

  it('pools and their KubeletConfigs follow NodeClasses: added, removed', async () => {
    const w = world([aNodeClass('default')]);
    await w.reconciler.reconcile('node-config');
    await w.render('karpenter-default');
    await w.reconciler.reconcile('node-config');
    w.store.seed(aNodeClass('arm'));
    await w.reconciler.reconcile('node-config');
    await w.render('karpenter-arm');
    await w.reconciler.reconcile('node-config');
    expect(await w.poolNames()).toEqual(['karpenter-arm', 'karpenter-default']);
    expect(await w.kcNames()).toEqual(['set-karpenter-taint-arm', 'set-karpenter-taint-default']);

    w.store.remove({ ...EC2NodeClass, name: 'default' });
    await w.reconciler.reconcile('node-config');
    expect(await w.poolNames()).toEqual(['karpenter-arm']);
    expect(await w.kcNames()).toEqual(['set-karpenter-taint-arm']);

    w.store.remove({ ...EC2NodeClass, name: 'arm' });
    w.store.clearWrites();
    await w.reconciler.reconcile('node-config');
    expect(await w.poolNames()).toEqual([]);
    expect(await w.kcNames()).toEqual([]);
    expect(w.store.writes.map((x) => [x.verb, x.ref.kind, x.ref.name])).toEqual([
      ['delete', 'MachineConfigPool', 'karpenter-arm'],
      ['delete', 'KubeletConfig', 'set-karpenter-taint-arm'],
    ]);

    w.store.clearWrites();
    await w.reconciler.reconcile('node-config');
    expect(w.store.writes).toEqual([]);
  });

  it('deletes the shared KubeletConfig of an earlier release only once every pool has its own synced', async () => {
    const legacy: KubeObject = {
      ...Types.KubeletConfig,
      metadata: { name: Names.registrationTaintKubeletConfig, labels: { [Names.managedLabel]: 'true' } },
      spec: {
        machineConfigPoolSelector: { matchLabels: { [Names.managedLabel]: 'true' } },
        kubeletConfig: { registerWithTaints: [TAINT] },
      },
    };
    const w = world([aNodeClass('default'), legacy]);
    await w.reconciler.reconcile('node-config');
    await w.render('karpenter-default', ['99-karpenter-default-generated-kubelet']);
    await w.reconciler.reconcile('node-config');
    expect(await w.kcNames()).toEqual(['set-karpenter-taint', 'set-karpenter-taint-default']);
    await w.syncKc('set-karpenter-taint-default', '1');
    await w.reconciler.reconcile('node-config');
    expect(await w.kcNames()).toEqual(['set-karpenter-taint-default']);
  });

  it("MachineConfigPoolsReady names the pool and MCC's reason when MCO cannot serve a pool with the taint", async () => {
    const w = world([aNodeClass('default')]);
    await w.reconciler.reconcile('node-config');
    await w.render('karpenter-default');
    await w.reconciler.reconcile('node-config');
    // Waiting for MCO is not a failure.
    expect(w.board.get('machineconfigpool.node-config')?.condition).toMatchObject({ type: 'MachineConfigPoolsReady', status: 'True' });

    const kc = (await w.store.get(taintRef()))!;
    w.store.seed({
      ...kc,
      metadata: { ...kc.metadata, generation: 2 },
      status: {
        observedGeneration: 2,
        conditions: [{ type: 'Failure', status: 'False', message: 'Error: KubeletConfiguration: bad value' }],
      },
    });
    await w.reconciler.reconcile('node-config');
    expect(w.board.get('machineconfigpool.node-config')?.condition).toEqual({
      type: 'MachineConfigPoolsReady',
      status: 'False',
      reason: 'RegistrationTaintKubeletConfigFailed',
      message:
        'KubeletConfig set-karpenter-taint-default for MachineConfigPool karpenter-default failed: Error: KubeletConfiguration: bad value',
    });

    const pool = (await w.store.get(poolRef('karpenter-default')))!;
    w.store.seed({
      ...pool,
      status: {
        ...(pool.status as object),
        conditions: [
          {
            type: 'RenderDegraded',
            status: 'True',
            reason: '',
            message: 'Failed to render configuration for pool karpenter-default: bad MC',
          },
        ],
      },
    });
    await w.reconciler.reconcile('node-config');
    expect(w.board.get('machineconfigpool.node-config')?.condition).toMatchObject({
      status: 'False',
      reason: 'MachineConfigPoolRenderDegraded',
      message: 'MachineConfigPool karpenter-default cannot be rendered: Failed to render configuration for pool karpenter-default: bad MC',
    });
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
      ref: taintRef(),
      edit: {
        machineConfigPoolSelector: {
          matchLabels: { 'pools.operator.machineconfiguration.openshift.io/karpenter-default': '', 'team.example.com/zone': 'a' },
        },
      },
      field: 'machineConfigPoolSelector',
      removed: undefined,
    },
  ])('reverts $name with one write, then writes nothing', async ({ ref, edit, field, removed }) => {
    const w = world([aNodeClass('default')]);
    await w.reconciler.reconcile('node-config');
    await w.render('karpenter-default');
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
    // The squatter's pool is not the operator's: no KubeletConfig would be proven to reach it either.
    expect(w.store.writes).toEqual([]);
    expect(await w.store.get(poolRef('karpenter-default'))).toMatchObject({ spec: { paused: true } });
    expect((await w.store.get(poolRef('karpenter-default')))!.metadata.labels).toBeUndefined();
    expect(await w.poolNames()).toEqual(['karpenter-default', 'karpenter-legacy', 'worker']);
    expect(w.events.events.map((e) => [e.type, e.reason])).toContainEqual(['Warning', 'MachineConfigPoolConflict']);

    // No NodeClass left: still nothing unmanaged is deleted.
    w.store.remove({ ...EC2NodeClass, name: 'default' });
    w.store.clearWrites();
    await w.reconciler.reconcile('node-config');
    expect(w.store.writes).toEqual([]);
    expect(await w.store.get({ ...Types.KubeletConfig, name: 'set-max-pods' })).toBeDefined();
  });

  it.each([Names.registrationTaintKubeletConfig, 'set-karpenter-taint-default'])(
    'leaves an unmanaged KubeletConfig named %s alone',
    async (name) => {
      const theirs: KubeObject = { ...Types.KubeletConfig, metadata: { name }, spec: { kubeletConfig: {} } };
      const w = world([aNodeClass('default'), theirs]);
      await w.reconciler.reconcile('node-config');
      await w.render('karpenter-default');
      await w.reconciler.reconcile('node-config');
      w.store.remove({ ...EC2NodeClass, name: 'default' });
      await w.reconciler.reconcile('node-config');
      expect(w.store.writes.filter((x) => x.ref.name === name)).toEqual([]);
      const after = await w.store.get({ ...Types.KubeletConfig, name });
      expect(after?.spec).toEqual(theirs.spec);
      expect(after?.metadata.labels).toBeUndefined();
    },
  );

  describe("poolServing: whether MCS boots the pool's nodes with the registration taint", () => {
    const kc = (
      name: string,
      suffix: string | undefined,
      taints: unknown[] | undefined,
      finalizers: string[] = [],
      sync: { generation: number; observedGeneration: number; latest: string } = {
        generation: 1,
        observedGeneration: 1,
        latest: 'Success',
      },
    ): KubeObject => ({
      ...Types.KubeletConfig,
      metadata: {
        name,
        generation: sync.generation,
        ...(suffix === undefined ? {} : { annotations: { 'machineconfiguration.openshift.io/mc-name-suffix': suffix } }),
        finalizers,
      },
      spec: { kubeletConfig: taints ? { registerWithTaints: taints } : { maxPods: 500 } },
      status: { observedGeneration: sync.observedGeneration, conditions: [{ type: sync.latest, status: 'True' }] },
    });
    const ours = kc('set-karpenter-taint-default', '', [TAINT], ['99-karpenter-default-generated-kubelet']);
    const served = (sources: string[], extra: Record<string, unknown> = {}): KubeObject => ({
      ...renderPool('default', 'karpenter.k8s.aws/ec2nodeclass'),
      spec: { configuration: { name: 'rendered-karpenter-default-new', source: sources.map((name) => ({ name })) } },
      status: { configuration: { name: 'rendered-karpenter-default-old', source: sources.map((name) => ({ name })) }, ...extra },
    });
    const withTaint = ['00-worker', '99-karpenter-default-generated-kubelet', '99-worker-generated-kubelet'];

    it('serves once the served configuration is rendered from the taint MachineConfig', () => {
      expect(poolServing('default', served(withTaint), [ours])).toEqual({
        state: 'Serving',
        renderedConfig: 'rendered-karpenter-default-old',
      });
      expect(poolServing('default', served(['00-worker']), [ours]).state).toBe('Waiting');
      expect(poolServing('default', undefined, [ours]).state).toBe('Waiting');
      expect(poolServing('default', served(withTaint), []).state).toBe('Waiting');
      expect(poolServing('default', served(withTaint), [kc('set-karpenter-taint-default', undefined, [TAINT])]).state).toBe('Waiting');
    });

    it('reads the configuration MCS serves: spec once a node of the pool has updated', () => {
      const pool = served(withTaint, { updatedMachineCount: 1 });
      expect(poolServing('default', pool, [ours])).toEqual({ state: 'Serving', renderedConfig: 'rendered-karpenter-default-new' });
      (pool.spec as { configuration: { source: unknown[] } }).configuration.source = [{ name: '00-worker' }];
      expect(poolServing('default', pool, [ours]).state).toBe('Waiting');
    });

    it('follows the suffix MCO gave the generated MachineConfig', () => {
      const suffixed = kc('set-karpenter-taint-default', '1', [TAINT], ['99-karpenter-default-generated-kubelet-1']);
      expect(poolServing('default', served(['00-worker', '99-karpenter-default-generated-kubelet-1']), [suffixed]).state).toBe('Serving');
      expect(poolServing('default', served(['00-worker', '99-karpenter-default-generated-kubelet']), [suffixed]).state).toBe('Waiting');
    });

    it('fails when another KubeletConfig of the pool replaces the kubelet configuration without the taint', () => {
      const sources = [...withTaint, '99-karpenter-default-generated-kubelet-1'];
      const theirs = kc('max-pods-karpenter', '1', undefined, ['99-karpenter-default-generated-kubelet-1']);
      expect(poolServing('default', served(sources), [ours, theirs])).toEqual({
        state: 'Failed',
        reason: 'RegistrationTaintOverridden',
        message:
          'MachineConfig 99-karpenter-default-generated-kubelet-1 (KubeletConfig max-pods-karpenter) replaces the kubelet configuration of ' +
          '99-karpenter-default-generated-kubelet in MachineConfigPool karpenter-default without registerWithTaints ' +
          'karpenter.sh/unregistered:NoExecute; nodes would register untainted',
      });
      // One that registers the taint too keeps the pool serving.
      const keeps = kc('max-pods-karpenter', '1', [TAINT], ['99-karpenter-default-generated-kubelet-1']);
      expect(poolServing('default', served(sources), [ours, keeps]).state).toBe('Serving');
      // One whose spec gained the taint, before MCC regenerated its MachineConfig from it: not yet.
      const editing = kc('max-pods-karpenter', '1', [TAINT], ['99-karpenter-default-generated-kubelet-1'], {
        generation: 2,
        observedGeneration: 1,
        latest: 'Success',
      });
      expect(poolServing('default', served(sources), [ours, editing])).toEqual({
        state: 'Waiting',
        message:
          'KubeletConfig max-pods-karpenter registers the taint, but MCO has not regenerated 99-karpenter-default-generated-kubelet-1 from its generation 2 yet',
      });
      const failing = kc('max-pods-karpenter', '1', [TAINT], ['99-karpenter-default-generated-kubelet-1'], {
        generation: 2,
        observedGeneration: 2,
        latest: 'Failure',
      });
      expect(poolServing('default', served(sources), [ours, failing]).state).toBe('Waiting');
      // One that sorts before the operator's is replaced by it.
      const earlier = kc('set-karpenter-taint-default', '1', [TAINT], ['99-karpenter-default-generated-kubelet-1']);
      const first = kc('max-pods-karpenter', '', undefined, ['99-karpenter-default-generated-kubelet']);
      expect(poolServing('default', served(sources), [earlier, first]).state).toBe('Serving');
    });
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
    object: renderRegistrationTaint('default'),
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
