import { gunzipSync } from 'node:zlib';
import { request } from 'node:https';
import { parse as parseYaml } from 'yaml';

/**
 * What a booting RHCOS machine does with its Ignition pointer config, for the simulated kubelets: fetch the
 * full config from the Machine Config Server the pointer names, trusting only the CA the pointer embeds, and
 * read from it what the kubelet then runs with.
 */

/** The Ignition 3 spec versions this fetch accepts, as RHCOS's Ignition asks for them. */
export const IGNITION_ACCEPT = 'application/vnd.coreos.ignition+json;version=3.4.0, */*;q=0.1';

interface IgnitionFile {
  path?: string;
  contents?: { source?: string; compression?: string };
}
interface IgnitionUnit {
  name?: string;
  contents?: string;
  dropins?: Array<{ contents?: string }>;
}
export interface IgnitionConfig {
  ignition?: {
    version?: string;
    config?: { merge?: Array<{ source?: string }> };
    security?: { tls?: { certificateAuthorities?: Array<{ source?: string }> } };
  };
  storage?: { files?: IgnitionFile[] };
  systemd?: { units?: IgnitionUnit[] };
}

/** The bytes of an Ignition `data:` URL (`data:[<type>][;base64],<data>`), gunzipped when `compression` says so. */
export function dataUrlBytes(source: string, compression?: string): Buffer {
  const m = /^data:([^,]*),(.*)$/s.exec(source);
  if (!m) throw new Error(`not a data URL: ${source.slice(0, 40)}`);
  const raw = m[1]!.endsWith(';base64') ? Buffer.from(m[2]!, 'base64') : Buffer.from(decodeURIComponent(m[2]!), 'utf8');
  return compression === 'gzip' ? gunzipSync(raw) : raw;
}

/** The text of the file at `path` in an Ignition config, or undefined. The last entry for a path wins. */
export function ignitionFile(cfg: IgnitionConfig, path: string): string | undefined {
  const f = (cfg.storage?.files ?? []).filter((x) => x.path === path).at(-1);
  const source = f?.contents?.source;
  return source === undefined ? undefined : dataUrlBytes(source, f?.contents?.compression).toString('utf8');
}

/** The pointer config's first merge source and the PEM of its first CA. */
export function pointerOf(userData: string): { source: string; caPem: string } | undefined {
  try {
    const cfg = JSON.parse(userData) as IgnitionConfig;
    const source = cfg.ignition?.config?.merge?.[0]?.source;
    const ca = cfg.ignition?.security?.tls?.certificateAuthorities?.[0]?.source;
    if (!source || !ca) return undefined;
    return { source, caPem: dataUrlBytes(ca).toString('utf8') };
  } catch {
    return undefined;
  }
}

export interface ServedConfig {
  status: number;
  body: string;
  /** The parsed config when the answer was 200 JSON. */
  config?: IgnitionConfig;
}

/**
 * GET of a pointer's merge source, as Ignition sends it: the `Accept` of Ignition 3, TLS verified against the
 * pointer's CA for the source's host name. `connectTo` is where that host name resolves on this machine
 * (the local MCS listens on 127.0.0.1 under the cluster's `api-int` name).
 */
export function fetchServedConfig(
  pointer: { source: string; caPem: string },
  connectTo: { host: string; port: number },
  opts: { accept?: string | null; timeoutMs?: number } = {},
): Promise<ServedConfig> {
  const url = new URL(pointer.source);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: connectTo.host,
        port: connectTo.port,
        path: url.pathname + url.search,
        method: 'GET',
        servername: url.hostname,
        ca: pointer.caPem,
        headers: { host: url.host, ...(opts.accept === null ? {} : { accept: opts.accept ?? IGNITION_ACCEPT }) },
        timeout: opts.timeoutMs ?? 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          let config: IgnitionConfig | undefined;
          if (res.statusCode === 200) {
            try {
              config = JSON.parse(body) as IgnitionConfig;
            } catch {
              config = undefined;
            }
          }
          resolve({ status: res.statusCode ?? 0, body, ...(config ? { config } : {}) });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`GET ${pointer.source}: no answer in ${opts.timeoutMs ?? 30_000} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/** What the kubelet of a machine booted from `cfg` registers with, read from the files and units MCO rendered. */
export interface ServedKubelet {
  /** `registerWithTaints` of `/etc/kubernetes/kubelet.conf` (empty when it sets none). */
  registerWithTaints: unknown[];
  /** `--node-labels` of `kubelet.service`, with `${ID}` as RHCOS's (`rhcos`) and unset variables dropped. */
  nodeLabels: Record<string, string>;
  /** The bootstrap kubeconfig MCS appended (`/etc/kubernetes/kubeconfig`): its token and CA. */
  bootstrap: { server: string; token: string; caData: string };
  /** The rendered MachineConfig the machine booted from (`/etc/mcs-machine-config-content.json`), if MCS wrote it. */
  renderedConfig?: string;
  /** What the machine-config daemon's first boot puts on the Node (`/etc/machine-config-daemon/node-annotations.json`). */
  nodeAnnotations: Record<string, string>;
}

export function servedKubelet(cfg: IgnitionConfig): ServedKubelet {
  const kubeletConf = ignitionFile(cfg, '/etc/kubernetes/kubelet.conf');
  if (kubeletConf === undefined) throw new Error('the served config has no /etc/kubernetes/kubelet.conf');
  const kubelet = parseYaml(kubeletConf) as { registerWithTaints?: unknown[] } | null;

  const unit = (cfg.systemd?.units ?? []).find((u) => u.name === 'kubelet.service');
  if (!unit?.contents) throw new Error('the served config has no kubelet.service unit');
  const flag = /--node-labels=(\S+)/.exec([unit.contents, ...(unit.dropins ?? []).map((d) => d.contents ?? '')].join('\n'))?.[1] ?? '';
  const nodeLabels: Record<string, string> = {};
  for (const item of flag.replace(/\$\{ID\}/g, 'rhcos').split(',')) {
    if (!item || item.includes('${')) continue;
    const [k, v = ''] = item.split('=');
    nodeLabels[k!] = v;
  }

  const kubeconfigText = ignitionFile(cfg, '/etc/kubernetes/kubeconfig');
  if (kubeconfigText === undefined) throw new Error('the served config has no bootstrap kubeconfig /etc/kubernetes/kubeconfig');
  const kubeconfig = parseYaml(kubeconfigText) as {
    clusters?: Array<{ cluster?: { server?: string; 'certificate-authority-data'?: string } }>;
    users?: Array<{ user?: { token?: string } }>;
  };
  const server = kubeconfig.clusters?.[0]?.cluster?.server ?? '';
  const token = kubeconfig.users?.[0]?.user?.token ?? '';
  const caData = kubeconfig.clusters?.[0]?.cluster?.['certificate-authority-data'] ?? '';
  if (!token) throw new Error('the bootstrap kubeconfig /etc/kubernetes/kubeconfig has no token');

  const content = ignitionFile(cfg, '/etc/mcs-machine-config-content.json');
  let renderedConfig: string | undefined;
  if (content) {
    try {
      renderedConfig = (JSON.parse(content) as { metadata?: { name?: string } }).metadata?.name;
    } catch {
      renderedConfig = undefined;
    }
  }
  const annotationsText = ignitionFile(cfg, '/etc/machine-config-daemon/node-annotations.json');
  const nodeAnnotations = annotationsText ? (JSON.parse(annotationsText) as Record<string, string>) : {};
  return {
    nodeAnnotations,
    registerWithTaints: kubelet?.registerWithTaints ?? [],
    nodeLabels,
    bootstrap: { server, token, caData },
    ...(renderedConfig ? { renderedConfig } : {}),
  };
}
