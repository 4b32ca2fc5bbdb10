import { describe, expect, it } from 'vitest';
import { setCondition } from './conditions.js';
import type { Condition } from '../model/kube.js';

const t0 = '2026-01-01T00:00:00Z';
const t1 = '2026-01-01T00:05:00Z';
const base: Condition = { type: 'Available', status: 'True', reason: 'AsExpected', message: 'ok', lastTransitionTime: t0 };

describe('setCondition', () => {
  it.each([
    { name: 'adds a missing condition', list: [], next: { ...base }, changed: true, ltt: t1 },
    { name: 'same status and text changes nothing', list: [base], next: { ...base }, changed: false, ltt: t0 },
    { name: 'message change keeps lastTransitionTime', list: [base], next: { ...base, message: 'other' }, changed: true, ltt: t0 },
    { name: 'reason change keeps lastTransitionTime', list: [base], next: { ...base, reason: 'Other' }, changed: true, ltt: t0 },
    { name: 'status change moves lastTransitionTime', list: [base], next: { ...base, status: 'False' as const }, changed: true, ltt: t1 },
    { name: 'observedGeneration change is a change', list: [base], next: { ...base, observedGeneration: 2 }, changed: true, ltt: t0 },
  ])('$name', ({ list, next, changed, ltt }) => {
    const { lastTransitionTime: _drop, ...input } = next;
    const r = setCondition(list, input, t1);
    expect(r.changed).toBe(changed);
    expect(r.conditions.find((c) => c.type === 'Available')?.lastTransitionTime).toBe(ltt);
    expect(r.conditions).toHaveLength(1);
  });
});
