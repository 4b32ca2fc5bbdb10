import {
  decodeInfrastructure,
  decodeKarpenter,
  describeSources,
  desiredCrds,
  discoveryNodes,
  isInvalidInputError,
  isUnsupportedPlatformError,
  Names,
  renderOperand,
  renderPool,
  renderRegistrationTaint,
  standaloneOperandLayout,
  Types,
  type CloudProvider,
  type KarpenterRequest,
  type KubeObject,
  type OperatorSettings,
} from '@karpenter-operator/core';
import { stringify } from 'yaml';
import { karpenterCrd } from '../manifests/karpenter-crd.js';
import { InputError, loadObjects } from './load-objects.js';
import { validateAgainstSchema } from './schema-validate.js';

export interface RenderOptions {
  from: string;
  kind?: string;
  output: 'yaml' | 'json';
  settings: OperatorSettings;
  providerFor: (platform: string) => CloudProvider;
}

export interface RenderResult {
  objects: KubeObject[];
  /** Notes for stderr: what was assumed or skipped. */
  notes: string[];
}

const is = (o: KubeObject, t: { apiVersion: string; kind: string }) => o.apiVersion === t.apiVersion && o.kind === t.kind;

/**
 * Everything the operator would apply for a set of cluster objects, computed with the same pure functions
 * the reconcilers use, with no cluster and no cloud calls (discovery without MachineSets returns the
 * conventional values unproven; each is listed in the notes). Throws `InputError` naming the object and field
 * when the input cannot be used.
 */
export async function renderFrom(opts: RenderOptions): Promise<RenderResult> {
  const input = loadObjects(opts.from);
  const notes: string[] = [];
  const infra = input.find((o) => is(o, Types.Infrastructure) && o.metadata.name === Names.infrastructure);
  const ns = opts.settings.namespace;
  try {
    const facts = decodeInfrastructure(infra, {
      ...(opts.settings.clusterNameOverride ? { clusterName: opts.settings.clusterNameOverride } : {}),
      ...(opts.settings.clusterEndpointOverride ? { clusterEndpoint: opts.settings.clusterEndpointOverride } : {}),
    });
    const cloud = opts.providerFor(facts.platform);
    cloud.assertSupported();

    const cr = input.find((o) => is(o, Types.Karpenter) && o.metadata.name === Names.karpenterCr);
    let request: KarpenterRequest;
    if (cr) {
      // Offline there is no API server to refuse a bad CR: check it against the CRD this build installs.
      const schema = (karpenterCrd().spec as { versions: Array<{ schema: { openAPIV3Schema: object } }> }).versions[0]!.schema
        .openAPIV3Schema;
      const problems = validateAgainstSchema(cr, schema);
      if (problems.length) throw new InputError(`Karpenter ${cr.metadata.name} is invalid: ${problems.join('; ')}`);
      request = decodeKarpenter({ ...cr, metadata: { ...cr.metadata, uid: cr.metadata.uid ?? '00000000-0000-0000-0000-000000000000' } });
    } else {
      notes.push('no Karpenter named default in the input: rendering as if it existed with default settings');
      request = decodeKarpenter({ ...Types.Karpenter, metadata: { name: Names.karpenterCr, uid: '00000000-0000-0000-0000-000000000000' } });
    }
    const machineApi = (o: KubeObject) => o.metadata.namespace === Names.machineApiNamespace;
    const discovery = {
      facts,
      machineSets: input.filter((o) => is(o, Types.MachineSet) && machineApi(o)),
      secrets: input.filter((o) => is(o, Types.Secret) && machineApi(o)),
      maxPods: 250,
      ...(() => {
        const b = input.find(
          (o) => is(o, Types.ConfigMap) && o.metadata.namespace === Names.mcoNamespace && o.metadata.name === Names.bootImagesConfigMap,
        );
        return b ? { bootImages: b } : {};
      })(),
    };
    const nodes = discoveryNodes(
      input.filter((o) => is(o, Types.Node)),
      cloud.nodeClassLabel,
    );
    const nodeClass = await cloud.discoverDefaultNodeClass({ ...discovery, nodes }, { offline: true });
    notes.push(`EC2NodeClass default: ${describeSources(nodeClass.sources)}`);
    for (const u of nodeClass.unverified) notes.push(`EC2NodeClass default: unverified (offline, no cloud calls): ${u}`);
    notes.push(
      'EC2NodeClass default: userData merges /config/worker until MCO serves pool karpenter-default with the registration taint, then /config/karpenter-default',
    );
    notes.push('KubeletConfig set-karpenter-taint-default: applied once MCO has configured pool karpenter-default');

    const cfg = cloud.operandCloudConfig(facts, opts.settings);
    const objects: KubeObject[] = [
      ...desiredCrds(cloud),
      ...cloud.credentialsRequests(ns),
      ...renderOperand({
        namespace: ns,
        facts,
        settings: opts.settings,
        request,
        cloud: cfg,
        providerRbac: cloud.operandRbac(ns),
        layout: standaloneOperandLayout(ns),
      }),
      nodeClass.object,
      renderPool(Names.defaultNodeClass, cloud.nodeClassLabel),
      renderRegistrationTaint(Names.defaultNodeClass),
    ];
    const filtered = opts.kind ? objects.filter((o) => o.kind.toLowerCase() === opts.kind!.toLowerCase()) : objects;
    if (opts.kind && filtered.length === 0) notes.push(`no object of kind ${opts.kind} would be applied`);
    return { objects: filtered, notes };
  } catch (e) {
    if (isInvalidInputError(e) || isUnsupportedPlatformError(e)) throw new InputError(e.message);
    throw e;
  }
}

export function formatObjects(objects: KubeObject[], output: 'yaml' | 'json'): string {
  if (output === 'json')
    return JSON.stringify(objects.length === 1 ? objects[0] : { apiVersion: 'v1', kind: 'List', items: objects }, null, 2) + '\n';
  return objects.map((o) => stringify(o, { lineWidth: 0 })).join('---\n');
}
