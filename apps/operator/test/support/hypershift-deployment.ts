import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { findRepoRoot } from '@karpenter-operator/testkit';

/**
 * HyperShift's contract for starting this operator, as test data: the Deployment (and Role) HyperShift's
 * control-plane operator renders for component `karpenter-operator`
 * (test/fixtures/hypershift/karpenter-operator.yaml), and what the kubelet makes of its container: argv and
 * environment. The unit contract test parses that into this project's configuration; the HyperShift
 * integration test starts the operator with it.
 */

const FIXTURE = join(findRepoRoot(), 'apps/operator/test/fixtures/hypershift/karpenter-operator.yaml');

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath: string } };
}
export interface Container {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  env?: EnvVar[];
  volumeMounts?: Array<{ name: string; mountPath: string }>;
  ports?: Array<{ name?: string; containerPort: number }>;
  securityContext?: { readOnlyRootFilesystem?: boolean };
}
export interface Volume {
  name: string;
  secret?: { secretName: string; items?: Array<{ key: string; path: string }> };
  emptyDir?: Record<string, unknown>;
}
export interface HyperShiftObjects {
  deployment: {
    metadata: { name: string; namespace: string };
    spec: {
      template: {
        metadata: { labels: Record<string, string> };
        spec: { serviceAccountName: string; containers: Container[]; volumes: Volume[] };
      };
    };
  };
  role: {
    metadata: { name: string; namespace: string };
    rules: Array<{ apiGroups?: string[]; resources?: string[]; verbs: string[]; resourceNames?: string[] }>;
  };
  roleBinding: { roleRef: { name: string }; subjects: Array<{ kind: string; name: string }> };
  /** The PodMonitor HyperShift renders for the operator's own metrics. */
  podMonitor: {
    metadata: { name: string; namespace: string };
    spec: {
      namespaceSelector: { matchNames: string[] };
      selector: { matchLabels: Record<string, string> };
      podMetricsEndpoints: Array<{ port: string; path?: string; scheme?: string }>;
    };
  };
}

/** The objects of the fixture, by kind. */
export function hypershiftObjects(): HyperShiftObjects {
  const docs = parseAllDocuments(readFileSync(FIXTURE, 'utf8')).map((d) => d.toJS() as { kind: string });
  const one = <T>(kind: string): T => {
    const found = docs.filter((d) => d.kind === kind);
    if (found.length !== 1) throw new Error(`${FIXTURE}: expected one ${kind}, found ${found.length}`);
    return found[0] as T;
  };
  return { deployment: one('Deployment'), role: one('Role'), roleBinding: one('RoleBinding'), podMonitor: one('PodMonitor') };
}

/** The operator's container of HyperShift's Deployment. */
export function operatorContainer(objects: HyperShiftObjects = hypershiftObjects()): Container {
  const c = objects.deployment.spec.template.spec.containers.find((x) => x.name === 'karpenter-operator');
  if (!c) throw new Error(`${FIXTURE}: no container karpenter-operator`);
  return c;
}

/** Kubernetes' `$(VAR)` expansion in command, args and env values: defined variables only, `$$` escapes. */
function expand(s: string, vars: Readonly<Record<string, string>>): string {
  return s.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m, name: string | undefined) =>
    m === '$$' ? '$' : name !== undefined && name in vars ? vars[name]! : m,
  );
}

export interface ContainerStart {
  /** command + args, expanded: what the process gets as argv (argv[0] is the command). */
  argv: string[];
  env: Record<string, string>;
}

/**
 * What the kubelet starts for `container` in a pod named `pod.name` in `pod.namespace`: env in order (values,
 * downward-API `metadata.namespace` / `metadata.name`, `$(VAR)` of earlier entries), then command and args
 * expanded with it.
 */
export function containerStart(container: Container, pod: { namespace: string; name: string }): ContainerStart {
  const env: Record<string, string> = {};
  for (const e of container.env ?? []) {
    const field = e.valueFrom?.fieldRef?.fieldPath;
    if (field === 'metadata.namespace') env[e.name] = pod.namespace;
    else if (field === 'metadata.name') env[e.name] = pod.name;
    else if (e.valueFrom) throw new Error(`env ${e.name}: valueFrom ${JSON.stringify(e.valueFrom)} is not modelled`);
    else env[e.name] = expand(e.value ?? '', env);
  }
  const argv = [...(container.command ?? []), ...(container.args ?? [])].map((a) => expand(a, env));
  return { argv, env };
}

/** The file a volume mount path resolves to: `{ volume, key }` of the Secret behind `path`, or undefined. */
export function secretFileAt(objects: HyperShiftObjects, container: Container, path: string): { secret: string; key: string } | undefined {
  for (const m of container.volumeMounts ?? []) {
    if (!path.startsWith(`${m.mountPath}/`)) continue;
    const rest = path.slice(m.mountPath.length + 1);
    const volume = objects.deployment.spec.template.spec.volumes.find((v) => v.name === m.name);
    if (!volume?.secret) return undefined;
    const item = volume.secret.items?.find((i) => i.path === rest);
    if (volume.secret.items) return item ? { secret: volume.secret.secretName, key: item.key } : undefined;
    return { secret: volume.secret.secretName, key: rest };
  }
  return undefined;
}

/**
 * HyperShift's RBAC for the operator, exactly as the fixture has it (its ServiceAccount, Role and RoleBinding),
 * moved into `namespace`: what the integration tests run the operator under.
 */
export function hypershiftRbacObjects(
  namespace: string,
): Array<{ apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }> {
  const docs = parseAllDocuments(readFileSync(FIXTURE, 'utf8')).map(
    (d) => d.toJS() as { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } },
  );
  return docs
    .filter((d) => ['ServiceAccount', 'Role', 'RoleBinding'].includes(d.kind))
    .map((d) => {
      const o = structuredClone(d) as typeof d & { subjects?: Array<{ kind: string; name: string; namespace?: string }> };
      o.metadata.namespace = namespace;
      // A RoleBinding subject without a namespace is the binding's own namespace's ServiceAccount.
      if (o.subjects) o.subjects = o.subjects.map((s) => (s.kind === 'ServiceAccount' ? { ...s, namespace } : s));
      return o;
    });
}
