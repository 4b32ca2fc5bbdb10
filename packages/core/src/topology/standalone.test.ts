import { Types } from '../model/kube.js';
import { describeTopologyContract } from '../testing/topology-contract.js';
import { FakeClock, MemoryClusterStore } from '../testing/index.js';
import { StandaloneTopology } from './standalone.js';

describeTopologyContract('standalone', () => {
  const clock = new FakeClock();
  const store = new MemoryClusterStore([], () => new Date(clock.now()).toISOString());
  const infra = (infrastructureName: string) => ({
    ...Types.Infrastructure,
    metadata: { name: 'cluster' },
    status: {
      infrastructureName,
      apiServerInternalURI: 'https://api-int.x:6443',
      platformStatus: { type: 'AWS', aws: { region: 'us-east-1' } },
    },
  });
  return {
    topology: new StandaloneTopology({ store, namespace: 'openshift-karpenter', clock }),
    control: store,
    workload: store,
    seedRequest: () => void store.seed({ ...Types.Karpenter, metadata: { name: 'default' }, spec: { logLevel: 'debug' } }),
    seedFacts: () => void store.seed(infra('demo-x7k2p')),
    seedBrokenFacts: () => void store.seed(infra('')),
  };
});
