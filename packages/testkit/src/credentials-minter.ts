import type { ClusterClient } from './access.js';
import { kubeRequest } from './kube-request.js';
import { listObjects, type KubeObj } from './resources.js';

type CredentialsRequest = KubeObj & { spec?: { secretRef?: { name?: string; namespace?: string }; providerSpec?: { kind?: string } } };

/**
 * Stands in for the cloud-credential operator on the local cluster: for every AWS CredentialsRequest it
 * creates the Secret its `secretRef` names, as CCO's mint mode does (`aws_access_key_id`,
 * `aws_secret_access_key` and a shared `credentials` file), with keys the EC2 emulator accepts. Existing
 * Secrets are left alone. Returns a function that stops it.
 */
export function startCredentialsMinter(cluster: ClusterClient, opts: { pollMs?: number; log?: (line: string) => void } = {}): () => void {
  const kc = cluster.kubeConfig();
  const minted = new Set<string>();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const poll = async () => {
    const requests = await listObjects<CredentialsRequest>(
      kc,
      'cloudcredential.openshift.io/v1',
      'CredentialsRequest',
      'openshift-cloud-credential-operator',
    ).catch(() => []);
    for (const cr of requests) {
      const ref = cr.spec?.secretRef;
      if (!ref?.name || !ref.namespace || cr.spec?.providerSpec?.kind !== 'AWSProviderSpec') continue;
      const key = `${ref.namespace}/${ref.name}`;
      if (minted.has(key)) continue;
      const id = `AKIDLOCAL${cr.metadata.name
        .replace(/[^a-z0-9]/gi, '')
        .toUpperCase()
        .slice(0, 11)}`;
      const secret = 'bG9jYWwtZW11bGF0b3Itc2VjcmV0';
      const res = await kubeRequest(kc, 'POST', `/api/v1/namespaces/${encodeURIComponent(ref.namespace)}/secrets`, {
        body: {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: {
            name: ref.name,
            namespace: ref.namespace,
            annotations: { 'cloudcredential.openshift.io/credentials-request': `${cr.metadata.namespace}/${cr.metadata.name}` },
          },
          stringData: {
            aws_access_key_id: id,
            aws_secret_access_key: secret,
            credentials: `[default]\naws_access_key_id = ${id}\naws_secret_access_key = ${secret}\n`,
          },
        },
      }).catch(() => undefined);
      if (res?.status === 201 || res?.status === 409) {
        minted.add(key);
        if (res.status === 201) opts.log?.(`minted Secret ${key} for CredentialsRequest ${cr.metadata.name}`);
      }
    }
  };
  const loop = () => {
    if (stopped) return;
    void poll().finally(() => {
      if (!stopped) timer = setTimeout(loop, opts.pollMs ?? 2000);
    });
  };
  loop();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}
