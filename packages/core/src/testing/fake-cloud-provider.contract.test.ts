import { InvalidInputError, TransientError } from '../errors.js';
import type { DiscoveryInput } from '../model/cluster.js';
import type { KubeObject } from '../model/kube.js';
import { describeCloudProviderContract } from './cloud-provider-contract.js';
import { FakeCloudProvider } from './fake-cloud-provider.js';

// The fake stands in for real providers in use-case tests, so it must honour the same contract once
// configured the way those tests configure it.
const crd = (kind: string, group: string): KubeObject => ({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `${kind.toLowerCase()}s.${group}` },
  spec: { group, names: { kind, plural: `${kind.toLowerCase()}s` } },
});

const nodeClassType = { apiVersion: 'karpenter.k8s.aws/v1', kind: 'EC2NodeClass' };

const defaultNodeClass = (input: DiscoveryInput) => {
  if (input.machineSets.length === 0) {
    throw new InvalidInputError('NoWorkerMachineSet', 'MachineSets openshift-machine-api', 'items', 'no worker MachineSet');
  }
  return { object: { ...nodeClassType, metadata: { name: 'default' }, spec: {} }, protectedSpec: {} };
};

const facts = {
  platform: 'AWS',
  region: 'us-east-1',
  infrastructureName: 'demo-x1',
  apiServerInternalURL: 'https://api-int.demo:6443',
  resourceTags: [],
};

describeCloudProviderContract('fake', () => ({
  provider: new FakeCloudProvider({
    nodeClassType,
    crds: [crd('NodePool', 'karpenter.sh'), crd('NodeClaim', 'karpenter.sh'), crd('EC2NodeClass', 'karpenter.k8s.aws')],
    defaultNodeClass,
  }),
  facts,
  settings: { namespace: 'openshift-karpenter', releaseVersion: '4.21.0', operandImage: '', crdDir: '/nonexistent' },
  discovery: {
    facts,
    machineSets: [{ apiVersion: 'machine.openshift.io/v1beta1', kind: 'MachineSet', metadata: { name: 'w' } }],
    secrets: [],
    maxPods: 250,
  },
  nodeClass: { ...nodeClassType, metadata: { name: 'default' }, spec: {} },
  unreachable: () => {
    const down = new FakeCloudProvider({ nodeClassType });
    for (const m of ['verifyNodeClass', 'describeInstances', 'checkCredentials', 'interruptionQueueExists'] as const) {
      down.failAlways(m, new TransientError(`${m}: connect ECONNREFUSED 127.0.0.1:9`));
    }
    return down;
  },
}));
