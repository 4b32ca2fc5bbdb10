export { backoffDelay, queueBackoff, retryAfterMs, retryDelay, startupBackoff, watchBackoff, type BackoffPolicy } from './backoff.js';
export { routeByCluster, watchKey, type CacheFactory, type InformerHandler, type SharedInformer } from './cache.js';
export { ControllerRuntime, type ControllerRuntimeOptions, type StopOptions } from './controller-runtime.js';
export { RuntimeMetrics, type MetricDefinition } from './metric-names.js';
export { sleep, systemTimers, type TimerHandle, type Timers } from './timers.js';
export { WorkQueue, type ShutdownOptions, type WorkQueueOptions } from './work-queue.js';
export { ExitCodes, Manager, runMain, type ClosableServer, type ManagerOptions, type SignalSource } from './manager.js';
