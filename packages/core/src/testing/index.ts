export { MemoryClusterStore, mergePatch, type RecordedWrite } from './memory-cluster-store.js';
export { FakeClock } from './fake-clock.js';
export { RecordingEvents, RecordingMetrics, type RecordedEvent } from './recording.js';
export { describeCloudProviderContract, type CloudProviderContractFixture } from './cloud-provider-contract.js';
export {
  FakeCloudProvider,
  FakeNodeClass,
  type FakeCloudCall,
  type FakeCloudMethod,
  type FakeCloudProviderOptions,
} from './fake-cloud-provider.js';
export { describeTopologyContract, type TopologyContractFixture } from './topology-contract.js';
export { twoClusterOperandLayout } from './layouts.js';
export { anOperandInput } from './operand-input.js';
