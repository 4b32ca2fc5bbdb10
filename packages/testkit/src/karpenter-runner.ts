import type { ClusterClient } from './access.js';
import { startDeploymentRunner, type DeploymentRunner } from './operand-runner.js';
import { tokenMinterProgram } from './token-minter.js';

export interface KarpenterRunnerOptions {
  cluster: ClusterClient;
  /** The real controller (`karpenterBinary()` from the toolchain). */
  karpenterBinary: string;
  /** The operator bundle (`apps/operator/dist/main.js`): the program of the operator's image (init container). */
  operatorEntry: string;
  baseDir: string;
  namespace?: string;
  log?: (line: string) => void;
  /**
   * The image of the token-minter sidecar (HyperShift's `TOKEN_MINTER_IMAGE`): its container runs the
   * testkit's stand-in (`token-minter.ts`). Absent: no container of that image can run.
   */
  tokenMinterImage?: string;
  /** The EC2 emulator Karpenter talks to; `cluster`'s when absent. */
  ec2Endpoint?: string;
}

/**
 * Karpenter's harness-only env, never rendered into the Deployment: every AWS service at the emulator, STS
 * named on its own as well (the Go SDK resolves web-identity credentials before it applies the global
 * `AWS_ENDPOINT_URL`, and its STS client then skips the shared one unless `AWS_ENDPOINT_URL_STS` is set);
 * `ISOLATED_VPC` because the emulator has no Pricing API and ignores `PathPrefix` on ListInstanceProfiles,
 * so Karpenter's instance-profile garbage collection would delete the seed's worker profile; no IMDS.
 */
export function karpenterHarnessEnv(ec2Endpoint: string): Record<string, string> {
  return {
    AWS_ENDPOINT_URL: ec2Endpoint,
    AWS_ENDPOINT_URL_STS: ec2Endpoint,
    ISOLATED_VPC: 'true',
    AWS_EC2_METADATA_DISABLED: 'true',
  };
}

/**
 * Runs Deployment `openshift-karpenter/karpenter` (or `karpenter` in `namespace`, e.g. an HCP namespace) as
 * the operator rendered it, with the real karpenter-provider-aws controller for its `controller` container,
 * the operator's own `check-credentials` for that init container and the token-minter stand-in for the
 * `tokenMinterImage` sidecar.
 */
export function startKarpenterRunner(opts: KarpenterRunnerOptions): DeploymentRunner {
  const ec2 = opts.ec2Endpoint ?? opts.cluster.info.ec2Endpoint;
  if (!ec2) throw new Error('the Karpenter runner needs the EC2 emulator');
  return startDeploymentRunner({
    cluster: opts.cluster,
    namespace: opts.namespace ?? 'openshift-karpenter',
    deployment: 'karpenter',
    baseDir: opts.baseDir,
    commandFor: (c, kind) => {
      if (kind === 'main') return { command: opts.karpenterBinary };
      if (opts.tokenMinterImage && c.image === opts.tokenMinterImage) return { command: process.execPath, args: [tokenMinterProgram] };
      if (c.args?.[0] === 'check-credentials') return { command: process.execPath, args: [opts.operatorEntry] };
      return undefined;
    },
    harnessEnv: karpenterHarnessEnv(ec2),
    portEnv: ['METRICS_PORT', 'HEALTH_PROBE_PORT'],
    leaderElectionNamespaceEnv: 'LEADER_ELECTION_NAMESPACE',
    log: opts.log,
  });
}
