import { inject } from 'vitest';
import { connectCluster, type ClusterClient } from './access.js';
import type { SeededWorld } from './seed/openshift-aws.js';
import './vitest-context.js';

/** The integration run's cluster, as admin or any ServiceAccount (inside a vitest integration test). */
export function testCluster(): ClusterClient {
  return connectCluster(inject('koCluster'));
}

/** The seeded world: facts (names, ids) tests assert on. */
export function seededWorld(): SeededWorld {
  return inject('koWorld');
}
