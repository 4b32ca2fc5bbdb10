import type { ConditionInput } from '../policy/conditions.js';

/** What one use-case last concluded. */
export interface UseCaseOutcome {
  /** Condition this use-case owns, e.g. `NodeClassDiscovered`. */
  condition?: ConditionInput;
  /** Consecutive failed reconciles (thrown errors); reset by a success. */
  consecutiveFailures: number;
  lastError?: string;
}

/**
 * Fan-in point for status: each use-case posts its outcome here and the status use-case folds them.
 * Process-local and derived: every entry is recomputed by the use-case's next reconcile, so losing it
 * on restart loses nothing.
 */
export class StatusBoard {
  private readonly outcomes = new Map<string, UseCaseOutcome>();
  private readonly listeners = new Set<() => void>();

  /** Records the condition a use-case owns; notifies listeners only when it changed. */
  setCondition(useCase: string, condition: ConditionInput | undefined): void {
    const prev = this.outcomes.get(useCase) ?? { consecutiveFailures: 0 };
    const next: UseCaseOutcome = { ...prev };
    if (condition) next.condition = condition;
    else delete next.condition;
    this.put(useCase, prev, next);
  }

  recordSuccess(useCase: string): void {
    const prev = this.outcomes.get(useCase) ?? { consecutiveFailures: 0 };
    if (prev.consecutiveFailures === 0 && prev.lastError === undefined && this.outcomes.has(useCase)) return;
    const next: UseCaseOutcome = { ...prev, consecutiveFailures: 0 };
    delete next.lastError;
    this.put(useCase, prev, next);
  }

  recordFailure(useCase: string, error: string): void {
    const prev = this.outcomes.get(useCase) ?? { consecutiveFailures: 0 };
    this.put(useCase, prev, { ...prev, consecutiveFailures: prev.consecutiveFailures + 1, lastError: error });
  }

  get(useCase: string): UseCaseOutcome | undefined {
    return this.outcomes.get(useCase);
  }

  entries(): Array<[string, UseCaseOutcome]> {
    return [...this.outcomes.entries()].sort(([a], [b]) => a.localeCompare(b));
  }

  conditions(): Array<ConditionInput & { useCase: string }> {
    return this.entries().flatMap(([useCase, o]) => (o.condition ? [{ ...o.condition, useCase }] : []));
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private put(useCase: string, prev: UseCaseOutcome, next: UseCaseOutcome): void {
    this.outcomes.set(useCase, next);
    if (JSON.stringify(prev) !== JSON.stringify(next)) for (const l of this.listeners) l();
  }
}
