package docqueries

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

const sample = "# Gates\n\n" +
	"```yaml\n" +
	"apiVersion: raygate.ray.io/v1alpha1\n" +
	"kind: UpgradePolicy\n" +
	"spec:\n" +
	"  gates:\n" +
	"  - name: ratio\n" +
	"    query: |\n" +
	"      sum(rate(a{namespace=\"{{namespace}}\"}[1m]))\n" +
	"      / sum(rate(b[1m]))\n" +
	"    max: \"0.01\"\n" +
	"---\n" +
	"kind: RayService\n" +
	"```\n\n" +
	"## A fragment\n\n" +
	"```yaml\n" +
	"  gates:\n" +
	"  - name: folded\n" +
	"    query: >-\n" +
	"      (x\n" +
	"      / y) or vector(0)\n" +
	"    min: \"1\"\n" +
	"```\n\n" +
	"```yaml\n" +
	"spec: ...\n" +
	"  not: [yaml\n" +
	"```\n\n" +
	"## Checks\n\n" +
	"```promql\n" +
	"count(up)\n" +
	"```\n\n" +
	"```sh\n" +
	"curl -s \"$PROMETHEUS/api/v1/query\" --data-urlencode \\\n" +
	"  'query=count by (namespace) (up)'\n" +
	"```\n"

func TestParse(t *testing.T) {
	got, err := Parse("doc.md", []byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	want := []Example{
		{Doc: "doc.md", Line: 3, Kind: Gate, Heading: "Gates", Gate: "ratio", Max: "0.01",
			Query: "sum(rate(a{namespace=\"{{namespace}}\"}[1m]))\n/ sum(rate(b[1m]))\n"},
		{Doc: "doc.md", Line: 19, Kind: Gate, Heading: "A fragment", Gate: "folded", Min: "1", Query: "(x / y) or vector(0)"},
		{Doc: "doc.md", Line: 35, Kind: PromQL, Heading: "Checks", Query: "count(up)\n"},
		{Doc: "doc.md", Line: 39, Kind: Shell, Heading: "Checks", Query: "count by (namespace) (up)"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("examples (-want +got):\n%s", d)
	}
	if !got[0].HasPlaceholders() || got[2].HasPlaceholders() {
		t.Errorf("HasPlaceholders: %v, %v", got[0].HasPlaceholders(), got[2].HasPlaceholders())
	}
}

func TestParseRefusesABrokenGatesBlock(t *testing.T) {
	for name, text := range map[string]string{
		"not YAML":      "```yaml\ngates:\n- name: a\n  query: [x\n```\n",
		"no query":      "```yaml\ngates:\n- name: a\n  max: \"1\"\n```\n",
		"not a list":    "```yaml\ngates: x\n```\n",
		"query not str": "```yaml\ngates:\n- name: a\n  query: {a: 1}\n```\n",
	} {
		if _, err := Parse("doc.md", []byte(text)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// The documents the gate specs read hold gate examples (a doc reorganised so that none is
// found would silently leave them untested).
func TestGateDocsHaveGates(t *testing.T) {
	ex, err := Read(GateDocs...)
	if err != nil {
		t.Fatal(err)
	}
	gates := 0
	for _, e := range ex {
		if e.HasPlaceholders() {
			gates++
		}
	}
	if gates < 3 {
		t.Errorf("only %d gate queries in %v: %+v", gates, GateDocs, ex)
	}
}
