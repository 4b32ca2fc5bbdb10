import { describe, expect, it } from 'vitest';
import { foldStatus, type StatusInputs } from './status-fold.js';

const base: StatusInputs = {
  request: 'present',
  crdsPending: [],
  useCaseConditions: [],
  failures: [],
  degradedAfter: 3,
  releaseVersion: '4.22.0',
  generation: 2,
};
const rolled = {
  generation: 3,
  observedGeneration: 3,
  replicas: 2,
  currentReplicas: 2,
  updatedReplicas: 2,
  availableReplicas: 2,
  atRelease: true,
};

const get = (s: ReturnType<typeof foldStatus>, type: string) => s.conditions.find((c) => c.type === type)!;

describe('foldStatus', () => {
  it.each([
    {
      name: 'no CR: available idle, version reported',
      in: { request: 'absent' as const },
      available: ['True', 'KarpenterNotFound'],
      progressing: ['False', 'KarpenterNotFound'],
      degraded: 'False',
      version: '4.22.0',
    },
    {
      name: 'unsupported platform: available, no operand',
      in: { unsupported: 'Azure is not supported yet' },
      available: ['True', 'PlatformNotSupported'],
      progressing: ['False', 'PlatformNotSupported'],
      degraded: 'False',
      version: '4.22.0',
    },
    {
      name: 'unknown platform: nothing deployed, degraded',
      in: { unsupported: 'platform Foo is not supported', unknownPlatform: true },
      available: ['True', 'PlatformNotSupported'],
      progressing: ['False', 'PlatformNotSupported'],
      degraded: 'True',
      version: '4.22.0',
    },
    {
      name: 'waiting for CRDs',
      in: { crdsPending: ['nodepools.karpenter.sh'] },
      available: ['False', 'OperandNotYetCreated'],
      progressing: ['True', 'WaitingForCRDs'],
      degraded: 'False',
      version: undefined,
    },
    {
      name: 'waiting for credentials',
      in: { missingCredentials: 'openshift-karpenter/karpenter-cloud-credentials' },
      available: ['False', 'OperandNotYetCreated'],
      progressing: ['True', 'WaitingForCredentials'],
      degraded: 'False',
      version: undefined,
    },
    {
      name: 'rolled out',
      in: { operand: rolled },
      available: ['True', 'AsExpected'],
      progressing: ['False', 'AsExpected'],
      degraded: 'False',
      version: '4.22.0',
    },
    {
      name: 'rolling out is not degraded',
      in: { operand: { ...rolled, updatedReplicas: 1 } },
      available: ['True', 'AsExpected'],
      progressing: ['True', 'OperandRollingOut'],
      degraded: 'False',
      version: undefined,
    },
    {
      // A surge rollout: both new pods exist, one not ready yet, and the old pod is still available (2 in all).
      name: 'all updated but an old pod still counted available is still rolling out',
      in: { operand: { ...rolled, currentReplicas: 3, availableReplicas: 2 } },
      available: ['True', 'AsExpected'],
      progressing: ['True', 'OperandRollingOut'],
      degraded: 'False',
      version: undefined,
    },
    {
      name: 'new generation not observed yet',
      in: { operand: { ...rolled, generation: 4 } },
      available: ['True', 'AsExpected'],
      progressing: ['True', 'OperandRollingOut'],
      degraded: 'False',
      version: undefined,
    },
    {
      name: 'a previous release fully rolled out is not this release',
      in: { operand: { ...rolled, atRelease: false } },
      available: ['True', 'AsExpected'],
      progressing: ['True', 'OperandRollingOut'],
      degraded: 'False',
      version: undefined,
    },
    {
      name: 'an unobserved generation on a rolled-out Deployment (an annotation edit) keeps Progressing=False, no version yet',
      in: { operand: { ...rolled, generation: 4 }, progressing: 'False' as const },
      available: ['True', 'AsExpected'],
      progressing: ['False', 'AsExpected'],
      degraded: 'False',
      version: undefined,
    },
    {
      name: 'an unobserved generation while rolling out stays Progressing',
      in: { operand: { ...rolled, generation: 4 }, progressing: 'True' as const },
      available: ['True', 'AsExpected'],
      progressing: ['True', 'OperandRollingOut'],
      degraded: 'False',
      version: undefined,
    },
    {
      name: 'an unobserved generation is no reason to stop Progressing for a template not at this release',
      in: { operand: { ...rolled, generation: 4, atRelease: false }, progressing: 'False' as const },
      available: ['True', 'AsExpected'],
      progressing: ['True', 'OperandRollingOut'],
      degraded: 'False',
      version: undefined,
    },
    {
      name: 'a new ReplicaSet in the counts is Progressing whatever was reported',
      in: { operand: { ...rolled, updatedReplicas: 1 }, progressing: 'False' as const },
      available: ['True', 'AsExpected'],
      progressing: ['True', 'OperandRollingOut'],
      degraded: 'False',
      version: undefined,
    },
    {
      name: 'no replica available',
      in: { operand: { ...rolled, availableReplicas: 0 } },
      available: ['False', 'OperandNotReady'],
      progressing: ['True', 'OperandRollingOut'],
      degraded: 'False',
      version: undefined,
    },
    {
      name: 'two failures are not degraded yet',
      in: { operand: rolled, failures: [{ useCase: 'x', consecutiveFailures: 2, lastError: 'boom' }] },
      available: ['True', 'AsExpected'],
      progressing: ['False', 'AsExpected'],
      degraded: 'False',
      version: '4.22.0',
    },
    {
      name: 'three failures are degraded',
      in: { operand: rolled, failures: [{ useCase: 'x', consecutiveFailures: 3, lastError: 'boom' }] },
      available: ['True', 'AsExpected'],
      progressing: ['False', 'AsExpected'],
      degraded: 'True',
      version: '4.22.0',
    },
    {
      name: 'a False use-case condition degrades',
      in: {
        operand: rolled,
        useCaseConditions: [{ type: 'NodeClassDiscovered', status: 'False' as const, reason: 'NoWorkerMachineSet', message: 'none' }],
      },
      available: ['True', 'AsExpected'],
      progressing: ['False', 'AsExpected'],
      degraded: 'True',
      version: '4.22.0',
    },
    {
      name: 'bad Infrastructure degrades at once',
      in: { factsError: 'Infrastructure cluster: status.infrastructureName: missing' },
      available: ['False', 'OperandNotYetCreated'],
      progressing: ['False', 'InvalidInfrastructure'],
      degraded: 'True',
      version: undefined,
    },
    {
      name: 'teardown',
      in: { request: 'deleting' as const },
      available: ['True', 'TeardownInProgress'],
      progressing: ['True', 'TeardownInProgress'],
      degraded: 'False',
      version: undefined,
    },
  ])('$name', ({ in: overrides, available, progressing, degraded, version }) => {
    const s = foldStatus({ ...base, ...overrides });
    expect([get(s, 'Available').status, get(s, 'Available').reason]).toEqual(available);
    expect([get(s, 'Progressing').status, get(s, 'Progressing').reason]).toEqual(progressing);
    expect(get(s, 'Degraded').status).toBe(degraded);
    expect(get(s, 'Upgradeable').status).toBe('True');
    expect(s.version).toBe(version);
    expect(s.conditions.every((c) => c.observedGeneration === 2)).toBe(true);
  });

  it.each([
    {
      name: 'unknown platform, nothing deployed',
      stranded: undefined,
      want: 'platform Foo is not supported; no Karpenter operand is deployed',
    },
    {
      name: 'unknown platform, the operand of the previous platform still runs',
      stranded: 'openshift-karpenter/karpenter',
      want: 'platform Foo is not supported; Deployment openshift-karpenter/karpenter, deployed before the platform changed, still runs and is no longer managed',
    },
  ])('says what is deployed on an unsupported platform: $name', ({ stranded, want }) => {
    const s = foldStatus({
      ...base,
      unsupported: 'platform Foo is not supported',
      unknownPlatform: true,
      ...(stranded ? { strandedOperand: stranded } : {}),
    });
    expect(get(s, 'Degraded').message).toBe(want);
    expect(get(s, 'Available').message).toBe(want);
  });

  it('names the failing use-case and its error in Degraded', () => {
    const s = foldStatus({
      ...base,
      operand: rolled,
      failures: [{ useCase: 'deployment.operand', consecutiveFailures: 5, lastError: 'applying Deployment: 500' }],
    });
    expect(get(s, 'Degraded').message).toContain('deployment.operand: applying Deployment: 500');
  });
});
