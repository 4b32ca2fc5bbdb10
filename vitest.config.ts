import { defineConfig } from 'vitest/config';

const conditions = ['@karpenter-operator/source'];

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions, externalConditions: conditions } },
  test: {
    projects: [
      {
        resolve: { conditions },
        test: {
          name: 'unit',
          include: ['{packages,apps,tools}/**/src/**/*.test.ts', '{packages,apps,tools}/**/test/unit/**/*.test.ts'],
          exclude: ['**/node_modules/**', '**/*.int.test.ts'],
          environment: 'node',
          // A bound for hung tests, not a performance figure: CI runs on a loaded two-core machine, where a
          // test that takes 2 s when quiet may take 10 s. Tight figures belong in `npm run bench`.
          testTimeout: 60_000,
        },
      },
      {
        resolve: { conditions },
        test: {
          name: 'integration',
          include: ['{packages,apps}/**/test/integration/**/*.int.test.ts'],
          exclude: ['**/node_modules/**'],
          environment: 'node',
          globalSetup: ['packages/testkit/src/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 300_000,
          fileParallelism: false,
          maxWorkers: 1,
        },
      },
    ],
  },
});
