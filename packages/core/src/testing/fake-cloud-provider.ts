import type { ClusterFacts, DiscoveryInput, OperatorSettings } from '../model/cluster.js';
import type { KubeObject, TypeRef } from '../model/kube.js';
import { Names } from '../model/names.js';
import type {
  CloudProvider,
  DefaultNodeClass,
  DiscoveredNodeClass,
  InstanceInfo,
  NodeClassSource,
  OperandCloudConfig,
  RelatedObject,
  VerificationProblem,
} from '../ports/cloud-provider.js';

/** Every member of the port that a test may want to see called or make fail. */
export type FakeCloudMethod =
  | 'assertSupported'
  | 'crds'
  | 'operandCloudConfig'
  | 'operandRbac'
  | 'credentialsRequests'
  | 'relatedObjects'
  | 'renderDefaultNodeClass'
  | 'discoverDefaultNodeClass'
  | 'renderNodeClass'
  | 'launchHold'
  | 'verifyNodeClass'
  | 'instanceIdFromProviderId'
  | 'describeInstances'
  | 'checkCredentials'
  | 'interruptionQueueExists';

export interface FakeCloudCall {
  method: FakeCloudMethod;
  args: unknown[];
}

export interface FakeCloudProviderOptions {
  platform?: string;
  nodeClassType?: TypeRef;
  nodeClassLabel?: string;
  maxInstancesPerLookup?: number;
  instances?: InstanceInfo[];
  crds?: KubeObject[];
  /** What `renderDefaultNodeClass` returns; a function receives the input. Throws when unset. */
  defaultNodeClass?: DefaultNodeClass | ((input: DiscoveryInput) => DefaultNodeClass);
  verificationProblems?: VerificationProblem[];
  operandCloudConfig?: OperandCloudConfig;
  operandRbac?: KubeObject[];
  credentialsRequests?: KubeObject[];
  relatedObjects?: RelatedObject[];
  /** Names `interruptionQueueExists` finds (settable later through `queues`). */
  queues?: string[];
  /** Milliseconds each async cloud call takes (real timers), to let concurrent callers overlap. */
  latencyMs?: number;
}

/** The fake's NodeClass kind unless `nodeClassType` says otherwise: no real provider's. */
export const FakeNodeClass = {
  type: { apiVersion: 'karpenter.test.example/v1', kind: 'TestNodeClass' },
  group: 'karpenter.test.example',
  resource: 'testnodeclasses',
  label: 'karpenter.test.example/testnodeclass',
} as const;

/**
 * A CloudProvider for unit tests of use-cases. Records every call in `calls`, serves `describeInstances`
 * from a settable instance table (`setInstances`, `putInstance`, `removeInstance`; unknown IDs are absent
 * as the port says), and injects errors with `failNext(method, error)` (once) or `failAlways`.
 * Provider IDs look like AWS ones: `aws:///<zone>/<id>` or `aws:///<id>` (see `providerIdFor`).
 */
export class FakeCloudProvider implements CloudProvider {
  readonly platform: string;
  readonly nodeClassType: TypeRef;
  readonly nodeClassLabel: string;
  readonly maxInstancesPerLookup: number;
  readonly calls: FakeCloudCall[] = [];
  latencyMs: number;
  verificationProblems: VerificationProblem[];
  /** The queues `interruptionQueueExists` finds. */
  readonly queues: Set<string>;
  crdList: KubeObject[];
  defaultNodeClass: FakeCloudProviderOptions['defaultNodeClass'];
  /** What `discoverDefaultNodeClass` reports as the source of each field. */
  discoverySources: DiscoveredNodeClass['sources'] = [{ field: 'nodeClass', source: 'MachineSets' }];
  private readonly instances = new Map<string, InstanceInfo>();
  private readonly failures: Array<{ method: FakeCloudMethod; error: Error; always: boolean }> = [];
  private readonly options: FakeCloudProviderOptions;

  constructor(options: FakeCloudProviderOptions = {}) {
    this.options = options;
    this.platform = options.platform ?? 'AWS';
    this.nodeClassType = options.nodeClassType ?? FakeNodeClass.type;
    this.nodeClassLabel = options.nodeClassLabel ?? FakeNodeClass.label;
    this.maxInstancesPerLookup = options.maxInstancesPerLookup ?? 200;
    this.latencyMs = options.latencyMs ?? 0;
    this.verificationProblems = options.verificationProblems ?? [];
    this.crdList = options.crds ?? [];
    this.queues = new Set(options.queues ?? []);
    this.defaultNodeClass = options.defaultNodeClass;
    this.setInstances(options.instances ?? []);
  }

  // --- test controls --------------------------------------------------------------------------------

  /** Replaces the instance table. */
  setInstances(instances: InstanceInfo[]): void {
    this.instances.clear();
    for (const i of instances) this.instances.set(i.instanceId, structuredClone(i));
  }

  putInstance(instance: InstanceInfo): void {
    this.instances.set(instance.instanceId, structuredClone(instance));
  }

  removeInstance(instanceId: string): void {
    this.instances.delete(instanceId);
  }

  /** The next call of `method` throws `error`. */
  failNext(method: FakeCloudMethod, error: Error): void {
    this.failures.push({ method, error, always: false });
  }

  /** Every call of `method` throws `error` until `clearFailures`. */
  failAlways(method: FakeCloudMethod, error: Error): void {
    this.failures.push({ method, error, always: true });
  }

  clearFailures(): void {
    this.failures.length = 0;
  }

  /** Calls of one method, e.g. `callsOf('describeInstances').length`. */
  callsOf(method: FakeCloudMethod): FakeCloudCall[] {
    return this.calls.filter((c) => c.method === method);
  }

  clearCalls(): void {
    this.calls.length = 0;
  }

  /** The providerID a NodeClaim of this instance would carry. */
  static providerIdFor(instanceId: string, zone = 'us-east-1a'): string {
    return `aws:///${zone}/${instanceId}`;
  }

  // --- the port -------------------------------------------------------------------------------------

  assertSupported(): void {
    this.record('assertSupported', []);
  }

  crds(): KubeObject[] {
    this.record('crds', []);
    return structuredClone(this.crdList);
  }

  operandCloudConfig(facts: ClusterFacts, settings: OperatorSettings): OperandCloudConfig {
    this.record('operandCloudConfig', [facts, settings]);
    return structuredClone(
      this.options.operandCloudConfig ?? {
        env: [{ name: 'AWS_REGION', value: facts.region ?? 'us-east-1' }],
        volumes: [],
        volumeMounts: [],
        credentialsSecret: 'karpenter-cloud-credentials',
      },
    );
  }

  operandRbac(namespace: string): KubeObject[] {
    this.record('operandRbac', [namespace]);
    return structuredClone(this.options.operandRbac ?? []);
  }

  credentialsRequests(namespace: string): KubeObject[] {
    this.record('credentialsRequests', [namespace]);
    return structuredClone(this.options.credentialsRequests ?? []);
  }

  relatedObjects(): RelatedObject[] {
    this.record('relatedObjects', []);
    return structuredClone(this.options.relatedObjects ?? [{ group: FakeNodeClass.group, resource: FakeNodeClass.resource, name: '' }]);
  }

  renderDefaultNodeClass(input: DiscoveryInput): DefaultNodeClass {
    this.record('renderDefaultNodeClass', [input]);
    const d = this.defaultNodeClass;
    if (d === undefined) throw new Error('FakeCloudProvider: no defaultNodeClass configured');
    return structuredClone(typeof d === 'function' ? d(input) : d);
  }

  /** `renderDefaultNodeClass` (its failures included) with `discoverySources` as the sources. */
  async discoverDefaultNodeClass(input: DiscoveryInput, options?: { offline?: boolean }): Promise<DiscoveredNodeClass> {
    this.record('discoverDefaultNodeClass', [input, options]);
    await this.delay();
    return { ...this.renderDefaultNodeClass(input), sources: structuredClone(this.discoverySources), unverified: [] };
  }

  /** A minimal NodeClass of the source's fields (not a provider's real rendering). */
  renderNodeClass(source: NodeClassSource): DefaultNodeClass {
    this.record('renderNodeClass', [source]);
    const spec = { imageSelectorTerms: source.imageSelectorTerms, userData: source.userData, instanceProfile: source.instanceProfile };
    return structuredClone({
      object: { ...this.nodeClassType, metadata: { name: 'default' }, spec },
      protectedSpec: { imageSelectorTerms: source.imageSelectorTerms, userData: source.userData },
    });
  }

  /** An image selector no image matches, naming the pool (the shape, not a provider's real one). */
  launchHold(pool: string): Record<string, unknown> {
    this.record('launchHold', [pool]);
    return { imageSelectorTerms: [{ tags: { [Names.launchHoldKey]: pool } }] };
  }

  async verifyNodeClass(nodeClass: KubeObject, facts: ClusterFacts): Promise<VerificationProblem[]> {
    this.record('verifyNodeClass', [nodeClass, facts]);
    await this.delay();
    return structuredClone(this.verificationProblems);
  }

  instanceIdFromProviderId(providerID: string): string | undefined {
    this.record('instanceIdFromProviderId', [providerID]);
    return /^aws:\/\/\/(?:[a-z0-9-]+\/)?(i-[0-9a-z]+)$/.exec(providerID.trim())?.[1];
  }

  async describeInstances(instanceIds: string[], facts: ClusterFacts): Promise<InstanceInfo[]> {
    this.record('describeInstances', [[...instanceIds], facts]);
    await this.delay();
    return [...new Set(instanceIds)]
      .map((id) => this.instances.get(id))
      .filter((i): i is InstanceInfo => i !== undefined)
      .map((i) => structuredClone(i));
  }

  async checkCredentials(facts: ClusterFacts): Promise<void> {
    this.record('checkCredentials', [facts]);
    await this.delay();
  }

  async interruptionQueueExists(queueName: string, facts: ClusterFacts): Promise<boolean> {
    this.record('interruptionQueueExists', [queueName, facts]);
    await this.delay();
    return this.queues.has(queueName);
  }

  private record(method: FakeCloudMethod, args: unknown[]): void {
    this.calls.push({ method, args });
    const i = this.failures.findIndex((f) => f.method === method);
    if (i < 0) return;
    const f = this.failures[i]!;
    if (!f.always) this.failures.splice(i, 1);
    throw f.error;
  }

  private delay(): Promise<void> {
    return this.latencyMs > 0 ? new Promise((r) => setTimeout(r, this.latencyMs)) : Promise.resolve();
  }
}
