# Shared helpers for the local-cluster scripts (sourced, not run).
# shellcheck shell=bash
KO_REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=versions.env
. "$KO_REPO_ROOT/tools/cluster/versions.env"
KO_CACHE_ROOT="${KO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/karpenter-operator}"
KO_BIN_DIR="$KO_CACHE_ROOT/bin/k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}"
KO_VENV_DIR="$KO_CACHE_ROOT/venv/moto-${MOTO_VERSION}"
KO_CRD_DIR="$KO_REPO_ROOT/generated/crds"
KO_KWOK_STAGES="$KO_REPO_ROOT/generated/kwok/stages.yaml"
KO_LOCAL_DIR="$KO_REPO_ROOT/.local"

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
