# Shared helpers for the local-cluster scripts (sourced, not run).
# shellcheck shell=bash
ko_repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=versions.env
. "$ko_repo_root/tools/cluster/versions.env"
ko_cache_root="${KO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/karpenter-operator}"
ko_venv_dir="$ko_cache_root/venv/moto-${MOTO_VERSION}"
ko_crd_dir="$ko_repo_root/generated/crds"
ko_kwok_stages="$ko_repo_root/generated/kwok/stages.yaml"
ko_local_dir="$ko_repo_root/.local"

# One clear line on stderr, then stop.
ko_fail() { echo "${KO_SCRIPT:-setup}: $*" >&2; exit 1; }
ko_log() { echo "${KO_SCRIPT:-setup}: $*" >&2; }

ko_require_go() {
  command -v go >/dev/null 2>&1 || ko_fail "Go is not installed: install Go >= 1.26 (https://go.dev/dl or apt-get install golang) and re-run"
  local minor
  minor=$(go env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')
  [ "${minor:-0}" -ge 26 ] || ko_fail "Go $(go env GOVERSION) is too old: Kubernetes ${K8S_VERSION} needs Go >= 1.26"
}

# Prints the directory of module@version in the Go module cache, downloading it if needed.
ko_go_module_dir() {
  local mod="$1" ver="$2" out dir err
  out=$(cd "${TMPDIR:-/tmp}" && GOFLAGS=-mod=mod go mod download -json "$mod@$ver" 2>&1) || true
  dir=$(printf '%s\n' "$out" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' | head -n1)
  if [ -z "$dir" ] || [ ! -d "$dir" ]; then
    err=$(printf '%s\n' "$out" | sed -n 's/^[[:space:]]*"Error": "\(.*\)",\{0,1\}$/\1/p' | head -n1 | sed 's/\\n.*//')
    ko_fail "could not download Go module $mod@$ver (${err:-no output}); check network access to the Go module proxy (GOPROXY=$(go env GOPROXY))"
  fi
  printf '%s\n' "$dir"
}

# Runs "$@" (stdout kept for the caller in $ko_progress_out, stderr to $log) and prints a progress line
# every 30 s: what, elapsed time, the previous run's duration as an estimate, where the log is. A run
# that took longer than 10 s records its duration under "$ko_cache_root/durations/<key>" for next time.
#   ko_with_progress <key> "<what>" <log> cmd...
ko_with_progress() {
  local key="$1" what="$2" log="$3"; shift 3
  local dfile="$ko_cache_root/durations/$key" previous est="" t0=$SECONDS out pid rc=0 ticks=0
  mkdir -p "$(dirname "$dfile")"
  previous=$(cat "$dfile" 2>/dev/null || true)
  [ -n "$previous" ] && est=", the previous run took $((previous / 60))m$((previous % 60))s"
  out=$(mktemp)
  "$@" > "$out" 2> "$log" &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    ticks=$((ticks + 1))
    [ $((ticks % 30)) -eq 0 ] && ko_log "$what: $(((SECONDS - t0) / 60))m$(((SECONDS - t0) % 60))s elapsed${est} (log: $log)"
  done
  wait "$pid" || rc=$?
  ko_progress_out=$(cat "$out")
  rm -f "$out"
  if [ "$rc" -eq 0 ] && [ $((SECONDS - t0)) -gt 10 ]; then echo $((SECONDS - t0)) > "$dfile"; fi
  return "$rc"
}

# A build of one cached binary (build-karpenter.sh, build-promtool.sh): `ko_build_begin <key>` truncates
# the log ($ko_build_log, default $ko_cache_root/logs/build-<key>.log) and reads the previous build's
# duration for the estimate; `ko_build_step <n> <m> "<what>" cmd...` runs one step with its output in the
# log, printing a line every 30 s (elapsed, the estimate) and stopping with the log's last lines when it
# fails; `ko_build_done` records this build's duration.
ko_build_begin() {
  ko_build_log="${KO_BUILD_LOG:-$ko_cache_root/logs/build-$1.log}"
  ko_build_duration_file="$ko_cache_root/bin/.$1-build-seconds"
  mkdir -p "$(dirname "$ko_build_log")" "$(dirname "$ko_build_duration_file")"
  : > "$ko_build_log"
  local previous
  previous=$(cat "$ko_build_duration_file" 2>/dev/null || true)
  ko_build_estimate=${previous:+, the previous build took $((previous / 60))m$((previous % 60))s}
  ko_build_started=$SECONDS
}

ko_build_step() {
  local n="$1" m="$2" what="$3"; shift 3
  ko_log "step $n of $m: $what (log: $ko_build_log)"
  "$@" >> "$ko_build_log" 2>&1 &
  local pid=$! rc=0 ticks=0
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    ticks=$((ticks + 1))
    if [ $((ticks % 30)) -eq 0 ]; then
      ko_log "step $n of $m: $what, $((SECONDS - ko_build_started))s elapsed${ko_build_estimate}"
    fi
  done
  wait "$pid" || rc=$?
  [ "$rc" -eq 0 ] || ko_fail "step $n of $m ($what) failed with exit code $rc; last lines of $ko_build_log: $(tail -n 3 "$ko_build_log" | tr '\n' ' ')"
}

ko_build_done() { echo $((SECONDS - ko_build_started)) > "$ko_build_duration_file"; }

# A wrapper module's tools.go: imports the package to build, so that `go mod tidy` keeps what it needs.
#   ko_write_tools_go <module dir> <import path>
ko_write_tools_go() { printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$2" > "$1/tools.go"; }

# Resolves and downloads a wrapper module's requirements.
ko_go_resolve() { (cd "$1" && GOFLAGS=-mod=mod go mod tidy && go mod download); }
