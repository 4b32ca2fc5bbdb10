import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  getObject,
  listObjects,
  startOpenShiftAwsCluster,
  type ClusterHandle,
  type KubeObj,
  type MachineConfigOperator,
} from '@karpenter-operator/testkit';

let cluster: ClusterHandle;
let mco: MachineConfigOperator;

describe('the real Machine Config Operator renders and serves the Karpenter pools', () => {
  beforeAll(async () => {
    const started = await startOpenShiftAwsCluster({
      machineConfig: 'real',
      log: (l) => console.log(l),
      ...(process.env.KO_MCO_DEBUG_DIR ? { baseDir: process.env.KO_MCO_DEBUG_DIR, keepBaseDir: true } : {}),
    });
    cluster = started.cluster;
    mco = started.mco!;
  }, 300_000);

  afterAll(async () => {
    await cluster?.stop();
  }, 120_000);

  it('renders worker', async () => {
    const mcs = await listObjects(cluster.kubeConfig(), 'machineconfiguration.openshift.io/v1', 'MachineConfig');
    console.log(mcs.map((m) => m.metadata.name));
    const pool = await getObject<KubeObj & { status?: unknown }>(cluster.kubeConfig(), 'machineconfiguration.openshift.io/v1', 'MachineConfigPool', 'worker');
    console.log(JSON.stringify(pool?.status));
    expect(mco.server.port).toBeGreaterThan(0);
  });
});
