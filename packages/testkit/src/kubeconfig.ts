import { writeFileSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';

export type KubeUser = { clientCertificateFile: string; clientKeyFile: string } | { token: string };

/** A kubeconfig document (JSON is valid YAML, so kubectl and client-node read it). */
export function kubeconfigText(opts: { server: string; caFile: string; user: KubeUser; name?: string }): string {
  const name = opts.name ?? 'local';
  const user =
    'token' in opts.user
      ? { token: opts.user.token }
      : { 'client-certificate': opts.user.clientCertificateFile, 'client-key': opts.user.clientKeyFile };
  return (
    JSON.stringify(
      {
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'local', cluster: { server: opts.server, 'certificate-authority': opts.caFile } }],
        users: [{ name, user }],
        contexts: [{ name, context: { cluster: 'local', user: name } }],
        'current-context': name,
      },
      null,
      2,
    ) + '\n'
  );
}

export function writeKubeconfig(path: string, opts: Parameters<typeof kubeconfigText>[0]): string {
  writeFileSync(path, kubeconfigText(opts), { mode: 0o600 });
  return path;
}

export function kubeConfigFromText(text: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(text);
  return kc;
}

export function kubeConfigFromFile(path: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  return kc;
}
