#!/usr/bin/env bash
# `npm run setup`: everything the tests and `npm run dev` need on a fresh machine (Node 20+, npm, Go,
# Python). Idempotent and fast when nothing changed. Each missing prerequisite stops with one line.
#   1. npm ci when node_modules is missing or older than package-lock.json (brings Node 24)
#   2. control-plane binaries from pinned Go modules (tools/cluster/build-binaries.sh, cached per version)
#   3. the real Karpenter controller from its Go module (tools/cluster/build-karpenter.sh, cached per version)
#   4. the real CRDs from pinned Go modules into generated/crds (tools/cluster/fetch-crds.sh)
#   5. a Python virtualenv with moto[server] (the EC2 emulator)
#   6. promtool from the pinned Prometheus module (tools/cluster/build-promtool.sh, cached per version)
#   7. manifest-inclusion, the CVO's manifest filter from the pinned library-go (tools/cluster/build-manifest-inclusion.sh)
#   8. the Machine Config Operator's controller and server from its Go module (tools/cluster/build-mco.sh)
#   9. .local/toolchain.json: where all of that is, for packages/testkit
# Long builds print a progress line every 30 s (elapsed, the previous build's duration, the log).
set -euo pipefail
KO_SCRIPT=setup
# shellcheck source=cluster/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/cluster/lib.sh"
cd "$ko_repo_root"
logs="$ko_local_dir/logs"
mkdir -p "$logs"
started=$SECONDS

# 1. Node dependencies. The system Node may be 20: it only has to run `npm ci`, which installs Node 24.
command -v npm >/dev/null 2>&1 || ko_fail "npm is not installed: install Node.js >= 20 with npm (https://nodejs.org or apt-get install nodejs npm) and re-run"
if [ ! -x node_modules/.bin/node ] || [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  ko_log "installing Node dependencies (npm ci)"
  npm ci --no-audit --no-fund > "$logs/npm-ci.log" 2>&1 || ko_fail "npm ci failed (see $logs/npm-ci.log); check access to the npm registry"
fi
node_major=$(node_modules/.bin/node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
[ "$node_major" -ge 24 ] || ko_fail "node_modules/.bin/node is not Node >= 24; delete node_modules and re-run npm run setup"

# 2. Binaries (minutes cold, instant warm; Go is needed only when something must be built).
if ! ko_with_progress control-plane "step 2 of 8: building the control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok)" \
  "$logs/build-binaries.log" bash tools/cluster/build-binaries.sh; then
  ko_fail "$(grep -E '^build-binaries: ' "$logs/build-binaries.log" | tail -n1 | sed 's/^build-binaries: //') (full log: $logs/build-binaries.log)"
fi
bin_dir=$ko_progress_out

# 3. The real operand (about 5 minutes cold on two cores; it prints its own progress).
if ! karpenter_bin=$(bash tools/cluster/build-karpenter.sh); then
  ko_fail "building the Karpenter controller failed: see the lines above; re-run with: bash tools/cluster/build-karpenter.sh"
fi

# 4. CRDs.
crd_dir=$(bash tools/cluster/fetch-crds.sh) || exit 1

# 5. The EC2 emulator. venv scripts embed their absolute path, so the venv is built in place and
#    marked complete by a stamp written last.
command -v python3 >/dev/null 2>&1 || ko_fail "Python 3 is not installed: install Python >= 3.9 with venv (apt-get install python3 python3-venv) and re-run"
python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 9) else 1)' || ko_fail "Python $(python3 -V 2>&1) is too old: moto ${MOTO_VERSION} needs Python >= 3.9"
if [ "$(cat "$ko_venv_dir/.stamp" 2>/dev/null)" != "moto[server]==${MOTO_VERSION}" ]; then
  python3 -c 'import venv, ensurepip' 2>/dev/null || ko_fail "Python's venv module is missing: apt-get install python3-venv (or your distribution's equivalent) and re-run"
  ko_log "creating the EC2 emulator virtualenv (moto[server]==${MOTO_VERSION})"
  rm -rf "$ko_venv_dir"
  mkdir -p "$(dirname "$ko_venv_dir")"
  python3 -m venv "$ko_venv_dir" > "$logs/venv.log" 2>&1 || ko_fail "python3 -m venv failed (see $logs/venv.log)"
  "$ko_venv_dir/bin/pip" install --disable-pip-version-check -q "moto[server]==${MOTO_VERSION}" >> "$logs/venv.log" 2>&1 \
    || ko_fail "pip could not install moto[server]==${MOTO_VERSION} (see $logs/venv.log); check access to PyPI"
  echo "moto[server]==${MOTO_VERSION}" > "$ko_venv_dir/.stamp"
fi
[ -x "$ko_venv_dir/bin/moto_server" ] || ko_fail "moto_server is missing from $ko_venv_dir; delete that directory and re-run npm run setup"

# 6. promtool, for the alert rules' tests (`promtool check rules`, `promtool test rules`).
if ! promtool_bin=$(bash tools/cluster/build-promtool.sh); then
  ko_fail "building promtool failed: see the lines above; re-run with: bash tools/cluster/build-promtool.sh"
fi
ko_log "promtool $PROMETHEUS_VERSION: $promtool_bin"

# 7. manifest-inclusion, which the install/ inclusion test runs (about 10 minutes cold on two cores).
if ! manifest_inclusion_bin=$(bash tools/cluster/build-manifest-inclusion.sh); then
  ko_fail "building manifest-inclusion failed: see the lines above; re-run with: bash tools/cluster/build-manifest-inclusion.sh"
fi

# 8. The Machine Config Operator's controller and server, which every local cluster runs (about 10 minutes cold).
if ! mco_out=$(bash tools/cluster/build-mco.sh); then
  ko_fail "building machine-config-controller/server failed: see the lines above; re-run with: bash tools/cluster/build-mco.sh"
fi
mco_controller=$(printf '%s\n' "$mco_out" | sed -n 's/^controller=//p')
mco_server=$(printf '%s\n' "$mco_out" | sed -n 's/^server=//p')
mco_templates=$(printf '%s\n' "$mco_out" | sed -n 's/^templates=//p')
ko_log "machine-config-controller/server $MCO_VERSION: $(dirname "$mco_controller")"

# 9. What packages/testkit reads to find the toolchain.
cat > "$ko_local_dir/toolchain.json.tmp" <<JSON
{
  "binDir": "$bin_dir",
  "karpenterBinary": "$karpenter_bin",
  "crdDir": "$crd_dir",
  "kwokStages": "$ko_kwok_stages",
  "motoServer": "$ko_venv_dir/bin/moto_server",
  "promtool": "$promtool_bin",
  "manifestInclusion": "$manifest_inclusion_bin",
  "mcoController": "$mco_controller",
  "mcoServer": "$mco_server",
  "mcoTemplates": "$mco_templates",
  "versions": {
    "kubernetes": "$K8S_VERSION",
    "etcd": "$ETCD_VERSION",
    "kwok": "$KWOK_VERSION",
    "openshiftApi": "$OPENSHIFT_API_VERSION",
    "karpenterProviderAws": "$KARPENTER_AWS_VERSION",
    "hypershiftApi": "$HYPERSHIFT_API_VERSION",
    "cloudCredentialOperator": "$CCO_VERSION",
    "moto": "$MOTO_VERSION",
    "prometheus": "$PROMETHEUS_VERSION",
    "mco": "$MCO_VERSION"
  }
}
JSON
mv "$ko_local_dir/toolchain.json.tmp" "$ko_local_dir/toolchain.json"
ko_log "ready in $((SECONDS - started))s (toolchain: .local/toolchain.json)"
