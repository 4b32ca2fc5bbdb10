// The checks of the repository's Markdown: relative links (and their `#anchor`s) resolve inside the repository,
// and every `npm run <script>` and `npm run bench -- <name>` they name exists. Pure functions over text, plus
// `checkDocs`, which reads the files.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

/** What a Markdown file names: links with their line, and npm commands with theirs. */
export interface Scanned {
  links: Array<{ line: number; target: string }>;
  npmRuns: Array<{ line: number; script: string; bench?: string }>;
  anchors: string[];
}

/** GitHub's heading anchor: lower case, punctuation dropped, each space a hyphen. */
export function githubSlug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link's text
    .replace(/<[^>]+>/g, '') // inline HTML
    .replace(/[`*]/g, '')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

/** Code spans blanked out (same length), so that text inside them is neither a link nor a heading. */
function withoutCodeSpans(line: string): string {
  return line.replace(/(`+)(.+?)\1/g, (m) => ' '.repeat(m.length));
}

export function scanMarkdown(text: string): Scanned {
  const links: Scanned['links'] = [];
  const npmRuns: Scanned['npmRuns'] = [];
  const anchors: string[] = [];
  const seen = new Map<string, number>();
  let fence: string | undefined;
  text.split('\n').forEach((raw, i) => {
    const line = i + 1;
    // Commands are named in code blocks and code spans alike.
    for (const m of raw.matchAll(/\bnpm run(?:\s+--?[\w-]+)*\s+([\w:.-]+)(?:\s+--\s+([\w-]+|<[^>]*>))?/g)) {
      const bench = m[1] === 'bench' && m[2] && !/^[<-]/.test(m[2]) ? m[2] : undefined;
      npmRuns.push({ line, script: m[1]!, ...(bench ? { bench } : {}) });
    }
    const f = /^\s*(```+|~~~+)/.exec(raw);
    if (f) {
      if (!fence) fence = f[1]![0];
      else if (f[1]![0] === fence) fence = undefined;
      return;
    }
    if (fence) return;
    for (const m of raw.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) anchors.push(m[1]!);
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(raw);
    if (heading) {
      const slug = githubSlug(heading[1]!);
      const n = seen.get(slug) ?? 0;
      seen.set(slug, n + 1);
      anchors.push(n ? `${slug}-${n}` : slug);
    }
    const plain = withoutCodeSpans(raw);
    for (const m of plain.matchAll(/!?\[[^\]]*\]\(\s*([^)\s]+)(?:\s+"[^"]*")?\s*\)/g)) links.push({ line, target: m[1]! });
    const ref = /^\s{0,3}\[[^\]]+\]:\s*(\S+)/.exec(plain);
    if (ref) links.push({ line, target: ref[1]! });
  });
  return { links, npmRuns, anchors };
}

/** The Markdown files whose links are checked, relative to the repository root. */
export function docFiles(root: string): string[] {
  const inDir = (dir: string) =>
    existsSync(join(root, dir))
      ? readdirSync(join(root, dir))
          .filter((f) => f.endsWith('.md'))
          .map((f) => `${dir}/${f}`)
      : [];
  const toolReadmes = readdirSync(join(root, 'tools'))
    .map((d) => `tools/${d}/README.md`)
    .filter((f) => existsSync(join(root, f)));
  return ['README.md', 'CONTRIBUTING.md', ...inDir('docs'), ...toolReadmes].filter((f) => existsSync(join(root, f))).sort();
}

/** The benchmarks `npm run bench -- <name>` runs: every `tools/bench/<name>.ts` (as `tools/bench/run.mjs` lists them). */
export function benchNames(root: string): string[] {
  return readdirSync(join(root, 'tools/bench'))
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.endsWith('.d.ts'))
    .map((f) => f.replace(/\.ts$/, ''));
}

/** Every problem of one Markdown file, each as `file:line: what`. */
export function checkFile(root: string, file: string, env: { scripts: Set<string>; benches: Set<string> }): string[] {
  const problems: string[] = [];
  const abs = join(root, file);
  const scanned = scanMarkdown(readFileSync(abs, 'utf8'));
  const anchorsOf = new Map<string, string[]>([[abs, scanned.anchors]]);
  for (const { line, target } of scanned.links) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue; // https:, mailto:, ...
    const hash = target.indexOf('#');
    const path = decodeURI(hash < 0 ? target : target.slice(0, hash));
    const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
    const where = `${file}:${line}: ${target}`;
    if (path.startsWith('/')) {
      problems.push(`${where}: absolute path; link relative to the file`);
      continue;
    }
    const resolved = path ? resolve(dirname(abs), path) : abs;
    if (resolved !== root && !resolved.startsWith(root + sep)) {
      problems.push(`${where}: points outside the repository`);
      continue;
    }
    if (!existsSync(resolved)) {
      problems.push(`${where}: ${relative(root, resolved)} does not exist`);
      continue;
    }
    if (anchor === undefined || !resolved.endsWith('.md') || !statSync(resolved).isFile()) continue;
    let anchors = anchorsOf.get(resolved);
    if (!anchors) {
      anchors = scanMarkdown(readFileSync(resolved, 'utf8')).anchors;
      anchorsOf.set(resolved, anchors);
    }
    if (!anchors.includes(anchor)) problems.push(`${where}: no heading #${anchor} in ${relative(root, resolved)}`);
  }
  for (const { line, script, bench } of scanned.npmRuns) {
    if (!env.scripts.has(script)) problems.push(`${file}:${line}: npm run ${script}: no such script in package.json`);
    if (bench && !env.benches.has(bench)) problems.push(`${file}:${line}: npm run bench -- ${bench}: no tools/bench/${bench}.ts`);
  }
  return problems;
}

/** Every problem of every checked file. */
export function checkDocs(root: string): string[] {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
  const env = { scripts: new Set(Object.keys(pkg.scripts ?? {})), benches: new Set(benchNames(root)) };
  return docFiles(root).flatMap((f) => checkFile(root, f, env));
}
