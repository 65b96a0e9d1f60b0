package docgen

import (
	"sort"
	"strings"

	"k8s.io/component-base/featuregate"

	"github.com/raygate/raygate/internal/features"
)

// featuresPage documents raygate's feature gates: names, stages and defaults from the
// registry (features.Specs), meanings from the gates' comments in internal/features.
func featuresPage(root string) (File, error) {
	consts, err := stringConsts(root, "internal/features")
	if err != nil {
		return File{}, err
	}
	docs := map[string]string{}
	for _, c := range consts {
		docs[c.Value] = stripName(c.Doc, c.Name)
	}
	names := make([]string, 0, len(features.Specs))
	for f := range features.Specs {
		names = append(names, string(f))
	}
	sort.Strings(names)
	var rows [][]string
	for _, n := range names {
		spec := features.Specs[featuregate.Feature(n)]
		def := "off"
		if spec.Default {
			def = "on"
		}
		stage := string(spec.PreRelease)
		if stage == "" {
			stage = "GA"
		}
		if spec.LockToDefault {
			def += " (locked)"
		}
		rows = append(rows, []string{code(n), cell(strings.ToUpper(stage[:1]) + strings.ToLower(stage[1:])), def, cell(docs[n])})
	}
	p := newPage("Feature gates", "internal/features (Specs and the gates' comments)")
	p.para("Set with the manager's `--feature-gates=Name=true,...` or the chart's `featureGates` value " +
		"(a map, or KubeRay's list of `{name, enabled}`).")
	p.table([]string{"gate", "stage", "default", "what it does"}, rows)
	return File{Path: "docs/reference/feature-gates.md", Content: p.String()}, nil
}
