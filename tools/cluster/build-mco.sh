#!/usr/bin/env bash
# Builds the Machine Config Operator's machine-config-controller and machine-config-server,
# github.com/openshift/machine-config-operator/cmd/{machine-config-controller,machine-config-server} at
# MCO_VERSION, into the version-keyed binary cache. Nothing built lands in the repository.
# Idempotent: binaries already in the cache are not rebuilt. Prints three lines on stdout:
#   controller=<path>  server=<path>  templates=<the MCO module's templates/ in the Go module cache>
# progress on stderr (step n of m, elapsed, the previous build's duration as an estimate).
#
# Why a wrapper module: MCO is built upstream from its vendor/ directory with a replace directive
# (k8s.io/kube-openapi => openshift's fork); a dependency's replace directives do not apply to the
# module requiring it, so a generated module requires MCO and carries every replace of MCO's go.mod.
# Build tags and ldflags are those of MCO's hack/build-go.sh: the controller gets the containers/image
# tags (no gpgme, devicemapper, btrfs or ostree), the server none; version.Raw is MCO_VERSION, and the
# ControllerConfig MCC renders from must carry it (annotation generated-by-version).
set -euo pipefail
KO_SCRIPT=build-mco
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

mco=github.com/openshift/machine-config-operator
bin_dir="$ko_cache_root/bin/mco-${MCO_VERSION}"
controller="$bin_dir/machine-config-controller"
# The server binds every interface (":<port>"); a build overlay of pkg/server/api.go, sed-patched from the module
# cache, binds 127.0.0.1 only (servers started for tests never listen beyond loopback). Its name is keyed by the shim.
server_shim=loopback-1
server="$bin_dir/machine-config-server-$server_shim"
templates_file="$bin_dir/templates-dir"
report() { printf 'controller=%s\nserver=%s\ntemplates=%s\n' "$controller" "$server" "$(cat "$templates_file")"; }
if [ -x "$controller" ] && [ -x "$server" ] && [ -d "$(cat "$templates_file" 2>/dev/null)" ]; then report; exit 0; fi
ko_require_go

work="$ko_cache_root/gomod/mco-${MCO_VERSION}"
mkdir -p "$bin_dir" "$work"
ko_build_begin mco

controller_tags="containers_image_openpgp exclude_graphdriver_devicemapper exclude_graphdriver_btrfs containers_image_ostree_stub"
write_module() {
  local json modfile dir hash
  json=$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "$mco@${MCO_VERSION}")
  modfile=$(printf '%s\n' "$json" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  dir=$(printf '%s\n' "$json" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  hash=$(printf '%s\n' "$json" | sed -n 's/.*"Hash": "\([0-9a-f]*\)".*/\1/p')
  [ -n "$modfile" ] && [ -d "$dir/templates" ] || { echo "could not download $mco@${MCO_VERSION}: $json"; return 1; }
  # The pseudo-version's commit when the proxy gives no Origin.
  [ -n "$hash" ] || hash=${MCO_VERSION##*-}
  {
    echo "module karpenter-operator.local/mco"
    echo
    echo "go 1.26"
    echo
    echo "require $mco ${MCO_VERSION}"
    echo
    # MCO's replace directives, single-line and block form, as written.
    awk '
      /^replace[[:space:]]*\(/ { block = 1; next }
      block && /^\)/ { block = 0; next }
      block && NF { sub(/^[[:space:]]+/, ""); print "replace " $0; next }
      /^replace[[:space:]]/ { print }
    ' "$modfile"
  } > "$work/go.mod"
  ko_write_tools_go "$work" "$mco/cmd/machine-config-controller"
  printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$mco/cmd/machine-config-server" > "$work/tools_server.go"
  printf '%s\n' "$hash" > "$work/.commit"
  printf '%s\n' "$dir/templates" > "$work/.templates"
  cat "$work/go.mod"
}
resolve() { ko_go_resolve "$work"; }
ldflags() { echo "-s -w -X $mco/pkg/version.Raw=${MCO_VERSION} -X $mco/pkg/version.Hash=$(cat "$work/.commit")"; }
compile_controller() {
  (cd "$work" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:--p=1} -buildvcs=false" go build -trimpath -tags "$controller_tags" \
    -ldflags "$(ldflags)" -o "$controller.tmp" "$mco/cmd/machine-config-controller")
}
compile_server() {
  # An overlay may not replace module-cache files: the server builds from a writable copy of the module with
  # the one line changed, in a module of its own (the controller keeps the pristine module).
  local src="$work/server/mco-src" api
  rm -rf "$work/server" && mkdir -p "$work/server"
  cp -r "$(dirname "$(cat "$work/.templates")")" "$src" && chmod -R u+w "$src"
  api="$src/pkg/server/api.go"
  sed -i 's|fmt.Sprintf(":%v", a.port)|fmt.Sprintf("127.0.0.1:%v", a.port)|' "$api"
  grep -q '"127.0.0.1:%v"' "$api" || { echo "$api: the listen address is not where the loopback shim expects it"; return 1; }
  sed "s|^require $mco .*|require $mco ${MCO_VERSION}\nreplace $mco => ./mco-src|" "$work/go.mod" > "$work/server/go.mod"
  cp "$work/go.sum" "$work/server/go.sum"
  printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$mco/cmd/machine-config-server" > "$work/server/tools.go"
  (cd "$work/server" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:--p=1} -mod=mod -buildvcs=false" go build -trimpath \
    -ldflags "$(ldflags)" -o "$server.tmp" "$mco/cmd/machine-config-server")
}

ko_log "building machine-config-controller and machine-config-server ${MCO_VERSION} into $bin_dir${ko_build_estimate:-, about 10 minutes cold on two cores}"
ko_build_step 1 4 "writing the wrapper module" write_module
ko_build_step 2 4 "downloading modules" resolve
if [ ! -x "$controller" ]; then
  ko_build_step 3 4 "compiling machine-config-controller" compile_controller
  mv "$controller.tmp" "$controller"
fi
ko_build_step 4 4 "compiling machine-config-server (loopback shim)" compile_server
mv "$server.tmp" "$server"
cp "$work/.templates" "$templates_file"
ko_build_done
ko_log "built $controller and $server in $((SECONDS - ko_build_started))s"
report
