import { describeError, isCoreError, isForbiddenError, isInvalidInputError, isTransientError } from '../../errors.js';
import type { ClusterFacts, DiscoveryInput } from '../../model/cluster.js';
import { Types, type KubeObject, type ObjectRef } from '../../model/kube.js';
import { Names, poolNameFor } from '../../model/names.js';
import type { ConditionInput } from '../../policy/conditions.js';
import { ignitionPools, rewriteIgnitionPool } from '../../policy/ignition.js';
import type { CloudProvider, DefaultNodeClass, DiscoveredNodeClass } from '../../ports/cloud-provider.js';
import type { Clock } from '../../ports/clock.js';
import type { ClusterStore } from '../../ports/cluster-store.js';
import type { EventRecorder } from '../../ports/event-recorder.js';
import type { Logger } from '../../ports/logger.js';
import type { Reconciler, Result, Watch } from '../../runtime/reconciler.js';
import { nodeClassOfRegistrationTaint, poolProblem, poolServing } from '../node-config/render.js';
import type { StatusBoard } from '../status-board.js';
import { discoveryNode, discoveryNodes, type DiscoveryNodeMemo } from './discovery-nodes.js';
import { protectedFieldsPatch } from './protected-fields.js';

export const DEFAULT_NODECLASS_CONTROLLER = 'ec2nodeclass.default';
/** Board entry for the verification condition (the discovery condition uses the controller name). */
export const NODECLASS_VERIFIED_ENTRY = `${DEFAULT_NODECLASS_CONTROLLER}.verified`;

export const NodeClassConditions = { Discovered: 'NodeClassDiscovered', Verified: 'NodeClassVerified' } as const;

export const NodeClassReasons = {
  AsExpected: 'AsExpected',
  NoWorkerMachineSet: 'NoWorkerMachineSet',
  InvalidProviderSpec: 'InvalidProviderSpec',
  UserDataSecretMissing: 'UserDataSecretMissing',
  /** No worker MachineSet, and a field could not be proven from the conventions or worker instances. */
  DiscoveryIncomplete: 'DiscoveryIncomplete',
  /** No worker MachineSet, and several candidates fit a field. */
  DiscoveryAmbiguous: 'DiscoveryAmbiguous',
  /** The cloud says something the NodeClass references is missing or not the cluster's. */
  InvalidReferences: 'InvalidReferences',
  /** The cloud refused the operator's credentials. */
  CloudAccessDenied: 'CloudAccessDenied',
  /** The cloud kept failing (throttling, 5xx, network) for several attempts in a row. */
  VerificationFailed: 'VerificationFailed',
} as const;

export interface DefaultNodeClassDeps {
  /** The workload cluster's store (where MachineSets, Secrets and NodeClasses live). */
  store: ClusterStore;
  cloud: CloudProvider;
  facts: () => Promise<ClusterFacts>;
  clock: Clock;
  events: EventRecorder;
  logger: Logger;
  /** The cluster's kubelet maxPods (OpenShift default 250). */
  maxPods: number;
  /** When given, the conditions are posted here for the status use-case to fold. */
  board?: StatusBoard;
  /**
   * Point each NodeClass's userData at its own MachineConfigPool `karpenter-<nodeclass>` once MCO has
   * rendered that pool (until then the Machine Config Server cannot serve it). Default true.
   */
  perNodeClassPools?: boolean;
  /** Re-verify against the cloud at least this often. Default 5 minutes. */
  verifyIntervalMs?: number;
  /** Consecutive transient cloud failures before NodeClassVerified turns False. Default 3. */
  verifyFailuresBeforeFalse?: number;
}

const FIVE_MINUTES = 5 * 60 * 1000;
const RETRY_BASE_MS = 15_000;
/** How long a failed cloud-backed discovery stands before it is tried again (the cloud changes without events). */
const DISCOVERY_RETRY_MS = 60_000;

/** Reasons whose fix happens in the cloud, not in a watched object: discovery is retried on a timer. */
const CLOUD_BACKED_REASONS: ReadonlySet<string> = new Set([NodeClassReasons.DiscoveryIncomplete, NodeClassReasons.DiscoveryAmbiguous]);

interface DiscoveryMemo {
  /** The discovery input, serialized: a different input discovers again. */
  key: string;
  at: number;
  result?: DiscoveredNodeClass;
  error?: Error;
}

/** `DiscoveredFrom: subnets=Conventions, ...`: the condition message of a successful discovery. */
export function describeSources(sources: DiscoveredNodeClass['sources']): string {
  return `DiscoveredFrom: ${sources.map((s) => `${s.field}=${s.source}`).join(', ')}`;
}

/** `DefaultNodeClassReconciler.targetFor`'s answer. */
interface PoolTarget {
  /** userData names this pool. */
  pool?: string;
  /**
   * The pool does not serve yet: launches are held, and why. `unpoolable`: the NodeClass's name can have no
   * pool (`poolProblem`), so the hold lasts until the NodeClass is replaced by one with a name that can.
   */
  hold?: { pool: string; message: string; unpoolable?: boolean };
}

interface VerifyState {
  /** What was verified: the NodeClass's referencing fields. */
  subject: string;
  at: number;
  ok: boolean;
}

/**
 * `ec2nodeclass.default`: keeps the provider's NodeClass `default` in place, derived from the worker
 * MachineSets, and enforces the release-owned fields (amiFamily, amiSelectorTerms, userData) on every
 * NodeClass. Everything else on `default` is created once and then belongs to the user; `default` is
 * re-created when deleted; user NodeClasses are patched, never created.
 *
 * Reports `NodeClassDiscovered` (the MachineSets could be mapped) and `NodeClassVerified` (the cloud
 * confirms what `default` references), the latter checked on change and every `verifyIntervalMs`.
 */
export class DefaultNodeClassReconciler implements Reconciler {
  readonly name = DEFAULT_NODECLASS_CONTROLLER;
  readonly watches: Watch[];
  private discovered: ConditionInput | undefined;
  private verified: ConditionInput | undefined;
  private lastVerify: VerifyState | undefined;
  private verifyFailures = 0;
  private memo: DiscoveryMemo | undefined;
  private sources: DiscoveredNodeClass['sources'] | undefined;
  /** Discovery's projection of each cached Node object (see `DiscoveryNodeMemo`). */
  private readonly nodeViews: DiscoveryNodeMemo = new WeakMap();

  constructor(private readonly deps: DefaultNodeClassDeps) {
    this.watches = [
      { type: Types.MachineSet, namespace: Names.machineApiNamespace },
      { type: Types.Secret, namespace: Names.machineApiNamespace },
      { type: Types.ConfigMap, namespace: Names.mcoNamespace, fieldSelector: `metadata.name=${Names.bootImagesConfigMap}` },
      { type: deps.cloud.nodeClassType },
      // A pool serving its registration taint lets its NodeClass's userData point at it.
      { type: Types.MachineConfigPool, labels: { [Names.managedLabel]: 'true' } },
      { type: Types.KubeletConfig },
      // Without worker MachineSets, discovery reads the cluster's own Nodes: a worker joining or leaving
      // changes what `default` is derived from. (The same watch as node identity's: one shared informer.)
      { type: Types.Node },
    ];
  }

  keysFor(obj: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }): string[] {
    const nc = this.deps.cloud.nodeClassType;
    if (obj.apiVersion === Types.MachineConfigPool.apiVersion && obj.kind === Types.MachineConfigPool.kind) {
      const prefix = poolNameFor('');
      return obj.metadata.name.startsWith(prefix) && obj.metadata.name.length > prefix.length
        ? [obj.metadata.name.slice(prefix.length)]
        : [];
    }
    if (obj.apiVersion === Types.KubeletConfig.apiVersion && obj.kind === Types.KubeletConfig.kind) {
      const owner = nodeClassOfRegistrationTaint(obj.metadata.name);
      return owner ? [owner] : [];
    }
    if (obj.apiVersion === nc.apiVersion && obj.kind === nc.kind && obj.metadata.name !== Names.defaultNodeClass) {
      return [Names.defaultNodeClass, obj.metadata.name];
    }
    // Only Nodes discovery would read (not the ones Karpenter launched: thousands of them at scale).
    if (obj.apiVersion === Types.Node.apiVersion && obj.kind === Types.Node.kind) {
      return discoveryNode(obj as KubeObject, this.deps.cloud.nodeClassLabel, this.nodeViews) ? [Names.defaultNodeClass] : [];
    }
    return [Names.defaultNodeClass];
  }

  async resyncKeys(): Promise<string[]> {
    const all = await this.deps.store.list(this.deps.cloud.nodeClassType);
    return [...new Set([Names.defaultNodeClass, ...all.map((o) => o.metadata.name)])];
  }

  /** The conditions this use-case owns, as last concluded (undefined before the first conclusion). */
  conditions(): { discovered?: ConditionInput; verified?: ConditionInput } {
    return {
      ...(this.discovered ? { discovered: { ...this.discovered } } : {}),
      ...(this.verified ? { verified: { ...this.verified } } : {}),
    };
  }

  async reconcile(key: string): Promise<Result> {
    const { store, cloud } = this.deps;
    const isDefault = key === Names.defaultNodeClass;
    // `default` is created only from freshly proven values, never from a remembered discovery.
    const fresh = isDefault && !(await store.get({ ...cloud.nodeClassType, name: Names.defaultNodeClass }));
    const outcome = await this.discover(fresh);

    let current: KubeObject | undefined;
    if (outcome.rendered && isDefault) {
      const created = await store.createIfAbsent(await this.forPool(outcome.rendered, Names.defaultNodeClass), {
        fieldManager: Names.defaultsFieldManager,
      });
      current = created.object;
      if (created.changed) {
        this.deps.events.record(
          this.ref(Names.defaultNodeClass),
          'Normal',
          'Created',
          `created the default NodeClass (${describeSources(outcome.rendered.sources)})`,
        );
      }
    }

    if (outcome.rendered) {
      const targets = isDefault
        ? await store.list(cloud.nodeClassType)
        : [await store.get({ ...cloud.nodeClassType, name: key })].filter((o): o is KubeObject => o !== undefined);
      for (const nc of targets) {
        if (nc.metadata.deletionTimestamp) continue;
        const target = await this.targetFor(nc);
        const patch = protectedFieldsPatch(nc, this.protectedFor(outcome.rendered, target), target.pool);
        if (!patch) continue;
        const r = await store.apply(patch, { fieldManager: Names.fieldManager, force: true });
        if (r.changed) {
          this.deps.logger.info('enforced protected NodeClass fields', {
            nodeClass: nc.metadata.name,
            fields: Object.keys(patch.spec as object),
            ...(target.hold ? { heldUntil: target.hold.message } : {}),
          });
          if (target.hold) {
            this.deps.events.record(this.ref(nc.metadata.name), 'Normal', 'LaunchHeld', this.heldMessage(target.hold));
          } else {
            this.deps.events.record(
              this.ref(nc.metadata.name),
              'Normal',
              'ProtectedFieldsEnforced',
              'amiFamily, amiSelectorTerms and userData follow the cluster release',
            );
          }
        }
        if (nc.metadata.name === Names.defaultNodeClass && r.object) current = r.object;
      }
    }

    const retry = outcome.retryAfterMs !== undefined ? { requeueAfterMs: outcome.retryAfterMs } : {};
    if (!isDefault || !outcome.facts) return retry;
    current ??= await store.get({ ...cloud.nodeClassType, name: Names.defaultNodeClass });
    if (!current || current.metadata.deletionTimestamp) {
      // Nothing to verify: a verdict on a NodeClass that is gone would only mislead.
      this.clearVerified();
      return retry;
    }
    const verified = await this.verify(current, outcome.facts);
    if (outcome.retryAfterMs === undefined) return verified;
    return { requeueAfterMs: Math.min(outcome.retryAfterMs, verified.requeueAfterMs ?? outcome.retryAfterMs) };
  }

  private async discover(fresh: boolean): Promise<{ rendered?: DiscoveredNodeClass; facts?: ClusterFacts; retryAfterMs?: number }> {
    const { store, cloud } = this.deps;
    let facts: ClusterFacts | undefined;
    try {
      facts = await this.deps.facts();
      const [machineSets, secrets, bootImages, nodes] = await Promise.all([
        store.list(Types.MachineSet, { namespace: Names.machineApiNamespace }),
        store.list(Types.Secret, { namespace: Names.machineApiNamespace }),
        store.get({ ...Types.ConfigMap, namespace: Names.mcoNamespace, name: Names.bootImagesConfigMap }),
        store.list(Types.Node, { readOnly: true }),
      ]);
      const rendered = await this.discoverMemoized(fresh, {
        facts,
        machineSets,
        secrets,
        ...(bootImages ? { bootImages } : {}),
        maxPods: this.deps.maxPods,
        nodes: discoveryNodes(nodes, cloud.nodeClassLabel, this.nodeViews),
      });
      this.setSources(rendered.sources);
      this.setDiscovered({
        type: NodeClassConditions.Discovered,
        status: 'True',
        reason: NodeClassReasons.AsExpected,
        message: describeSources(rendered.sources),
      });
      return { rendered, facts };
    } catch (e) {
      // Bad input waits for the input to change (the watches wake us), or for the cloud to change when
      // the conventions could not be proven; anything else backs off.
      if (!isInvalidInputError(e)) throw e;
      this.setDiscovered({ type: NodeClassConditions.Discovered, status: 'False', reason: e.reason, message: e.message });
      const retry = CLOUD_BACKED_REASONS.has(e.reason) ? { retryAfterMs: DISCOVERY_RETRY_MS } : {};
      return facts ? { facts, ...retry } : retry;
    }
  }

  /**
   * The provider's discovery, remembered for the same input: discovery without MachineSets calls the
   * cloud, and reconciles of unrelated NodeClasses must not repeat those calls. A success stands for
   * `verifyIntervalMs` (not when `fresh`: `default` is about to be created), a failure for a minute.
   */
  private async discoverMemoized(fresh: boolean, input: DiscoveryInput): Promise<DiscoveredNodeClass> {
    const key = JSON.stringify(input);
    const now = this.deps.clock.now();
    const memo = this.memo;
    if (memo && memo.key === key && !(fresh && memo.result)) {
      if (memo.result && now - memo.at < (this.deps.verifyIntervalMs ?? FIVE_MINUTES)) return memo.result;
      if (memo.error && now - memo.at < DISCOVERY_RETRY_MS) throw memo.error;
    }
    try {
      const result = await this.deps.cloud.discoverDefaultNodeClass(input);
      this.memo = { key, at: now, result };
      return result;
    } catch (e) {
      if (isInvalidInputError(e)) this.memo = { key, at: now, error: e };
      throw e;
    }
  }

  /** Records where each field came from; a change of source (a MachineSet taking over) is an event. */
  private setSources(next: DiscoveredNodeClass['sources']): void {
    const prev = this.sources;
    this.sources = next;
    if (!prev) return;
    const before = new Map(prev.map((s) => [s.field, s.source]));
    const changes = next
      .filter((s) => before.get(s.field) !== s.source)
      .map((s) => `${s.field}: ${before.get(s.field) ?? 'none'} → ${s.source}`);
    if (!changes.length) return;
    this.deps.logger.info('default NodeClass discovery source changed', { changes });
    this.deps.events.record(this.ref(Names.defaultNodeClass), 'Normal', 'DiscoverySourceChanged', changes.join('; '));
  }

  private async forPool(rendered: DefaultNodeClass, name: string): Promise<KubeObject> {
    const object = structuredClone(rendered.object);
    const target = await this.targetFor({ ...object, metadata: { name } });
    const spec = object.spec as Record<string, unknown>;
    if (target.hold) Object.assign(spec, this.deps.cloud.launchHold(target.hold.pool));
    if (target.pool && typeof spec.userData === 'string') spec.userData = rewriteIgnitionPool(spec.userData, target.pool);
    return object;
  }

  /** The protected fields to enforce: the release's, or the provider's launch hold in place of its image selector. */
  private protectedFor(rendered: DefaultNodeClass, target: PoolTarget): Record<string, unknown> {
    return target.hold ? { ...rendered.protectedSpec, ...this.deps.cloud.launchHold(target.hold.pool) } : rendered.protectedSpec;
  }

  private heldMessage(hold: NonNullable<PoolTarget['hold']>): string {
    if (hold.unpoolable) {
      return `launches are held (${Names.launchHoldKey}=${hold.pool}) for good: ${hold.message}`;
    }
    return (
      `launches are held (${Names.launchHoldKey}=${hold.pool}) until MachineConfigPool ${hold.pool} serves the ` +
      `registration taint: ${hold.message}`
    );
  }

  /**
   * Where a NodeClass's nodes boot from, decided once for creation and enforcement:
   *
   * - its own MachineConfigPool (`pool`) once MCS serves it with the registration taint (`poolServing`), and
   *   from then on (a pool that is re-rendering must not flip userData back and forth, which would drift nodes);
   * - before that, nowhere (`hold`): a machine booting the cluster's own userData (pool `worker`) registers
   *   without the taint, which Karpenter refuses, and is only replaced after its registration TTL. So the
   *   image selector is the provider's launch hold, and the release's images come back together with the
   *   pool pointer, in one write;
   * - with per-NodeClass pools off, the cluster's own userData and images (neither).
   */
  private async targetFor(nodeClass: KubeObject): Promise<PoolTarget> {
    if (this.deps.perNodeClassPools === false) return {};
    const pool = poolNameFor(nodeClass.metadata.name);
    const problem = poolProblem(nodeClass.metadata.name);
    if (problem) {
      const message = `NodeClass ${nodeClass.metadata.name} can have no MachineConfigPool (${problem}), so its nodes could not register; create it again under a name that can`;
      return { hold: { pool, message, unpoolable: true } };
    }
    const current = (nodeClass.spec as { userData?: unknown } | undefined)?.userData;
    if (typeof current === 'string' && ignitionPools(current).includes(pool)) return { pool };
    const [mcp, kubeletConfigs] = await Promise.all([
      this.deps.store.get({ ...Types.MachineConfigPool, name: pool }),
      this.deps.store.list(Types.KubeletConfig),
    ]);
    const serving = poolServing(nodeClass.metadata.name, mcp, kubeletConfigs);
    return serving.state === 'Serving' ? { pool } : { hold: { pool, message: serving.message } };
  }

  private ref(name: string): ObjectRef {
    return { ...this.deps.cloud.nodeClassType, name };
  }

  private setDiscovered(next: ConditionInput): void {
    const prev = this.discovered;
    this.discovered = next;
    this.deps.board?.setCondition(DEFAULT_NODECLASS_CONTROLLER, next);
    const changed = !prev || prev.status !== next.status || prev.reason !== next.reason || prev.message !== next.message;
    if (changed && next.status === 'False') {
      this.deps.logger.warn('default NodeClass discovery failed', { reason: next.reason, error: next.message });
      this.deps.events.record(this.ref(Names.defaultNodeClass), 'Warning', next.reason, next.message);
    }
  }

  private setVerified(next: ConditionInput): void {
    const prev = this.verified;
    this.verified = next;
    this.deps.board?.setCondition(NODECLASS_VERIFIED_ENTRY, next);
    const changed = !prev || prev.status !== next.status || prev.reason !== next.reason || prev.message !== next.message;
    if (changed && next.status === 'False') this.deps.events.record(this.ref(Names.defaultNodeClass), 'Warning', next.reason, next.message);
  }

  private clearVerified(): void {
    if (!this.verified && !this.lastVerify) return;
    this.verified = undefined;
    this.lastVerify = undefined;
    this.verifyFailures = 0;
    this.deps.board?.setCondition(NODECLASS_VERIFIED_ENTRY, undefined);
  }

  /** Verifies when what `default` references changed, after `verifyIntervalMs`, or to retry a failure. */
  private async verify(nodeClass: KubeObject, facts: ClusterFacts): Promise<Result> {
    const interval = this.deps.verifyIntervalMs ?? FIVE_MINUTES;
    const now = this.deps.clock.now();
    const subject = JSON.stringify(nodeClass.spec ?? {});
    const last = this.lastVerify;
    const wait = last ? (last.ok ? interval : Math.min(interval, RETRY_BASE_MS * 2 ** Math.max(0, this.verifyFailures - 1))) : 0;
    if (last && last.subject === subject && now - last.at < wait) return { requeueAfterMs: wait - (now - last.at) };

    try {
      const problems = await this.deps.cloud.verifyNodeClass(nodeClass, facts);
      this.verifyFailures = 0;
      this.lastVerify = { subject, at: now, ok: true };
      this.setVerified(
        problems.length
          ? {
              type: NodeClassConditions.Verified,
              status: 'False',
              reason: NodeClassReasons.InvalidReferences,
              message: `NodeClass ${nodeClass.metadata.name}: ${problems.map((p) => `${p.field}: ${p.message}`).join('; ')}`,
            }
          : { type: NodeClassConditions.Verified, status: 'True', reason: NodeClassReasons.AsExpected, message: '' },
      );
      return { requeueAfterMs: interval };
    } catch (e) {
      if (!isCoreError(e)) throw e;
      this.verifyFailures++;
      this.lastVerify = { subject, at: now, ok: false };
      const message = `verifying NodeClass ${nodeClass.metadata.name}: ${describeError(e)}`;
      this.deps.logger.warn('NodeClass verification failed', { error: message, consecutiveFailures: this.verifyFailures });
      if (isForbiddenError(e) || isInvalidInputError(e)) {
        this.setVerified({ type: NodeClassConditions.Verified, status: 'False', reason: NodeClassReasons.CloudAccessDenied, message });
      } else if (!isTransientError(e) || this.verifyFailures >= (this.deps.verifyFailuresBeforeFalse ?? 3)) {
        this.setVerified({ type: NodeClassConditions.Verified, status: 'False', reason: NodeClassReasons.VerificationFailed, message });
      }
      return { requeueAfterMs: Math.min(interval, RETRY_BASE_MS * 2 ** (this.verifyFailures - 1)) };
    }
  }
}
