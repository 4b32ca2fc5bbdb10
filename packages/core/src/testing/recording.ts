import type { EventRecorder, EventType } from '../ports/event-recorder.js';
import type { Labels, Metrics } from '../ports/metrics.js';
import type { ObjectRef } from '../model/kube.js';

export interface RecordedEvent {
  regarding: ObjectRef;
  type: EventType;
  reason: string;
  message: string;
}

export class RecordingEvents implements EventRecorder {
  readonly events: RecordedEvent[] = [];
  record(regarding: ObjectRef, type: EventType, reason: string, message: string): void {
    this.events.push({ regarding, type, reason, message });
  }
}

export class RecordingMetrics implements Metrics {
  readonly counters = new Map<string, number>();
  readonly gauges = new Map<string, number>();
  readonly observations: Array<{ name: string; value: number; labels?: Labels }> = [];
  private key(name: string, labels?: Labels): string {
    const l = Object.entries(labels ?? {})
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    return l ? `${name}{${l}}` : name;
  }
  inc(name: string, labels?: Labels, value = 1): void {
    const k = this.key(name, labels);
    this.counters.set(k, (this.counters.get(k) ?? 0) + value);
  }
  observe(name: string, value: number, labels?: Labels): void {
    this.observations.push(labels ? { name, value, labels } : { name, value });
  }
  set(name: string, value: number, labels?: Labels): void {
    this.gauges.set(this.key(name, labels), value);
  }
}
