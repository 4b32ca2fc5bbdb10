import type { ObjectRef } from '../model/kube.js';
import { token } from './token.js';

export type EventType = 'Normal' | 'Warning';

/**
 * Kubernetes Events for decisions a user would look for. Best effort: never throws (a failed event
 * write is logged), and repeated identical events are aggregated by the implementation.
 */
export interface EventRecorder {
  record(regarding: ObjectRef & { uid?: string }, type: EventType, reason: string, message: string): void;
}

export const EventRecorderId = token<EventRecorder>('EventRecorder');
