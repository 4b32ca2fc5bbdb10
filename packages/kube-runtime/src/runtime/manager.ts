import type { Server } from 'node:net';
import { describeError, type Logger } from '@karpenter-operator/core/ports';

/**
 * Exit codes of both binaries (the operator and the HyperShift sidecar adapter).
 *
 * - `ok` (0): a graceful stop (SIGTERM/SIGINT), or a command that did its job.
 * - `fatal` (1): start-up or a command failed (an unreachable cloud, unreadable input, a bug).
 * - `usage` (2): refused to start: an unknown flag, a flag without its value, a bad value or a missing
 *   setting; the message names the flag or variable. Restarting the same container cannot help.
 * - `lostLease` (2): the operator lost its leader lease after start; the kubelet restarts it as a standby.
 * - `platformChanged` (3): Infrastructure names another platform; restart to load its provider.
 */
export const ExitCodes = { ok: 0, fatal: 1, usage: 2, lostLease: 2, platformChanged: 3 } as const;

/** Where signals come from: `process`, or an emitter in tests. */
export interface SignalSource {
  once(signal: NodeJS.Signals, listener: () => void): unknown;
  off(signal: NodeJS.Signals, listener: () => void): unknown;
}

/** A server the manager closes last: the probe and metrics endpoints answer while everything else stops. */
export type ClosableServer = Pick<Server, 'close'>;

export interface ManagerOptions {
  logger: Logger;
  /** Default `process`. */
  signals?: SignalSource;
}

/** One step of the stop sequence; it is told the exit code (the operator keeps its lease when it lost it). */
type StopStep = { name: string; run: (code: number) => Promise<void> | void };

/**
 * The start/stop scaffolding of a long-running binary: its probe and metrics servers, SIGTERM/SIGINT, the
 * stop order and the exit code. Both binaries build one, register what they start, and return `done`.
 *
 * Stop order: the steps in the order they were registered (each awaited, a failure logged and the next one
 * run), then the servers, so that probes answer until the end. The first `stop` decides the exit code and
 * later calls return the same promise. `signal` aborts when stopping begins: start-up waits pass it on so a
 * SIGTERM during start-up ends them at once.
 */
export class Manager {
  private readonly logger: Logger;
  private readonly signals: SignalSource;
  private readonly steps: StopStep[] = [];
  private readonly servers: ClosableServer[] = [];
  private readonly abort = new AbortController();
  private readonly onSignal = new Map<NodeJS.Signals, () => void>();
  private stopping: Promise<number> | undefined;
  private finish: (code: number) => void = () => {};
  /** Resolves with the exit code once every step has run and every server is closed. */
  readonly done: Promise<number>;

  constructor(opts: ManagerOptions) {
    this.logger = opts.logger;
    this.signals = opts.signals ?? process;
    this.done = new Promise<number>((resolve) => (this.finish = resolve));
  }

  /** Aborted when stopping begins. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  /** SIGTERM and SIGINT stop with `ExitCodes.ok`. Call once, as early as possible. */
  handleSignals(): this {
    for (const sig of ['SIGTERM', 'SIGINT'] as const) {
      const listener = () => void this.stop(ExitCodes.ok, sig);
      this.onSignal.set(sig, listener);
      this.signals.once(sig, listener);
    }
    return this;
  }

  /** A server to close after every step. Returns it. */
  addServer<S extends ClosableServer>(server: S): S {
    this.servers.push(server);
    return server;
  }

  /** A step of the stop sequence, run after the steps registered before it. */
  onStop(name: string, run: (code: number) => Promise<void> | void): this {
    this.steps.push({ name, run });
    return this;
  }

  /** Stops once with `code` (the first caller's); every call returns the same exit code. */
  stop(code: number, why: string): Promise<number> {
    this.stopping ??= (async () => {
      this.logger.info('stopping', { reason: why, exitCode: code });
      for (const [sig, listener] of this.onSignal) this.signals.off(sig, listener);
      this.abort.abort();
      for (const step of this.steps) {
        try {
          await step.run(code);
        } catch (e) {
          this.logger.error(`stopping: ${step.name}`, { error: describeError(e) });
        }
      }
      await Promise.all(this.servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
      this.finish(code);
      return code;
    })();
    return this.stopping;
  }
}

/**
 * Runs a binary's `main` and exits with its code once stdout and stderr are flushed: into a pipe they are
 * asynchronous, and `process.exit` right after a large write (`render --output json | ...`) cut the output at
 * 64 KiB. A `main` that throws exits `ExitCodes.fatal` with one line on stderr prefixed by `name`.
 */
export function runMain(name: string, main: () => Promise<number>): void {
  main().then(exitAfterFlush, (e: unknown) => {
    process.stderr.write(`${name}: ${describeError(e)}\n`);
    exitAfterFlush(ExitCodes.fatal);
  });
}

function exitAfterFlush(code: number): void {
  let pending = 2;
  const done = () => {
    if (--pending === 0) process.exit(code);
  };
  process.stdout.write('', done);
  process.stderr.write('', done);
}
