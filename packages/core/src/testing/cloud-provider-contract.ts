import { describe, expect, it } from 'vitest';
import { isInvalidInputError, isTransientError, isUnsupportedPlatformError, UnsupportedPlatformError } from '../errors.js';
import type { ClusterFacts, DiscoveryInput, OperatorSettings } from '../model/cluster.js';
import type { KubeObject } from '../model/kube.js';
import type { CloudProvider } from '../ports/cloud-provider.js';

export interface CloudProviderContractFixture {
  provider: CloudProvider;
  facts: ClusterFacts;
  settings: OperatorSettings;
  /** A discovery input the provider renders successfully (supported providers only). */
  discovery?: DiscoveryInput;
  /** A NodeClass object the provider may verify (supported providers only). */
  nodeClass?: KubeObject;
  /** The same provider pointed at a cloud endpoint that does not answer (supported providers only). */
  unreachable?: () => CloudProvider;
}

const RBAC_KINDS = new Set(['ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'ServiceAccount']);

/**
 * The behaviour every CloudProvider must have, as the port's TSDoc states it. Run it from each provider
 * package: `describeCloudProviderContract('aws', () => fixture)`. A provider that is not supported yet (its
 * `assertSupported` throws) is held to the "fails clearly, never crashes" half only.
 */
export function describeCloudProviderContract(
  name: string,
  factory: () => CloudProviderContractFixture | Promise<CloudProviderContractFixture>,
): void {
  describe(`CloudProvider contract: ${name}`, () => {
    const supported = async () => {
      const f = await factory();
      try {
        f.provider.assertSupported();
        return { f, ok: true };
      } catch (e) {
        expect(isUnsupportedPlatformError(e), 'assertSupported throws only UnsupportedPlatformError').toBe(true);
        return { f, ok: false, error: e as UnsupportedPlatformError };
      }
    };

    it('names its platform and NodeClass kind', async () => {
      const { provider } = await factory();
      expect(provider.platform).toMatch(/^[A-Z][A-Za-z]+$/);
      expect(provider.nodeClassType.apiVersion).toMatch(/^[a-z0-9.-]+\/v[0-9a-z]+$/);
      expect(provider.nodeClassType.kind).toMatch(/^[A-Z][A-Za-z0-9]+$/);
    });

    it('assertSupported is pure: the same answer twice, with a message a user understands when unsupported', async () => {
      const a = await supported();
      const b = await supported();
      expect(a.ok).toBe(b.ok);
      if (!a.ok) {
        expect(a.error!.platform).toBe(a.f.provider.platform);
        expect(a.error!.message.length).toBeGreaterThan(20);
        expect(a.error!.message).toContain(a.f.provider.platform);
      }
    });

    it('pure members are idempotent and shaped as the port says', async () => {
      const { f } = await supported();
      const p = f.provider;
      const ns = f.settings.namespace;
      expect(p.operandCloudConfig(f.facts, f.settings)).toEqual(p.operandCloudConfig(f.facts, f.settings));
      expect(p.operandCloudConfig(f.facts, f.settings).credentialsSecret).toMatch(/^[a-z0-9-]+$/);
      expect(p.operandRbac(ns)).toEqual(p.operandRbac(ns));
      for (const o of p.operandRbac(ns)) {
        expect(RBAC_KINDS.has(o.kind), `${o.kind} is an RBAC kind`).toBe(true);
        if (o.metadata.namespace) expect([ns, 'kube-system']).toContain(o.metadata.namespace);
      }
      expect(p.credentialsRequests(ns)).toEqual(p.credentialsRequests(ns));
      for (const cr of p.credentialsRequests(ns)) {
        expect(cr.kind).toBe('CredentialsRequest');
        expect(cr.metadata.namespace).toBe('openshift-cloud-credential-operator');
        expect((cr.spec as { secretRef?: { namespace?: string } }).secretRef?.namespace).toBe(ns);
      }
      for (const r of p.relatedObjects()) expect(typeof r.resource).toBe('string');
      expect(p.instanceIdFromProviderId('not-a-provider-id')).toBeUndefined();
      expect(p.instanceIdFromProviderId('')).toBeUndefined();
    });

    it('supported: ships NodePool, NodeClaim and its NodeClass CRDs, the same every call', async () => {
      const { f, ok } = await supported();
      if (!ok) {
        // An unsupported provider ships no CRDs: nothing of it must reach the cluster.
        expect(f.provider.crds()).toEqual([]);
        return;
      }
      const crds = f.provider.crds();
      expect(crds).toEqual(f.provider.crds());
      const kinds = crds.map((c) => (c.spec as { names?: { kind?: string } }).names?.kind);
      expect(kinds).toEqual(expect.arrayContaining(['NodePool', 'NodeClaim', f.provider.nodeClassType.kind]));
      for (const c of crds) expect(c.kind).toBe('CustomResourceDefinition');
    });

    it('supported: discovers offline from the same MachineSets what it renders, naming a source per field', async () => {
      const { f, ok } = await supported();
      if (!ok) {
        await expect(
          f.provider.discoverDefaultNodeClass({ facts: f.facts, machineSets: [], secrets: [], maxPods: 250 }, { offline: true }),
        ).rejects.toThrow(UnsupportedPlatformError);
        return;
      }
      const found = await f.provider.discoverDefaultNodeClass(f.discovery!, { offline: true });
      expect(found.object).toEqual(f.provider.renderDefaultNodeClass(f.discovery!).object);
      expect(found.sources.length, 'at least one field with its source').toBeGreaterThan(0);
      for (const s of found.sources) expect(['MachineSets', 'Conventions', 'WorkerInstances']).toContain(s.source);
      expect(found.unverified, 'MachineSet values need no cloud proof').toEqual([]);
    });

    it('supported: renders a default NodeClass of its kind, and rejects an empty cluster naming a field', async () => {
      const { f, ok } = await supported();
      if (!ok) {
        expect(() => f.provider.renderDefaultNodeClass({ facts: f.facts, machineSets: [], secrets: [], maxPods: 250 })).toThrow(
          UnsupportedPlatformError,
        );
        return;
      }
      expect(f.discovery, 'supported providers give a discovery fixture').toBeDefined();
      const out = f.provider.renderDefaultNodeClass(f.discovery!);
      expect(out.object.kind).toBe(f.provider.nodeClassType.kind);
      expect(out.object.apiVersion).toBe(f.provider.nodeClassType.apiVersion);
      expect(f.provider.renderDefaultNodeClass(f.discovery!)).toEqual(out);
      let err: unknown;
      try {
        f.provider.renderDefaultNodeClass({ ...f.discovery!, machineSets: [] });
      } catch (e) {
        err = e;
      }
      expect(isInvalidInputError(err), 'an empty cluster is an InvalidInputError').toBe(true);
      if (isInvalidInputError(err)) {
        expect(err.reason).toMatch(/^[A-Z][A-Za-z]+$/);
        expect(err.field.length).toBeGreaterThan(0);
      }
    });

    it('cloud calls fail with core errors only', async () => {
      const { f, ok } = await supported();
      const expectCoreFailure = async (p: Promise<unknown>, check: (e: unknown) => boolean) => {
        let err: unknown;
        try {
          await p;
        } catch (e) {
          err = e;
        }
        expect(err, 'the call fails').toBeDefined();
        expect(check(err), `typed error, got ${String(err)}`).toBe(true);
      };
      if (!ok) {
        await expectCoreFailure(f.provider.describeInstances(['x'], f.facts), isUnsupportedPlatformError);
        await expectCoreFailure(f.provider.checkCredentials(f.facts), isUnsupportedPlatformError);
        await expectCoreFailure(f.provider.interruptionQueueExists('karpenter', f.facts), isUnsupportedPlatformError);
        return;
      }
      if (!f.unreachable) return;
      const down = f.unreachable();
      await expectCoreFailure(down.describeInstances(['i-0123456789abcdef0'], f.facts), isTransientError);
      await expectCoreFailure(down.checkCredentials(f.facts), isTransientError);
      await expectCoreFailure(down.interruptionQueueExists('karpenter', f.facts), isTransientError);
      if (f.nodeClass) await expectCoreFailure(down.verifyNodeClass(f.nodeClass, f.facts), isTransientError);
    });
  });
}
