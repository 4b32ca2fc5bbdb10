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
export { createEc2Client, EC2_DEFAULTS, type Ec2ClientOptions, type AwsCredentialsSource } from './aws-client.js';
export { mapAwsError } from './aws-errors.js';
export { Ec2Adapter } from './ec2.js';
export { clusterTagKey } from './ec2-reads.js';
export { instanceIdFromProviderId } from './instances.js';
export { EC2NodeClassType, EC2NodeClassLabel, EC2_FILTER_VALUES_MAX, EC2_LIVE_INSTANCE_STATES } from './names.js';
export {
  renderEc2NodeClass,
  isRestrictedTagKey,
  isLaunchHoldTerm,
  DEFAULT_ROOT_VOLUME,
  OPENSHIFT_SYSTEM_RESERVED,
  OPENSHIFT_KUBE_RESERVED,
} from './nodeclass.js';
export { awsOperandRbac } from './rbac.js';
export { awsCredentialsRequests, awsRelatedObjects } from './credentials-requests.js';
