import { randomUUID } from 'node:crypto';
import {
  describeError,
  isConflictError,
  isNotFoundError,
  Names,
  noopMetrics,
  silentLogger,
  systemClock,
  Types,
  type Clock,
  type KubeObject,
  type Logger,
  type Metrics,
} from '@karpenter-operator/core/ports';
import { RuntimeMetrics } from '../runtime/metric-names.js';
import { sleep, systemTimers, type Timers } from '../runtime/timers.js';
import { toCoreError } from './errors.js';
import { knownResources, resourcePath } from './resources.js';
import type { KubeRequest, KubeTransport } from './transport.js';

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export interface LeaseObject extends KubeObject {
  spec?: LeaseSpec;
}

export interface ElectionTiming {
  /** How long a lease is valid without renewal; non-leaders wait this long before taking over. */
  leaseDurationMs: number;
  /** How long the leader keeps retrying to renew before it gives up leading. */
  renewDeadlineMs: number;
  /** Time between attempts to acquire or renew. */
  retryPeriodMs: number;
}

/** client-go's defaults: what `LeaderElector` uses when given no timing (its unit tests). The operator passes `openshiftElectionTiming`. */
export const defaultElectionTiming: ElectionTiming = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

/**
 * OpenShift's leader-election timings (library-go's defaults, which the platform's operators pass): lease
 * 137 s, renew deadline 107 s, retry 26 s, so that a leader rides out a kube-apiserver rollout (a gap of up
 * to a minute) without losing the Lease; on a single-replica control plane (Infrastructure
 * `status.controlPlaneTopology: SingleReplica`) 270 s / 240 s / 60 s, where the one API server restarts for
 * longer. Anything else (HighlyAvailable, External, unknown) gets the HA timings. Pure.
 */
export function openshiftElectionTiming(controlPlaneTopology: string | undefined): ElectionTiming {
  return controlPlaneTopology === 'SingleReplica'
    ? { leaseDurationMs: 270_000, renewDeadlineMs: 240_000, retryPeriodMs: 60_000 }
    : { leaseDurationMs: 137_000, renewDeadlineMs: 107_000, retryPeriodMs: 26_000 };
}

/** Why `timing` cannot work (a lease must outlast the renew deadline, which must outlast a retry), or `undefined`. Pure. */
export function electionTimingProblem(timing: ElectionTiming): string | undefined {
  if (timing.leaseDurationMs <= timing.renewDeadlineMs) return 'leaseDuration must be greater than renewDeadline';
  if (timing.renewDeadlineMs <= timing.retryPeriodMs) return 'renewDeadline must be greater than retryPeriod';
  return undefined;
}

export type LeaseDecision =
  | { action: 'create'; spec: LeaseSpec }
  | { action: 'renew'; spec: LeaseSpec }
  | { action: 'acquire'; spec: LeaseSpec }
  | { action: 'wait'; holder: string; expiresAt: number };

/** Lease times are MicroTime: RFC 3339 with exactly six fractional digits. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/**
 * What to do with the Lease as last read, at `now`, as `identity`. Pure.
 *
 * 1. No Lease: create it, holding it.
 * 2. We hold it: renew (keep acquireTime and transitions).
 * 3. No holder (released), or the holder has not renewed for `leaseDurationSeconds` since `observedAt`
 *    (the local time this exact record was first seen; the Lease's `renewTime` when unknown): take it over,
 *    counting a transition.
 * 4. Otherwise: wait for it to expire.
 *
 * Measuring expiry from the local observation time, as client-go does, makes it immune to clock skew
 * between replicas.
 */
export function decide(
  lease: LeaseObject | undefined,
  now: number,
  identity: string,
  options: { leaseDurationMs: number; observedAt?: number },
): LeaseDecision {
  const leaseDurationSeconds = Math.max(1, Math.round(options.leaseDurationMs / 1000));
  const fresh = (transitions: number): LeaseSpec => ({
    holderIdentity: identity,
    leaseDurationSeconds,
    acquireTime: microTime(now),
    renewTime: microTime(now),
    leaseTransitions: transitions,
  });
  if (!lease) return { action: 'create', spec: fresh(0) };
  const spec = lease.spec ?? {};
  const holder = spec.holderIdentity ?? '';
  if (holder === identity) {
    return {
      action: 'renew',
      spec: {
        ...spec,
        holderIdentity: identity,
        leaseDurationSeconds,
        renewTime: microTime(now),
        acquireTime: spec.acquireTime ?? microTime(now),
      },
    };
  }
  const transitions = (spec.leaseTransitions ?? 0) + 1;
  if (!holder) return { action: 'acquire', spec: fresh(transitions) };
  const renewed = Date.parse(spec.renewTime ?? spec.acquireTime ?? '');
  const since = options.observedAt ?? (Number.isNaN(renewed) ? 0 : renewed);
  const expiresAt = since + (spec.leaseDurationSeconds ?? leaseDurationSeconds) * 1000;
  if (now >= expiresAt) return { action: 'acquire', spec: fresh(transitions) };
  return { action: 'wait', holder, expiresAt };
}

/** `<pod name>_<random>`: unique per process even when a pod restarts with the same name. */
export function leaderIdentity(podName: string, random: () => string = randomUUID): string {
  return `${podName}_${random()}`;
}

export interface LeaderElectorOptions {
  transport: KubeTransport;
  /** The operator namespace. */
  namespace: string;
  /** Default `karpenter-operator.openshift.io`. */
  name?: string;
  identity: string;
  timing?: Partial<ElectionTiming>;
  clock?: Clock;
  timers?: Timers;
  random?: () => number;
  logger?: Logger;
  metrics?: Metrics;
  /** Called once when this replica becomes leader. */
  onStartedLeading: () => void;
  /**
   * Called once when this replica could not renew within the renew deadline. The app must stop writing
   * at once (it exits), because another replica may already lead.
   */
  onStoppedLeading: () => void;
  /** Called when another replica is seen leading. */
  onNewLeader?: (identity: string) => void;
}

/**
 * Leader election on a `coordination.k8s.io/v1` Lease, as client-go's `leaderelection` does it: read,
 * then create or replace with the read resourceVersion (409 = another replica won the race); the leader
 * renews every retry period and stops leading when it cannot renew within the renew deadline; a graceful
 * stop releases the Lease (empty holder, 1 s duration) so a standby takes over at once.
 *
 * Two additions to client-go:
 * - Writes are fenced: `start()` installs a gate on the transport that lets a write (other than this Lease)
 *   through only while this replica leads on a Lease it renewed less than the renew deadline ago. The renew
 *   loop alone notices a lost Lease only when its timer fires; a process frozen past the lease duration
 *   (SIGSTOP, a stalled VM) first runs whatever fell due before that timer (requeues, Event writes; watch
 *   events too when the freeze caught it outside epoll_wait), and its workers would write while another
 *   replica leads. Seen in the integration test before the fence: an Event created after the takeover.
 * - A standby tries again right when the holder's Lease expires rather than up to one jittered retry
 *   period later: failover within lease duration + one observation lag (≤ one jittered retry period) after
 *   the last renewal, instead of up to two lags.
 */
export class LeaderElector {
  private readonly transport: KubeTransport;
  private readonly namespace: string;
  private readonly name: string;
  readonly identity: string;
  private readonly timing: ElectionTiming;
  private readonly clock: Clock;
  private readonly timers: Timers;
  private readonly random: () => number;
  private readonly logger: Logger;
  private readonly metrics: Metrics;
  private readonly callbacks: Pick<LeaderElectorOptions, 'onStartedLeading' | 'onStoppedLeading' | 'onNewLeader'>;
  private readonly path: string;
  private readonly abort = new AbortController();
  private leading = false;
  private last: LeaseObject | undefined;
  private observed: { key: string; at: number } | undefined;
  private lastLeader: string | undefined;
  private running: Promise<void> | undefined;
  /** Start of the last successful create, acquire or renew: the Lease is ours for a lease duration from here. */
  private renewedAt = 0;
  /** When the holder's Lease expires, as last seen while waiting for it. */
  private expiresAt: number | undefined;
  private fenced = false;

  constructor(options: LeaderElectorOptions) {
    this.transport = options.transport;
    this.namespace = options.namespace;
    this.name = options.name ?? Names.leaderLease;
    this.identity = options.identity;
    this.timing = { ...defaultElectionTiming, ...options.timing };
    const problem = electionTimingProblem(this.timing);
    if (problem) throw new Error(problem);
    this.clock = options.clock ?? systemClock;
    this.timers = options.timers ?? systemTimers;
    this.random = options.random ?? Math.random;
    this.logger = (options.logger ?? silentLogger).child({ lease: `${this.namespace}/${this.name}`, identity: this.identity });
    this.metrics = options.metrics ?? noopMetrics;
    this.callbacks = options;
    this.path = resourcePath(Types.Lease, knownResources.get(`${Types.Lease.apiVersion}|${Types.Lease.kind}`)!, {
      namespace: this.namespace,
    });
  }

  isLeader(): boolean {
    return this.leading;
  }

  /**
   * Starts campaigning in the background; resolves `done()` when leadership is lost or `stop()` is called.
   * From here on the transport sends writes only while `writeRefusal` allows them.
   */
  start(): void {
    this.transport.fence?.((req) => this.writeRefusal(req));
    this.running ??= this.run();
  }

  /**
   * Why a write may not be sent now, or `undefined` when it may: this replica leads, and its last renewal
   * started less than the renew deadline ago. A standby takes over no sooner than a lease duration after
   * that start, which leaves the rest (5 s by default) for a write in flight. The Lease's own requests
   * always pass.
   */
  writeRefusal(req: Pick<KubeRequest, 'path' | 'body'>): string | undefined {
    // Its own Lease only: by name, or a create in the collection whose body names it.
    const creatingOurs =
      req.path === this.path && (req.body as { metadata?: { name?: unknown } } | undefined)?.metadata?.name === this.name;
    if (creatingOurs || req.path === `${this.path}/${this.name}`) return undefined;
    let why: string | undefined;
    if (!this.leading) why = 'this replica does not lead';
    else {
      const since = this.clock.now() - this.renewedAt;
      if (since >= this.timing.renewDeadlineMs) {
        why = `the leader lease was last renewed ${since} ms ago (renew deadline ${this.timing.renewDeadlineMs} ms); another replica may lead`;
      }
    }
    if (why && this.leading && !this.fenced) {
      this.fenced = true;
      this.logger.error('refusing writes: the leader lease may have passed to another replica', { reason: why });
    }
    return why;
  }

  done(): Promise<void> {
    return this.running ?? Promise.resolve();
  }

  /** Stops campaigning and releases the Lease if held. Does not call `onStoppedLeading`. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.running;
    await this.release();
  }

  /** Gives the Lease up (empty holder, 1 s duration) so that a standby need not wait for it to expire. */
  async release(): Promise<void> {
    if (!this.leading || !this.last) return;
    this.setLeading(false);
    const now = this.clock.now();
    const body: LeaseObject = {
      ...this.last,
      spec: { ...this.last.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: microTime(now), acquireTime: microTime(now) },
    };
    try {
      await this.request('update', 'PUT', `${this.path}/${this.name}`, body);
      this.logger.info('released the leader lease');
    } catch (e) {
      this.logger.warn('releasing the leader lease failed; the standby takes over when it expires', { error: describeError(e) });
    }
    this.last = undefined;
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    const { retryPeriodMs, renewDeadlineMs } = this.timing;
    while (!signal.aborted) {
      if (await this.attempt(retryPeriodMs * 2)) break;
      // client-go's JitterUntil with factor 1.2; but no later than when the holder's Lease expires.
      const jittered = retryPeriodMs * (1 + 1.2 * this.random());
      const untilExpiry = this.expiresAt === undefined ? jittered : this.expiresAt - this.clock.now();
      await sleep(this.timers, Math.max(0, Math.min(jittered, untilExpiry)), signal);
    }
    if (signal.aborted) return;
    this.setLeading(true);
    this.logger.info('became leader');
    this.callbacks.onStartedLeading();

    let lastRenew = this.clock.now();
    while (!signal.aborted) {
      await sleep(this.timers, retryPeriodMs, signal);
      if (signal.aborted) return;
      const left = renewDeadlineMs - (this.clock.now() - lastRenew);
      if (left > 0 && (await this.attempt(left))) {
        lastRenew = this.clock.now();
        continue;
      }
      if (this.clock.now() - lastRenew >= renewDeadlineMs) {
        this.setLeading(false);
        this.last = undefined;
        this.logger.error('could not renew the leader lease within the renew deadline; stopping', { renewDeadlineMs });
        this.callbacks.onStoppedLeading();
        return;
      }
    }
  }

  private setLeading(leading: boolean): void {
    if (this.leading === leading) return;
    this.leading = leading;
    this.metrics.set(RuntimeMetrics.leader.name, leading ? 1 : 0, { lease: this.name });
    this.metrics.inc(RuntimeMetrics.leaderTransitions.name, { lease: this.name, event: leading ? 'acquired' : 'lost' });
  }

  /** One try to acquire or renew, given up after `timeoutMs` (a hung request must not outlive the deadline). */
  private async attempt(timeoutMs: number): Promise<boolean> {
    let handle: unknown;
    const timeout = new Promise<boolean>((resolve) => {
      handle = this.timers.setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      return await Promise.race([this.tryAcquireOrRenew(), timeout]);
    } finally {
      this.timers.clearTimeout(handle);
    }
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const now = this.clock.now();
    this.expiresAt = undefined;
    try {
      // The leader renews from its own last write; everyone else reads first.
      let lease = this.leading ? this.last : undefined;
      if (!lease) lease = await this.read();
      const observedAt = this.observe(lease, now);
      const decision = decide(lease, now, this.identity, { leaseDurationMs: this.timing.leaseDurationMs, observedAt });
      if (decision.action === 'wait') {
        this.expiresAt = decision.expiresAt;
        if (decision.holder !== this.lastLeader) {
          this.lastLeader = decision.holder;
          this.logger.info('another replica leads', { leader: decision.holder });
          this.callbacks.onNewLeader?.(decision.holder);
        }
        return false;
      }
      const body: LeaseObject = {
        apiVersion: Types.Lease.apiVersion,
        kind: Types.Lease.kind,
        metadata: decision.action === 'create' ? { name: this.name, namespace: this.namespace } : lease!.metadata,
        spec: decision.spec,
      };
      this.last =
        decision.action === 'create'
          ? await this.request<LeaseObject>('create', 'POST', this.path, body)
          : await this.request<LeaseObject>('update', 'PUT', `${this.path}/${this.name}`, body);
      if (decision.action !== 'renew')
        this.logger.info('acquired the leader lease', { previous: lease?.spec?.holderIdentity || undefined });
      this.renewedAt = now;
      this.lastLeader = this.identity;
      return true;
    } catch (e) {
      this.last = undefined;
      if (isConflictError(e)) this.logger.debug('lost a race for the leader lease', { error: describeError(e) });
      else this.logger.warn('acquiring or renewing the leader lease failed', { error: describeError(e) });
      return false;
    }
  }

  private async read(): Promise<LeaseObject | undefined> {
    try {
      return await this.request<LeaseObject>('get', 'GET', `${this.path}/${this.name}`);
    } catch (e) {
      if (isNotFoundError(e)) return undefined;
      throw e;
    }
  }

  /** The local time the current record (holder + renewTime) was first seen. */
  private observe(lease: LeaseObject | undefined, now: number): number | undefined {
    if (!lease) return undefined;
    const key = `${lease.spec?.holderIdentity ?? ''}|${lease.spec?.renewTime ?? ''}`;
    if (this.observed?.key !== key) this.observed = { key, at: now };
    return this.observed.at;
  }

  private async request<T>(verb: string, method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown): Promise<T> {
    try {
      return await this.transport.request<T>({ verb, kind: Types.Lease.kind, method, path, ...(body ? { body } : {}) });
    } catch (e) {
      throw toCoreError(e, `${verb === 'get' ? 'reading' : 'writing'} Lease ${this.namespace}/${this.name}`);
    }
  }
}
