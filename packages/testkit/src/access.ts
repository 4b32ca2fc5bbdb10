import type { KubeConfig } from '@kubernetes/client-node';
import { readAuditEvents, type AuditEvent, type AuditFilter } from './audit.js';
import { ec2ClientConfig, resetEc2Emulator } from './ec2-emulator.js';
import { kubeConfigFromFile, kubeConfigFromText, kubeconfigText } from './kubeconfig.js';
import { kubeRequest } from './kube-request.js';
import { applyObject } from './resources.js';
import { writeFileSync } from 'node:fs';

/** Everything a test process needs to reach a running local cluster (serialisable: vitest `provide`s it). */
export interface ClusterInfo {
  /** Working directory of the cluster: pki/, logs/, audit.log, kubeconfigs. */
  baseDir: string;
  server: string;
  caFile: string;
  /** Admin (system:masters) kubeconfig. */
  kubeconfigPath: string;
  auditLogPath: string;
  /** The EC2 emulator (moto), when started. */
  ec2Endpoint?: string;
  region: string;
  crdDir: string;
}

export interface TokenOptions {
  expirationSeconds?: number;
  audiences?: string[];
}

/** Access to a running local cluster, as admin or as any ServiceAccount. */
export interface ClusterClient {
  readonly info: ClusterInfo;
  /** A fresh admin KubeConfig (client certificate, group system:masters). */
  kubeConfig(): KubeConfig;
  /** A bound token for ServiceAccount `namespace/serviceAccount` (TokenRequest API); the SA must exist. */
  tokenFor(namespace: string, serviceAccount: string, opts?: TokenOptions): Promise<string>;
  /** A KubeConfig authenticating as that ServiceAccount, nothing else. */
  kubeConfigFor(namespace: string, serviceAccount: string, opts?: TokenOptions): Promise<KubeConfig>;
  /** The same, written to `path` (for a child process such as the operator). Returns the path. */
  writeKubeConfigFor(namespace: string, serviceAccount: string, path: string, opts?: TokenOptions): Promise<string>;
  /** Creates the namespace and ServiceAccount if missing (server-side apply). */
  ensureServiceAccount(namespace: string, serviceAccount: string): Promise<void>;
  /** Matching audit events (Metadata level, one per finished request). */
  auditEvents(filter?: AuditFilter): AuditEvent[];
  /** `new EC2Client(cluster.ec2Config())` talks to the emulator. */
  ec2Config(): ReturnType<typeof ec2ClientConfig>;
  /** Empties the EC2 emulator (the AMI catalogue stays). Reseed with `seedEc2` when a test needs the world. */
  resetEc2(): Promise<void>;
}

export const ADMIN_USER = 'testkit-admin';

export function connectCluster(info: ClusterInfo): ClusterClient {
  const tokenFor = async (namespace: string, serviceAccount: string, opts: TokenOptions = {}): Promise<string> => {
    const res = await kubeRequest<{ status?: { token?: string }; message?: string }>(
      kubeConfigFromFile(info.kubeconfigPath),
      'POST',
      `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts/${encodeURIComponent(serviceAccount)}/token`,
      {
        body: {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenRequest',
          spec: { expirationSeconds: opts.expirationSeconds ?? 3600, ...(opts.audiences ? { audiences: opts.audiences } : {}) },
        },
      },
    );
    const token = res.body?.status?.token;
    if (res.status !== 201 || !token) {
      throw new Error(
        `requesting a token for ServiceAccount ${namespace}/${serviceAccount}: HTTP ${res.status}: ${res.body?.message ?? res.text}`,
      );
    }
    return token;
  };
  const textFor = async (namespace: string, serviceAccount: string, opts?: TokenOptions) =>
    kubeconfigText({
      server: info.server,
      caFile: info.caFile,
      user: { token: await tokenFor(namespace, serviceAccount, opts) },
      name: `${namespace}-${serviceAccount}`,
    });
  const requireEc2 = (): string => {
    if (!info.ec2Endpoint) throw new Error('this cluster was started without the EC2 emulator');
    return info.ec2Endpoint;
  };
  return {
    info,
    kubeConfig: () => kubeConfigFromFile(info.kubeconfigPath),
    tokenFor,
    kubeConfigFor: async (ns, sa, opts) => kubeConfigFromText(await textFor(ns, sa, opts)),
    writeKubeConfigFor: async (ns, sa, path, opts) => {
      writeFileSync(path, await textFor(ns, sa, opts), { mode: 0o600 });
      return path;
    },
    ensureServiceAccount: async (namespace, serviceAccount) => {
      const kc = kubeConfigFromFile(info.kubeconfigPath);
      await applyObject(kc, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
      await applyObject(kc, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: serviceAccount, namespace } });
    },
    auditEvents: (filter) => readAuditEvents(info.auditLogPath, filter),
    ec2Config: () => ec2ClientConfig(requireEc2(), info.region),
    resetEc2: () => resetEc2Emulator(requireEc2()),
  };
}
