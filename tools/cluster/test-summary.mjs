// Prints the closing line of `npm test`, `N passed, N failed[, N skipped]`, from vitest's JSON report
// plus the lint/typecheck steps (each failed Nx task counts as one failure). Exit code: 0 only when
// nothing failed and at least one test ran.
// Usage: node test-summary.mjs --step <name> <exitCode> <logFile> ... --vitest <exitCode> <report.json>
import { existsSync, readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const steps = [];
let vitest;
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--step') steps.push({ name: args[++i], rc: Number(args[++i]), log: args[++i] });
  else if (args[i] === '--vitest') vitest = { rc: Number(args[++i]), report: args[++i] };
}

const strip = (s) => s.replace(/\x1b\[[0-9;]*m/g, '');
let failed = 0;
let passed = 0;
let skipped = 0;
const problems = [];

for (const step of steps) {
  if (step.rc === 0) continue;
  const text = existsSync(step.log) ? strip(readFileSync(step.log, 'utf8')) : '';
  const after = text.split(/Failed tasks:/)[1] ?? '';
  const tasks = [...after.matchAll(/^\s*-\s+(\S+:\S+)\s*$/gm)].map((m) => m[1]);
  failed += Math.max(tasks.length, 1);
  problems.push(`${step.name} failed${tasks.length ? `: ${tasks.join(', ')}` : ''} (log: ${step.log})`);
}

if (vitest) {
  let report;
  try {
    report = JSON.parse(readFileSync(vitest.report, 'utf8'));
  } catch {
    report = undefined;
  }
  if (!report) {
    failed += 1;
    problems.push(`vitest produced no report (exit ${vitest.rc})`);
  } else {
    passed += report.numPassedTests ?? 0;
    failed += report.numFailedTests ?? 0;
    skipped += (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
    // A file that failed to load or whose hooks failed has no failed test of its own: count the file.
    for (const file of report.testResults ?? []) {
      const ownFailures = (file.assertionResults ?? []).filter((a) => a.status === 'failed').length;
      if (file.status === 'failed' && ownFailures === 0) {
        failed += 1;
        problems.push(`test file failed outside its tests: ${file.name}${file.message ? `: ${strip(file.message).split('\n')[0]}` : ''}`);
      }
    }
    if (vitest.rc !== 0 && failed === 0) {
      failed += 1;
      problems.push(`vitest exited ${vitest.rc} without a failed test (see its output above)`);
    }
    if ((report.numTotalTests ?? 0) === 0) {
      failed += 1;
      problems.push('vitest ran no test');
    }
  }
}

for (const p of problems) console.log(`test: ${p}`);
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(failed === 0 ? 0 : 1);
