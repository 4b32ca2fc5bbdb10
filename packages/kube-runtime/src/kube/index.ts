export { createKubeTransport, NodeHttpTransport, isWriteFencedError, WriteFencedError } from './transport.js';
export { withRequestMetrics } from './request-metrics.js';
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
export { Informer, type InformerOptions } from './informer.js';
export { InformerFactory, type InformerFactoryOptions } from './informer-factory.js';
export { cacheProjection, defaultTransform } from './cache-projection.js';
export { inScope, isOlder, labelSelectorString } from './watch-scope.js';
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
