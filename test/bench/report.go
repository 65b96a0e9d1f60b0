package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gonum.org/v1/plot/vg"

	"github.com/raygate/raygate/internal/testenv/tools"
)

// Targets from the benchmark issue.
const (
	targetTimeRatio   = 1.3
	targetWritesRatio = 1.2
	targetQuietWrites = 0
	targetRSSMB       = 100.0
	targetRSSPods     = 4000
	targetPacing      = 0.05 // upgrade wall time within 5% of the theoretical minimum
	targetAddedP99Ms  = 10.0
)

// verdict is one row of the targets table.
type verdict struct {
	What, Target, Measured, Status string
}

func status(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

// verdicts compares the results with the targets; a scenario that did not run says why.
func verdicts(r *results) []verdict {
	var v []verdict
	for _, s := range r.Scale {
		n, at := fmt.Sprintf("%d RayClusters", s.Clusters), ""
		if s.Stages != "" {
			n += ", " + s.Stages + " stages"
			at = " (" + s.Stages + " stages)"
		}
		switch {
		case s.Raygate.Error != "" || s.Reference.Error != "":
			v = append(v, verdict{"Time to ready vs ReplicaSets, " + n, fmt.Sprintf("≤ %.1f×", targetTimeRatio), "not measured: " + firstLine(s.Raygate.Error+s.Reference.Error), "not run"})
			continue
		default:
			v = append(v, verdict{"Time to ready vs ReplicaSets, " + n, fmt.Sprintf("≤ %.1f×", targetTimeRatio),
				fmt.Sprintf("%.2f× (%.1f s vs %.1f s)", s.Ratio, s.Raygate.Seconds, s.Reference.Seconds), status(s.Ratio <= targetTimeRatio)})
		}
		v = append(v, verdict{"Writes per RayCluster, " + n, fmt.Sprintf("≤ %.1f× the minimum (%d)", targetWritesRatio, s.MinWritesPerCluster),
			fmt.Sprintf("%.2f× (%.1f)", s.WritesRatio, s.Raygate.WritesPerObj), status(s.WritesRatio <= targetWritesRatio)})
		if s.Raygate.Quiet != nil {
			v = append(v, verdict{fmt.Sprintf("Writes in a %.0f s quiet window, %s", s.Raygate.QuietSeconds, n), "0",
				fmt.Sprintf("%d", s.Raygate.Quiet.Writes), status(s.Raygate.Quiet.Writes <= targetQuietWrites)})
		}
		if s.Raygate.Usage != nil && s.Pods >= targetRSSPods {
			v = append(v, verdict{fmt.Sprintf("Operator peak RSS at %d pods%s", s.Pods, at), fmt.Sprintf("≤ %.0f MB", targetRSSMB),
				fmt.Sprintf("%.1f MB", s.Raygate.Usage.PeakRSSMB), status(s.Raygate.Usage.PeakRSSMB <= targetRSSMB)})
		}
	}
	if u := r.Upgrade; u != nil {
		if u.Error != "" {
			v = append(v, verdict{"Incremental upgrade pacing", "within 5% of steps × interval", "not measured: " + firstLine(u.Error), "not run"})
		} else {
			v = append(v, verdict{"Incremental upgrade pacing", fmt.Sprintf("within 5%% of steps × interval (%.0f s)", u.TheoreticalSeconds),
				fmt.Sprintf("%.1f s (%+.1f%%)", u.WallSeconds, 100*u.Overhead), status(u.Overhead <= targetPacing)})
		}
	}
	if u := r.UpgradeLoad; u != nil {
		what := "Failed requests in an incremental upgrade under load (Traefik and in-cluster)"
		if u.Error != "" {
			v = append(v, verdict{what, "0", "not measured: " + firstLine(u.Error), "not run"})
		} else {
			v = append(v, verdict{what, fmt.Sprintf("0, split within %.2f of the weights", u.Tolerance), u.measured(), status(u.passed())})
		}
	}
	if a := r.Admission; a != nil {
		what := fmt.Sprintf("Admission p99 added by the webhooks, %d clients", admissionConcurrency)
		if a.Error != "" {
			v = append(v, verdict{what, "< 10 ms", "not measured: " + firstLine(a.Error), "not run"})
		} else {
			c := a.Concurrent
			v = append(v, verdict{what, "< 10 ms",
				fmt.Sprintf("%.1f ms (p99 %.1f ms on, %.1f ms off)", c.AddedP99Ms, c.On.P99Ms, c.Off.P99Ms), status(c.AddedP99Ms < targetAddedP99Ms)})
		}
	}
	return append(v, memoryVerdicts(r)...)
}

// recommendConcurrency picks, among the runs at one size, the smallest reconcile
// concurrency whose time is within 10% of the fastest: more workers past that only cost
// CPU and conflicts.
func recommendConcurrency(runs []scaleRun) (int, bool) {
	var ok []scaleRun
	for _, r := range runs {
		if r.Error == "" && r.Seconds > 0 {
			ok = append(ok, r)
		}
	}
	if len(ok) < 2 {
		return 0, false
	}
	best := ok[0].Seconds
	for _, r := range ok {
		best = min(best, r.Seconds)
	}
	sort.Slice(ok, func(i, j int) bool { return ok[i].Concurrency < ok[j].Concurrency })
	for _, r := range ok {
		if r.Seconds <= best*1.1 {
			return r.Concurrency, true
		}
	}
	return 0, false
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

// sortedCounts renders a map as "key: n" rows, largest first.
type kv struct {
	Key   string
	Value int
}

func sortedCounts(m map[string]int) []kv {
	out := make([]kv, 0, len(m))
	for k, v := range m {
		out = append(out, kv{k, v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Value != out[j].Value {
			return out[i].Value > out[j].Value
		}
		return out[i].Key < out[j].Key
	})
	return out
}

// plotName is a scale run's plot: ready-<n>.png for general stages, ready-<n>-<stages>.png
// otherwise.
func plotName(s scaleResult) string {
	if s.Stages == "" || s.Stages == "general" {
		return fmt.Sprintf("ready-%d.png", s.Clusters)
	}
	return fmt.Sprintf("ready-%d-%s.png", s.Clusters, s.Stages)
}

// writeReport renders docs/benchmarks.md and its plots from the results.
func writeReport(docsPath, assetsDir string, r *results) error {
	if err := os.MkdirAll(assetsDir, 0o755); err != nil {
		return err
	}
	for _, s := range r.Scale {
		if len(s.Raygate.Timeline) == 0 && len(s.Reference.Timeline) == 0 {
			continue
		}
		lines := []series{
			{Name: fmt.Sprintf("raygate (RayClusters, concurrency %d)", s.Raygate.Concurrency), Timeline: s.Raygate.Timeline, Color: color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}},
			{Name: "kube-controller-manager (ReplicaSets of 4 pods)", Timeline: s.Reference.Timeline, Color: color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, Dashes: []vg.Length{vg.Points(6), vg.Points(3)}},
		}
		if s.KubeRay != nil {
			lines = append(lines, series{Name: "KubeRay (RayClusters)", Timeline: s.KubeRay.Timeline, Color: color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, Dashes: []vg.Length{vg.Points(2), vg.Points(2)}})
		}
		err := plotReady(filepath.Join(assetsDir, plotName(s)),
			fmt.Sprintf("%d RayClusters (%d pods, %s stages): ready over time", s.Clusters, s.Pods, stagesLabel(s.Stages)), lines)
		if err != nil {
			return err
		}
	}
	analysis, err := os.ReadFile(filepath.Join(tools.RepoRoot(), "test", "bench", "analysis.md"))
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(docsPath), assetsDir)
	if err != nil {
		return err
	}
	text, err := renderAnalysis(strings.TrimSpace(string(analysis)), r)
	if err != nil {
		return fmt.Errorf("test/bench/analysis.md: %w", err)
	}
	md := renderReport(r, text, filepath.ToSlash(rel))
	return os.WriteFile(docsPath, []byte(md), 0o644)
}

func sortRuns(runs []scaleRun) []scaleRun {
	out := append([]scaleRun(nil), runs...)
	sort.Slice(out, func(i, j int) bool { return out[i].Concurrency < out[j].Concurrency })
	return out
}

func sortStrings(s []string) { sort.Strings(s) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
