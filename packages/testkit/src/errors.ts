/** A problem the user fixes outside the code (missing setup, busy port): one line, says what to do. */
export class LocalClusterError extends Error {
  override readonly name = 'LocalClusterError';
}

export function isLocalClusterError(e: unknown): e is LocalClusterError {
  return e instanceof LocalClusterError;
}
