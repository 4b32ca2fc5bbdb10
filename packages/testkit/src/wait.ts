/**
 * Polls `probe` until it returns a value other than `undefined`/`false`, or throws after `timeoutMs`
 * with the last error or `what`. For waits on real processes and the API server, never for logic.
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  opts: { timeoutMs?: number; intervalMs?: number; abort?: () => string | undefined } = {},
): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  const interval = opts.intervalMs ?? 250;
  let last: unknown;
  for (;;) {
    const aborted = opts.abort?.();
    if (aborted) throw new Error(`${what}: ${aborted}`);
    try {
      const v = await probe();
      if (v !== undefined && v !== false) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      const cause = last instanceof Error ? `: ${last.message}` : '';
      throw new Error(`timed out after ${opts.timeoutMs ?? 60_000} ms waiting for ${what}${cause}`, { cause: last });
    }
    await new Promise((r) => setTimeout(r, interval));
  }
}
