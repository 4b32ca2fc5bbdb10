import { existsSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { LocalClusterError } from './errors.js';
import type { ProcessSupervisor, ManagedProcess } from './processes.js';
import { tailLog } from './processes.js';
import { LOOPBACK } from './ports.js';
import { findRepoRoot } from './toolchain.js';
import { waitFor } from './wait.js';

/**
 * The launcher that starts moto's server with the fixes the real Karpenter needs (each pinned to
 * MOTO_VERSION and covered by test/integration/moto-gaps.int.test.ts).
 */
export function motoLauncherPath(repoRoot = findRepoRoot()): string {
  return join(repoRoot, 'packages', 'testkit', 'moto', 'launch_moto.py');
}

export interface Ec2EmulatorOptions {
  motoServer: string;
  port: number;
  baseDir: string;
  /** AMIs the emulator serves in every region (its default AMI catalogue is replaced). */
  amis: MotoAmi[];
  /**
   * false: launch without the launcher's speed fixes (same answers, slower), only to compare answers
   * against them (moto-gaps.int.test.ts). Default true.
   */
  speedFixes?: boolean;
}

/** One entry of moto's `MOTO_AMIS_PATH` catalogue. */
export interface MotoAmi {
  ami_id: string;
  name: string;
  description: string;
  owner_id: string;
  public: boolean;
  virtualization_type: 'hvm';
  architecture: 'x86_64' | 'arm64';
  state: 'available';
  platform?: string;
  image_type: 'machine';
  hypervisor: 'xen';
  root_device_name: string;
  root_device_type: 'ebs';
  sriov: 'simple';
  tags?: Record<string, string>;
}

export interface Ec2Emulator {
  endpoint: string;
  process: ManagedProcess;
}

/** Credentials and endpoint for `new EC2Client(...)` against the emulator. */
export function ec2ClientConfig(endpoint: string, region: string) {
  return {
    endpoint,
    region,
    credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
    maxAttempts: 2,
  };
}

export async function startEc2Emulator(sup: ProcessSupervisor, opts: Ec2EmulatorOptions): Promise<Ec2Emulator> {
  const amisPath = join(opts.baseDir, 'moto-amis.json');
  writeFileSync(amisPath, JSON.stringify(opts.amis, null, 2));
  // The venv's interpreter sits beside its moto_server script.
  const python = join(dirname(opts.motoServer), 'python');
  const launcher = motoLauncherPath();
  if (!existsSync(launcher)) throw new LocalClusterError(`the moto launcher ${launcher} is missing`);
  const proc = sup.spawn('moto', python, [launcher, '-H', LOOPBACK, '-p', String(opts.port)], {
    env: {
      MOTO_AMIS_PATH: amisPath,
      AWS_EC2_METADATA_DISABLED: 'true',
      PYTHONUNBUFFERED: '1',
      LAUNCH_MOTO_SPEED_FIXES: opts.speedFixes === false ? '0' : '1',
    },
  });
  const endpoint = `http://${LOOPBACK}:${opts.port}`;
  await waitFor(`the EC2 emulator on ${endpoint}`, async () => (await fetch(`${endpoint}/moto-api/`)).status < 500, {
    timeoutMs: 60_000,
    abort: () => (proc.isRunning() ? undefined : `moto_server exited:\n${tailLog(proc.logFile)}`),
  });
  return { endpoint, process: proc };
}

/** Wipes every resource in the emulator (AMIs from the catalogue come back). */
export async function resetEc2Emulator(endpoint: string): Promise<void> {
  const res = await fetch(`${endpoint}/moto-api/reset`, { method: 'POST' });
  if (!res.ok) throw new Error(`resetting the EC2 emulator: HTTP ${res.status}`);
}

/**
 * A raw IAM Query API call. moto does not check signatures, only reads the service and region from the
 * credential scope, so a syntactically valid Authorization header is enough (no IAM SDK dependency).
 */
export async function iamCall(endpoint: string, action: string, params: Record<string, string>): Promise<string> {
  const body = new URLSearchParams({ Action: action, Version: '2010-05-08', ...params }).toString();
  const res = await fetch(endpoint, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/x-www-form-urlencoded; charset=utf-8',
      Authorization: 'AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/iam/aws4_request, SignedHeaders=host, Signature=0',
    },
    body,
  });
  const text = await res.text();
  if (!res.ok) {
    const err = new Error(`IAM ${action}: HTTP ${res.status}: ${/<Message>([^<]*)</.exec(text)?.[1] ?? text.slice(0, 200)}`);
    (err as Error & { code?: string }).code = /<Code>([^<]*)</.exec(text)?.[1];
    throw err;
  }
  return text;
}
