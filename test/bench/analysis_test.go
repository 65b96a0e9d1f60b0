package main

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/raygate/raygate/internal/testenv/tools"
)

func readAnalysis(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("analysis.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func committedResults(t *testing.T) *results {
	t.Helper()
	r, err := loadResults(filepath.Join(tools.RepoRoot(), "docs", "benchmarks", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestAnalysisHasNoHandWrittenFigures: every figure in the analysis comes from the run.
func TestAnalysisHasNoHandWrittenFigures(t *testing.T) {
	if found := handWritten(readAnalysis(t)); len(found) > 0 {
		t.Errorf("test/bench/analysis.md has figures written by hand (use {{fig ...}} and friends): %q", found)
	}
}

func TestHandWritten(t *testing.T) {
	for text, want := range map[string][]string{
		"p99 {{fig \"a.b1\" 1 \"ms\"}} at p50, 409 Conflict": nil,
		"took 64 ms": {"64"},
		"a {{fig \"x\" 0}} and 1.36× the reference":              {"1.36×"},
		"`--reconcile-concurrency=4`":                            {"`--reconcile-concurrency=4`"},
		"{{if has \"x\"}}\nmulti-line {{fig \"y\"\n 1}} {{end}}": nil,
		"twice the heap, at GOGC=100":                            {"GOGC=100"},
	} {
		if got := handWritten(text); !reflect.DeepEqual(got, want) {
			t.Errorf("handWritten(%q) = %q, want %q", text, got, want)
		}
	}
}

// TestAnalysisAgreesWithTables renders the analysis from the committed results and checks
// figures in it against the tables rendered from the same results.
func TestAnalysisAgreesWithTables(t *testing.T) {
	r := committedResults(t)
	text, err := renderAnalysis(readAnalysis(t), r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text, "<no value>") || strings.Contains(text, "%!") {
		t.Fatalf("rendering left holes:\n%s", text)
	}
	report := renderReport(r, text, "benchmarks")
	a := r.Admission
	s := r.Scale[1]
	for _, fig := range []struct{ analysis, table string }{
		{f1(a.Concurrent.AddedP99Ms) + " ms", f1(a.Concurrent.AddedP99Ms) + " ms"},                                                           // targets table
		{f2(a.Handlers["/mutate-ray-io-v1-rayservice"].MeanMs) + " ms", "| " + f2(a.Handlers["/mutate-ray-io-v1-rayservice"].MeanMs) + " |"}, // handler table
		{f2(s.Raygate.Seconds/s.Reference.Seconds) + "×", "time " + f2(s.Raygate.Seconds/s.Reference.Seconds) + "×"},                         // under the scale table
		{f1(s.Raygate.WritesPerObj), "| " + f1(s.Raygate.WritesPerObj) + " ("},                                                               // scale table
	} {
		if !strings.Contains(text, fig.analysis) {
			t.Errorf("analysis lacks %q", fig.analysis)
		}
		if !strings.Contains(report, fig.table) {
			t.Errorf("report's tables lack %q", fig.table)
		}
	}
	// A run that measured nothing renders, saying so.
	empty, err := renderAnalysis(readAnalysis(t), &results{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(empty, notMeasured) || strings.Contains(empty, "<no value>") {
		t.Errorf("analysis of an empty run:\n%s", empty)
	}

}

// TestDocsBenchmarksIsRendered: docs/benchmarks.md is what the renderer makes of the
// committed results (regenerate with `go run ./test/bench -report-only`).
func TestDocsBenchmarksIsRendered(t *testing.T) {
	dir := t.TempDir()
	docs := filepath.Join(dir, "benchmarks.md")
	if err := writeReport(docs, filepath.Join(dir, "benchmarks"), committedResults(t)); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(docs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(tools.RepoRoot(), "docs", "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Error("docs/benchmarks.md is not the rendering of docs/benchmarks/results.json; run `go run ./test/bench -report-only`")
	}
}

func TestTemplateFuncs(t *testing.T) {
	r := &results{
		Scale: []scaleResult{
			{Clusters: 1000, Stages: "fast", Raygate: scaleRun{Seconds: 50}},
			{Clusters: 1000, Stages: "general", Raygate: scaleRun{Seconds: 80}, Reference: scaleRun{Seconds: 40},
				Sweep: []scaleRun{{Concurrency: 8, Seconds: 70}}},
		},
	}
	for tmpl, want := range map[string]string{
		`{{fig "scale.1000.raygate.seconds" 1 "s"}}`:                                 "80.0 s",
		`{{fig "scale.1000-fast.raygate.seconds" 0}}`:                                "50",
		`{{fig "scale.1000.sweep.8.seconds" 1}}`:                                     "70.0",
		`{{ratio "scale.1000.raygate.seconds" "scale.1000.reference.seconds"}}`:      "2.00×",
		`{{count "scale.1000.clusters"}}`:                                            "1,000",
		`{{fig "scale.100.raygate.seconds" 1 "s"}}`:                                  notMeasured,
		`{{fig "admission.concurrent.addedP99Ms" 1}}`:                                notMeasured,
		`{{ratio "scale.1000.raygate.seconds" "scale.1000.kuberay.seconds"}}`:        notMeasured,
		`{{if has "noise.before.rssMB"}}yes{{else}}no{{end}}`:                        "no",
		`{{diff "scale.1000.raygate.seconds" "scale.1000.reference.seconds" 0 "s"}}`: "40 s",
		`{{percent "scale.1000.reference.seconds" "scale.1000.raygate.seconds"}}`:    "50%",
	} {
		got, err := renderAnalysis(tmpl, r)
		if err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", tmpl, got, err, want)
		}
	}
	if _, err := renderAnalysis(`{{constant "noSuchThing"}} {{fig}}`, r); err == nil {
		t.Error("a malformed action renders without error")
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4000: "-4,000"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestMemoryFitAndVerdicts(t *testing.T) {
	m := &memoryResult{Points: []memoryPoint{
		{Clusters: 2000, Pods: 8000, Settled: memShot{RSSMB: 200, HeapInuseMB: 90}, PeakRSSMB: 230},
		{Clusters: 500, Pods: 2000, Settled: memShot{RSSMB: 80, HeapInuseMB: 30}, PeakRSSMB: 95},
		{Clusters: 1000, Pods: 4000, Error: "timed out"},
	}}
	m.fit()
	if m.SlopeMBPer1000Pods != 20 || m.PeakSlopeMBPer1000Pods != 22.5 || m.HeapSlopeMBPer1000Pods != 10 || m.Error != "" {
		t.Errorf("fit = %+v", m)
	}
	if p, ok := m.projectPeak(4000); !ok || math.Abs(p-140) > 1e-9 {
		t.Errorf("projectPeak(4000) = %v, %v; want 140", p, ok)
	}
	one := &memoryResult{Points: []memoryPoint{{Clusters: 500, Pods: 2000, Settled: memShot{RSSMB: 80}, PeakRSSMB: 95}, {Clusters: 2000, Pods: 8000, Error: "cluster did not start"}}}
	one.fit()
	if one.Error == "" || one.SlopeMBPer1000Pods != 0 {
		t.Errorf("one point: fit = %+v; want an error and no slope", one)
	}

	statuses := func(r *results) map[string]string {
		got := map[string]string{}
		for _, v := range memoryVerdicts(r) {
			got[v.What] = v.Status
		}
		return got
	}
	noise := func(before, after float64) *noiseResult {
		return &noiseResult{Services: 10000, ConfigMaps: 10000, Before: memShot{RSSMB: before}, After: memShot{RSSMB: after}}
	}
	const flat = "Operator RSS with 10,000 unrelated Services and 10,000 ConfigMaps"
	for name, tt := range map[string]struct {
		r    *results
		want map[string]string
	}{
		// The growth slope is stated in the memory section, not a target row.
		"flat, growth is no target":    {&results{Noise: noise(58, 59), Memory: m}, map[string]string{flat: "met"}},
		"grows with unrelated objects": {&results{Noise: noise(58, 90)}, map[string]string{flat: "**missed**"}},
		"shrinks":                      {&results{Noise: noise(58, 50)}, map[string]string{flat: "met"}},
		"just within the tolerance":    {&results{Noise: noise(58, 58+noiseFlatMB)}, map[string]string{flat: "met"}},
		"not run":                      {&results{Noise: &noiseResult{Services: 10000, ConfigMaps: 10000, Error: "no kwok"}, Memory: one}, map[string]string{flat: "not run"}},
		"neither scenario":             {&results{}, map[string]string{}},
	} {
		if got := statuses(tt.r); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: verdicts = %v, want %v", name, got, tt.want)
		}
	}
}

func TestSizing(t *testing.T) {
	scale := []scaleResult{
		{Clusters: 100, Pods: 400, Raygate: scaleRun{Seconds: 10, Usage: &processUsage{PeakRSSMB: 70, CPUSeconds: 1}}},
		{Clusters: 1000, Pods: 4000, Raygate: scaleRun{Seconds: 50, Concurrency: 4, Usage: &processUsage{PeakRSSMB: 142, CPUSeconds: 15}},
			Sweep: []scaleRun{{Concurrency: 8, Seconds: 40}, {Concurrency: 16, Seconds: 42}}},
		{Clusters: 1000, Pods: 4000, Stages: "fast", Raygate: scaleRun{Seconds: 30, Usage: &processUsage{PeakRSSMB: 500, CPUSeconds: 9}}},
	}
	g := sizing(&results{Scale: scale}, 4)
	if g.Reason != "" || math.Abs(g.SlopeMBPer1000Pods-20) > 1e-9 || math.Abs(g.BaseMB-62) > 1e-9 || g.LoPods != 400 || g.HiPods != 4000 {
		t.Fatalf("sizing line = %+v", g)
	}
	want := []sizingRow{
		{Clusters: 100, Pods: 400, PeakMB: 70, RequestMi: 96, LimitMi: 256, CPUMilli: 100, Concurrency: 4},
		{Clusters: 1000, Pods: 4000, PeakMB: 142, RequestMi: 160, LimitMi: 256, CPUMilli: 300, Concurrency: 8},
		{Clusters: 2000, Pods: 8000, PeakMB: 222, Extrapolated: true, RequestMi: 224, LimitMi: 384, CPUMilli: 300, Concurrency: 8},
		{Clusters: 5000, Pods: 20000, PeakMB: 462, Extrapolated: true, RequestMi: 480, LimitMi: 704, CPUMilli: 300, Concurrency: 8},
		{Clusters: 10000, Pods: 40000, PeakMB: 862, Extrapolated: true, RequestMi: 864, LimitMi: 1344, CPUMilli: 300, Concurrency: 8},
	}
	for i := range g.Rows {
		g.Rows[i].PeakMB = math.Round(g.Rows[i].PeakMB*1e6) / 1e6
	}
	if !reflect.DeepEqual(g.Rows, want) {
		t.Errorf("sizing rows =\n%+v\nwant\n%+v", g.Rows, want)
	}

	// The memory scenario, when it ran, is the source of the memory line.
	mem := &memoryResult{Points: []memoryPoint{{Pods: 2000, Seconds: 20, PeakRSSMB: 80, CPUSeconds: 2, Settled: memShot{RSSMB: 70}}, {Pods: 8000, Seconds: 60, PeakRSSMB: 140, CPUSeconds: 12, Settled: memShot{RSSMB: 120}}}}
	g = sizing(&results{Scale: scale, Memory: mem}, 4)
	if !strings.Contains(g.Source, "memory scenario") || math.Abs(g.SlopeMBPer1000Pods-10) > 1e-9 {
		t.Errorf("with the memory scenario: %+v", g)
	}
	if g := sizing(&results{Scale: scale[:1]}, 4); len(g.Rows) != 0 || g.Reason == "" {
		t.Errorf("one point: %+v; want no rows and a reason", g)
	}
	var m md
	renderSizing(&m, &results{Scale: scale[:1]}, 4)
	if !strings.Contains(m.String(), "No guidance from this run") {
		t.Errorf("sizing without two points:\n%s", m.String())
	}
}
