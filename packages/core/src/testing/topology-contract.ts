import { describe, expect, it } from 'vitest';
import { isInvalidInputError } from '../errors.js';
import type { KubeObject } from '../model/kube.js';
import type { Topology } from '../ports/topology.js';
import type { MemoryClusterStore } from './memory-cluster-store.js';

export interface TopologyContractFixture {
  topology: Topology;
  /** The stores behind the topology, for seeding and write counting (the same object standalone). */
  control: MemoryClusterStore;
  workload: MemoryClusterStore;
  /** Seeds a valid request to run Karpenter (CR or HCP). */
  seedRequest(): void;
  /** Seeds valid cluster facts. */
  seedFacts(): void;
  /** Seeds facts that are missing a required field. */
  seedBrokenFacts(): void;
}

const report = {
  conditions: [
    { type: 'Available', status: 'True' as const, reason: 'AsExpected', message: '' },
    { type: 'Progressing', status: 'False' as const, reason: 'AsExpected', message: '' },
    { type: 'Degraded', status: 'False' as const, reason: 'AsExpected', message: '' },
  ],
  relatedObjects: [{ group: '', resource: 'namespaces', name: 'x' }],
  version: '1.0.0',
};

/** What every Topology must do, as the port's TSDoc says. Run from each topology's package. */
export function describeTopologyContract(name: string, factory: () => TopologyContractFixture): void {
  describe(`Topology contract: ${name}`, () => {
    it('has no request until one is seeded, then decodes it with an owner uid', async () => {
      const f = factory();
      expect(await f.topology.readRequest()).toBeUndefined();
      f.seedRequest();
      const r = await f.topology.readRequest();
      expect(r?.owner.uid).toBeTruthy();
      // Finalizer writes on the owner carry it (finalizersPatch).
      expect(r?.resourceVersion).toBeTruthy();
      expect(r?.deleting).toBe(false);
      expect(f.topology.teardownFinalizer).toMatch(/^[a-z0-9.-]+\/[a-z0-9-]+$/);
      expect(['debug', 'info', 'error']).toContain(r?.logLevel);
    });

    it('reads cluster facts, and names the field when they are incomplete', async () => {
      const f = factory();
      f.seedFacts();
      const facts = await f.topology.clusterFacts();
      expect(facts.platform).toBeTruthy();
      expect(facts.infrastructureName).toBeTruthy();
      expect(facts.apiServerInternalURL).toMatch(/^https:\/\//);
      f.seedBrokenFacts();
      let err: unknown;
      try {
        await f.topology.clusterFacts();
      } catch (e) {
        err = e;
      }
      expect(isInvalidInputError(err)).toBe(true);
      if (isInvalidInputError(err)) expect(err.field).toBeTruthy();
    });

    it('reportStatus is idempotent: a second identical report writes nothing', async () => {
      const f = factory();
      f.seedFacts();
      f.seedRequest();
      const req = await f.topology.readRequest();
      await f.topology.reportStatus(report, req);
      f.control.clearWrites();
      f.workload.clearWrites();
      await f.topology.reportStatus(report, req);
      expect([...f.control.writes, ...f.workload.writes]).toEqual([]);
    });

    it('watches the objects its request and facts come from', () => {
      const f = factory();
      expect(f.topology.watches.length).toBeGreaterThan(0);
      expect(f.topology.operandNamespace).toMatch(/^[a-z0-9-]+$/);
    });

    it('lays the operand out in its own namespace, with a way to the workload API when that is another cluster', () => {
      const f = factory();
      const layout = f.topology.operandLayout({
        namespace: f.topology.operandNamespace,
        releaseVersion: '1',
        operandImage: 'img',
        crdDir: '/crds',
      });
      expect(layout.podServiceAccount.namespace).toBe(f.topology.operandNamespace);
      expect(layout.singleCluster).toBe(f.topology.controlStore === f.topology.workloadStore);
      if (!layout.singleCluster) expect(layout.guestKubeconfigSecret).toBeTruthy();
      expect(layout.pod.priorityClassName).toBeTruthy();
    });

    it('reportStatus keeps lastTransitionTime when status does not change', async () => {
      const f = factory();
      f.seedFacts();
      f.seedRequest();
      const req = await f.topology.readRequest();
      await f.topology.reportStatus(report, req);
      const snap = (objs: KubeObject[]) =>
        JSON.stringify(
          objs.map((o) =>
            (o.status as { conditions?: Array<{ lastTransitionTime?: string }> } | undefined)?.conditions?.map((c) => c.lastTransitionTime),
          ),
        );
      const before = snap(f.control.all());
      await f.topology.reportStatus({ ...report, conditions: report.conditions.map((c) => ({ ...c, message: 'changed' })) }, req);
      expect(snap(f.control.all())).toBe(before);
    });
  });
}
