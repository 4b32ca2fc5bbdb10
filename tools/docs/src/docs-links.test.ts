import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { benchNames, checkDocs, docFiles, githubSlug, scanMarkdown } from './docs-links.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

describe('githubSlug', () => {
  it.each([
    { name: 'words', heading: 'What teardown leaves', want: 'what-teardown-leaves' },
    { name: 'code span and apostrophe', heading: "Karpenter's settings: the `Karpenter` CR", want: 'karpenters-settings-the-karpenter-cr' },
    { name: 'parentheses', heading: 'HyperShift (management-cluster mode)', want: 'hypershift-management-cluster-mode' },
    { name: 'link text', heading: 'See [the docs](docs/a.md) now', want: 'see-the-docs-now' },
    { name: 'underscore and digits kept', heading: 'step_2 of 8', want: 'step_2-of-8' },
    { name: 'two spaces, two hyphens', heading: 'a  b', want: 'a--b' },
  ])('$name', ({ heading, want }) => {
    expect(githubSlug(heading)).toBe(want);
  });
});

describe('scanMarkdown', () => {
  it.each([
    { name: 'inline link', text: 'see [x](docs/a.md#b).', links: ['docs/a.md#b'] },
    { name: 'link with a title', text: '[x](a.md "title")', links: ['a.md'] },
    { name: 'reference definition', text: '[x]: ../b.md', links: ['../b.md'] },
    { name: 'not in a code span', text: 'run `a[0](b)` here', links: [] },
    { name: 'not in a fenced block', text: '```md\n[x](nowhere.md)\n```', links: [] },
  ])('links: $name', ({ text, links }) => {
    expect(scanMarkdown(text).links.map((l) => l.target)).toEqual(links);
  });

  it('numbers repeated headings as GitHub does, ignores headings in code blocks, reads <a id>', () => {
    const text = '# A\n## A\n```bash\n# not a heading\n```\n<a id="here"></a>\n### A';
    expect(scanMarkdown(text).anchors).toEqual(['a', 'a-1', 'here', 'a-2']);
  });

  it.each([
    { name: 'plain', text: 'npm run dev', want: [{ line: 1, script: 'dev' }] },
    { name: 'with args', text: 'x\n`npm run dev -- --detach`', want: [{ line: 2, script: 'dev' }] },
    { name: 'a bench', text: 'npm run bench -- csr-burst --n 1000', want: [{ line: 1, script: 'bench', bench: 'csr-burst' }] },
    { name: 'silent bench', text: 'npm run --silent bench -- idle', want: [{ line: 1, script: 'bench', bench: 'idle' }] },
    { name: 'placeholder bench', text: 'npm run bench -- <name> [args]', want: [{ line: 1, script: 'bench' }] },
    { name: 'in a fenced block', text: '```\nnpm run setup\n```', want: [{ line: 2, script: 'setup' }] },
    { name: 'placeholder script', text: 'npm run <script>', want: [] },
  ])('npm runs: $name', ({ text, want }) => {
    expect(scanMarkdown(text).npmRuns).toEqual(want);
  });
});

describe("the repository's Markdown", () => {
  it('covers the README, CONTRIBUTING and docs/', () => {
    expect(docFiles(root)).toEqual(expect.arrayContaining(['README.md', 'CONTRIBUTING.md', 'docs/architecture.md']));
  });

  it('has only links that resolve inside the repository, and names only scripts and benchmarks that exist', () => {
    // Each problem reads `file:line: link: what is wrong`.
    expect(checkDocs(root)).toEqual([]);
  });
});

describe('tools/bench/results', () => {
  const dir = join(root, 'tools/bench/results');
  const files = readdirSync(dir).filter((f) => f.endsWith('.json'));

  it.each(files.map((file) => ({ name: file, file })))(
    '$name is the one result of an existing benchmark (and topology other than standalone), named after it',
    ({ file }) => {
      const { benchmark, topology } = JSON.parse(readFileSync(join(dir, file), 'utf8')) as { benchmark?: string; topology?: string };
      expect(benchNames(root)).toContain(benchmark);
      expect(file).toBe(topology && topology !== 'standalone' ? `${benchmark}-${topology}.json` : `${benchmark}.json`);
    },
  );

  it('are each linked from docs/benchmarks.md', () => {
    const linked = scanMarkdown(readFileSync(join(root, 'docs/benchmarks.md'), 'utf8')).links.map((l) => l.target);
    expect(files.filter((f) => !linked.includes(`../tools/bench/results/${f}`))).toEqual([]);
  });
});
