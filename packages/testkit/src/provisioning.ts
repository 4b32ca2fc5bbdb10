import { DescribeInstancesCommand, EC2Client, type Instance } from '@aws-sdk/client-ec2';
import type { ClusterClient } from './access.js';
import { startKubeletSimulator, type KubeletSimulator, type KubeletSimulatorOptions } from './kubelet-simulator.js';
import { startKarpenterRunner } from './karpenter-runner.js';
import type { DeploymentRunner } from './operand-runner.js';
import type { KubeObj } from './resources.js';

/**
 * What the real-operand end-to-end test and the provision bench both stand up and apply: the parts that make
 * the operator's operand Deployment provision nodes locally, a NodePool and a workload only its nodes can host.
 */

export interface RealOperand {
  runner: DeploymentRunner;
  kubelets: KubeletSimulator;
  /** Stops the simulated kubelets, the MCO render stand-in and the operand's processes. */
  stop(): Promise<void>;
}

export interface RealOperandOptions {
  cluster: ClusterClient;
  /** The real controller (`karpenterBinary()` from the toolchain). */
  karpenterBinary: string;
  /** The operator bundle (`apps/operator/dist/main.js`), the program of the operand's init container. */
  operatorEntry: string;
  /** Where the operand's pods get their directories and logs. */
  baseDir: string;
  /** One line per thing the harness parts did, each prefixed with its source (`mco:`, `runner:`, `kubelet:`). */
  log?: (line: string) => void;
  /** Knobs of the simulated kubelets (withhold, forge, delay). */
  kubelets?: Omit<KubeletSimulatorOptions, 'cluster' | 'log'>;
  /** The EC2 endpoint Karpenter talks to (e.g. a fault proxy); the cluster's emulator when absent. */
  ec2Endpoint?: string;
}

/**
 * The operand Deployment run as processes of the real controller, and a simulated kubelet for every launched
 * instance (the MCO's render step runs beside the cluster: `startOpenShiftAwsCluster`).
 */
export function startRealOperand(opts: RealOperandOptions): RealOperand {
  const prefixed = (who: string) => (opts.log ? (line: string) => opts.log!(`${who}: ${line}`) : undefined);
  const runner = startKarpenterRunner({
    cluster: opts.cluster,
    karpenterBinary: opts.karpenterBinary,
    operatorEntry: opts.operatorEntry,
    baseDir: opts.baseDir,
    log: prefixed('runner'),
    ...(opts.ec2Endpoint ? { ec2Endpoint: opts.ec2Endpoint } : {}),
  });
  const kubelets = startKubeletSimulator({ ...opts.kubelets, cluster: opts.cluster, log: prefixed('kubelet') });
  return {
    runner,
    kubelets,
    stop: async () => {
      await kubelets.stop();
      await runner.stop();
    },
  };
}

export interface HostedRealOperandOptions {
  /** The management cluster: the operand Deployment in the HCP namespace, the EC2 emulator. */
  management: ClusterClient;
  /** The guest cluster: where the machines join. */
  guest: ClusterClient;
  /** The HCP namespace. */
  namespace: string;
  karpenterBinary: string;
  operatorEntry: string;
  /** HyperShift's `TOKEN_MINTER_IMAGE`: its sidecar runs the token-minter stand-in. */
  tokenMinterImage: string;
  baseDir: string;
  log?: (line: string) => void;
  /** Knobs of the simulated kubelets: HyperShift's ignition URLs and registration taints among them. */
  kubelets?: Omit<KubeletSimulatorOptions, 'cluster' | 'log' | 'ec2'>;
}

/**
 * The same on a hosted control plane: the operand Deployment in the HCP namespace of the management cluster
 * run as processes (the real controller and the token-minter stand-in), and a simulated kubelet joining the
 * guest for every instance launched in the management cluster's EC2 emulator. No MCO: HyperShift's ignition
 * server serves the machines' configuration.
 */
export function startHostedRealOperand(opts: HostedRealOperandOptions): RealOperand {
  const prefixed = (who: string) => (opts.log ? (line: string) => opts.log!(`${who}: ${line}`) : undefined);
  const ec2Endpoint = opts.management.info.ec2Endpoint;
  if (!ec2Endpoint) throw new Error('the hosted operand needs the management cluster started with the EC2 emulator');
  const runner = startKarpenterRunner({
    cluster: opts.management,
    namespace: opts.namespace,
    karpenterBinary: opts.karpenterBinary,
    operatorEntry: opts.operatorEntry,
    tokenMinterImage: opts.tokenMinterImage,
    ec2Endpoint,
    baseDir: opts.baseDir,
    log: prefixed('runner'),
  });
  const kubelets = startKubeletSimulator({
    ...opts.kubelets,
    cluster: opts.guest,
    ec2: opts.management.ec2Config(),
    log: prefixed('kubelet'),
  });
  return {
    runner,
    kubelets,
    stop: async () => {
      await kubelets.stop();
      await runner.stop();
    },
  };
}

export interface NodePoolOptions {
  /** `node.kubernetes.io/instance-type` values the pool may launch. */
  instanceTypes: string[];
  /** EC2NodeClass of its nodes; `default`. */
  nodeClass?: string;
  /** `kubernetes.io/arch`; any when absent. */
  arch?: string;
  /** `spec.disruption.consolidateAfter`; `5s` so an empty node goes quickly. */
  consolidateAfter?: string;
  limits?: Record<string, string>;
}

/** An on-demand NodePool of `opts.nodeClass` that consolidates empty or underutilized nodes. */
export function aNodePool(name: string, opts: NodePoolOptions): KubeObj {
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name },
    spec: {
      template: {
        spec: {
          nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: opts.nodeClass ?? 'default' },
          requirements: [
            ...(opts.arch ? [{ key: 'kubernetes.io/arch', operator: 'In', values: [opts.arch] }] : []),
            { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
            { key: 'node.kubernetes.io/instance-type', operator: 'In', values: opts.instanceTypes },
          ],
        },
      },
      disruption: { consolidationPolicy: 'WhenEmptyOrUnderutilized', consolidateAfter: opts.consolidateAfter ?? '5s' },
      ...(opts.limits ? { limits: opts.limits } : {}),
    },
  };
}

export interface PoolWorkloadOptions {
  /** Only a node of this NodePool can host its pods. */
  pool: string;
  replicas: number;
  cpu: string;
  memory: string;
  /** Every pod on a node of its own (required hostname anti-affinity). */
  oneNodeEach?: boolean;
}

/** A Deployment `name` of pause pods (label `app=<name>`) that only nodes of `opts.pool` can host. */
export function aPoolWorkload(name: string, namespace: string, opts: PoolWorkloadOptions): KubeObj {
  const labels = { app: name };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace },
    spec: {
      replicas: opts.replicas,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          nodeSelector: { 'karpenter.sh/nodepool': opts.pool },
          ...(opts.oneNodeEach
            ? {
                affinity: {
                  podAntiAffinity: {
                    requiredDuringSchedulingIgnoredDuringExecution: [
                      { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: labels } },
                    ],
                  },
                },
              }
            : {}),
          terminationGracePeriodSeconds: 0,
          containers: [
            { name: 'app', image: 'registry.k8s.io/pause:3.10', resources: { requests: { cpu: opts.cpu, memory: opts.memory } } },
          ],
        },
      },
    },
  };
}

/** The emulator's instances Karpenter launched for NodePool `pool` that are not terminated (or shutting down). */
export async function instancesOfPool(cluster: ClusterClient, pool: string): Promise<Instance[]> {
  const ec2 = new EC2Client(cluster.ec2Config());
  try {
    const r = await ec2.send(
      new DescribeInstancesCommand({
        Filters: [
          { Name: 'tag:karpenter.sh/nodepool', Values: [pool] },
          { Name: 'instance-state-name', Values: ['pending', 'running', 'stopping', 'stopped'] },
        ],
      }),
    );
    return (r.Reservations ?? []).flatMap((x) => x.Instances ?? []);
  } finally {
    ec2.destroy();
  }
}

export interface SpotInterruptionWarningOptions {
  instanceId: string;
  region: string;
  /** The account of the instance's ARN; the emulator's default one when absent. */
  account?: string;
  /** When EC2 sent it; now when absent. */
  time?: Date;
}

/**
 * The body of the SQS message an EventBridge rule forwards for an "EC2 Spot Instance Interruption Warning"
 * (source `aws.ec2`, version `0`): the envelope fields karpenter-provider-aws v1.14.1 routes on
 * (`version`, `source`, `detail-type`) and the `detail.instance-id` it looks the NodeClaim up by.
 */
export function spotInterruptionWarning(opts: SpotInterruptionWarningOptions): string {
  const account = opts.account ?? '123456789012';
  return JSON.stringify({
    version: '0',
    id: `spot-${opts.instanceId}-${Date.now()}`,
    'detail-type': 'EC2 Spot Instance Interruption Warning',
    source: 'aws.ec2',
    account,
    time: (opts.time ?? new Date()).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    region: opts.region,
    resources: [`arn:aws:ec2:${opts.region}:${account}:instance/${opts.instanceId}`],
    detail: { 'instance-id': opts.instanceId, 'instance-action': 'terminate' },
  });
}
