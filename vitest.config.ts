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
