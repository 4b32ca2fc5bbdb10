// A pod spec as the local runner reads it, and what a kubelet resolves in it: downward-API field and resource
// references, `$(VAR)` expansion, and paths under a mount path pointed at the local copy of the volume.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { quantityValue } from '@karpenter-operator/core';
import { availableParallelism, totalmem } from 'node:os';
import type { KubeObj } from './resources.js';

export interface ContainerSpec {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  env?: EnvVar[];
  envFrom?: Array<{ secretRef?: { name: string }; configMapRef?: { name: string }; prefix?: string }>;
  volumeMounts?: Array<{ name: string; mountPath: string; subPath?: string }>;
  resources?: { requests?: Record<string, string | number>; limits?: Record<string, string | number> };
  /** `Always` on an init container: a native sidecar, started before the main container and kept running beside it. */
  restartPolicy?: string;
  startupProbe?: { exec?: { command: string[] }; periodSeconds?: number; failureThreshold?: number };
}

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    fieldRef?: { fieldPath: string };
    secretKeyRef?: { name: string; key: string; optional?: boolean };
    configMapKeyRef?: { name: string; key: string; optional?: boolean };
    resourceFieldRef?: ResourceFieldRef;
  };
}

export interface PodSpec {
  serviceAccountName?: string;
  nodeName?: string;
  terminationGracePeriodSeconds?: number;
  containers: ContainerSpec[];
  initContainers?: ContainerSpec[];
  volumes?: Array<{
    name: string;
    secret?: { secretName: string; items?: Array<{ key: string; path: string }>; optional?: boolean };
    configMap?: { name: string; items?: Array<{ key: string; path: string }>; optional?: boolean };
    emptyDir?: unknown;
    projected?: unknown;
  }>;
}

export type Pod = KubeObj & { spec: PodSpec; status?: { podIP?: string; hostIP?: string; phase?: string } };

export interface ResourceFieldRef {
  containerName?: string;
  resource: string;
  divisor?: string | number;
}

/**
 * A container's resource through the downward API, as the kubelet resolves it: the value divided by the
 * divisor (1 when unset), rounded up, CPU counted in millicores first; an unset limit is the node's
 * allocatable amount (here: this host's CPUs and memory), an unset request 0.
 */
export function resourceFieldRef(pod: Pod, self: ContainerSpec, ref: ResourceFieldRef): string {
  const container = ref.containerName
    ? [...pod.spec.containers, ...(pod.spec.initContainers ?? [])].find((x) => x.name === ref.containerName)
    : self;
  if (!container) throw new Error(`resourceFieldRef names container ${ref.containerName}, which pod ${pod.metadata.name} lacks`);
  const [kind, resource] = ref.resource.split('.') as ['requests' | 'limits', string];
  const set = container.resources?.[kind]?.[resource];
  const host: Record<string, number> = { cpu: availableParallelism(), memory: totalmem() };
  const value = set !== undefined ? quantityValue(set) : kind === 'limits' ? (host[resource] ?? 0) : 0;
  if (value === undefined) throw new Error(`container ${container.name}: ${ref.resource} ${String(set)} is not a quantity`);
  const divisor = quantityValue(ref.divisor ?? 0) || 1;
  // CPU in millicores, as the kubelet computes it (ceil(milli value / milli divisor)).
  return String(resource === 'cpu' ? Math.ceil(Math.round(value * 1000) / Math.round(divisor * 1000)) : Math.ceil(value / divisor));
}

/** The downward-API fields a container env may reference. */
export function fieldRef(pod: Pod, path: string): string {
  const labels = /^metadata\.labels\['(.+)'\]$/.exec(path);
  if (labels) return pod.metadata.labels?.[labels[1]!] ?? '';
  const annotations = /^metadata\.annotations\['(.+)'\]$/.exec(path);
  if (annotations) return pod.metadata.annotations?.[annotations[1]!] ?? '';
  switch (path) {
    case 'metadata.name':
      return pod.metadata.name;
    case 'metadata.namespace':
      return pod.metadata.namespace ?? '';
    case 'metadata.uid':
      return String(pod.metadata.uid ?? '');
    case 'spec.nodeName':
      return pod.spec.nodeName ?? '';
    case 'spec.serviceAccountName':
      return pod.spec.serviceAccountName ?? 'default';
    case 'status.podIP':
    case 'status.hostIP':
      return '127.0.0.1';
    default:
      throw new Error(`env fieldRef ${path} is not supported by the local runner`);
  }
}

/** `$(VAR)` references to earlier variables, as the kubelet expands them. */
export function expandRefs(value: string, env: Record<string, string>): string {
  return value.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m, name: string) => env[name] ?? m);
}

/**
 * The text files of a materialised Secret or ConfigMap volume under `dir` with every path under one of the
 * pod's mount paths pointing at the local copy instead (e.g. an AWS profile's `web_identity_token_file` naming
 * the token volume's mount path). Binary files (a NUL byte) stay as they are.
 */
export function rewriteFileContents(
  dir: string,
  podMounts: Array<{ name: string; mountPath: string; subPath?: string }>,
  mounts: Map<string, string>,
): void {
  const bases = podMounts
    .filter((m) => mounts.has(m.name))
    .map((m) => ({ base: m.mountPath.replace(/\/+$/, ''), target: m.subPath ? join(mounts.get(m.name)!, m.subPath) : mounts.get(m.name)! }))
    .sort((a, b) => b.base.length - a.base.length);
  if (!bases.length) return;
  const pattern = new RegExp(`(${bases.map((b) => b.base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})(?=[/\\s"',;]|$)`, 'gm');
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const file = join(d, e.name);
      if (e.isDirectory()) {
        walk(file);
        continue;
      }
      const raw = readFileSync(file);
      if (raw.includes(0)) continue;
      const text = raw.toString('utf8');
      const out = text.replace(pattern, (base) => bases.find((b) => b.base === base)!.target);
      if (out !== text) writeFileSync(file, out, { mode: 0o600 });
    }
  };
  walk(dir);
}

/** An argument naming a file under one of the container's mount paths (alone or as `--flag=<path>`) names the local copy. */
export function rewriteArg(arg: string, c: Pick<ContainerSpec, 'volumeMounts'>, mounts: Map<string, string>): string {
  const flag = /^(--?[A-Za-z0-9][A-Za-z0-9-]*=)(.*)$/s.exec(arg);
  return flag ? flag[1]! + rewriteMountPaths(flag[2]!, c, mounts) : rewriteMountPaths(arg, c, mounts);
}

/** A value naming a file under one of the container's mount paths names the local copy instead. */
export function rewriteMountPaths(value: string, c: Pick<ContainerSpec, 'volumeMounts'>, mounts: Map<string, string>): string {
  for (const m of c.volumeMounts ?? []) {
    const local = mounts.get(m.name);
    if (!local) continue;
    const base = m.mountPath.replace(/\/+$/, '');
    const target = m.subPath ? join(local, m.subPath) : local;
    if (value === base) return target;
    if (value.startsWith(`${base}/`)) return target + value.slice(base.length);
  }
  return value;
}
