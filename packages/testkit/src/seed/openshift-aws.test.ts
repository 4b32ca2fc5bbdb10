import { ignitionPools } from '@karpenter-operator/core';
import { describe, expect, it } from 'vitest';
import {
  aNode,
  aWorkerMachineSet,
  coreosStream,
  openShiftAws,
  openShiftAwsObjects,
  rhcosAmis,
  workerPointerConfig,
} from './openshift-aws.js';

const CA = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';

describe('the OpenShift-on-AWS fixture', () => {
  it('writes a pointer config that merges the worker pool from the MCS and embeds the CA', () => {
    const cfg = workerPointerConfig(CA);
    expect(ignitionPools(cfg)).toEqual(['worker']);
    const source = (JSON.parse(cfg) as { ignition: { security: { tls: { certificateAuthorities: Array<{ source: string }> } } } }).ignition
      .security.tls.certificateAuthorities[0]!.source;
    expect(Buffer.from(source.split('base64,')[1]!, 'base64').toString()).toBe(CA);
  });

  it.each(openShiftAws.zones.map((zone) => ({ name: zone, zone })))(
    'MachineSet in $name selects its zone’s private subnet by tag:Name',
    ({ zone }) => {
      const ms = aWorkerMachineSet(zone) as unknown as { spec: { template: { spec: { providerSpec: { value: Record<string, any> } } } } }; // eslint-disable-line @typescript-eslint/no-explicit-any
      const ps = ms.spec.template.spec.providerSpec.value;
      expect(ps.subnet.filters[0].values).toEqual([`demo-x7k2p-subnet-private-${zone}`]);
      expect(ps.placement).toEqual({ availabilityZone: zone, region: 'us-east-1' });
      expect(ps.ami.id).toBe(openShiftAws.amis.x86_64);
      expect(ps.iamInstanceProfile.id).toBe('demo-x7k2p-worker-profile');
    },
  );

  it('control-plane nodes are labelled and tainted like OpenShift masters; workers are not tainted', () => {
    const cp = aNode({ ...openShiftAws.controlPlaneNodes[0]!, role: 'control-plane' }) as unknown as {
      metadata: { labels: Record<string, string> };
      spec: { taints?: unknown[] };
    };
    expect(cp.metadata.labels).toMatchObject({ 'node-role.kubernetes.io/master': '', 'node-role.kubernetes.io/control-plane': '' });
    expect(cp.spec.taints).toHaveLength(2);
    const w = aNode({ ...openShiftAws.workerNodes[0]!, role: 'worker' }) as unknown as { spec: { taints?: unknown[] } };
    expect(w.spec.taints).toBeUndefined();
  });

  it('the boot-image stream and the emulator catalogue agree on the RHCOS AMIs', () => {
    const stream = coreosStream() as { architectures: Record<string, { images: { aws: { regions: Record<string, { image: string }> } } }> };
    const fromStream = Object.values(stream.architectures).map((a) => a.images.aws.regions['us-east-1']!.image);
    expect(fromStream.sort()).toEqual(
      rhcosAmis()
        .map((a) => a.ami_id)
        .sort(),
    );
  });

  it('lists every object once, namespaces first', () => {
    const objs = openShiftAwsObjects(CA);
    const keys = objs.map((o) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`);
    expect(new Set(keys).size).toBe(keys.length);
    const firstNonNs = objs.findIndex((o) => o.kind !== 'Namespace');
    expect(objs.slice(firstNonNs).some((o) => o.kind === 'Namespace')).toBe(false);
  });
});
