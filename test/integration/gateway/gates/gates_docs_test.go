package gates

import (
	"slices"
	"testing"

	"github.com/raygate/raygate/internal/testenv/docqueries"
	"github.com/raygate/raygate/test/integration/gateway/internal/gwenv"
)

// evaluatedBy names, for every PromQL example of the docs about metric gates, the specs of
// the gates and gatefaults suites that have the real Prometheus evaluate it verbatim.
var evaluatedBy = map[string][]string{
	"docs/rayservice.md gate error-ratio":       {gwenv.SpecGatesHealthy, gwenv.SpecGatesFail, gwenv.SpecGatesSlow},
	"docs/rayservice.md gate p99-latency-ms":    {gwenv.SpecGatesHealthy, gwenv.SpecGatesFail, gwenv.SpecGatesSlow},
	"docs/rayservice.md gate pending-5xx-ratio": {gwenv.SpecGatesHealthy, gwenv.SpecGatesFail, gwenv.SpecGatesSlow, gwenv.SpecGatesFaulted},
	// The gate queries' selection, as the page on monitoring shows it, and its series check.
	"docs/monitoring.md promql under What the metric gates read": {gwenv.SpecGatesFail},
	"docs/monitoring.md sh under What the metric gates read":     {gwenv.SpecGatesHealthy},
}

// exampleKey names an example independently of its line.
func exampleKey(e docqueries.Example) string {
	if e.Kind == docqueries.Gate {
		return e.Doc + " gate " + e.Gate
	}
	return e.Doc + " " + string(e.Kind) + " under " + e.Heading
}

// aboutGates says whether an example is a metric gate's query or shows what gates read.
func aboutGates(e docqueries.Example) bool {
	return e.Kind == docqueries.Gate || e.HasPlaceholders() || e.Heading == "What the metric gates read"
}

// A new gate example in the docs, or one renamed, fails here until a spec evaluates it.
func TestEveryDocumentedGateQueryIsEvaluated(t *testing.T) {
	ex, err := docqueries.Read(docqueries.GateDocs...)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, e := range ex {
		if !aboutGates(e) {
			continue
		}
		k := exampleKey(e)
		if found[k] {
			t.Errorf("%s: two examples named %q: evaluatedBy cannot tell them apart", e.Where(), k)
		}
		found[k] = true
		if len(evaluatedBy[k]) == 0 {
			t.Errorf("%s: no spec of the gateway suite evaluates this documented query on the real Prometheus (key %q)", e.Where(), k)
		}
	}
	for k := range evaluatedBy {
		if !found[k] {
			t.Errorf("evaluatedBy names %q, which the docs no longer have", k)
		}
	}
	specs := []string{gwenv.SpecGatesHealthy, gwenv.SpecGatesFail, gwenv.SpecGatesSlow, gwenv.SpecGatesFaulted}
	for k, names := range evaluatedBy {
		for _, n := range names {
			if !slices.Contains(specs, n) {
				t.Errorf("%s: unknown spec %q", k, n)
			}
		}
	}
}
