#!/usr/bin/env bash
# `npm test`: setup (idempotent), lint, typecheck, unit and integration tests. Exits non-zero on any
# failure; the last line is `N passed, N failed[, N skipped]` (lint/typecheck failures count as failed).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Per-run files (several runs may share a checkout); the latest report is also copied up a level.
results=.local/test-results/run-$$
mkdir -p "$results"
find .local/test-results -maxdepth 1 -name 'run-*' -mmin +1440 -exec rm -rf {} + 2>/dev/null
trap 'cp -f "$results"/* .local/test-results/ 2>/dev/null' EXIT

t0=$SECONDS
if ! bash tools/setup.sh; then
  echo "0 passed, 1 failed"
  exit 1
fi
export NX_DAEMON=false NX_NO_CLOUD=true NO_COLOR=1 FORCE_COLOR=0 NX_TUI=false

echo "test: lint" >&2
t=$SECONDS
{ npx nx run-many -t lint --outputStyle=static && npx prettier --check --log-level warn "**/*.{ts,mts,mjs,js,json}"; } > "$results/lint.log" 2>&1
lint_rc=$?
echo "test: lint took $((SECONDS - t))s (exit $lint_rc)" >&2
[ $lint_rc -eq 0 ] || cat "$results/lint.log"
echo "test: typecheck" >&2
t=$SECONDS
npx nx run-many -t typecheck --outputStyle=static > "$results/typecheck.log" 2>&1
typecheck_rc=$?
echo "test: typecheck took $((SECONDS - t))s (exit $typecheck_rc)" >&2
[ $typecheck_rc -eq 0 ] || cat "$results/typecheck.log"

# The integration tests run the bundled operator (apps/operator/dist/main.js) as a process: bundle the
# current sources first so they never test a stale build.
echo "test: build" >&2
t=$SECONDS
node apps/operator/scripts/build.mjs > "$results/build.log" 2>&1
build_rc=$?
echo "test: build took $((SECONDS - t))s (exit $build_rc)" >&2
[ $build_rc -eq 0 ] || cat "$results/build.log"

echo "test: vitest (unit + integration)" >&2
t=$SECONDS
npx vitest run --reporter=default --reporter=json --outputFile.json="$results/vitest.json" "$@"
vitest_rc=$?
echo "test: vitest took $((SECONDS - t))s (exit $vitest_rc); npm test so far $((SECONDS - t0))s" >&2

node tools/cluster/test-summary.mjs \
  --step lint "$lint_rc" "$results/lint.log" \
  --step typecheck "$typecheck_rc" "$results/typecheck.log" \
  --step build "$build_rc" "$results/build.log" \
  --vitest "$vitest_rc" "$results/vitest.json"
