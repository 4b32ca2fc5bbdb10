import {
  describeError,
  Names,
  noopMetrics,
  silentLogger,
  systemClock,
  type Clock,
  type EventRecorder,
  type EventType,
  type Logger,
  type Metrics,
  type ObjectRef,
} from '@karpenter-operator/core/ports';
import { PatchStrategy } from './client-node.js';
import { RuntimeMetrics } from '../runtime/metric-names.js';
import { systemTimers, type TimerHandle, type Timers } from '../runtime/timers.js';
import { microTime } from './leader-election.js';
import type { KubeTransport } from './transport.js';

export interface KubeEventRecorderOptions {
  transport: KubeTransport;
  /** This replica (e.g. the leader identity); `reportingInstance` of every Event. */
  reportingInstance: string;
  /** Default `karpenter-operator`. */
  reportingController?: string;
  /** Namespace of Events about cluster-scoped objects (client-go uses `default`). */
  clusterScopedNamespace?: string;
  /** Identical events within this window extend one Event's series instead of creating another. Default 6 min (client-go). */
  seriesWindowMs?: number;
  /** Series counts are written at most this often per Event. Default 30 s. */
  seriesFlushMs?: number;
  /** Distinct events remembered for aggregation. Default 4096. */
  maxTracked?: number;
  clock?: Clock;
  timers?: Timers;
  logger?: Logger;
  metrics?: Metrics;
}

interface Tracked {
  name: string;
  namespace: string;
  firstObserved: number;
  lastObserved: number;
  count: number;
  written: number;
  created: Promise<boolean>;
  flush: TimerHandle | undefined;
}

const truncate = (s: string, max: number) => (s.length <= max ? s : `${s.slice(0, max - 3)}...`);

/**
 * `EventRecorder` over `events.k8s.io/v1`. Best effort: `record` never throws and never waits; failed writes
 * are logged and counted. Identical events (same object, type, reason and message) within the series
 * window are aggregated into one Event whose `series.count` is patched at most every `seriesFlushMs`.
 */
export class KubeEventRecorder implements EventRecorder {
  private readonly transport: KubeTransport;
  private readonly reportingInstance: string;
  private readonly reportingController: string;
  private readonly clusterScopedNamespace: string;
  private readonly seriesWindowMs: number;
  private readonly seriesFlushMs: number;
  private readonly maxTracked: number;
  private readonly clock: Clock;
  private readonly timers: Timers;
  private readonly logger: Logger;
  private readonly metrics: Metrics;
  private readonly tracked = new Map<string, Tracked>();
  private readonly pending = new Set<Promise<unknown>>();
  private seq = 0;
  private closed = false;

  constructor(options: KubeEventRecorderOptions) {
    this.transport = options.transport;
    this.reportingInstance = options.reportingInstance;
    this.reportingController = options.reportingController ?? Names.operatorDeployment;
    this.clusterScopedNamespace = options.clusterScopedNamespace ?? 'default';
    this.seriesWindowMs = options.seriesWindowMs ?? 6 * 60_000;
    this.seriesFlushMs = options.seriesFlushMs ?? 30_000;
    this.maxTracked = options.maxTracked ?? 4096;
    this.clock = options.clock ?? systemClock;
    this.timers = options.timers ?? systemTimers;
    this.logger = options.logger ?? silentLogger;
    this.metrics = options.metrics ?? noopMetrics;
  }

  record(regarding: ObjectRef & { uid?: string }, type: EventType, reason: string, message: string): void {
    try {
      if (this.closed) return;
      const now = this.clock.now();
      const note = truncate(message, 1024);
      const key = [
        regarding.apiVersion,
        regarding.kind,
        regarding.namespace ?? '',
        regarding.name,
        regarding.uid ?? '',
        type,
        reason,
        note,
      ].join('\u0000');
      const existing = this.tracked.get(key);
      if (existing && now - existing.lastObserved < this.seriesWindowMs) {
        existing.count++;
        existing.lastObserved = now;
        existing.flush ??= this.timers.setTimeout(() => {
          existing.flush = undefined;
          this.track(this.writeSeries(existing));
        }, this.seriesFlushMs);
        return;
      }
      if (existing?.flush !== undefined) this.timers.clearTimeout(existing.flush);
      this.tracked.delete(key);
      this.evict();
      const namespace = regarding.namespace ?? this.clusterScopedNamespace;
      // client-go names events "<object>.<unix nanoseconds in hex>"; the sequence keeps names unique within a millisecond.
      const name = `${regarding.name}.${(BigInt(now) * 1_000_000n + BigInt(this.seq++ % 1_000_000)).toString(16)}`;
      const body = {
        apiVersion: 'events.k8s.io/v1',
        kind: 'Event',
        metadata: { name, namespace },
        eventTime: microTime(now),
        reportingController: this.reportingController,
        reportingInstance: this.reportingInstance,
        action: truncate(reason, 128),
        reason: truncate(reason, 128),
        note,
        type,
        regarding: {
          apiVersion: regarding.apiVersion,
          kind: regarding.kind,
          name: regarding.name,
          ...(regarding.namespace ? { namespace: regarding.namespace } : {}),
          ...(regarding.uid ? { uid: regarding.uid } : {}),
        },
      };
      const created = this.write(
        'create',
        'POST',
        `/apis/events.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/events`,
        body,
        undefined,
        // What the Event said, in the log instead (a Role without Events, an API server refusing them).
        { regarding: `${regarding.kind} ${regarding.namespace ? `${regarding.namespace}/` : ''}${regarding.name}`, type, reason, note },
      );
      this.tracked.set(key, { name, namespace, firstObserved: now, lastObserved: now, count: 1, written: 1, created, flush: undefined });
      this.track(created);
    } catch (e) {
      this.failed(e);
    }
  }

  /** Writes pending series counts and waits for every write in flight. For shutdown and tests. */
  async flush(): Promise<void> {
    for (const t of this.tracked.values()) {
      if (t.flush === undefined) continue;
      this.timers.clearTimeout(t.flush);
      t.flush = undefined;
      this.track(this.writeSeries(t));
    }
    while (this.pending.size) await Promise.allSettled([...this.pending]);
  }

  /** Flushes, then ignores further events. */
  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
  }

  private async writeSeries(t: Tracked): Promise<boolean> {
    if (!(await t.created) || t.count <= t.written) return false;
    const count = t.count;
    const ok = await this.write(
      'patch',
      'PATCH',
      `/apis/events.k8s.io/v1/namespaces/${encodeURIComponent(t.namespace)}/events/${encodeURIComponent(t.name)}`,
      { series: { count, lastObservedTime: microTime(t.lastObserved) } },
      PatchStrategy.MergePatch,
    );
    if (ok) t.written = count;
    return ok;
  }

  private async write(
    verb: string,
    method: 'POST' | 'PATCH',
    path: string,
    body: unknown,
    contentType: string | undefined,
    event?: Record<string, string>,
  ): Promise<boolean> {
    try {
      await this.transport.request({ verb, kind: 'Event', method, path, body, ...(contentType ? { contentType } : {}) });
      return true;
    } catch (e) {
      this.failed(e, event);
      return false;
    }
  }

  private failed(e: unknown, event?: Record<string, string>): void {
    this.metrics.inc(RuntimeMetrics.eventsDropped.name);
    this.logger.warn('writing a Kubernetes Event failed', { error: describeError(e), ...(event ? { event } : {}) });
  }

  private track(p: Promise<unknown>): void {
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  /** Forgets the oldest aggregation entries beyond `maxTracked` (Map keeps insertion order). */
  private evict(): void {
    while (this.tracked.size >= this.maxTracked) {
      const [oldestKey, oldest] = this.tracked.entries().next().value as [string, Tracked];
      if (oldest.flush !== undefined) this.timers.clearTimeout(oldest.flush);
      this.tracked.delete(oldestKey);
    }
  }
}
