#!/usr/bin/env bash
# Builds the real operand, github.com/aws/karpenter-provider-aws/cmd/controller at
# KARPENTER_AWS_VERSION, into the version-keyed binary cache. Nothing built lands in the repository.
# Idempotent: a binary already in the cache is not rebuilt. Prints the binary's path on stdout,
# progress on stderr (what, step n of m, elapsed, the previous build's duration as an estimate).
#
# Why a wrapper module: the provider's go.mod requires sigs.k8s.io/karpenter at a pseudo-version the
# Go module proxy refuses; the proxy serves the tag of the same commit. A generated module requires
# the provider and replaces that pseudo-version with the tag.
set -euo pipefail
KO_SCRIPT=build-karpenter
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bin_dir="$ko_cache_root/bin/karpenter-aws-${KARPENTER_AWS_VERSION}"
bin="$bin_dir/karpenter"
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
ko_require_go

work="$ko_cache_root/gomod/karpenter-aws-${KARPENTER_AWS_VERSION}"
mkdir -p "$bin_dir" "$work"
ko_build_begin karpenter

provider=github.com/aws/karpenter-provider-aws
write_module() {
  local modfile pseudo
  modfile=$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "$provider@${KARPENTER_AWS_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  [ -n "$modfile" ] || { echo "could not download $provider@${KARPENTER_AWS_VERSION}"; return 1; }
  pseudo=$(awk '$1 == "sigs.k8s.io/karpenter" { print $2; exit }' "$modfile")
  [ -n "$pseudo" ] || { echo "$modfile does not require sigs.k8s.io/karpenter"; return 1; }
  {
    echo "module karpenter-operator.local/karpenter"
    echo
    echo "go 1.26"
    echo
    echo "require $provider ${KARPENTER_AWS_VERSION}"
    echo
    # The pseudo-version names the commit tagged KARPENTER_AWS_VERSION in sigs.k8s.io/karpenter.
    [ "$pseudo" = "${KARPENTER_AWS_VERSION}" ] || echo "replace sigs.k8s.io/karpenter $pseudo => sigs.k8s.io/karpenter ${KARPENTER_AWS_VERSION}"
  } > "$work/go.mod"
  ko_write_tools_go "$work" "$provider/cmd/controller"
  cat "$work/go.mod"
}
resolve() { ko_go_resolve "$work"; }
compile() {
  (cd "$work" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:--p=1} -buildvcs=false" go build -trimpath \
    -ldflags "-s -w -X sigs.k8s.io/karpenter/pkg/operator.Version=${KARPENTER_AWS_VERSION}" \
    -o "$bin.tmp" "$provider/cmd/controller")
}

ko_log "building karpenter-provider-aws ${KARPENTER_AWS_VERSION} into $bin_dir (cold: ~1,200 packages${ko_build_estimate:-, several minutes})"
ko_build_step 1 3 "writing the wrapper module" write_module
ko_build_step 2 3 "downloading modules" resolve
ko_build_step 3 3 "compiling the controller" compile
mv "$bin.tmp" "$bin"
ko_build_done
ko_log "built $bin in $((SECONDS - ko_build_started))s"
echo "$bin"
