import type { ConditionInput } from './conditions.js';

/** PascalCase reasons of the ClusterOperator and Karpenter CR conditions. */
export const Reasons = {
  AsExpected: 'AsExpected',
  KarpenterNotFound: 'KarpenterNotFound',
  KarpenterCheckFailed: 'KarpenterCheckFailed',
  OperandNotYetCreated: 'OperandNotYetCreated',
  OperandNotReady: 'OperandNotReady',
  OperandRollingOut: 'OperandRollingOut',
  OperandCheckFailed: 'OperandCheckFailed',
  WaitingForCredentials: 'WaitingForCredentials',
  WaitingForCRDs: 'WaitingForCRDs',
  PlatformNotSupported: 'PlatformNotSupported',
  UnknownPlatform: 'UnknownPlatform',
  InvalidInfrastructure: 'InvalidInfrastructure',
  TeardownInProgress: 'TeardownInProgress',
  RepeatedFailures: 'RepeatedFailures',
} as const;

export interface OperandState {
  generation: number;
  observedGeneration: number;
  replicas: number;
  /**
   * Pods of every template the Deployment has (`status.replicas`): above `replicas` while old pods are still
   * there, whose availability `availableReplicas` counts too.
   */
  currentReplicas: number;
  updatedReplicas: number;
  availableReplicas: number;
  /**
   * The Deployment carries the pod template this release renders. False while an upgrade (or a credentials
   * rotation) is not applied yet: its counts then describe the previous template, however complete they are.
   */
  atRelease: boolean;
}

export interface StatusInputs {
  request: 'absent' | 'present' | 'deleting';
  /** Message when the provider cannot run Karpenter on this platform. */
  unsupported?: string;
  /** True when no provider package serves the platform at all (Degraded), not merely "not yet supported". */
  unknownPlatform?: boolean;
  /**
   * With `unsupported`: the operand Deployment (`namespace/name`) still running from before the platform
   * changed, which nothing manages any more; absent when there is none.
   */
  strandedOperand?: string;
  /** Cluster facts could not be read (Infrastructure incomplete). */
  factsError?: string;
  /** Names of runtime CRDs not yet Established; empty when all are. */
  crdsPending: string[];
  /** The operand's credentials Secret, when it is missing. */
  missingCredentials?: string;
  /** The operand Deployment, when it exists. */
  operand?: OperandState;
  /** Conditions owned by use-cases (e.g. NodeClassDiscovered); False ones make the operator Degraded. */
  useCaseConditions: ConditionInput[];
  /** Use-cases whose reconciles keep failing. */
  failures: Array<{ useCase: string; consecutiveFailures: number; lastError?: string }>;
  /** Consecutive failures before Degraded (no flapping on one error). */
  degradedAfter: number;
  releaseVersion: string;
  generation?: number;
  /**
   * Progressing as last reported, when the status object has it. While the Deployment controller has not
   * observed the Deployment's latest generation its counts are stale; a generation bump that changes no pod
   * (an annotation edit bumps a Deployment's generation too) must not flip Progressing for that instant.
   */
  progressing?: 'True' | 'False' | 'Unknown';
}

export interface FoldedStatus {
  conditions: ConditionInput[];
  /** Set only when the operand is fully rolled out at this release (or nothing needs to roll out). */
  version?: string;
}

/**
 * True when every replica runs this release's template and is available: the Deployment carries the
 * template, the Deployment controller observed it, all replicas are updated, no pod of an older template is
 * left, and as many are available (`kubectl rollout status`'s test). Without the old-pod check, a surge
 * rollout read complete too early: 2 updated, one of them not ready yet, and an old pod still available
 * made `availableReplicas` 2.
 */
export function rolledOut(op: OperandState): boolean {
  return (
    op.atRelease &&
    op.observedGeneration >= op.generation &&
    op.replicas > 0 &&
    op.updatedReplicas === op.replicas &&
    op.currentReplicas === op.replicas &&
    op.availableReplicas >= op.replicas
  );
}

/**
 * Folds the use-cases' results into Available / Progressing / Degraded / Upgradeable, following the CVO
 * conventions: terse Progressing, specific Degraded, never Degraded during a normal rollout, Degraded only
 * after `degradedAfter` consecutive failures, and a version only once the operand rolled out. Pure.
 */
export function foldStatus(input: StatusInputs): FoldedStatus {
  const gen = input.generation;
  const c = (type: string, status: ConditionInput['status'], reason: string, message: string): ConditionInput =>
    gen === undefined ? { type, status, reason, message } : { type, status, reason, message, observedGeneration: gen };

  const degraded = degradedCondition(input);
  const upgradeable = c('Upgradeable', 'True', Reasons.AsExpected, '');

  if (input.unsupported) {
    return {
      conditions: [
        c('Available', 'True', Reasons.PlatformNotSupported, unsupportedMessage(input.unsupported, input.strandedOperand)),
        c('Progressing', 'False', Reasons.PlatformNotSupported, ''),
        degraded,
        upgradeable,
      ],
      version: input.releaseVersion,
    };
  }
  if (input.request === 'absent') {
    return {
      conditions: [
        c('Available', 'True', Reasons.KarpenterNotFound, 'No Karpenter named default: nothing to deploy'),
        c('Progressing', 'False', Reasons.KarpenterNotFound, ''),
        degraded,
        upgradeable,
      ],
      version: input.releaseVersion,
    };
  }
  if (input.request === 'deleting') {
    return {
      conditions: [
        c('Available', 'True', Reasons.TeardownInProgress, 'Removing Karpenter'),
        c('Progressing', 'True', Reasons.TeardownInProgress, 'Removing NodePools, NodeClaims and the operand'),
        degraded,
        upgradeable,
      ],
    };
  }

  const op = input.operand;
  let available: ConditionInput;
  let progressing: ConditionInput;
  let version: string | undefined;
  if (!op) {
    available = c('Available', 'False', Reasons.OperandNotYetCreated, 'Karpenter is not deployed yet');
    if (input.factsError) progressing = c('Progressing', 'False', Reasons.InvalidInfrastructure, '');
    else if (input.crdsPending.length)
      progressing = c('Progressing', 'True', Reasons.WaitingForCRDs, `Waiting for CRDs: ${input.crdsPending.join(', ')}`);
    else if (input.missingCredentials)
      progressing = c('Progressing', 'True', Reasons.WaitingForCredentials, `Waiting for Secret ${input.missingCredentials}`);
    else progressing = c('Progressing', 'True', Reasons.OperandNotYetCreated, 'Deploying Karpenter');
  } else {
    available =
      op.availableReplicas > 0
        ? c('Available', 'True', Reasons.AsExpected, '')
        : c('Available', 'False', Reasons.OperandNotReady, 'No Karpenter replica is available');
    if (rolledOut(op)) {
      progressing = c('Progressing', 'False', Reasons.AsExpected, '');
      version = input.releaseVersion;
    } else if (input.progressing === 'False' && rolledOut({ ...op, observedGeneration: op.generation })) {
      // Only the newest generation is unobserved, on a Deployment that carries this release's template and was
      // fully rolled out: stay as reported until the Deployment controller says whether any pod changes (a
      // new ReplicaSet then shows in the counts). The version waits for the observation all the same.
      progressing = c('Progressing', 'False', Reasons.AsExpected, '');
    } else {
      progressing = c('Progressing', 'True', Reasons.OperandRollingOut, 'Rolling out Karpenter');
    }
  }
  return { conditions: [available, progressing, degraded, upgradeable], ...(version ? { version } : {}) };
}

function degradedCondition(input: StatusInputs): ConditionInput {
  const gen = input.generation;
  const mk = (status: 'True' | 'False', reason: string, message: string): ConditionInput =>
    gen === undefined
      ? { type: 'Degraded', status, reason, message }
      : { type: 'Degraded', status, reason, message, observedGeneration: gen };
  if (input.unsupported && input.unknownPlatform)
    return mk('True', Reasons.UnknownPlatform, unsupportedMessage(input.unsupported, input.strandedOperand));
  if (input.factsError && input.request === 'present') return mk('True', Reasons.InvalidInfrastructure, input.factsError);
  const failed = input.failures
    .filter((f) => f.consecutiveFailures >= input.degradedAfter)
    .sort((a, b) => a.useCase.localeCompare(b.useCase));
  if (failed.length) {
    const msg = failed.map((f) => `${f.useCase}: ${f.lastError ?? 'failing'}`).join('; ');
    return mk('True', Reasons.RepeatedFailures, msg);
  }
  if (input.request === 'present') {
    const bad = input.useCaseConditions.filter((u) => u.status === 'False');
    if (bad.length) {
      return mk('True', bad[0]!.reason, bad.map((b) => `${b.type}: ${b.message}`).join('; '));
    }
  }
  return mk('False', Reasons.AsExpected, '');
}

/** The provider's word on the platform, and what is (still) deployed: nothing, or an operand left unmanaged. */
function unsupportedMessage(unsupported: string, stranded: string | undefined): string {
  return stranded
    ? `${unsupported}; Deployment ${stranded}, deployed before the platform changed, still runs and is no longer managed`
    : `${unsupported}; no Karpenter operand is deployed`;
}
