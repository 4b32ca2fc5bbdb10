import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ClusterClient } from './access.js';
import { freePort } from './ports.js';
import { ProcessSupervisor, tailLog, type ManagedProcess } from './processes.js';
import { getObject, listObjects, type KubeObj } from './resources.js';
import {
  expandRefs,
  fieldRef,
  resourceFieldRef,
  rewriteArg,
  rewriteFileContents,
  rewriteMountPaths,
  type ContainerSpec,
  type Pod,
} from './pod-spec.js';

/**
 * Runs a Deployment's pods as local processes, the way a kubelet would run their containers: one process
 * per scheduled pod (KWOK marks the pods Running; this runs what they stand for). The image → program
 * mapping (`commandFor`) is the only fake: env (fieldRefs, Secret/ConfigMap refs resolved), args, Secret and
 * ConfigMap volumes (materialised in a temp dir, env values under a mount path rewritten to it), a
 * kubeconfig holding a TokenRequest token of the pod's `serviceAccountName` — so the program runs under
 * exactly the RBAC applied for that ServiceAccount — and init containers run to completion first.
 *
 * Follows the pods: a new pod-template hash (credential rotation, log level) rolls new pods and so new
 * processes; a deleted pod (scale-down, Deployment deleted) stops its process (SIGTERM, SIGKILL after the
 * pod's grace period). A process that exits on its own is a crash: recorded (exit code, last log lines) and
 * restarted with back-off, as a kubelet would.
 */
export interface DeploymentRunnerOptions {
  cluster: ClusterClient;
  namespace: string;
  deployment: string;
  /** Where processes keep their logs, kubeconfigs and materialised volumes. */
  baseDir: string;
  /** The program standing for a container image: `undefined` = this container cannot be run (an error). */
  commandFor: (container: ContainerSpec, kind: 'init' | 'main') => { command: string; args?: string[] } | undefined;
  /**
   * Harness-only env for every container, added last (never rendered into the Deployment): e.g. the
   * emulator endpoint for every AWS service, switches for what the emulator cannot serve.
   */
  harnessEnv?: Record<string, string>;
  /**
   * Env names whose value is a TCP port the container listens on: each process gets a free port on
   * 127.0.0.1 instead (several replicas share this host).
   */
  portEnv?: string[];
  /** Env name that must hold the pod's namespace for leader election out of a pod (Karpenter's). */
  leaderElectionNamespaceEnv?: string;
  log?: (line: string) => void;
  pollMs?: number;
}

/** One crash of a container: its exit code and the last lines of its log. */
export interface ContainerCrash {
  pod: string;
  container: string;
  exitCode: number | string;
  at: Date;
  logTail: string;
  logFile: string;
  /**
   * The main container exited because it lost its leader lease (a loaded machine can starve lease renewal;
   * the kubelet restarts such a pod as any other): not a fault of the program.
   */
  leaderElectionLost?: boolean;
}

export interface ReplicaProcess {
  pod: string;
  templateHash: string;
  /** `init` while an init container runs, `running` once the main container runs, `backoff` after a crash. */
  state: 'init' | 'running' | 'backoff' | 'stopping';
  pid?: number;
  logFile: string;
  metricsPort?: number;
  healthPort?: number;
  restarts: number;
  startedAt: Date;
}

export interface DeploymentRunner {
  replicas(): ReplicaProcess[];
  crashes(): ContainerCrash[];
  /** The last `lines` of every replica's main-container log, each under a header (for failure messages). */
  logTails(lines?: number): string;
  /** Stops every process (SIGTERM, then SIGKILL after the grace period) and the poll loop. */
  stop(): Promise<void>;
}

interface Replica {
  info: ReplicaProcess;
  dir: string;
  proc?: ManagedProcess;
  /** Where the main container's current run starts in its log (what a crash is judged by). */
  mainLogOffset: number;
  /** The init container running to completion now, if any. */
  current?: ManagedProcess;
  /** Native sidecars (init containers with `restartPolicy: Always`) running beside the main container. */
  sidecars: Set<ManagedProcess>;
  stopping: boolean;
  backoffMs: number;
  grace: number;
  done: Promise<void>;
}

const MAX_BACKOFF_MS = 60_000;

export function startDeploymentRunner(opts: DeploymentRunnerOptions): DeploymentRunner {
  const log = opts.log ?? (() => undefined);
  const kc = opts.cluster.kubeConfig();
  const sup = new ProcessSupervisor(opts.baseDir);
  const replicas = new Map<string, Replica>();
  const crashes: ContainerCrash[] = [];
  let stopped = false;

  const podKey = (p: Pod) => `${p.metadata.name}/${String(p.metadata.uid ?? '')}`;

  const reconcile = async () => {
    const dep = await getObject<KubeObj & { spec: { selector: { matchLabels?: Record<string, string> } } }>(
      kc,
      'apps/v1',
      'Deployment',
      opts.deployment,
      opts.namespace,
    );
    let pods: Pod[] = [];
    if (dep) {
      const selector = Object.entries(dep.spec.selector.matchLabels ?? {})
        .map(([k, v]) => `${k}=${v}`)
        .join(',');
      pods = (await listObjects<Pod>(kc, 'v1', 'Pod', opts.namespace, selector)).filter(
        (p) => !p.metadata.deletionTimestamp && p.spec.nodeName && !['Failed', 'Succeeded'].includes(p.status?.phase ?? ''),
      );
    }
    const wanted = new Map(pods.map((p) => [podKey(p), p]));
    for (const [key, r] of replicas) {
      if (!wanted.has(key)) {
        replicas.delete(key);
        log(`pod ${r.info.pod} is gone: stopping its process`);
        void stopReplica(r);
      }
    }
    for (const [key, pod] of wanted) {
      if (!replicas.has(key)) replicas.set(key, startReplica(pod));
    }
  };

  const stopReplica = async (r: Replica) => {
    r.stopping = true;
    r.info.state = 'stopping';
    await r.proc?.stop(r.grace);
    await r.current?.stop(r.grace);
    // As the kubelet does: sidecars stop after the main container.
    await Promise.all([...r.sidecars].map((p) => p.stop(r.grace)));
    await r.done.catch(() => undefined);
  };

  const startReplica = (pod: Pod): Replica => {
    const name = pod.metadata.name;
    const dir = join(opts.baseDir, 'pods', name);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const r: Replica = {
      info: {
        pod: name,
        templateHash: pod.metadata.labels?.['pod-template-hash'] ?? hashOf(pod.spec),
        state: 'init',
        logFile: join(sup.logDir, `${name}.log`),
        restarts: 0,
        startedAt: new Date(),
      },
      dir,
      mainLogOffset: 0,
      sidecars: new Set(),
      stopping: false,
      backoffMs: 5_000,
      grace: (pod.spec.terminationGracePeriodSeconds ?? 30) * 1000,
      done: Promise.resolve(),
    };
    log(`pod ${name} (template ${r.info.templateHash}): starting`);
    r.done = runPod(pod, r).catch((e: Error) => {
      if (!r.stopping) log(`pod ${name}: ${e.message}`);
    });
    return r;
  };

  const sleepUnlessStopping = async (r: Replica, ms: number) => {
    const until = Date.now() + ms;
    while (!r.stopping && !stopped && Date.now() < until) await new Promise((res) => setTimeout(res, Math.min(250, until - Date.now())));
  };

  const runPod = async (pod: Pod, r: Replica) => {
    while (!r.stopping && !stopped) {
      let container = 'setup';
      const sidecarsStop = { stop: false };
      try {
        const prepared = await preparePod(pod, r.dir);
        for (const init of pod.spec.initContainers ?? []) {
          // A stop while the previous container started: nothing more to start (stopReplica stops what runs).
          if (r.stopping || stopped) return;
          container = init.name;
          r.info.state = 'init';
          if (init.restartPolicy === 'Always') {
            void runSidecar(pod, r, init, prepared, sidecarsStop);
            await waitStarted(pod, r, init, prepared);
            continue;
          }
          const code = await runContainer(pod, r, init, 'init', prepared);
          if (r.stopping) return;
          if (code !== 0) throw new ContainerExit(init.name, code, join(sup.logDir, `${pod.metadata.name}-${init.name}.log`));
        }
        if (r.stopping || stopped) return;
        const main = pod.spec.containers[0]!;
        container = main.name;
        r.info.state = 'running';
        const code = await runContainer(pod, r, main, 'main', prepared);
        if (r.stopping) return;
        throw new ContainerExit(main.name, code, r.info.logFile);
      } catch (e) {
        if (r.stopping || stopped) return;
        // The pod starts over: its sidecars with it.
        sidecarsStop.stop = true;
        await Promise.all([...r.sidecars].map((p) => p.stop(r.grace)));
        const exit = e instanceof ContainerExit ? e : undefined;
        const crash: ContainerCrash = {
          pod: pod.metadata.name,
          container: exit?.container ?? container,
          exitCode: exit?.code ?? `error: ${(e as Error).message}`,
          at: new Date(),
          logFile: exit?.logFile ?? r.info.logFile,
          logTail: exit ? tailLog(exit.logFile, 20) : (e as Error).message,
          leaderElectionLost: exit?.logFile === r.info.logFile && lostLeaderElection(logSince(r.info.logFile, r.mainLogOffset)),
        };
        crashes.push(crash);
        r.info.restarts++;
        r.info.state = 'backoff';
        log(
          `pod ${crash.pod} container ${crash.container} exited with ${String(crash.exitCode)}; restarting in ${r.backoffMs / 1000}s (log ${crash.logFile}):\n${crash.logTail}`,
        );
        await sleepUnlessStopping(r, r.backoffMs);
        r.backoffMs = Math.min(r.backoffMs * 2, MAX_BACKOFF_MS);
      }
    }
  };

  interface Prepared {
    kubeconfig: string;
    mounts: Map<string, string>;
  }

  const recordCrash = (crash: ContainerCrash, backoffMs: number) => {
    crashes.push(crash);
    log(
      `pod ${crash.pod} container ${crash.container} exited with ${String(crash.exitCode)}; restarting in ${backoffMs / 1000}s (log ${crash.logFile}):\n${crash.logTail}`,
    );
  };

  /**
   * A native sidecar: started, and restarted on its own with back-off whenever it exits, until the pod stops
   * or starts over (`until.stop`).
   */
  const runSidecar = async (pod: Pod, r: Replica, c: ContainerSpec, prepared: Prepared, until: { stop: boolean }) => {
    let backoffMs = 1_000;
    const logFile = join(sup.logDir, `${pod.metadata.name}-${c.name}.log`);
    while (!r.stopping && !stopped && !until.stop) {
      let code: number | string;
      try {
        const proc = await spawnContainer(pod, r, c, 'init', prepared, until);
        code = await proc.exited;
        r.sidecars.delete(proc);
      } catch (e) {
        code = `error: ${(e as Error).message}`;
      }
      if (r.stopping || stopped || until.stop) return;
      recordCrash(
        { pod: pod.metadata.name, container: c.name, exitCode: code, at: new Date(), logFile, logTail: tailLog(logFile, 20) },
        backoffMs,
      );
      await sleepUnlessStopping(r, backoffMs);
      backoffMs = Math.min(backoffMs * 2, MAX_BACKOFF_MS);
    }
  };

  /**
   * Until a sidecar's startup probe (an exec probe, its paths under the container's mounts pointing at the
   * local copies) succeeds: the containers after it wait, as with the kubelet. Probed every second (the
   * kubelet: every `periodSeconds`) within the probe's own deadline (`failureThreshold` × `periodSeconds`).
   */
  const waitStarted = async (pod: Pod, r: Replica, c: ContainerSpec, prepared: Prepared) => {
    const probe = c.startupProbe?.exec?.command;
    if (!probe?.length) return;
    const deadline = Date.now() + (c.startupProbe?.failureThreshold ?? 3) * (c.startupProbe?.periodSeconds ?? 10) * 1000;
    const [cmd, ...args] = probe.map((a) => rewriteArg(a, c, prepared.mounts));
    while (!r.stopping && !stopped) {
      const ok = await new Promise<boolean>((res) => execFile(cmd!, args, { timeout: 5_000, cwd: r.dir }, (err) => res(!err)));
      if (ok) return;
      if (Date.now() > deadline)
        throw new Error(`startup probe of container ${c.name} (${probe.join(' ')}) did not succeed within its deadline`);
      await sleepUnlessStopping(r, 1_000);
    }
  };

  /** Volumes into `<dir>/volumes/<name>`, a token kubeconfig of the pod's ServiceAccount. */
  const preparePod = async (pod: Pod, dir: string): Promise<Prepared> => {
    const mounts = new Map<string, string>();
    for (const v of pod.spec.volumes ?? []) {
      const target = join(dir, 'volumes', v.name);
      rmSync(target, { recursive: true, force: true });
      mkdirSync(target, { recursive: true });
      if (v.secret) {
        const s = await getObject<KubeObj & { data?: Record<string, string> }>(
          kc,
          'v1',
          'Secret',
          v.secret.secretName,
          pod.metadata.namespace,
        );
        if (!s && !v.secret.optional)
          throw new Error(`Secret ${pod.metadata.namespace}/${v.secret.secretName} of volume ${v.name} does not exist`);
        writeItems(
          target,
          Object.fromEntries(Object.entries(s?.data ?? {}).map(([k, b64]) => [k, Buffer.from(b64, 'base64')])),
          v.secret.items,
        );
      } else if (v.configMap) {
        const cm = await getObject<KubeObj & { data?: Record<string, string> }>(
          kc,
          'v1',
          'ConfigMap',
          v.configMap.name,
          pod.metadata.namespace,
        );
        if (!cm && !v.configMap.optional)
          throw new Error(`ConfigMap ${pod.metadata.namespace}/${v.configMap.name} of volume ${v.name} does not exist`);
        writeItems(target, Object.fromEntries(Object.entries(cm?.data ?? {}).map(([k, t]) => [k, Buffer.from(t)])), v.configMap.items);
      } else if (!v.emptyDir && !v.projected) {
        throw new Error(`volume ${v.name}: only Secret, ConfigMap, emptyDir and projected volumes can be run locally`);
      }
      // projected (the ServiceAccount token the API server injects): the process gets its own token
      // kubeconfig instead; emptyDir: the directory itself.
      mounts.set(v.name, target);
    }
    const podMounts = [...(pod.spec.initContainers ?? []), ...pod.spec.containers].flatMap((c) => c.volumeMounts ?? []);
    for (const v of pod.spec.volumes ?? []) if (v.secret || v.configMap) rewriteFileContents(mounts.get(v.name)!, podMounts, mounts);
    const sa = pod.spec.serviceAccountName ?? 'default';
    const kubeconfig = await opts.cluster.writeKubeConfigFor(pod.metadata.namespace!, sa, join(dir, 'kubeconfig'), {
      expirationSeconds: 48 * 3600,
    });
    return { kubeconfig, mounts };
  };

  const runContainer = async (
    pod: Pod,
    r: Replica,
    c: ContainerSpec,
    kind: 'init' | 'main',
    prepared: Prepared,
  ): Promise<number | string> => {
    const proc = await spawnContainer(pod, r, c, kind, prepared);
    return proc.exited;
  };

  const spawnContainer = async (
    pod: Pod,
    r: Replica,
    c: ContainerSpec,
    kind: 'init' | 'main',
    prepared: Prepared,
    /** A sidecar's: set when the pod starts over. */
    until?: { stop: boolean },
  ): Promise<ManagedProcess> => {
    const program = opts.commandFor(c, kind);
    if (!program) throw new Error(`no local program stands for the image ${c.image ?? '(none)'} of container ${c.name}`);
    const env = await containerEnv(pod, c, prepared);
    if (kind === 'main') {
      for (const name of opts.portEnv ?? []) {
        const port = await freePort();
        env[name] = String(port);
        if (/METRICS/i.test(name)) r.info.metricsPort = port;
        else r.info.healthPort = port;
      }
      if (opts.leaderElectionNamespaceEnv) env[opts.leaderElectionNamespaceEnv] = pod.metadata.namespace!;
    }
    Object.assign(env, opts.harnessEnv);
    // Nothing from this process's environment leaks in but PATH; HOME is the pod's directory.
    const clean: Record<string, string | undefined> = Object.fromEntries(Object.keys(process.env).map((k) => [k, undefined]));
    Object.assign(clean, { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: r.dir, KUBECONFIG: prepared.kubeconfig }, env);
    const name = kind === 'main' ? pod.metadata.name : `${pod.metadata.name}-${c.name}`;
    const args = [
      ...(program.args ?? []),
      ...[...(c.command?.slice(1) ?? []), ...(c.args ?? [])].map((a) => rewriteArg(a, c, prepared.mounts)),
    ];
    const logOffset = sizeOf(join(sup.logDir, `${name}.log`));
    const proc = sup.spawn(name, program.command, args, { env: clean, cwd: r.dir });
    // Known to stopReplica (and to a pod starting over) from the moment it runs.
    if (kind === 'main') {
      r.proc = proc;
      r.info.pid = proc.pid;
      r.mainLogOffset = logOffset;
    } else if (c.restartPolicy === 'Always') r.sidecars.add(proc);
    else r.current = proc;
    // A stop (or the pod starting over) while the env was read above found no process to stop: this one goes too.
    if (r.stopping || stopped || until?.stop) await proc.stop(r.grace);
    return proc;
  };

  /** The container's env as a kubelet resolves it, with values under a mount path pointing at the local copy. */
  const containerEnv = async (pod: Pod, c: ContainerSpec, prepared: Prepared): Promise<Record<string, string>> => {
    const ns = pod.metadata.namespace!;
    const env: Record<string, string> = {};
    const readKey = async (kind: 'Secret' | 'ConfigMap', name: string, key: string, optional?: boolean): Promise<string | undefined> => {
      const o = await getObject<KubeObj & { data?: Record<string, string> }>(kc, 'v1', kind, name, ns);
      const raw = o?.data?.[key];
      if (raw === undefined) {
        if (optional) return undefined;
        throw new Error(`${kind} ${ns}/${name} has no key ${key}`);
      }
      return kind === 'Secret' ? Buffer.from(raw, 'base64').toString('utf8') : raw;
    };
    for (const from of c.envFrom ?? []) {
      const ref = from.secretRef ?? from.configMapRef;
      if (!ref) continue;
      const o = await getObject<KubeObj & { data?: Record<string, string> }>(
        kc,
        'v1',
        from.secretRef ? 'Secret' : 'ConfigMap',
        ref.name,
        ns,
      );
      for (const [k, v] of Object.entries(o?.data ?? {}))
        env[`${from.prefix ?? ''}${k}`] = from.secretRef ? Buffer.from(v, 'base64').toString('utf8') : v;
    }
    for (const e of c.env ?? []) {
      let value: string | undefined = e.value ?? '';
      const vf = e.valueFrom;
      if (vf?.fieldRef) value = fieldRef(pod, vf.fieldRef.fieldPath);
      else if (vf?.secretKeyRef) value = await readKey('Secret', vf.secretKeyRef.name, vf.secretKeyRef.key, vf.secretKeyRef.optional);
      else if (vf?.configMapKeyRef)
        value = await readKey('ConfigMap', vf.configMapKeyRef.name, vf.configMapKeyRef.key, vf.configMapKeyRef.optional);
      else if (vf?.resourceFieldRef) value = resourceFieldRef(pod, c, vf.resourceFieldRef);
      if (value !== undefined) env[e.name] = expandRefs(value, env);
    }
    for (const [k, v] of Object.entries(env)) env[k] = rewriteMountPaths(v, c, prepared.mounts);
    return env;
  };

  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const loop = () => {
    if (stopped) return;
    running = reconcile()
      .catch((e: Error) => log(`reading Deployment ${opts.namespace}/${opts.deployment}: ${e.message}`))
      .finally(() => {
        if (!stopped) timer = setTimeout(loop, opts.pollMs ?? 1000);
      });
  };
  loop();

  return {
    replicas: () => [...replicas.values()].map((r) => ({ ...r.info })),
    crashes: () => [...crashes],
    logTails: (lines = 30) =>
      [...replicas.values()]
        .map(
          (r) =>
            `--- ${r.info.pod} (${r.info.state}, restarts ${r.info.restarts}, log ${r.info.logFile})\n${tailLog(r.info.logFile, lines)}`,
        )
        .join('\n') || '(no replica running)',
    stop: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running.catch(() => undefined);
      await Promise.all([...replicas.values()].map(stopReplica));
      replicas.clear();
      await sup.stopAll();
    },
  };
}

class ContainerExit extends Error {
  constructor(
    readonly container: string,
    readonly code: number | string,
    readonly logFile: string,
  ) {
    super(`container ${container} exited with ${String(code)}`);
  }
}

/** A log line of a controller exiting because it lost its leader lease (controller-runtime, client-go). */
export function lostLeaderElection(log: string): boolean {
  return /leader ?election lost/i.test(log);
}

function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

/** What a log holds from byte `offset` on (one run of a container whose log is appended to). */
function logSince(file: string, offset: number): string {
  try {
    return readFileSync(file).subarray(offset).toString('utf8');
  } catch {
    return '';
  }
}

function hashOf(v: unknown): string {
  return createHash('sha256').update(JSON.stringify(v)).digest('hex').slice(0, 10);
}

function writeItems(dir: string, data: Record<string, Buffer>, items?: Array<{ key: string; path: string }>): void {
  const pairs = items ? items.map((i) => [i.path, data[i.key]] as const) : Object.entries(data);
  for (const [path, content] of pairs) {
    if (content === undefined) continue;
    const file = join(dir, path);
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(file, content, { mode: 0o600 });
  }
}
