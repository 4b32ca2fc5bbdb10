// manifest-inclusion answers, for a directory of CVO manifests, which of them the cluster-version operator
// would apply on a cluster of a given feature set, cluster profile and capabilities. It runs the CVO's own
// filter, library-go's pkg/manifest (Manifest.Include), and takes the enabled feature gates from
// openshift/api's features package, the table the cluster's FeatureGate status is rendered from: nothing
// about the gates or the annotations is restated here.
//
//	manifest-inclusion --dir install --feature-set DevPreviewNoUpgrade --profile self-managed-high-availability
//
// prints one JSON object on stdout: the inputs, whether each gate the manifests name is enabled, and per
// manifest (file, kind, namespace, name) whether it is included or, if not, library-go's reason. Exit 0
// when the manifests could be read and judged, 1 (one line on stderr) when they could not.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/openshift/api/features"
	"github.com/openshift/library-go/pkg/manifest"
	"k8s.io/apimachinery/pkg/util/sets"
)

type result struct {
	FeatureSet   string          `json:"featureSet"`
	Profile      string          `json:"profile"`
	Exclude      string          `json:"exclude,omitempty"`
	MajorVersion uint64          `json:"majorVersion"`
	Capabilities []string        `json:"capabilities"`
	Gates        map[string]bool `json:"gates"`
	Manifests    []entry         `json:"manifests"`
}

type entry struct {
	File      string `json:"file"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Included  bool   `json:"included"`
	Reason    string `json:"reason,omitempty"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "manifest-inclusion: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	dir := flag.String("dir", "", "directory of manifests (the CVO reads *.yaml, *.yml, *.json; image-references is skipped)")
	featureSet := flag.String("feature-set", "", `FeatureGate spec.featureSet: "" or Default, TechPreviewNoUpgrade, DevPreviewNoUpgrade, ...`)
	profile := flag.String("profile", manifest.DefaultClusterProfile, "cluster profile (include.release.openshift.io/<profile>)")
	exclude := flag.String("exclude", "", "exclude identifier (exclude.release.openshift.io/<id>), as the CVO's EXCLUDE_MANIFESTS")
	major := flag.Uint64("major-version", 4, "the cluster's OpenShift major version")
	caps := flag.String("capabilities", "", "comma-separated enabled capabilities (default: every known capability)")
	flag.Parse()
	if *dir == "" {
		return fmt.Errorf("--dir is required")
	}
	fs := configv1.FeatureSet(*featureSet)
	if fs == "Default" {
		fs = configv1.Default
	}
	known := false
	for _, f := range configv1.AllFixedFeatureSets {
		known = known || f == fs
	}
	if !known {
		return fmt.Errorf("--feature-set %q is not a fixed feature set of openshift/api", *featureSet)
	}

	// The gates the cluster's FeatureGate status lists as enabled for this version, profile and feature set.
	gates := sets.New[string]()
	for _, g := range features.FeatureSets(*major, features.ClusterProfileName("include.release.openshift.io/"+*profile), fs).Enabled {
		gates.Insert(string(g.FeatureGateAttributes.Name))
	}

	capabilities := &configv1.ClusterVersionCapabilitiesStatus{KnownCapabilities: configv1.KnownClusterVersionCapabilities}
	if *caps == "" {
		capabilities.EnabledCapabilities = configv1.KnownClusterVersionCapabilities
	} else {
		for _, c := range strings.Split(*caps, ",") {
			capabilities.EnabledCapabilities = append(capabilities.EnabledCapabilities, configv1.ClusterVersionCapability(strings.TrimSpace(c)))
		}
	}

	entries, err := os.ReadDir(*dir)
	if err != nil {
		return err
	}
	var files []string
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".yaml", ".yml", ".json":
			files = append(files, filepath.Join(*dir, e.Name()))
		}
	}
	sort.Strings(files)
	if len(files) == 0 {
		return fmt.Errorf("no manifests in %s", *dir)
	}
	ms, err := manifest.ManifestsFromFiles(files)
	if err != nil {
		return err
	}

	var excludeID *string
	if *exclude != "" {
		excludeID = exclude
	}
	out := result{
		FeatureSet:   *featureSet,
		Profile:      *profile,
		Exclude:      *exclude,
		MajorVersion: *major,
		Gates:        map[string]bool{},
		Manifests:    []entry{},
	}
	for _, c := range capabilities.EnabledCapabilities {
		out.Capabilities = append(out.Capabilities, string(c))
	}
	requiredFeatureSet := string(fs)
	for i := range ms {
		m := &ms[i]
		for _, g := range strings.Split(m.Obj.GetAnnotations()["release.openshift.io/feature-gate"], ",") {
			if g = strings.TrimPrefix(strings.TrimSpace(g), "-"); g != "" {
				out.Gates[g] = gates.Has(g)
			}
		}
		e := entry{File: m.OriginalFilename, Kind: m.GVK.Kind, Namespace: m.Obj.GetNamespace(), Name: m.Obj.GetName(), Included: true}
		if err := m.Include(excludeID, &requiredFeatureSet, profile, capabilities, nil, gates, major); err != nil {
			e.Included, e.Reason = false, err.Error()
		}
		out.Manifests = append(out.Manifests, e)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
