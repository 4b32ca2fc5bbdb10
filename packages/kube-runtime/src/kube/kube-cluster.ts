import type { KubeConfig } from './client-node.js';
import type { Clock, Logger, Metrics } from '@karpenter-operator/core/ports';
import type { Timers } from '../runtime/timers.js';
import { InformerFactory, type InformerFactoryOptions } from './informer-factory.js';
import { KubeClusterStore } from './kube-cluster-store.js';
import { ResourceResolver } from './resources.js';
import { createKubeTransport, type KubeTransportOptions, type KubeTransport } from './transport.js';

/** Everything that talks to one API server: the transport, its informers, and the ClusterStore over them. */
export interface KubeCluster {
  transport: KubeTransport;
  resources: ResourceResolver;
  informers: InformerFactory;
  store: KubeClusterStore;
}

export interface KubeClusterOptions extends KubeTransportOptions {
  metrics: Metrics;
  logger: Logger;
  clock?: Clock;
  timers?: Timers;
  fieldManager?: string;
  informer?: Omit<InformerFactoryOptions, 'transport' | 'resources' | 'metrics' | 'logger' | 'clock' | 'timers'>;
}

/**
 * Wires one cluster. Standalone uses one for everything; HyperShift uses a second for the guest, built
 * from `() => watchedGuestKubeConfig.current()`. Informers are created when the controller runtime asks
 * for them (`informers` is its `CacheFactory`; combine two with `routeByCluster`).
 */
export function createKubeCluster(config: KubeConfig | (() => KubeConfig), options: KubeClusterOptions): KubeCluster {
  const transport = createKubeTransport(config, options);
  const resources = new ResourceResolver(transport);
  const common = {
    metrics: options.metrics,
    logger: options.logger,
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.timers ? { timers: options.timers } : {}),
  };
  const informers = new InformerFactory({ ...options.informer, transport, resources, ...common });
  const store = new KubeClusterStore({
    transport,
    resources,
    caches: informers,
    metrics: options.metrics,
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.fieldManager ? { fieldManager: options.fieldManager } : {}),
  });
  return { transport, resources, informers, store };
}
