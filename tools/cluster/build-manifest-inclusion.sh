#!/usr/bin/env bash
# Builds tools/manifest-inclusion (the CVO's manifest filter, library-go pkg/manifest, over a directory of
# manifests) into the binary cache, keyed by a hash of its go.mod, go.sum and source: the library-go and
# openshift/api versions are pinned in its go.mod, nowhere else. Nothing built lands in the repository.
# Idempotent: a binary already in the cache is not rebuilt. Prints the binary's path on stdout, progress on
# stderr (step n of m, elapsed, the previous build's duration as an estimate).
set -euo pipefail
KO_SCRIPT=build-manifest-inclusion
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

src="$ko_repo_root/tools/manifest-inclusion"
key=$(cat "$src/go.mod" "$src/go.sum" "$src"/*.go | sha256sum | cut -c1-12)
bin_dir="$ko_cache_root/bin/manifest-inclusion-$key"
bin="$bin_dir/manifest-inclusion"
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
ko_require_go
mkdir -p "$bin_dir"
ko_build_begin manifest-inclusion

# go.sum is committed: -mod=readonly, so a go.mod that does not match it fails instead of being rewritten.
download() { (cd "$src" && GOFLAGS=-mod=readonly go mod download); }
compile() {
  (cd "$src" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:--p=1} -mod=readonly -buildvcs=false" go build -trimpath -ldflags "-s -w" -o "$bin.tmp" .)
}

ko_log "building manifest-inclusion into $bin_dir${ko_build_estimate:-, about 10 minutes cold on two cores}"
ko_build_step 1 2 "downloading modules" download
ko_build_step 2 2 "compiling manifest-inclusion (library-go pkg/manifest)" compile
mv "$bin.tmp" "$bin"
ko_build_done
ko_log "built $bin in $((SECONDS - ko_build_started))s"
echo "$bin"
