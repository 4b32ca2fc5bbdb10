export {
  aHostedControlPlane,
  aSidecarHostedControlPlane,
  anIgnitionSecret,
  HCP_NAME,
  HCP_NAMESPACE,
  INFRA_ID,
  ROLE_ARN,
  type IgnitionSecretOptions,
} from './builders.js';
