#!/usr/bin/env bash
# Builds promtool, github.com/prometheus/prometheus/cmd/promtool at PROMETHEUS_VERSION, into the
# version-keyed binary cache; the rules test runs `promtool check rules` and `promtool test rules` with it.
# Nothing built lands in the repository. Idempotent: a binary already in the cache is not rebuilt.
# Prints the binary's path on stdout, progress on stderr (step n of m, elapsed, the previous build's
# duration as an estimate).
#
# Prometheus v3 tags its Go module v0.3MM.P for release v3.MM.P (a v3 major path would need /v3).
# A generated module requires it and builds cmd/promtool; its go.mod has no replace directives to carry.
set -euo pipefail
KO_SCRIPT=build-promtool
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bin_dir="$ko_cache_root/bin/promtool-${PROMETHEUS_VERSION}"
bin="$bin_dir/promtool"
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
ko_require_go

work="$ko_cache_root/gomod/promtool-${PROMETHEUS_VERSION}"
mkdir -p "$bin_dir" "$work"
ko_build_begin promtool

module=github.com/prometheus/prometheus
write_module() {
  {
    echo "module karpenter-operator.local/promtool"
    echo
    echo "go 1.26"
    echo
    echo "require $module ${PROMETHEUS_VERSION}"
  } > "$work/go.mod"
  ko_write_tools_go "$work" "$module/cmd/promtool"
  cat "$work/go.mod"
}
resolve() { ko_go_resolve "$work"; }
# The version string promtool prints (`promtool --version`) comes from prometheus/common/version.
# `remove_all_sd` leaves out every service-discovery plugin (cloud SDKs: Azure, AWS, GCE, Kubernetes, ...):
# the rules commands need none, and they are most of the build.
compile() {
  (cd "$work" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:--p=1} -buildvcs=false" go build -trimpath -tags remove_all_sd \
    -ldflags "-s -w -X github.com/prometheus/common/version.Version=${PROMETHEUS_VERSION}" \
    -o "$bin.tmp" "$module/cmd/promtool")
}

ko_log "building promtool ${PROMETHEUS_VERSION} into $bin_dir${ko_build_estimate:-, several minutes cold}"
ko_build_step 1 3 "writing the wrapper module" write_module
ko_build_step 2 3 "downloading modules" resolve
ko_build_step 3 3 "compiling promtool" compile
mv "$bin.tmp" "$bin"
ko_build_done
ko_log "built $bin in $((SECONDS - ko_build_started))s"
echo "$bin"
