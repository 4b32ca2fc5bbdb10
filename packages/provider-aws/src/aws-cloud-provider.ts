import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import {
  InvalidInputError,
  Names,
  type CloudProvider,
  type ClusterFacts,
  type DefaultNodeClass,
  type DiscoveredNodeClass,
  type DiscoveryInput,
  type InstanceInfo,
  type KubeObject,
  type NodeClassSource,
  type OperandCloudConfig,
  type OperatorSettings,
  type RelatedObject,
  type TypeRef,
  type VerificationProblem,
} from '@karpenter-operator/core';
import { awsCredentialsRequests, awsRelatedObjects } from './credentials-requests.js';
import { DISCOVERY_FIELDS, nodeClassSourceFromConventions, type ConventionReads } from './conventions.js';
import { isWorkerMachineSet, renderDefaultNodeClass } from './discovery.js';
import { describeImages, describeSecurityGroups, describeSubnets } from './ec2-reads.js';
import { IamAdapter } from './iam.js';
import type { Ec2ClientOptions } from './aws-client.js';
import { Ec2Adapter } from './ec2.js';
import { instanceIdFromProviderId, liveInstances } from './instances.js';
import type { IAMClient } from '@aws-sdk/client-iam';
import type { EC2Client } from '@aws-sdk/client-ec2';
import { EC2_FILTER_VALUES_MAX, EC2NodeClassLabel, EC2NodeClassType } from './names.js';
import { ec2LaunchHold, renderEc2NodeClass } from './nodeclass.js';
import { awsOperandRbac } from './rbac.js';
import { SqsAdapter } from './sqs.js';

/** The runtime CRD files, as karpenter-provider-aws ships them (`pkg/apis/crds`). */
export const AWS_CRD_FILES = [
  'karpenter.sh_nodepools.yaml',
  'karpenter.sh_nodeclaims.yaml',
  'karpenter.sh_nodeoverlays.yaml',
  'karpenter.k8s.aws_ec2nodeclasses.yaml',
] as const;

/** Where the operand finds the CCO-minted credentials Secret. */
export const OPERAND_CREDENTIALS_DIR = '/etc/provider';
export const OPERAND_CREDENTIALS_VOLUME = 'provider-creds';

export interface AwsCloudProviderOptions {
  /** Directory holding the runtime CRD YAML files (`AWS_CRD_FILES`). */
  crdDir: string;
  /** The operator's own EC2 client (verification, node identity, credentials check). */
  ec2: Ec2ClientOptions;
  /** Overrides the operand's EC2 endpoint (`AWS_ENDPOINT_URL_EC2`): emulators and private endpoints. */
  operandEc2Endpoint?: string;
  /** Overrides the SQS endpoint of the operator's interruption-queue check (`AWS_ENDPOINT_URL_SQS`); same credentials as `ec2`. */
  sqsEndpoint?: string;
  /** Overrides the IAM endpoint (`AWS_ENDPOINT_URL_IAM`): instance profile look-ups; same credentials as `ec2`. */
  iamEndpoint?: string;
  /** Test seam: builds the EC2 client for a region. */
  ec2ClientFor?: (region: string) => EC2Client;
  /** Test seam: builds the IAM client for a region. */
  iamClientFor?: (region: string) => IAMClient;
}

/** The AWS `CloudProvider`: discovery from MachineSets, EC2 checks, operand cloud config, CRDs and RBAC. */
export class AwsCloudProvider implements CloudProvider {
  readonly platform = 'AWS';
  readonly nodeClassType: TypeRef = EC2NodeClassType;
  readonly nodeClassLabel = EC2NodeClassLabel;
  readonly maxInstancesPerLookup = EC2_FILTER_VALUES_MAX;
  private readonly ec2: Ec2Adapter;
  private readonly sqs: SqsAdapter;
  private readonly iam: IamAdapter;
  private crdCache: KubeObject[] | undefined;

  constructor(private readonly options: AwsCloudProviderOptions) {
    this.ec2 = new Ec2Adapter(options.ec2, options.ec2ClientFor);
    this.sqs = new SqsAdapter(options.ec2, options.sqsEndpoint);
    this.iam = new IamAdapter(options.ec2, options.iamEndpoint, options.iamClientFor);
  }

  assertSupported(): void {}

  crds(): KubeObject[] {
    this.crdCache ??= AWS_CRD_FILES.map((file) => readCrd(join(this.options.crdDir, file)));
    return structuredClone(this.crdCache);
  }

  operandCloudConfig(facts: ClusterFacts, _settings: OperatorSettings): OperandCloudConfig {
    if (!facts.region) {
      throw new InvalidInputError(
        'RegionMissing',
        'Infrastructure cluster',
        'status.platformStatus.aws.region',
        'the AWS region is not set',
      );
    }
    const env: OperandCloudConfig['env'] = [
      { name: 'AWS_REGION', value: facts.region },
      { name: 'AWS_SHARED_CREDENTIALS_FILE', value: `${OPERAND_CREDENTIALS_DIR}/credentials` },
      { name: 'AWS_SDK_LOAD_CONFIG', value: 'true' },
    ];
    if (this.options.operandEc2Endpoint) env.push({ name: 'AWS_ENDPOINT_URL_EC2', value: this.options.operandEc2Endpoint });
    return {
      env,
      volumes: [{ name: OPERAND_CREDENTIALS_VOLUME, secret: { secretName: Names.credentialsSecret } }],
      volumeMounts: [{ name: OPERAND_CREDENTIALS_VOLUME, mountPath: OPERAND_CREDENTIALS_DIR, readOnly: true }],
      credentialsSecret: Names.credentialsSecret,
    };
  }

  operandRbac(namespace: string): KubeObject[] {
    return awsOperandRbac(namespace);
  }

  credentialsRequests(namespace: string): KubeObject[] {
    return awsCredentialsRequests(namespace);
  }

  relatedObjects(): RelatedObject[] {
    return awsRelatedObjects();
  }

  renderDefaultNodeClass(input: DiscoveryInput): DefaultNodeClass {
    return renderDefaultNodeClass(input);
  }

  /**
   * The worker MachineSets' NodeClass when there are worker MachineSets; else conventions and worker
   * instances (`nodeClassSourceFromConventions`), proven in EC2 and IAM unless `offline`.
   */
  async discoverDefaultNodeClass(input: DiscoveryInput, options: { offline?: boolean } = {}): Promise<DiscoveredNodeClass> {
    if (input.machineSets.some(isWorkerMachineSet)) {
      const fields = Object.keys(DISCOVERY_FIELDS);
      return { ...renderDefaultNodeClass(input), sources: fields.map((field) => ({ field, source: 'MachineSets' })), unverified: [] };
    }
    const found = await nodeClassSourceFromConventions(input, options.offline ? undefined : this.conventionReads(input.facts));
    return { ...renderEc2NodeClass(found.source), sources: found.sources, unverified: found.unverified };
  }

  private conventionReads(facts: ClusterFacts): ConventionReads {
    const ec2 = this.ec2.client(facts);
    return {
      liveInstances: (ids) => liveInstances(ec2, ids),
      subnets: (filters) => describeSubnets(ec2, filters),
      securityGroups: (filters) => describeSecurityGroups(ec2, filters),
      images: (ids) => describeImages(ec2, [{ Name: 'image-id', Values: ids }]),
      instanceProfile: (name) => this.iam.instanceProfile(name, facts),
    };
  }

  renderNodeClass(source: NodeClassSource): DefaultNodeClass {
    return renderEc2NodeClass(source);
  }

  launchHold(pool: string): Record<string, unknown> {
    return ec2LaunchHold(pool);
  }

  /** EC2 references (subnets, security groups, AMIs), then the instance profile in IAM. */
  async verifyNodeClass(nodeClass: KubeObject, facts: ClusterFacts): Promise<VerificationProblem[]> {
    const problems = await this.ec2.verifyNodeClass(nodeClass, facts);
    const name = (nodeClass.spec as { instanceProfile?: unknown } | undefined)?.instanceProfile;
    if (typeof name === 'string' && name) {
      const profile = await this.iam.instanceProfile(name, facts);
      if (!profile) {
        problems.push({
          field: 'spec.instanceProfile',
          message: `instance profile ${name} not found (IAM GetInstanceProfile: NoSuchEntity)`,
        });
      } else if (!profile.roles.length) {
        problems.push({ field: 'spec.instanceProfile', message: `instance profile ${name} has no role` });
      }
    }
    return problems;
  }

  instanceIdFromProviderId(providerID: string): string | undefined {
    return instanceIdFromProviderId(providerID);
  }

  describeInstances(instanceIds: string[], facts: ClusterFacts): Promise<InstanceInfo[]> {
    return this.ec2.describeInstances(instanceIds, facts);
  }

  checkCredentials(facts: ClusterFacts): Promise<void> {
    return this.ec2.checkCredentials(facts);
  }

  interruptionQueueExists(queueName: string, facts: ClusterFacts): Promise<boolean> {
    return this.sqs.queueExists(queueName, facts);
  }
}

/**
 * Reads one CRD file (a single `CustomResourceDefinition` document). The JSON of the same CRD beside it
 * (`<name>.json`, which the operator's build writes) is read instead when there is one: parsing the four
 * YAML CRDs took ~0.3 s of one start-up stretch, their JSON ~1 ms.
 */
export function readCrd(file: string): KubeObject {
  const json = file.replace(/\.ya?ml$/, '.json');
  if (json !== file && existsSync(json)) return readJsonCrd(json);
  const object = `CRD file ${file}`;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new InvalidInputError('CrdMissing', object, 'file', `cannot read: ${(e as Error).message}`, { cause: e });
  }
  const docs = parseAllDocuments(text);
  const crds: KubeObject[] = [];
  for (const doc of Array.isArray(docs) ? docs : [docs]) {
    if (doc.errors.length) throw new InvalidInputError('CrdInvalid', object, 'yaml', doc.errors[0]!.message);
    const v = doc.toJS() as KubeObject | null;
    if (v && v.kind === 'CustomResourceDefinition') crds.push(v);
  }
  if (crds.length !== 1) {
    throw new InvalidInputError('CrdInvalid', object, 'kind', `expected one CustomResourceDefinition, found ${crds.length}`);
  }
  return crds[0]!;
}

function readJsonCrd(file: string): KubeObject {
  const object = `CRD file ${file}`;
  let v: unknown;
  try {
    v = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new InvalidInputError('CrdInvalid', object, 'json', (e as Error).message, { cause: e });
  }
  if ((v as KubeObject | null)?.kind !== 'CustomResourceDefinition') {
    throw new InvalidInputError('CrdInvalid', object, 'kind', 'expected one CustomResourceDefinition');
  }
  return v as KubeObject;
}
