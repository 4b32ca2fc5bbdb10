import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { openShiftAwsObjects } from '@karpenter-operator/testkit';
import { ExitCodes } from '@karpenter-operator/kube-runtime';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const node = join(repo, 'node_modules/.bin/node');

interface Stage {
  from: string;
  name?: string;
  lines: string[];
}

/** The stages of a Containerfile: FROM lines and the instructions under each (continuations joined). */
function stages(file: string): Stage[] {
  const text = readFileSync(file, 'utf8').replace(/\\\n\s*/g, ' ');
  const out: Stage[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const from = /^FROM\s+(\S+)(?:\s+AS\s+(\S+))?/i.exec(line);
    if (from) out.push({ from: from[1]!, ...(from[2] ? { name: from[2] } : {}), lines: [] });
    else out.at(-1)!.lines.push(line);
  }
  return out;
}

interface ImageSpec {
  containerfile: string;
  entry: string;
  opt: string;
  manifests: boolean;
  /** Executables copied from the repository: image path → source. */
  bin?: Record<string, string>;
}
interface RuntimeTree {
  images: Record<string, ImageSpec>;
  buildRuntimeTree: (image: string) => string;
}
const runtimeTree = join(repo, 'tools/image/runtime-tree.mjs');
const { images } = (await import(runtimeTree)) as RuntimeTree;

/** What the runtime stage of each image must and must not have beyond the bundle. */
const cases = [
  { name: 'operator', stageNames: ['crds', 'build', 'final'], operatorOnly: true, otherBundle: 'adapter.js' },
  { name: 'hypershift-adapter', stageNames: ['crds', 'build', 'final'], operatorOnly: false, otherBundle: 'main.js' },
];

describe.each(cases)('$name image', ({ name, stageNames, operatorOnly, otherBundle }) => {
  const spec = images[name]!;
  const file = join(repo, spec.containerfile);
  let tree: string;
  beforeAll(async () => {
    const { buildRuntimeTree } = (await import(runtimeTree)) as RuntimeTree;
    tree = buildRuntimeTree(name);
  }, 120_000);
  afterAll(() => rmSync(tree, { recursive: true, force: true }));

  it('is multi-stage on Red Hat UBI with Node.js 24 and runs as a non-root user', () => {
    const s = stages(file);
    expect(s.map((x) => x.name ?? 'final')).toEqual(stageNames);
    const build = s.find((x) => x.name === 'build')!;
    expect(build.from).toMatch(/^registry\.access\.redhat\.com\/ubi9\/nodejs-24:/);
    expect(build.lines).toContain('WORKDIR /src');
    expect(
      build.lines.some((l) => /^RUN npm ci .*&& .*node apps\/operator\/scripts\/build\.mjs --entry (\S+)$/.exec(l)?.[1] === spec.entry),
    ).toBe(true);
    const final = s.at(-1)!;
    expect(final.from).toMatch(/^registry\.access\.redhat\.com\/ubi9\/nodejs-24-minimal:/);
    const user = final.lines.filter((l) => l.startsWith('USER ')).at(-1);
    expect(user).toMatch(/^USER [1-9][0-9]*$/);
  });

  it(`has /manifests and the CVO label ${operatorOnly ? 'as the payload operator' : 'not: only the payload operator image does'}`, () => {
    const s = stages(file);
    const final = s.at(-1)!;
    expect(final.lines.includes('COPY install/ /manifests/')).toBe(operatorOnly);
    expect(s.some((st) => st.lines.some((l) => l.includes('/manifests')))).toBe(operatorOnly);
    expect(final.lines.some((l) => /^LABEL .*io\.openshift\.release\.operator=true/.test(l))).toBe(operatorOnly);
    expect(s.some((st) => st.lines.some((l) => l.includes('io.openshift.release.operator')))).toBe(operatorOnly);
    expect(existsSync(join(tree, 'manifests'))).toBe(operatorOnly);
    if (operatorOnly) expect(existsSync(join(tree, 'manifests/0000_50_karpenter-operator_03_deployment.yaml'))).toBe(true);
  });

  it(`copies only paths that exist, and its entry point is the bundled ${spec.entry}.js`, () => {
    const s = stages(file);
    for (const [i, st] of s.entries()) {
      for (const l of st.lines.filter((x) => x.startsWith('COPY '))) {
        const from = /--from=(\S+)/.exec(l)?.[1];
        if (from) {
          expect(
            s.slice(0, i).map((x) => x.name),
            `${l}: stage ${from} comes earlier`,
          ).toContain(from);
          continue;
        }
        const parts = l.split(/\s+/).filter((p) => !p.startsWith('--'));
        for (const src of parts.slice(1, -1)) expect(existsSync(join(repo, src)), `${src} (stage ${st.name ?? 'final'}) exists`).toBe(true);
      }
    }
    const final = s.at(-1)!;
    const copies = final.lines.filter((l) => l.includes('--from='));
    expect(copies).toEqual([`COPY --from=build /src/apps/operator/dist/ ${spec.opt}/`]);
    for (const [dest, src] of Object.entries(spec.bin ?? {})) expect(final.lines).toContain(`COPY --chmod=0755 ${src} ${dest}`);
    const entry = final.lines.find((l) => l.startsWith('ENTRYPOINT'))!;
    const argv = JSON.parse(entry.slice('ENTRYPOINT'.length)) as string[];
    // The operator starts through the launcher HyperShift runs too; the adapter straight from its bundle.
    expect(argv).toEqual(operatorOnly ? ['/usr/bin/karpenter-operator'] : ['node', `${spec.opt}/${spec.entry}.js`]);
    const opt = join(tree, spec.opt);
    expect(existsSync(join(opt, `${spec.entry}.js`))).toBe(true);
    // Only this image's bundle, and only the CRDs it serves: Karpenter's by the operator, OpenshiftEC2NodeClass by
    // both (the operator's hosted controllers in management-cluster mode, the adapter's when it runs them).
    expect(existsSync(join(opt, otherBundle))).toBe(false);
    expect(existsSync(join(opt, 'crds/karpenter.k8s.aws_ec2nodeclasses.yaml'))).toBe(operatorOnly);
    expect(existsSync(join(opt, 'crds/karpenter.hypershift.openshift.io_openshiftec2nodeclasses.yaml'))).toBe(true);
  });

  if (name === 'operator') {
    it("has /usr/bin/karpenter-operator, HyperShift's command: executable, it runs the bundle and accepts HyperShift's flags", () => {
      expect(Object.keys(spec.bin ?? {})).toEqual(['/usr/bin/karpenter-operator']);
      const bin = join(tree, 'usr/bin/karpenter-operator');
      expect(existsSync(bin)).toBe(true);
      expect(statSync(bin).mode & 0o111).toBe(0o111);
      // As the kubelet runs a container's command: no shell of ours, only the image's PATH (node on it).
      const run = (args: string[], env: Record<string, string> = {}) =>
        spawnSync(bin, args, { cwd: '/', encoding: 'utf8', env: { PATH: `${dirname(node)}:/usr/bin:/bin`, ...env }, timeout: 30_000 });
      const help = run(['--help']);
      expect(help.status, help.stderr).toBe(0);
      expect(help.stdout).toMatch(/^Usage: karpenter-operator \[run\]/);
      expect(help.stdout).toContain('--target-kubeconfig');
      // HyperShift's args with MANAGEMENT_CLUSTER=true and nothing else: refused for the missing env only, in one line.
      const bare = run(['--target-kubeconfig=/mnt/kubeconfig/target-kubeconfig', '--namespace=clusters-demo'], {
        MANAGEMENT_CLUSTER: 'true',
      });
      expect(bare.status).toBe(ExitCodes.usage);
      expect(bare.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(bare.stderr).toMatch(/^karpenter-operator: cannot start: CLUSTER_NAME is required/);
      expect(bare.stderr).not.toMatch(/unknown flag|RELEASE_VERSION|--guest-kubeconfig/);
      // Node's compile cache lives beside the bundle, and the image warms it at build time.
      const cache = join(tree, spec.opt, '.compile-cache');
      expect(existsSync(cache) && readdirSync(cache).length > 0).toBe(true);
      expect(stages(file).at(-1)!.lines).toContain('RUN /usr/bin/karpenter-operator --help > /dev/null');
    });

    it('the runtime tree starts without node_modules: --help, and render on fixtures', () => {
      const main = join(tree, spec.opt, 'main.js');
      const help = spawnSync(node, [main, '--help'], { cwd: tree, encoding: 'utf8' });
      expect(help.status).toBe(0);
      expect(help.stdout).toContain('karpenter-operator render --from DIR');

      const fixtures = mkdtempSync(join(tmpdir(), 'ko-fixtures-'));
      writeFileSync(
        join(fixtures, 'cluster.yaml'),
        openShiftAwsObjects('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n')
          .map((o) => stringify(o))
          .join('---\n'),
      );
      const r = spawnSync(node, [main, 'render', '--from', fixtures, '--kind', 'EC2NodeClass', '--output', 'json'], {
        cwd: tree,
        encoding: 'utf8',
      });
      rmSync(fixtures, { recursive: true, force: true });
      expect(r.status, r.stderr).toBe(0);
      const nc = JSON.parse(r.stdout) as { kind: string; spec: { amiFamily: string } };
      expect([nc.kind, nc.spec.amiFamily]).toEqual(['EC2NodeClass', 'Custom']);

      const bad = spawnSync(node, [main, 'render', '--from', '/nonexistent-dir'], { cwd: tree, encoding: 'utf8' });
      expect(bad.status).toBe(1);
      expect(bad.stderr).toMatch(/render: reading \/nonexistent-dir/);
    });
  } else {
    const start = (args: string[]) =>
      spawnSync(node, [join(tree, spec.opt, 'adapter.js'), ...args], {
        cwd: tree,
        encoding: 'utf8',
        env: { PATH: process.env.PATH },
        timeout: 30_000,
      });

    it('the runtime tree starts without node_modules: --help prints the usage', () => {
      const help = start(['--help']);
      expect(help.status, help.stderr).toBe(0);
      expect(help.stdout).toMatch(/^Usage: karpenter-operator-hypershift-adapter \[run\] --namespace NS --guest-kubeconfig FILE/);
      expect(help.stdout).toContain('--health-probe-bind-address');
    });

    it.each([
      { name: 'no flags', args: [], missing: ['--namespace', '--guest-kubeconfig'] },
      { name: 'no --guest-kubeconfig', args: ['run', '--namespace', 'clusters-a'], missing: ['--guest-kubeconfig'] },
      { name: 'no --namespace', args: ['--guest-kubeconfig', '/nonexistent'], missing: ['--namespace'] },
    ])('without required flags it exits 2 with one line naming them: $name', ({ args, missing }) => {
      const r = start(args);
      expect(r.status).toBe(ExitCodes.usage);
      expect(r.stdout).toBe('');
      const lines = r.stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^hypershift-adapter: cannot start: /);
      for (const flag of ['--namespace', '--guest-kubeconfig'])
        expect(lines[0]!.includes(`${flag} is required`), `${flag} named`).toBe(missing.includes(flag));
    });

    it('an invalid bind address is one line naming the flag, before anything is started', () => {
      const r = start(['--namespace', 'a', '--guest-kubeconfig', '/nonexistent', '--metrics-bind-address', '8080']);
      expect(r.status).toBe(ExitCodes.usage);
      expect(r.stderr.trimEnd()).toBe('hypershift-adapter: cannot start: --metrics-bind-address must be [host]:port, got "8080"');
    });
  }
});

/**
 * The payload build (images/operator.rhel.Containerfile): OpenShift's builder and base images, every input
 * prefetched (package-lock.json's npm packages and images/artifacts.lock.yaml's files under
 * /cachi2/output/deps), nothing fetched during the build, and the runtime tree of the UBI image above.
 */
describe('operator payload build (operator.rhel.Containerfile)', () => {
  const file = join(repo, 'images/operator.rhel.Containerfile');
  const lock = join(repo, 'images/artifacts.lock.yaml');
  interface Artifact {
    download_url: string;
    checksum: string;
    filename: string;
  }
  const artifacts = () => (parseAllDocuments(readFileSync(lock, 'utf8')).at(-1)!.toJS() as { artifacts: Artifact[] }).artifacts;
  const build = () => stages(file).find((x) => x.name === 'build')!;
  const deps = '/cachi2/output/deps';

  it("builds on OpenShift's builder image and runs on its base image, of one OpenShift release", () => {
    const s = stages(file);
    expect(s.map((x) => x.name ?? 'final')).toEqual(['build', 'final']);
    const builder = /^registry\.ci\.openshift\.org\/ocp\/builder:rhel-9-base-nodejs-openshift-(4\.\d+)$/.exec(s[0]!.from);
    const base = /^registry\.ci\.openshift\.org\/ocp\/(4\.\d+):base-rhel9$/.exec(s[1]!.from);
    expect(builder, s[0]!.from).not.toBeNull();
    expect(base, s[1]!.from).not.toBeNull();
    expect(builder![1]).toBe(base![1]);
  });

  it('fetches nothing during the build: npm ci --offline, the rest from the prefetched directory', () => {
    const b = build();
    expect(b.lines).toContain(`ARG DEPS=${deps}`);
    for (const l of b.lines) {
      expect(l, 'no download').not.toMatch(
        /\b(curl|wget|git clone|go (mod download|get|install)|pip install|dnf|yum|microdnf)\b|https?:\/\/|fetch-crds\.sh/,
      );
      expect(l.startsWith('ADD '), 'no ADD (it fetches URLs)').toBe(false);
    }
    const npm = b.lines.filter((l) => /\bnpm (ci|install|i)\b/.test(l));
    expect(npm).toHaveLength(1);
    expect(npm[0]).toMatch(/npm ci --offline --ignore-scripts /);
    expect(npm[0]).toMatch(/&& node apps\/operator\/scripts\/build\.mjs --entry main$/);
  });

  it('reads from the prefetched directory only files images/artifacts.lock.yaml pins, and uses each', () => {
    const names = artifacts().map((a) => a.filename);
    const text = build().lines.join('\n');
    // Each reference to ${DEPS}/generic/<name>, with its shell expansions (architectures, globs) spelled out.
    const refs = [...text.matchAll(/\$\{DEPS\}\/generic\/(\S+)/g)].map((m) => m[1]!.replace(/;$/, ''));
    expect(refs.length).toBeGreaterThan(0);
    const covered = new Set<string>();
    for (const ref of refs) {
      const pattern = new RegExp(
        `^${ref
          .replace(/[.]/g, '\\.')
          .replace(/\$\{TARGETARCH\}/g, '(?:amd64|arm64)')
          .replace(/\*/g, '[^/]*')}$`,
      );
      const hits = names.filter((n) => pattern.test(n));
      expect(hits.length, `${ref} matches a pinned artifact`).toBeGreaterThan(0);
      hits.forEach((h) => covered.add(h));
    }
    expect([...covered].sort()).toEqual([...names].sort());
  });

  it("pins the Node.js runtime of package-lock.json's node and the CRDs of the pinned karpenter-provider-aws, by checksum", () => {
    const lockfile = JSON.parse(readFileSync(join(repo, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version: string }> };
    const nodeVersion = lockfile.packages['node_modules/node']!.version;
    const karpenter = /^KARPENTER_AWS_VERSION=(\S+)$/m.exec(readFileSync(join(repo, 'tools/cluster/versions.env'), 'utf8'))![1]!;
    const all = artifacts();
    for (const a of all) expect(a.checksum, a.filename).toMatch(/^(sha256:[0-9a-f]{64}|sha512:[0-9a-f]{128})$/);
    const runtimes = all.filter((a) => a.filename.startsWith('node-'));
    expect(runtimes.map((a) => a.filename).sort()).toEqual([`node-amd64-${nodeVersion}.tgz`, `node-arm64-${nodeVersion}.tgz`]);
    // TARGETARCH amd64 is Node's x64.
    for (const a of runtimes) {
      const pkg = `node-linux-${a.filename.startsWith('node-amd64') ? 'x64' : 'arm64'}`;
      expect(a.download_url).toBe(`https://registry.npmjs.org/${pkg}/-/${pkg}-${nodeVersion}.tgz`);
    }
    // The CRDs: exactly the runtime CRDs the operator ships, with the bytes of the pinned module's files.
    const crdDir = join(repo, 'generated/crds/karpenter');
    const crds = all.filter((a) => a.filename.endsWith('.yaml'));
    const shipped = readdirSync(crdDir).filter((f) => f.endsWith('.yaml'));
    expect(crds.map((a) => a.filename.replace(/^(.+?)_(.+)\.yaml$/, '$2.$1.yaml')).sort()).toEqual(shipped.sort());
    for (const a of crds) {
      expect(a.download_url).toBe(`https://raw.githubusercontent.com/aws/karpenter-provider-aws/${karpenter}/pkg/apis/crds/${a.filename}`);
      const local = join(crdDir, a.filename.replace(/^(.+?)_(.+)\.yaml$/, '$2.$1.yaml'));
      expect(a.checksum, a.filename).toBe(`sha256:${createHash('sha256').update(readFileSync(local)).digest('hex')}`);
    }
  });

  it("the build stage's CRD step lays the prefetched CRDs out as build.mjs reads them", () => {
    const step = build().lines.find((l) => l.startsWith('RUN ') && l.includes('generated/crds/karpenter'))!;
    const work = mkdtempSync(join(tmpdir(), 'ko-payload-'));
    try {
      const generic = join(work, 'deps/generic');
      mkdirSync(generic, { recursive: true });
      for (const a of artifacts().filter((x) => x.filename.endsWith('.yaml')))
        copyFileSync(
          join(repo, 'generated/crds/karpenter', a.filename.replace(/^(.+?)_(.+)\.yaml$/, '$2.$1.yaml')),
          join(generic, a.filename),
        );
      mkdirSync(join(work, 'src'));
      const r = spawnSync('sh', ['-ec', step.slice('RUN '.length)], {
        cwd: join(work, 'src'),
        encoding: 'utf8',
        env: { PATH: process.env.PATH, DEPS: join(work, 'deps') },
      });
      expect(r.status, r.stderr).toBe(0);
      const out = join(work, 'src/generated/crds/karpenter');
      const want = readdirSync(join(repo, 'generated/crds/karpenter')).filter((f) => f.endsWith('.yaml'));
      expect(readdirSync(out).sort()).toEqual(want.sort());
      for (const f of want)
        expect(readFileSync(join(out, f), 'utf8')).toBe(readFileSync(join(repo, 'generated/crds/karpenter', f), 'utf8'));
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });

  it('ships the runtime tree of the UBI image, the prefetched node as /usr/bin/node, and the payload labels', () => {
    const final = stages(file).at(-1)!;
    const ubi = stages(join(repo, images.operator!.containerfile)).at(-1)!;
    const layout = (lines: string[]) =>
      lines.filter((l) => /^(COPY|ENTRYPOINT|CMD|RUN \/usr\/bin\/karpenter-operator)/.test(l) && !l.includes('/usr/bin/node'));
    expect(layout(final.lines)).toEqual(layout(ubi.lines));
    expect(final.lines).toContain('COPY --from=build /opt/node/bin/node /usr/bin/node');
    expect(final.lines.filter((l) => l.startsWith('USER ')).at(-1)).toMatch(/^USER [1-9][0-9]*$/);
    const labels = Object.fromEntries(
      final.lines
        .filter((l) => l.startsWith('LABEL '))
        .flatMap((l) => [...l.matchAll(/([\w.-]+)=("([^"]*)"|\S+)/g)].map((m) => [m[1]!, m[3] ?? m[2]!])),
    ) as Record<string, string>;
    expect(labels).toMatchObject({ 'io.openshift.release.operator': 'true', 'io.openshift.tags': 'openshift,karpenter' });
    for (const k of ['io.k8s.display-name', 'io.k8s.description', 'com.redhat.component', 'name']) expect(labels[k], k).toBeTruthy();
  });
});
