import { token } from './token.js';

/** Time, injected so that conditions, windows and backoff are testable. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const ClockId = token<Clock>('Clock');

export const systemClock: Clock = { now: () => Date.now() };

export const isoNow = (clock: Clock): string => new Date(Math.floor(clock.now() / 1000) * 1000).toISOString().replace('.000Z', 'Z');
