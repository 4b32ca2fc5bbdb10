export { createKubeTransport, NodeHttpTransport, isWriteFencedError, withRequestMetrics, WriteFencedError } from './transport.js';
export type {
  KubeTransportOptions,
  KubeRequest,
  KubeTransport,
  KubeWatchRequest,
  QueryParams,
  WatchHandle,
  WriteGate,
} from './transport.js';
export { httpStatusOf, isConnectionFailure, serverMessage, toCoreError } from './errors.js';
export { groupVersionPath, knownResources, ResourceResolver, resourcePath, type PathOptions, type ResourceInfo } from './resources.js';
export {
  defaultTransform,
  Informer,
  InformerFactory,
  inScope,
  labelSelectorString,
  type InformerFactoryOptions,
  type InformerOptions,
} from './informer.js';
export {
  KubeClusterStore,
  NotWatchedError,
  type CacheLookup,
  type KubeClusterStoreOptions,
  type StoreCache,
} from './kube-cluster-store.js';
export {
  decide,
  defaultElectionTiming,
  electionTimingProblem,
  LeaderElector,
  leaderIdentity,
  microTime,
  openshiftElectionTiming,
  type ElectionTiming,
  type LeaderElectorOptions,
  type LeaseDecision,
  type LeaseObject,
  type LeaseSpec,
} from './leader-election.js';
export { KubeEventRecorder, type KubeEventRecorderOptions } from './event-recorder.js';
export {
  loadKubeConfig,
  parseKubeConfig,
  WatchedKubeConfig,
  type KubeConfigSource,
  type LoadedKubeConfig,
  type WatchedKubeConfigOptions,
} from './kube-config.js';
export { createKubeCluster, type KubeCluster, type KubeClusterOptions } from './kube-cluster.js';
