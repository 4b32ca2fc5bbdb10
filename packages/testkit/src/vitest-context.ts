import type { ClusterInfo } from './access.js';
import type { SeededWorld } from './seed/openshift-aws.js';

// What the integration globalSetup `provide`s, typed for `inject()`.
declare module 'vitest' {
  export interface ProvidedContext {
    /** The one local cluster of this integration run (see `testCluster()`). */
    koCluster: ClusterInfo;
    /** Facts and emulator ids of the seeded OpenShift-on-AWS world (see `seededWorld()`). */
    koWorld: SeededWorld;
    kubeconfigPath: string;
    ec2Endpoint: string;
    auditLogPath: string;
    baseDir: string;
  }
}
