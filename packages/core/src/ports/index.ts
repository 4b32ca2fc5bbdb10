/**
 * `@karpenter-operator/core/ports`: what an adapter needs to implement or consume a port, and nothing that
 * decides: the ports, the object model and names, the error kinds, the reconciler contract, and the pure
 * helpers the ClusterStore contract is defined by (apply comparison, finalizer changes). No use-case and no
 * policy decision is reachable from here; the controller runtime (`@karpenter-operator/kube-runtime`) may
 * import only this entry point of core.
 */
export * from '../model/kube.js';
export * from '../model/names.js';
export * from '../errors.js';
export * from './clock.js';
export * from './cluster-store.js';
export * from './event-recorder.js';
export * from './logger.js';
export * from './metrics.js';
export * from '../runtime/reconciler.js';
export * from '../runtime/finalizers.js';
export * from '../policy/subset.js';
export * from '../policy/finalizers.js';
