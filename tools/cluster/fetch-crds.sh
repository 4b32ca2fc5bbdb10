#!/usr/bin/env bash
# Copies the real CRDs the local cluster serves from pinned Go modules (module cache) into
# generated/crds/{openshift,karpenter,hypershift,karpenter-hypershift,management,cco}/ (gitignored), and KWOK's stock node/pod stages
# (the kwok binary has none built in) into generated/kwok/stages.yaml. Never hand-copied, never committed.
# Idempotent: does nothing when the stamp matches the pinned versions. Prints the CRD directory.
set -euo pipefail
KO_SCRIPT=fetch-crds
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The OpenshiftEC2NodeClass types are this repository's: a change to them regenerates the CRD.
oec2nc_api_sum=$(cat "$ko_repo_root"/tools/cluster/openshiftec2nodeclass-api/{go.mod,go.sum,v1/*.go} | cksum | cut -d' ' -f1)
stamp="openshift-api=$OPENSHIFT_API_VERSION karpenter-aws=$KARPENTER_AWS_VERSION hypershift-api=$HYPERSHIFT_API_VERSION controller-tools=$CONTROLLER_TOOLS_VERSION cco=$CCO_VERSION kwok=$KWOK_VERSION prometheus-operator=$PROMETHEUS_OPERATOR_VERSION cluster-api=$CLUSTER_API_VERSION mco=$MCO_VERSION oec2nc-api=$oec2nc_api_sum layout=8"
if [ -f "$ko_crd_dir/.stamp" ] && [ "$(cat "$ko_crd_dir/.stamp")" = "$stamp" ] && [ -f "$ko_kwok_stages" ]; then
  echo "$ko_crd_dir"; exit 0
fi
ko_require_go

openshift=$(ko_go_module_dir github.com/openshift/api "$OPENSHIFT_API_VERSION")
karpenter=$(ko_go_module_dir github.com/aws/karpenter-provider-aws "$KARPENTER_AWS_VERSION")
hypershift=$(ko_go_module_dir github.com/openshift/hypershift/api "$HYPERSHIFT_API_VERSION")
cco=$(ko_go_module_dir github.com/openshift/cloud-credential-operator "$CCO_VERSION")
kwok=$(ko_go_module_dir sigs.k8s.io/kwok "$KWOK_VERSION")
promop=$(ko_go_module_dir github.com/prometheus-operator/prometheus-operator "$PROMETHEUS_OPERATOR_VERSION")
capi=$(ko_go_module_dir sigs.k8s.io/cluster-api "$CLUSTER_API_VERSION")
# The machine-config-controller runs against the openshift/api its own go.mod pins: its machineconfiguration
# CRDs, and the config/operator CRDs its informers list (a CRD missing makes the controller wait forever).
mco=$(ko_go_module_dir github.com/openshift/machine-config-operator "$MCO_VERSION")
MCO_OPENSHIFT_API_VERSION=$(awk '$1 == "github.com/openshift/api" { print $2; exit }' "$mco/go.mod")
[ -n "$MCO_OPENSHIFT_API_VERSION" ] || ko_fail "cannot read the openshift/api version from $mco/go.mod"
mco_api=$(ko_go_module_dir github.com/openshift/api "$MCO_OPENSHIFT_API_VERSION")

mkdir -p "$(dirname "$ko_crd_dir")"
tmp=$(mktemp -d "$(dirname "$ko_crd_dir")/.crds.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp"/{openshift,karpenter,hypershift,karpenter-hypershift,management,cco}
: > "$tmp/SOURCES.txt"

# copy <group-dir> <target-name> <module-dir> <module@version> <glob>...: the first glob that matches
# exactly one file wins (file names move between commits, so select by pattern, -Default first).
copy() {
  local group="$1" target="$2" root="$3" modver="$4"; shift 4
  local pattern matches
  for pattern in "$@"; do
    # shellcheck disable=SC2206
    matches=( $root/$pattern )
    [ -e "${matches[0]}" ] || continue
    [ ${#matches[@]} -eq 1 ] || ko_fail "$target: pattern $pattern matches ${#matches[@]} files in $modver; pin a version whose layout is known"
    cp "${matches[0]}" "$tmp/$group/$target.yaml"
    chmod 644 "$tmp/$group/$target.yaml"
    echo "$group/$target.yaml <= $modver ${matches[0]#"$root"/}" >> "$tmp/SOURCES.txt"
    return 0
  done
  ko_fail "$target: no CRD matching $* in $modver"
}

o=github.com/openshift/api@$OPENSHIFT_API_VERSION
cfg=config/v1/zz_generated.crd-manifests
copy openshift infrastructures.config.openshift.io "$openshift" "$o" "$cfg/*_infrastructures-Default.crd.yaml" "$cfg/*_infrastructures.crd.yaml"
copy openshift clusteroperators.config.openshift.io "$openshift" "$o" "$cfg/*_clusteroperators-Default.crd.yaml" "$cfg/*_clusteroperators.crd.yaml"
copy openshift clusterversions.config.openshift.io "$openshift" "$o" "$cfg/*_clusterversions-Default.crd.yaml" "$cfg/*_clusterversions.crd.yaml"
copy openshift featuregates.config.openshift.io "$openshift" "$o" "$cfg/*_featuregates-Default.crd.yaml" "$cfg/*_featuregates.crd.yaml"
mach=machine/v1beta1/zz_generated.crd-manifests
copy openshift machinesets.machine.openshift.io "$openshift" "$o" "$mach/*_machinesets-Default.crd.yaml" "$mach/*_machinesets.crd.yaml"
copy openshift machines.machine.openshift.io "$openshift" "$o" "$mach/*_machines-Default.crd.yaml" "$mach/*_machines.crd.yaml"

# The Machine Config Operator's kinds, and what its controller watches, from the openshift/api MCO pins.
m=github.com/openshift/api@$MCO_OPENSHIFT_API_VERSION
mc=machineconfiguration/v1/zz_generated.crd-manifests
for kind in machineconfigpools machineconfigs kubeletconfigs controllerconfigs containerruntimeconfigs; do
  copy openshift "$kind.machineconfiguration.openshift.io" "$mco_api" "$m" "$mc/*_$kind-Default.crd.yaml" "$mc/*_$kind.crd.yaml"
done
copy openshift machineconfigurations.operator.openshift.io "$mco_api" "$m" \
  "operator/v1/zz_generated.crd-manifests/*_machineconfigurations-Default.crd.yaml" "operator/v1/zz_generated.crd-manifests/*_machineconfigurations.crd.yaml"
copy openshift imagecontentsourcepolicies.operator.openshift.io "$mco_api" "$m" \
  "operator/v1alpha1/zz_generated.crd-manifests/*_imagecontentsourcepolicies.crd.yaml"
for kind in apiservers images imagedigestmirrorsets imagetagmirrorsets nodes schedulers proxies networks dnses; do
  copy openshift "$kind.config.openshift.io" "$mco_api" "$m" "$cfg/*_$kind-Default.crd.yaml" "$cfg/*_$kind.crd.yaml"
done

k=github.com/aws/karpenter-provider-aws@$KARPENTER_AWS_VERSION
copy karpenter nodepools.karpenter.sh "$karpenter" "$k" "pkg/apis/crds/karpenter.sh_nodepools.yaml"
copy karpenter nodeclaims.karpenter.sh "$karpenter" "$k" "pkg/apis/crds/karpenter.sh_nodeclaims.yaml"
copy karpenter nodeoverlays.karpenter.sh "$karpenter" "$k" "pkg/apis/crds/karpenter.sh_nodeoverlays.yaml"
copy karpenter ec2nodeclasses.karpenter.k8s.aws "$karpenter" "$k" "pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml"

# HyperShift publishes one complete CRD per feature gate; spec.autoNode is behind AutoNodeKarpenter.
h=github.com/openshift/hypershift/api@$HYPERSHIFT_API_VERSION
fg=hypershift/v1beta1/zz_generated.featuregated-crd-manifests
copy hypershift hostedcontrolplanes.hypershift.openshift.io "$hypershift" "$h" \
  "$fg/hostedcontrolplanes.hypershift.openshift.io/AutoNodeKarpenter.yaml" "$fg/hostedcontrolplanes.hypershift.openshift.io/AAA_ungated.yaml"
copy hypershift hostedclusters.hypershift.openshift.io "$hypershift" "$h" \
  "$fg/hostedclusters.hypershift.openshift.io/AutoNodeKarpenter.yaml" "$fg/hostedclusters.hypershift.openshift.io/AAA_ungated.yaml"
# ControlPlaneComponent: the per-component rollout status HyperShift reads in the HCP namespace (the
# operator writes `karpenter`; HyperShift's AutoNodeEnabled needs it RolloutComplete). Not feature-gated.
copy hypershift controlplanecomponents.hypershift.openshift.io "$hypershift" "$h" \
  "$fg/controlplanecomponents.hypershift.openshift.io/AAA_ungated.yaml"
# The ungated manifest is annotated `feature-gate.release.openshift.io/: "true"`, a key without a name that the
# API server refuses: that one annotation is dropped (the API module's only copy; HyperShift installs its own).
cpc_crd="$tmp/hypershift/controlplanecomponents.hypershift.openshift.io.yaml"
sed -i '/^    feature-gate\.release\.openshift\.io\/: /d' "$cpc_crd"

# OpenshiftEC2NodeClass (karpenter.hypershift.openshift.io) v1: HyperShift promoted it to v1 and removed
# v1beta1, but the Go module proxy refuses every hypershift/api version that has v1. Its CRD is rendered with the
# pinned controller-gen from this project's own Go types for v1 (openshiftec2nodeclass-api/, written from the
# API's field list): v1 only, served and stored. It is served in the guest by the HyperShift sidecar, not seeded
# by testkit (karpenter-hypershift/ is not a seeded group).
cgen_dir="$ko_cache_root/bin/controller-gen-$CONTROLLER_TOOLS_VERSION"
if [ ! -x "$cgen_dir/controller-gen" ]; then
  (cd "${TMPDIR:-/tmp}" && GOFLAGS=-mod=mod GOBIN="$cgen_dir" go install "sigs.k8s.io/controller-tools/cmd/controller-gen@$CONTROLLER_TOOLS_VERSION") \
    || ko_fail "could not build controller-gen $CONTROLLER_TOOLS_VERSION"
fi
oec2nc_api="$ko_repo_root/tools/cluster/openshiftec2nodeclass-api"
# -mod=readonly: the committed go.mod/go.sum are used as they are (never rewritten); the modules they name come
# from the Go module proxy into the module cache.
(cd "$oec2nc_api" && GOFLAGS=-mod=readonly "$cgen_dir/controller-gen" crd paths=./v1/... output:crd:dir="$tmp/.oec2nc") \
  || ko_fail "controller-gen could not generate the OpenshiftEC2NodeClass CRD from $oec2nc_api"
mv "$tmp/.oec2nc/karpenter.hypershift.openshift.io_openshiftec2nodeclasses.yaml" \
  "$tmp/karpenter-hypershift/openshiftec2nodeclasses.karpenter.hypershift.openshift.io.yaml"
echo "karpenter-hypershift/openshiftec2nodeclasses.karpenter.hypershift.openshift.io.yaml <= tools/cluster/openshiftec2nodeclass-api v1 (controller-gen $CONTROLLER_TOOLS_VERSION)" >> "$tmp/SOURCES.txt"
rm -rf "$tmp/.oec2nc"

# A HyperShift management cluster's other kinds the operator uses in the HCP namespace: PodMonitor (the
# operand's scrape) and CAPI's Cluster (its deletion starts the teardown).
copy management podmonitors.monitoring.coreos.com "$promop" "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION" \
  "example/prometheus-operator-crd/monitoring.coreos.com_podmonitors.yaml"
copy management clusters.cluster.x-k8s.io "$capi" "sigs.k8s.io/cluster-api@$CLUSTER_API_VERSION" "config/crd/bases/cluster.x-k8s.io_clusters.yaml"

c=github.com/openshift/cloud-credential-operator@$CCO_VERSION
copy cco credentialsrequests.cloudcredential.openshift.io "$cco" "$c" "manifests/*_cloud-credential-operator_01_crd.yaml"

# KWOK's "fast" profile (what kwokctl installs by default): nodes become Ready at once and heartbeat
# through Leases; pods become Running/Ready at once, complete and are deleted.
ks=kustomize/stage
mkdir -p "$(dirname "$ko_kwok_stages")"
{
  for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
           pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
    [ -f "$kwok/$ks/$f" ] || ko_fail "kwok stage $ks/$f is missing from sigs.k8s.io/kwok@$KWOK_VERSION"
    echo "---"
    cat "$kwok/$ks/$f"
  done
} > "$ko_kwok_stages.tmp"
mv "$ko_kwok_stages.tmp" "$ko_kwok_stages"
chmod 644 "$ko_kwok_stages"

echo "$stamp" > "$tmp/.stamp"
rm -rf "$ko_crd_dir"
mv "$tmp" "$ko_crd_dir"
trap - EXIT
chmod 755 "$ko_crd_dir"
echo "$ko_crd_dir"
