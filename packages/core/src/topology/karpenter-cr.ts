import { InvalidInputError } from '../errors.js';
import type { KarpenterRequest, LogLevel } from '../model/cluster.js';
import type { KubeObject } from '../model/kube.js';
import { Types } from '../model/kube.js';

const LEVELS: readonly LogLevel[] = ['debug', 'info', 'error'];

/** Decodes the `Karpenter` CR. The CRD validates too; this guards against an older or hand-edited schema. Pure. */
export function decodeKarpenter(obj: KubeObject): KarpenterRequest {
  const where = `Karpenter ${obj.metadata.name}`;
  if (!obj.metadata.uid) throw new InvalidInputError('KarpenterCheckFailed', where, 'metadata.uid', 'missing');
  const spec = obj.spec;
  if (spec !== undefined && (typeof spec !== 'object' || spec === null || Array.isArray(spec))) {
    throw new InvalidInputError('KarpenterCheckFailed', where, 'spec', 'must be an object');
  }
  const raw = (spec as Record<string, unknown> | undefined)?.logLevel ?? 'info';
  if (typeof raw !== 'string' || !LEVELS.includes(raw as LogLevel)) {
    throw new InvalidInputError('KarpenterCheckFailed', where, 'spec.logLevel', `must be one of ${LEVELS.join(', ')}, got ${JSON.stringify(raw)}`);
  }
  const req: KarpenterRequest = {
    owner: { ...Types.Karpenter, name: obj.metadata.name, uid: obj.metadata.uid },
    generation: obj.metadata.generation ?? 1,
    logLevel: raw as LogLevel,
    deleting: Boolean(obj.metadata.deletionTimestamp),
    finalizers: obj.metadata.finalizers ?? [],
  };
  if (obj.metadata.resourceVersion) req.resourceVersion = obj.metadata.resourceVersion;
  if (obj.metadata.deletionTimestamp) {
    const t = Date.parse(obj.metadata.deletionTimestamp);
    if (!Number.isNaN(t)) req.deletionRequestedAtMs = t;
  }
  return req;
}
