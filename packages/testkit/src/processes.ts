import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalClusterError } from './errors.js';

export interface ManagedProcess {
  readonly name: string;
  readonly pid: number;
  /** Resolves with the exit code (or the signal name) once the process has exited. */
  readonly exited: Promise<number | string>;
  readonly logFile: string;
  isRunning(): boolean;
  /** SIGTERM to the whole process group, SIGKILL after `graceMs`. Resolves when it has exited. */
  stop(graceMs?: number): Promise<void>;
}

export interface SpawnOptions {
  env?: Record<string, string | undefined>;
  cwd?: string;
}

// Watches the parent; when it is gone (even by SIGKILL), kills every process group still registered.
const WATCHDOG = `
parent="$1"; registry="$2"
while kill -0 "$parent" 2>/dev/null; do sleep 1; done
kill_all() { [ -f "$registry" ] || return 0; while read -r pg; do [ -n "$pg" ] && kill "-$1" -- "-$pg" 2>/dev/null; done < "$registry"; }
kill_all TERM; sleep 3; kill_all KILL; rm -f "$registry"
`;

const live = new Set<ProcessSupervisor>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Last resort on a normal or error exit of this process: nothing it started may outlive it.
  process.on('exit', () => {
    for (const s of live) s.killAllNow();
  });
}

/**
 * Starts child processes each in its own process group, logs to `<logDir>/<name>.log`, and guarantees
 * they die with this process: an exit hook, plus a detached watchdog for deaths the hook cannot see.
 */
export class ProcessSupervisor {
  readonly logDir: string;
  private readonly registry: string;
  private readonly procs = new Map<string, { child: ChildProcess; running: boolean }>();
  private watchdog: ChildProcess | undefined;

  constructor(baseDir: string) {
    this.logDir = join(baseDir, 'logs');
    mkdirSync(this.logDir, { recursive: true });
    this.registry = join(baseDir, 'process-groups');
    writeFileSync(this.registry, '');
    installExitHook();
    live.add(this);
    this.watchdog = spawn('bash', ['-c', WATCHDOG, 'watchdog', String(process.pid), this.registry], {
      detached: true,
      stdio: 'ignore',
    });
    this.watchdog.unref();
  }

  spawn(name: string, command: string, args: string[], opts: SpawnOptions = {}): ManagedProcess {
    if (this.procs.get(name)?.running) throw new Error(`process ${name} is already running`);
    if (!existsSync(command) && command.includes('/')) {
      throw new LocalClusterError(`${name}: ${command} is missing: run \`npm run setup\` first`);
    }
    const logFile = join(this.logDir, `${name}.log`);
    const fd = openSync(logFile, 'a');
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries({ ...process.env, ...opts.env })) if (v !== undefined) env[k] = v;
    const child = spawn(command, args, { detached: true, stdio: ['ignore', fd, fd], env, cwd: opts.cwd });
    closeSync(fd);
    const entry = { child, running: true };
    this.procs.set(name, entry);
    const exited = new Promise<number | string>((resolveExit) => {
      child.once('error', (e) => {
        entry.running = false;
        this.writeRegistry();
        writeFileSync(logFile, `\n[testkit] failed to start ${command}: ${e.message}\n`, { flag: 'a' });
        resolveExit(`error: ${e.message}`);
      });
      child.once('exit', (code, signal) => {
        entry.running = false;
        this.writeRegistry();
        resolveExit(code ?? signal ?? 'unknown');
      });
    });
    this.writeRegistry();
    const pid = child.pid ?? -1;
    return {
      name,
      pid,
      exited,
      logFile,
      isRunning: () => entry.running,
      stop: async (graceMs = 10_000) => {
        if (!entry.running) return;
        signalGroup(pid, 'SIGTERM');
        const timer = setTimeout(() => signalGroup(pid, 'SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
        // The leader may exit before the rest of its group.
        signalGroup(pid, 'SIGKILL');
      },
    };
  }

  /** Synchronous SIGKILL of every group (exit hook). */
  killAllNow(): void {
    for (const { child, running } of this.procs.values()) if (running && child.pid) signalGroup(child.pid, 'SIGKILL');
    if (this.watchdog?.pid) signalGroup(this.watchdog.pid, 'SIGKILL');
  }

  /** Stops everything it started (in reverse start order) and the watchdog. */
  async stopAll(graceMs = 10_000): Promise<void> {
    const entries = [...this.procs.entries()].reverse();
    for (const [, { child, running }] of entries) {
      if (!running || !child.pid) continue;
      const pid = child.pid;
      const done = new Promise<void>((r) => child.once('exit', () => r()));
      signalGroup(pid, 'SIGTERM');
      const timer = setTimeout(() => signalGroup(pid, 'SIGKILL'), graceMs);
      await done;
      clearTimeout(timer);
      signalGroup(pid, 'SIGKILL');
    }
    if (this.watchdog?.pid) signalGroup(this.watchdog.pid, 'SIGKILL');
    this.watchdog = undefined;
    live.delete(this);
  }

  private writeRegistry(): void {
    const pgs = [...this.procs.values()].filter((p) => p.running && p.child.pid).map((p) => String(p.child.pid));
    try {
      writeFileSync(this.registry, pgs.join('\n') + (pgs.length ? '\n' : ''));
    } catch {
      // base dir removed during teardown
    }
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // already gone
  }
}

/** The last `lines` lines of a log file, for error messages. */
export function tailLog(file: string, lines = 15): string {
  try {
    const all = readFileSync(file, 'utf8').trimEnd().split('\n');
    return all.slice(-lines).join('\n');
  } catch {
    return '';
  }
}
