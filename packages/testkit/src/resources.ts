import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { kubeRequest } from './kube-request.js';
import { waitFor } from './wait.js';

/** The shape the testkit writes: any Kubernetes object with a name. */
export interface KubeObj {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    [k: string]: unknown;
  };
  [k: string]: unknown;
}

interface ResourceInfo {
  plural: string;
  namespaced: boolean;
}

interface ApiResourceList {
  resources?: Array<{ name: string; kind: string; namespaced: boolean }>;
}

const discovery = new WeakMap<KubeConfig, Map<string, Map<string, ResourceInfo>>>();

async function discover(kc: KubeConfig, apiVersion: string): Promise<Map<string, ResourceInfo>> {
  const path = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  const res = await kubeRequest<ApiResourceList>(kc, 'GET', path);
  const map = new Map<string, ResourceInfo>();
  if (res.status === 200) {
    for (const r of res.body.resources ?? []) {
      if (!r.name.includes('/')) map.set(r.kind, { plural: r.name, namespaced: r.namespaced });
    }
  }
  let perKc = discovery.get(kc);
  if (!perKc) discovery.set(kc, (perKc = new Map()));
  perKc.set(apiVersion, map);
  return map;
}

/** Plural and scope of a kind, from discovery (re-read once on a miss: CRDs appear at run time). */
export async function resourceFor(kc: KubeConfig, apiVersion: string, kind: string): Promise<ResourceInfo> {
  const cached = discovery.get(kc)?.get(apiVersion)?.get(kind);
  if (cached) return cached;
  const info = (await discover(kc, apiVersion)).get(kind);
  if (!info) throw new Error(`the API server does not serve ${kind} in ${apiVersion} (is its CRD installed?)`);
  return info;
}

export async function objectPath(kc: KubeConfig, apiVersion: string, kind: string, name?: string, namespace?: string): Promise<string> {
  const { plural, namespaced } = await resourceFor(kc, apiVersion, kind);
  const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  const ns = namespaced ? `/namespaces/${encodeURIComponent(namespace ?? 'default')}` : '';
  return `${base}${ns}/${plural}${name ? `/${encodeURIComponent(name)}` : ''}`;
}

function describe(obj: Pick<KubeObj, 'kind' | 'metadata'>): string {
  return `${obj.kind} ${obj.metadata.namespace ? `${obj.metadata.namespace}/` : ''}${obj.metadata.name}`;
}

function failure(action: string, obj: Pick<KubeObj, 'kind' | 'metadata'>, status: number, body: unknown): Error {
  const message = typeof body === 'object' && body && 'message' in body ? String((body as { message: unknown }).message) : String(body);
  const err = new Error(`${action} ${describe(obj)}: HTTP ${status}: ${message}`);
  (err as Error & { status?: number }).status = status;
  return err;
}

export interface ApplyOptions {
  fieldManager?: string;
  force?: boolean;
}

/** Server-side apply of the whole object (spec side; the status subresource ignores it). */
export async function applyObject<T extends KubeObj>(kc: KubeConfig, obj: T, opts: ApplyOptions = {}): Promise<T> {
  const path = await objectPath(kc, obj.apiVersion, obj.kind, obj.metadata.name, obj.metadata.namespace);
  const q = `?fieldManager=${encodeURIComponent(opts.fieldManager ?? 'testkit')}&force=${opts.force ?? true}`;
  const res = await kubeRequest<T>(kc, 'PATCH', path + q, { body: obj, contentType: 'application/apply-patch+yaml' });
  if (res.status >= 300) throw failure('applying', obj, res.status, res.body);
  return res.body;
}

/** Server-side apply of `obj.status` through the status subresource (write the spec first). */
export async function applyStatus<T extends KubeObj>(kc: KubeConfig, obj: T, opts: ApplyOptions = {}): Promise<T> {
  const path = await objectPath(kc, obj.apiVersion, obj.kind, obj.metadata.name, obj.metadata.namespace);
  const q = `?fieldManager=${encodeURIComponent(opts.fieldManager ?? 'testkit')}&force=${opts.force ?? true}`;
  const body = {
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    metadata: { name: obj.metadata.name, namespace: obj.metadata.namespace },
    status: obj.status,
  };
  const res = await kubeRequest<T>(kc, 'PATCH', `${path}/status${q}`, { body, contentType: 'application/apply-patch+yaml' });
  if (res.status >= 300) throw failure('applying status of', obj, res.status, res.body);
  return res.body;
}

/** The object, or undefined on 404. */
export async function getObject<T extends KubeObj = KubeObj>(
  kc: KubeConfig,
  apiVersion: string,
  kind: string,
  name: string,
  namespace?: string,
): Promise<T | undefined> {
  const path = await objectPath(kc, apiVersion, kind, name, namespace);
  const res = await kubeRequest<T>(kc, 'GET', path);
  if (res.status === 404) return undefined;
  if (res.status >= 300) throw failure('reading', { kind, metadata: { name, namespace } }, res.status, res.body);
  return res.body;
}

export async function listObjects<T extends KubeObj = KubeObj>(
  kc: KubeConfig,
  apiVersion: string,
  kind: string,
  namespace?: string,
  labelSelector?: string,
): Promise<T[]> {
  const { namespaced } = await resourceFor(kc, apiVersion, kind);
  let path = await objectPath(kc, apiVersion, kind, undefined, namespace);
  if (namespaced && namespace === undefined) path = path.replace('/namespaces/default', '');
  if (labelSelector) path += `?labelSelector=${encodeURIComponent(labelSelector)}`;
  const res = await kubeRequest<{ items: T[] }>(kc, 'GET', path);
  if (res.status >= 300) throw failure('listing', { kind, metadata: { name: '*', namespace } }, res.status, res.body);
  return res.body.items;
}

/** Deletes the object; true when it existed. */
export async function deleteObject(kc: KubeConfig, apiVersion: string, kind: string, name: string, namespace?: string): Promise<boolean> {
  const path = await objectPath(kc, apiVersion, kind, name, namespace);
  const res = await kubeRequest(kc, 'DELETE', path);
  if (res.status === 404) return false;
  if (res.status >= 300) throw failure('deleting', { kind, metadata: { name, namespace } }, res.status, res.body);
  return true;
}

/** All documents of a YAML (or JSON) file with a kind, in order. */
export function readManifests(file: string): KubeObj[] {
  return parseAllDocuments(readFileSync(file, 'utf8'))
    .map((d) => d.toJS() as KubeObj | null)
    .filter((o): o is KubeObj => !!o && typeof o === 'object' && typeof o.kind === 'string');
}

interface CrdStatus {
  status?: { conditions?: Array<{ type: string; status: string }> };
}

/** Applies CRD files and waits until each is Established (and served by discovery). */
export async function installCrds(kc: KubeConfig, files: string[], opts: { timeoutMs?: number } = {}): Promise<string[]> {
  const crds = files.flatMap(readManifests).filter((o) => o.kind === 'CustomResourceDefinition');
  for (const crd of crds) await applyObject(kc, crd, { fieldManager: 'testkit-crds' });
  await Promise.all(crds.map((crd) => waitEstablished(kc, crd.metadata.name, opts.timeoutMs)));
  return crds.map((c) => c.metadata.name);
}

export interface ApplyManifestsResult {
  applied: string[];
  /** `Kind name: reason` for documents left out (filtered, or a kind this cluster does not serve). */
  skipped: string[];
}

/**
 * Applies every YAML document of the given files (or of the `*.yaml`/`*.yml`/`*.json` files of a
 * directory, by file name) in order, e.g. `install/` minus its Deployment when the operator runs as a
 * local process. Kinds the cluster does not serve are skipped and reported, not fatal.
 */
export async function applyManifests(
  kc: KubeConfig,
  filesOrDir: string | string[],
  opts: { skip?: (obj: KubeObj) => boolean; fieldManager?: string } = {},
): Promise<ApplyManifestsResult> {
  const files = Array.isArray(filesOrDir)
    ? filesOrDir
    : readdirSync(filesOrDir)
        .filter((f) => /\.(ya?ml|json)$/.test(f))
        .sort()
        .map((f) => join(filesOrDir, f));
  const result: ApplyManifestsResult = { applied: [], skipped: [] };
  for (const obj of files.flatMap(readManifests)) {
    const id = `${obj.kind} ${obj.metadata.namespace ? `${obj.metadata.namespace}/` : ''}${obj.metadata.name}`;
    if (opts.skip?.(obj)) {
      result.skipped.push(`${id}: filtered`);
      continue;
    }
    try {
      await resourceFor(kc, obj.apiVersion, obj.kind);
    } catch (e) {
      result.skipped.push(`${id}: ${(e as Error).message}`);
      continue;
    }
    await applyObject(kc, obj, { fieldManager: opts.fieldManager ?? 'testkit' });
    if (obj.kind === 'CustomResourceDefinition') await waitEstablished(kc, obj.metadata.name);
    result.applied.push(id);
  }
  return result;
}

async function waitEstablished(kc: KubeConfig, name: string, timeoutMs = 60_000): Promise<void> {
  await waitFor(
    `CRD ${name} to be Established`,
    async () => {
      const res = await kubeRequest<CrdStatus>(kc, 'GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`);
      return res.status === 200 && (res.body.status?.conditions ?? []).some((c) => c.type === 'Established' && c.status === 'True');
    },
    { timeoutMs },
  );
}
