import type { TestProject } from 'vitest/node';
import type { ClusterHandle } from './cluster.js';
import { startOpenShiftAwsCluster } from './seed/openshift-aws.js';
import { loadToolchain } from './toolchain.js';
import './vitest-context.js';

let cluster: ClusterHandle | undefined;

/**
 * vitest globalSetup of the `integration` project: one real cluster + EC2 emulator per run, seeded
 * as OpenShift on AWS. `KO_KEEP_CLUSTER=1` keeps its directory (logs, audit log) after the run.
 */
export async function setup(project: TestProject): Promise<void> {
  loadToolchain(); // fails with "run `npm run setup` first" before anything starts
  const verbose = process.env.KO_CLUSTER_LOG === '1';
  const started = Date.now();
  const { cluster: handle, world } = await startOpenShiftAwsCluster({
    keepBaseDir: process.env.KO_KEEP_CLUSTER === '1',
    log: verbose ? (l) => console.error(`testkit: ${l}`) : undefined,
  });
  cluster = handle;
  const { info } = handle;
  console.error(
    `testkit: local cluster ready in ${((Date.now() - started) / 1000).toFixed(1)}s ` +
      `(control plane ${handle.timings.total?.toFixed(1)}s, seed ${handle.timings.seed?.toFixed(1)}s) at ${info.server}; dir ${info.baseDir}`,
  );
  project.provide('koCluster', info);
  project.provide('koWorld', world);
  project.provide('kubeconfigPath', info.kubeconfigPath);
  project.provide('ec2Endpoint', info.ec2Endpoint ?? '');
  project.provide('auditLogPath', info.auditLogPath);
  project.provide('baseDir', info.baseDir);
}

export async function teardown(): Promise<void> {
  await cluster?.stop();
  cluster = undefined;
}
