// The operator in management-cluster (HyperShift) mode for the benchmarks: the bench's cluster is the
// management cluster, with an HCP namespace laid out as HyperShift lays it out (its Role, the HCP, Secret
// karpenter-credentials, the operator's pod, a stand-in for HyperShift's ignition generator), a guest
// cluster, and the operator started from HyperShift's rendered Deployment (its args and env).
import { readFileSync, rmSync } from 'node:fs';
import { applyObject, applyStatus, getObject, type ClusterHandle } from '@karpenter-operator/testkit';
import {
  applyOperatorPod,
  AUTONODE,
  hostedControlPlane,
  hyperShiftCredentialsSecret,
  prepareHostedClusters,
  startIgnitionStandIn,
  startOperatorAsHyperShift,
} from '../../../apps/operator/test/support/hypershift-env.js';
import type { OperatorProcess } from '../../../apps/operator/test/support/operator-process.js';
import type { BenchContext } from './harness.js';
import { parsePromText, type PromSample } from './prom.js';

export const HOSTED_NS = 'clusters-bench';
const HCP = 'bench';
const HCP_UID = 1000710000;
const POD = 'karpenter-operator-6c9f8d7b5-bench';

export interface HostedOperator {
  op: OperatorProcess;
  guest: ClusterHandle;
  metrics(): Promise<PromSample[]>;
  /** VmRSS of the operator process from /proc, in MiB. */
  rssMiB(): number | undefined;
  stop(): Promise<void>;
}

/** Lays out the HCP namespace and the guest, starts the operator as HyperShift does; does not wait for it. */
export async function startHostedOperator(ctx: BenchContext): Promise<HostedOperator> {
  const mgmt = ctx.cluster;
  const { guest, dir, guestKubeconfigPath } = await prepareHostedClusters(mgmt, {
    namespace: HOSTED_NS,
    namespaceAnnotations: { 'hypershift.openshift.io/default-security-context-uid': String(HCP_UID) },
  });
  const created = await applyObject(mgmt.kubeConfig(), hostedControlPlane(ctx.world, { name: HCP, namespace: HOSTED_NS }));
  await applyStatus(mgmt.kubeConfig(), {
    ...created,
    status: {
      ready: true,
      initialized: true,
      controlPlaneVersion: { desired: { version: '4.22.0', image: 'quay.io/openshift-release-dev/ocp-release:4.22.0-x86_64' } },
    },
  });
  const stopIgnition = startIgnitionStandIn(mgmt, guest, ctx.world, HOSTED_NS);
  await applyObject(mgmt.kubeConfig(), hyperShiftCredentialsSecret(HOSTED_NS, AUTONODE.provisionerConfig.karpenter.aws.roleARN));
  await applyOperatorPod(mgmt, { namespace: HOSTED_NS, name: POD, uid: HCP_UID });
  const op = await startOperatorAsHyperShift(mgmt, ctx.world, { namespace: HOSTED_NS, guestKubeconfigPath, podName: POD });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    stopIgnition();
    await op.stop();
    await guest.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  ctx.onCleanup(stop);
  return {
    op,
    guest,
    metrics: async () => {
      const res = await fetch(`http://127.0.0.1:${op.metricsPort}/metrics`);
      if (res.status !== 200) throw new Error(`operator /metrics: HTTP ${res.status}`);
      return parsePromText(await res.text());
    },
    rssMiB: () => {
      try {
        const kb = Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${op.proc.pid}/status`, 'utf8'))?.[1]);
        return Number.isFinite(kb) ? Math.round((kb / 1024) * 10) / 10 : undefined;
      } catch {
        return undefined;
      }
    },
    stop,
  };
}

/** Converged: the operand Deployment in the HCP namespace, EC2NodeClass `default` with userData in the guest. */
export async function hostedConverged(ctx: BenchContext, h: HostedOperator): Promise<boolean> {
  if (h.op.exited()) throw new Error(`the operator exited:\n${h.op.logs().slice(-3000)}`);
  const operand = await getObject(ctx.cluster.kubeConfig(), 'apps/v1', 'Deployment', 'karpenter', HOSTED_NS);
  const nc = await getObject(h.guest.kubeConfig(), 'karpenter.k8s.aws/v1', 'EC2NodeClass', 'default').catch(() => undefined);
  return operand !== undefined && typeof (nc?.spec as { userData?: unknown } | undefined)?.userData === 'string';
}
