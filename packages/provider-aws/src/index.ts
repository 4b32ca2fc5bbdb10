export { AwsCloudProvider, AWS_CRD_FILES, OPERAND_CREDENTIALS_DIR, readCrd, type AwsCloudProviderOptions } from './aws-cloud-provider.js';
export { awsProviderModule } from './module.js';
export {
  renderDefaultNodeClass,
  isWorkerMachineSet,
  architectureOf,
  nodeClassSourceFromMachineSets,
  sameTerms,
  workerMachineSets,
  type Architecture,
} from './discovery.js';
export { decodeProviderSpec, PROVIDER_SPEC_PATH, type AwsProviderSpec, type AwsResourceRef, type AwsFilter } from './provider-spec.js';
export {
  Ec2Adapter,
  createEc2Client,
  mapAwsError,
  instanceIdFromProviderId,
  clusterTagKey,
  EC2_DEFAULTS,
  type Ec2ClientOptions,
  type AwsCredentialsSource,
} from './ec2.js';
export { EC2NodeClassType, EC2NodeClassLabel, EC2_FILTER_VALUES_MAX, EC2_LIVE_INSTANCE_STATES } from './names.js';
export {
  renderEc2NodeClass,
  isRestrictedTagKey,
  DEFAULT_ROOT_VOLUME,
  OPENSHIFT_SYSTEM_RESERVED,
  OPENSHIFT_KUBE_RESERVED,
} from './nodeclass.js';
export { awsOperandRbac } from './rbac.js';
export { awsCredentialsRequests, awsRelatedObjects } from './credentials-requests.js';
