// Lint: typescript-eslint recommended rules plus the module-boundary rule below, driven by the Nx
// project tags in each project.json (one source of truth for what may import what).
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import tseslint from 'typescript-eslint';

const roots = ['packages', 'apps'];
const projects = [];
for (const root of roots) {
  if (!existsSync(root)) continue;
  for (const dir of readdirSync(root)) {
    const pj = join(root, dir, 'project.json');
    const pkg = join(root, dir, 'package.json');
    if (!existsSync(pj) || !existsSync(pkg)) continue;
    const { tags = [] } = JSON.parse(readFileSync(pj, 'utf8'));
    const { name } = JSON.parse(readFileSync(pkg, 'utf8'));
    projects.push({ dir: join(root, dir), name, tags });
  }
}
const vendor = ['@aws-sdk/*', '@azure/*', '@kubernetes/client-node', '@kubernetes/client-node/*', 'inversify', 'inversify/*'];
const names = (pred) => projects.filter(pred).map((p) => p.name);

const corePatterns = (p) => [
  { group: vendor, message: 'packages/core is vendor-free: no cloud SDK, client-node or inversify (house rule 1).' },
  { group: names((q) => q.name !== p.name).flatMap((n) => [n, `${n}/*`]), message: 'core imports no other project.' },
];

const boundaries = projects.map((p) => {
  const patterns = [];
  if (p.tags.includes('type:core')) patterns.push(...corePatterns(p));
  if (p.tags.includes('type:adapter')) {
    const others = names((q) => q.name !== p.name && (q.tags.includes('type:adapter') || q.tags.includes('type:app')));
    if (others.length)
      patterns.push({
        group: others.flatMap((n) => [n, `${n}/*`]),
        message: 'adapters never import other adapters or the app (house rule 1).',
      });
    patterns.push({ group: ['@kubernetes/client-node'], message: 'adapters reach the cluster through the ClusterStore port.' });
  }
  if (p.tags.includes('type:adapter')) {
    const runtimes = names((q) => q.tags.includes('type:runtime'));
    if (runtimes.length)
      patterns.push({
        group: runtimes.flatMap((n) => [n, `${n}/*`]),
        message: 'adapters reach the cluster through the ClusterStore port, not the controller runtime.',
      });
  }
  // The controller runtime is a library under the app: it implements core's ports and knows none of core's
  // decisions. It imports core only through `@karpenter-operator/core/ports` (ports, model, errors), never the
  // root entry (which carries the use-cases and policy), and no other project of this repository.
  const paths = [];
  if (p.tags.includes('type:runtime')) {
    paths.push({
      name: '@karpenter-operator/core',
      message: 'the controller runtime imports core only through @karpenter-operator/core/ports: never a use-case or a decision.',
    });
    patterns.push({
      group: [
        ...names((q) => q.name !== p.name && !q.tags.includes('type:core')).flatMap((n) => [n, `${n}/*`]),
        '@karpenter-operator/core/testing',
        '**/core/src/**',
      ],
      message: 'the controller runtime imports no adapter, app or testkit, no fake in production code, and no core file by path.',
    });
    patterns.push({
      group: ['inversify', 'inversify/*'],
      message: 'the controller runtime is wired by the app; it needs no DI container.',
    });
  }
  if (p.tags.includes('type:app') || p.tags.includes('type:adapter') || p.tags.includes('type:runtime')) {
    patterns.push({ group: names((q) => q.tags.includes('type:testkit')), message: 'production code does not import the testkit.' });
  }
  return {
    files: [`${p.dir}/src/**/*.ts`],
    ignores: ['**/*.test.ts'],
    rules: patterns.length || paths.length ? { 'no-restricted-imports': ['error', { paths, patterns }] } : {},
  };
});

// `@karpenter-operator/core/ports` (src/ports/index.ts) and what it re-exports reach no use-case and no
// topology: that entry point is all the controller runtime may see of core.
const corePortsEntry = projects
  .filter((p) => p.tags.includes('type:core'))
  .map((p) => ({
    files: [
      `${p.dir}/src/ports/**/*.ts`,
      `${p.dir}/src/model/**/*.ts`,
      `${p.dir}/src/runtime/**/*.ts`,
      `${p.dir}/src/errors.ts`,
      // re-exported by src/ports/index.ts
      `${p.dir}/src/policy/subset.ts`,
      `${p.dir}/src/policy/finalizers.ts`,
    ],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...corePatterns(p),
            {
              group: ['**/use-cases/**', '**/topology/**'],
              message: 'core/ports (ports, model, errors, the reconciler contract) depends on no use-case and no topology.',
            },
          ],
        },
      ],
    },
  }));

// inversify is allowed in exactly one file per adapter package (house rule 3).
const moduleOnly = projects
  .filter((p) => p.tags.includes('type:adapter'))
  .map((p) => ({
    files: [`${p.dir}/src/**/*.ts`],
    ignores: [`${p.dir}/src/module.ts`, '**/*.test.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        { selector: "ImportDeclaration[source.value='inversify']", message: 'only src/module.ts imports inversify (house rule 3).' },
      ],
    },
  }));

// Core knows no cloud and no topology: no AWS API group or label, no EC2 instance state words (the
// provider decides `InstanceInfo.live`; 'pending' is also a CSR state, so it is only refused next to a
// `state`), no 'hypershift' (the Topology port gives what differs).
const ec2States = 'pending|running|shutting-down|stopping|stopped|terminated';
const coreVocabulary = projects
  .filter((p) => p.tags.includes('type:core'))
  .map((p) => ({
    files: [`${p.dir}/src/**/*.ts`],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'Literal[value=/karpenter\\.k8s\\.aws/]',
          message: 'core names no AWS API group or label: ask the CloudProvider (nodeClassType, nodeClassLabel).',
        },
        {
          selector: 'TemplateElement[value.raw=/karpenter\\.k8s\\.aws/]',
          message: 'core names no AWS API group or label: ask the CloudProvider (nodeClassType, nodeClassLabel).',
        },
        {
          selector: 'Literal[value=/^(running|shutting-down|stopping|stopped|terminated)$/]',
          message: 'core reads no EC2 instance state: the provider decides InstanceInfo.live.',
        },
        {
          selector: `BinaryExpression:has(MemberExpression[property.name=/^(state|State)$/]) > Literal[value=/^(${ec2States})$/]`,
          message: 'core reads no EC2 instance state: the provider decides InstanceInfo.live.',
        },
        {
          selector: `Property[key.name=/^(state|State)$/] > Literal[value=/^(${ec2States})$/]`,
          message: 'core reads no EC2 instance state: the provider decides InstanceInfo.live.',
        },
        { selector: 'Literal[value=/hypershift/i]', message: 'core names no topology: ask the Topology port (operandLayout) instead.' },
        {
          selector: 'TemplateElement[value.raw=/hypershift/i]',
          message: 'core names no topology: ask the Topology port (operandLayout) instead.',
        },
      ],
    },
  }));

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', '.nx/**', '.local/**', 'generated/**'] },
  ...tseslint.configs.recommended,
  {
    // Type-aware rules: a promise is awaited, returned or explicitly `void`ed, and never handed to a
    // place that expects a plain callback (an event listener, a timer) where its rejection would be lost.
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
      'no-console': 'off',
    },
  },
  ...boundaries,
  ...corePortsEntry,
  ...moduleOnly,
  ...coreVocabulary,
);
