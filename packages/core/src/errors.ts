/**
 * Core errors. Adapters map vendor errors (SDK error names, HTTP status codes) to these, keeping the
 * original as `cause`; nothing vendor-shaped crosses a port.
 */
export class CoreError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The object does not exist. */
export class NotFoundError extends CoreError {}
/** A write lost an optimistic-concurrency race (HTTP 409); retrying with fresh state may succeed. */
export class ConflictError extends CoreError {}
/** The caller is not allowed (HTTP 401/403): an RBAC or credentials problem, not retried quickly. */
export class ForbiddenError extends CoreError {}
/** A dependency is temporarily unavailable: throttling, 5xx, timeouts, network errors. Retry with backoff. */
export class TransientError extends CoreError {}
/** The API or cloud rejected the request as invalid (HTTP 400/422, a validation error). */
export class RejectedError extends CoreError {}

/** Input from the cluster (a MachineSet, a Secret, Infrastructure...) cannot be used as it is. */
export class InvalidInputError extends CoreError {
  constructor(
    /** PascalCase reason for conditions, e.g. `InvalidProviderSpec`. */
    readonly reason: string,
    /** The object at fault, e.g. `MachineSet openshift-machine-api/worker-a`. */
    readonly object: string,
    /** The field path at fault, e.g. `spec.template.spec.providerSpec.value.ami`. */
    readonly field: string,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(`${object}: ${field}: ${detail}`, options);
  }
}

/** The reconcile cannot succeed by retrying: stop until the inputs change. */
export class TerminalError extends CoreError {}

/**
 * Karpenter cannot run on this platform. `known` is true for a platform with a provider package that is not
 * supported yet (the Azure stub: nothing is wrong, nothing is deployed) and false for a platform no package
 * serves (reported as Degraded).
 */
export class UnsupportedPlatformError extends CoreError {
  constructor(
    readonly platform: string,
    detail: string,
    readonly known: boolean = true,
  ) {
    super(detail);
  }
}

export const isCoreError = (e: unknown): e is CoreError => e instanceof CoreError;
export const isNotFoundError = (e: unknown): e is NotFoundError => e instanceof NotFoundError;
export const isConflictError = (e: unknown): e is ConflictError => e instanceof ConflictError;
export const isForbiddenError = (e: unknown): e is ForbiddenError => e instanceof ForbiddenError;
export const isTransientError = (e: unknown): e is TransientError => e instanceof TransientError;
export const isRejectedError = (e: unknown): e is RejectedError => e instanceof RejectedError;
export const isInvalidInputError = (e: unknown): e is InvalidInputError => e instanceof InvalidInputError;
export const isTerminalError = (e: unknown): e is TerminalError => e instanceof TerminalError;
export const isUnsupportedPlatformError = (e: unknown): e is UnsupportedPlatformError => e instanceof UnsupportedPlatformError;

/** "listing MachineSets: <cause>" */
export function describeError(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}
