#!/usr/bin/env node
// `npx karpenter-operator ...` after `npm run build`: runs the bundled CLI.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const main = join(dirname(fileURLToPath(import.meta.url)), '../dist/main.js');
if (!existsSync(main)) {
  process.stderr.write('karpenter-operator: apps/operator/dist/main.js is missing; run `npm run build` first\n');
  process.exit(1);
}
await import(main);
