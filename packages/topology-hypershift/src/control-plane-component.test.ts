import { describe, expect, it } from 'vitest';
import { ForbiddenError, TransientError, Types, type KubeObject, type OperandReport, type StatusReport } from '@karpenter-operator/core';
import { FakeClock, MemoryClusterStore } from '@karpenter-operator/core/testing';
import {
  autoNodeComponentsPending,
  ComponentConditions,
  ControlPlaneComponentType,
  OPERAND_COMPONENT,
  OPERATOR_COMPONENT,
  operandComponentStatus,
  type ComponentStatus,
} from './control-plane-component.js';
import { HostedControlPlaneType } from './hcp.js';
import { AUTONODE_CONDITION, COMPONENT_CONDITION, HyperShiftTopology } from './hypershift-topology.js';
import { aHostedControlPlane, HCP_NAME, HCP_NAMESPACE, INFRA_ID } from './testing/builders.js';

const VERSION = '4.22.0';

/** The operand Deployment: 1 replica, rolled out unless told otherwise, carrying release `version`. */
function deployment(opts: { updated?: number; available?: boolean; version?: string | null } = {}): KubeObject {
  const { updated = 1, available = true, version = VERSION } = opts;
  return {
    ...Types.Deployment,
    metadata: {
      name: 'karpenter',
      namespace: HCP_NAMESPACE,
      generation: 2,
      ...(version === null ? {} : { annotations: { 'release.openshift.io/version': version } }),
    },
    spec: { replicas: 1 },
    status: {
      observedGeneration: 2,
      replicas: 1,
      updatedReplicas: updated,
      readyReplicas: available ? 1 : 0,
      availableReplicas: available ? 1 : 0,
      conditions: [
        available
          ? { type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable', message: 'Deployment has minimum availability.' }
          : {
              type: 'Available',
              status: 'False',
              reason: 'MinimumReplicasUnavailable',
              message: 'Deployment does not have minimum availability.',
            },
      ],
    },
  };
}

const OBJECTS = [
  { group: '', kind: 'ServiceAccount', name: 'karpenter' },
  { group: 'apps', kind: 'Deployment', name: 'karpenter' },
];

/** `dep` null: no Deployment. */
const operand = (rolledOut: boolean, dep: KubeObject | null = deployment()): OperandReport => ({
  rolledOut,
  objects: OBJECTS,
  ...(dep ? { deployment: dep } : {}),
});

const cond = (s: ComponentStatus, type: string) => s.conditions.find((c) => c.type === type);

describe('operandComponentStatus', () => {
  it('rolled out at the release: Available and RolloutComplete True, the version, what it manages', () => {
    const s = operandComponentStatus(operand(true), VERSION);
    expect(s).toEqual({
      conditions: [
        { type: 'Available', status: 'True', reason: 'AsExpected', message: 'Deployment karpenter is available' },
        { type: 'RolloutComplete', status: 'True', reason: 'AsExpected', message: 'Deployment karpenter successfully rolled out' },
      ],
      version: VERSION,
      resources: OBJECTS,
    });
  });

  it('not rolled out: RolloutComplete False with the updated count, no version; Available as the Deployment says', () => {
    const s = operandComponentStatus(operand(false, deployment({ updated: 0, available: false })), VERSION);
    expect(cond(s, 'RolloutComplete')).toEqual({
      type: 'RolloutComplete',
      status: 'False',
      reason: 'WaitingForRolloutComplete',
      message: 'Waiting for deployment karpenter rollout to finish: 0 out of 1 new replicas have been updated',
    });
    expect(cond(s, 'Available')).toEqual({
      type: 'Available',
      status: 'False',
      reason: 'WaitingForAvailable',
      message: 'Deployment karpenter is not available: Deployment does not have minimum availability.',
    });
    expect(s.version).toBeUndefined();
  });

  it('rolled out but at another release version: not complete, no version', () => {
    const s = operandComponentStatus(operand(true, deployment({ version: '4.21.3' })), VERSION);
    expect(cond(s, 'RolloutComplete')).toMatchObject({
      status: 'False',
      reason: 'WaitingForRolloutComplete',
      message: 'Waiting for deployment karpenter rollout to finish: release 4.22.0 is not applied yet (it carries release 4.21.3)',
    });
    expect(cond(s, 'Available')?.status).toBe('True');
    expect(s.version).toBeUndefined();
  });

  it('the Deployment missing: both False, NotFound, as the API server words it', () => {
    const s = operandComponentStatus(operand(false, null), VERSION);
    const notFound = { status: 'False', reason: 'NotFound', message: 'deployments.apps "karpenter" not found' };
    expect(cond(s, 'Available')).toMatchObject(notFound);
    expect(cond(s, 'RolloutComplete')).toMatchObject(notFound);
    expect(s.version).toBeUndefined();
  });

  it('no Available condition on the Deployment yet: Available False, NotFound', () => {
    const dep = deployment();
    (dep.status as { conditions: unknown[] }).conditions = [];
    expect(cond(operandComponentStatus(operand(true, dep), VERSION), 'Available')).toMatchObject({
      status: 'False',
      reason: 'NotFound',
      message: 'karpenter Deployment Available condition not found',
    });
  });

  it('an HCP reporting no control-plane version: complete on the rollout alone, no version', () => {
    const s = operandComponentStatus(operand(true, deployment({ version: null })), undefined);
    expect(cond(s, 'RolloutComplete')?.status).toBe('True');
    expect(s.version).toBeUndefined();
  });

  it('objects not known yet: the Deployment alone', () => {
    expect(operandComponentStatus({ rolledOut: false, objects: [] }, VERSION).resources).toEqual([
      { group: 'apps', kind: 'Deployment', name: 'karpenter' },
    ]);
  });
});

describe("autoNodeComponentsPending (HyperShift's AutoNodeEnabled rule)", () => {
  const cpc = (name: string, rollout?: 'True' | 'False'): KubeObject => ({
    ...ControlPlaneComponentType,
    metadata: { name, namespace: HCP_NAMESPACE },
    status: rollout ? { conditions: [{ type: 'RolloutComplete', status: rollout, reason: 'r', message: `${name} says ${rollout}` }] } : {},
  });
  it('needs both components, each RolloutComplete True', () => {
    expect(autoNodeComponentsPending([cpc(OPERATOR_COMPONENT, 'True')])).toBe('waiting for components to be created');
    expect(autoNodeComponentsPending([cpc(OPERATOR_COMPONENT, 'True'), cpc(OPERAND_COMPONENT, 'False')])).toBe(
      'karpenter: karpenter says False',
    );
    expect(autoNodeComponentsPending([cpc(OPERATOR_COMPONENT), cpc(OPERAND_COMPONENT, 'True')])).toBe('karpenter-operator: not rolled out');
    expect(
      autoNodeComponentsPending([cpc('kube-apiserver'), cpc(OPERATOR_COMPONENT, 'True'), cpc(OPERAND_COMPONENT, 'True')]),
    ).toBeUndefined();
  });
});

describe('HyperShiftTopology.reportStatus: ControlPlaneComponent karpenter', () => {
  const CPC_REF = { ...ControlPlaneComponentType, namespace: HCP_NAMESPACE, name: OPERAND_COMPONENT };
  const HCP_REF = { ...HostedControlPlaneType, namespace: HCP_NAMESPACE, name: HCP_NAME };

  function setup(served = true, hcp = aHostedControlPlane({ status: { controlPlaneVersion: { desired: { version: VERSION } } } })) {
    const clock = new FakeClock();
    const now = () => new Date(clock.now()).toISOString();
    const management = new MemoryClusterStore([hcp], now);
    const topology = new HyperShiftTopology({
      management,
      guest: new MemoryClusterStore([], now),
      namespace: HCP_NAMESPACE,
      hcpName: HCP_NAME,
      clock,
      env: { clusterName: INFRA_ID, clusterEndpoint: 'https://api.demo.example.com:443', platform: 'AWS' },
      controlPlaneComponentServed: served,
    });
    return { clock, management, topology };
  }

  const folded = (op?: OperandReport): StatusReport => ({
    conditions: [
      { type: 'Available', status: 'True', reason: 'AsExpected', message: '' },
      { type: 'Progressing', status: op?.rolledOut ? 'False' : 'True', reason: 'AsExpected', message: '' },
    ],
    relatedObjects: [],
    ...(op ? { operand: op } : {}),
  });
  const cpcWrites = (m: MemoryClusterStore) => m.writes.filter((w) => w.ref.kind === ControlPlaneComponentType.kind);

  it('creates it owned by the HCP, sets its status through the status subresource, and a second reconcile writes nothing', async () => {
    const { management, topology } = setup();
    management.seed(deployment());
    const request = await topology.readRequest();
    await topology.reportStatus(folded(operand(true)), request);
    expect(cpcWrites(management).map((w) => w.verb)).toEqual(['create', 'patchStatus']);
    const cpc = (await management.get(CPC_REF))!;
    expect(cpc.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'HostedControlPlane', name: HCP_NAME, uid: 'hcp-uid-1', controller: true }),
    ]);
    const status = cpc.status as { version: string; conditions: Array<{ type: string; status: string }>; resources: unknown[] };
    expect(status.version).toBe(VERSION);
    expect(status.conditions.map((c) => [c.type, c.status])).toEqual([
      [ComponentConditions.Available, 'True'],
      [ComponentConditions.RolloutComplete, 'True'],
    ]);
    expect(status.resources).toEqual(OBJECTS);

    management.clearWrites();
    await topology.reportStatus(folded(operand(true)), await topology.readRequest());
    expect(management.writes).toEqual([]);
  });

  it('keeps the version reported last and lastTransitionTime of unchanged conditions while a new rollout runs', async () => {
    const { clock, management, topology } = setup();
    management.seed(deployment());
    await topology.reportStatus(folded(operand(true)), await topology.readRequest());
    const before = (await management.get(CPC_REF))!.status as { conditions: Array<{ type: string; lastTransitionTime: string }> };
    clock.advance(60_000);
    await topology.reportStatus(folded(operand(false, deployment({ updated: 0 }))), await topology.readRequest());
    const after = (await management.get(CPC_REF))!.status as {
      version: string;
      conditions: Array<{ type: string; status: string; lastTransitionTime: string }>;
    };
    expect(after.version).toBe(VERSION);
    expect(after.conditions.find((c) => c.type === 'RolloutComplete')?.status).toBe('False');
    expect(after.conditions.find((c) => c.type === 'Available')?.lastTransitionTime).toBe(
      before.conditions.find((c) => c.type === 'Available')?.lastTransitionTime,
    );
  });

  it('AutoNode off: deleted once the operand Deployment is gone, not before', async () => {
    const { management, topology } = setup();
    management.seed(deployment());
    await topology.reportStatus(folded(operand(true)), await topology.readRequest());
    await management.patch(HCP_REF, { spec: { autoNode: null } });
    await topology.reportStatus(folded(), await topology.readRequest());
    expect(await management.get(CPC_REF)).toBeDefined();
    await management.delete({ ...Types.Deployment, namespace: HCP_NAMESPACE, name: 'karpenter' });
    await topology.reportStatus(folded(), await topology.readRequest());
    expect(await management.get(CPC_REF)).toBeUndefined();
  });

  it('forbidden: condition KarpenterComponentReported False/Forbidden on the HCP, no throw; gone once the write works', async () => {
    const { management, topology } = setup();
    management.seed(deployment());
    management.failNext(new ForbiddenError('controlplanecomponents is forbidden'), 'create');
    await expect(topology.reportStatus(folded(operand(true)), await topology.readRequest())).resolves.toBeUndefined();
    const conditions = async () =>
      ((await management.get(HCP_REF))!.status as { conditions: Array<{ type: string; status: string; reason: string }> }).conditions;
    expect((await conditions()).find((c) => c.type === COMPONENT_CONDITION)).toMatchObject({ status: 'False', reason: 'Forbidden' });
    expect((await conditions()).find((c) => c.type === AUTONODE_CONDITION)).toBeDefined();
    await topology.reportStatus(folded(operand(true)), await topology.readRequest());
    expect((await conditions()).map((c) => c.type)).toEqual([AUTONODE_CONDITION]);
    expect(await management.get(CPC_REF)).toBeDefined();
  });

  it('another failure writing it still sets AutoNodeEnabled, then throws for a retry', async () => {
    const { management, topology } = setup();
    management.seed(deployment());
    management.failNext(new TransientError('HTTP 503'), 'create');
    await expect(topology.reportStatus(folded(operand(true)), await topology.readRequest())).rejects.toThrow(/503/);
    const hcp = (await management.get(HCP_REF))!;
    expect((hcp.status as { conditions: Array<{ type: string }> }).conditions.map((c) => c.type)).toEqual([AUTONODE_CONDITION]);
    await topology.reportStatus(folded(operand(true)), await topology.readRequest());
    expect(await management.get(CPC_REF)).toBeDefined();
  });

  it('a management cluster without the kind: nothing watched, read or written', async () => {
    const { management, topology } = setup(false);
    management.seed(deployment());
    expect(topology.statusWatches).toEqual([]);
    await topology.reportStatus(folded(operand(true)), await topology.readRequest());
    expect(cpcWrites(management)).toEqual([]);
  });

  it('served: watched by name in the HCP namespace', () => {
    expect(setup().topology.statusWatches).toEqual([
      { type: ControlPlaneComponentType, cluster: 'control', namespace: HCP_NAMESPACE, fieldSelector: 'metadata.name=karpenter' },
    ]);
  });
});
