import { waitFor } from '@karpenter-operator/testkit';

/** A process a wait gives up on when it exits (the operator, the adapter): the test failed, waiting longer hides why. */
export interface WatchedProcess {
  name: string;
  get: () => { exited(): boolean; logs(): string } | undefined;
}

export interface EventuallyOptions {
  processes: WatchedProcess[];
  /** What the failure message carries beside the probe's last error: the world as the test sees it. */
  diagnostics: () => Promise<string>;
  /** Where each wait's duration is recorded, in seconds, under its `what`. */
  took?: Record<string, number>;
  intervalMs?: number;
}

/**
 * `waitFor` for the end-to-end suites: it stops as soon as a watched process exits, and its failure names the
 * wait, the probe's last error and the diagnostics.
 */
export function eventuallyWith(
  opts: EventuallyOptions,
): <T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs: number) => Promise<T> {
  return async (what, probe, timeoutMs) => {
    const t0 = Date.now();
    try {
      const v = await waitFor(what, probe, {
        timeoutMs,
        intervalMs: opts.intervalMs ?? 1000,
        abort: () => {
          for (const p of opts.processes) {
            const proc = p.get();
            if (proc?.exited()) return `the ${p.name} exited:\n${proc.logs().slice(-3000)}`;
          }
          return undefined;
        },
      });
      if (opts.took) opts.took[what] = Math.round((Date.now() - t0) / 1000);
      return v;
    } catch (e) {
      throw new Error(`${(e as Error).message}\n${await opts.diagnostics()}`, { cause: e });
    }
  };
}
