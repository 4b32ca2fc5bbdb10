#!/usr/bin/env bash
# Builds the local control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) and
# KWOK from pinned Go modules into a cache keyed by version. Nothing built lands in the repository.
# Idempotent: a binary already in the cache is not rebuilt.
set -euo pipefail

# shellcheck source=versions.env
. "$(dirname "${BASH_SOURCE[0]}")/versions.env"
CACHE_ROOT="${KO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/karpenter-operator}"
BIN_DIR="$CACHE_ROOT/bin/k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}"

fail() { echo "build-binaries: $*" >&2; exit 1; }

mkdir -p "$BIN_DIR"
export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:--buildvcs=false}"
LDFLAGS='-s -w'

need=()
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kwok; do
  [ -x "$BIN_DIR/$b" ] || need+=("$b")
done
if [ ${#need[@]} -eq 0 ]; then echo "$BIN_DIR"; exit 0; fi
# Go is needed only when something has to be built.
command -v go >/dev/null 2>&1 || fail "Go is not installed: install Go >= 1.26 (https://go.dev/dl or apt-get install golang) and re-run"
go_minor=$(go env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')
[ "${go_minor:-0}" -ge 26 ] || fail "Go $(go env GOVERSION) is too old: Kubernetes ${K8S_VERSION} needs Go >= 1.26"
echo "build-binaries: building ${need[*]} into $BIN_DIR (cold builds take several minutes each)" >&2

work="$CACHE_ROOT/gomod"
mkdir -p "$work/k8s" "$work/etcd"

build_k8s() {
  # k8s.io/kubernetes pins its staging modules at v0.0.0 through replace directives: derive the same
  # list from the published go.mod and point each at its tagged release.
  local modfile staging_ver
  modfile=$(go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  [ -n "$modfile" ] || fail "could not download k8s.io/kubernetes@${K8S_VERSION} from the Go module proxy"
  staging_ver="v0${K8S_VERSION#v1}"
  {
    echo "module karpenter-operator.local/cluster"
    echo
    echo "go 1.26"
    echo
    echo "require k8s.io/kubernetes ${K8S_VERSION}"
    echo
    grep -E '=> \./staging/src/' "$modfile" | awk -v v="$staging_ver" '{print "replace " $1 " => " $1 " " v}'
  } > "$work/k8s/go.mod"
  cat > "$work/k8s/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
GO
  (cd "$work/k8s" && go mod tidy -e >/dev/null 2>&1 || true; go mod download) || fail "module download for Kubernetes failed"
  for b in kube-apiserver kube-controller-manager kube-scheduler; do
    [ -x "$BIN_DIR/$b" ] && continue
    echo "build-binaries: building $b" >&2
    (cd "$work/k8s" && go build -trimpath -ldflags="$LDFLAGS" -o "$BIN_DIR/$b.tmp" "k8s.io/kubernetes/cmd/$b") || fail "building $b failed"
    mv "$BIN_DIR/$b.tmp" "$BIN_DIR/$b"
  done
}

build_etcd() {
  [ -x "$BIN_DIR/etcd" ] && return
  cat > "$work/etcd/go.mod" <<MOD
module karpenter-operator.local/etcd

go 1.26

require go.etcd.io/etcd/server/v3 ${ETCD_VERSION}
MOD
  cat > "$work/etcd/tools.go" <<'GO'
//go:build tools

package tools

import _ "go.etcd.io/etcd/server/v3"
GO
  echo "build-binaries: building etcd" >&2
  (cd "$work/etcd" && go mod tidy -e >/dev/null 2>&1 || true; go build -trimpath -ldflags="$LDFLAGS" -o "$BIN_DIR/etcd.tmp" go.etcd.io/etcd/server/v3) || fail "building etcd failed"
  mv "$BIN_DIR/etcd.tmp" "$BIN_DIR/etcd"
}

build_kwok() {
  [ -x "$BIN_DIR/kwok" ] && return
  echo "build-binaries: building kwok" >&2
  GOBIN="$BIN_DIR" go install -trimpath -ldflags="$LDFLAGS" "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}" || fail "building kwok failed"
}

build_etcd
build_k8s
build_kwok
echo "$BIN_DIR"
