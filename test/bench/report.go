package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot/vg"

	"github.com/raygate/raygate/internal/testenv/kwokcluster"
	"github.com/raygate/raygate/internal/testenv/tools"
)

// Targets from issue 21, as ratios within one run where the issue gives ratios.
const (
	targetKubeRayTimeRatio = 0.7  // time to ready ÷ KubeRay's
	targetTimeRatio        = 1.2  // time to ready ÷ the ReplicaSet reference's
	targetWritesRatio      = 1.15 // writes per RayCluster ÷ the minimum (normal and loaded runs)
	targetQuietWrites      = 0
	targetRSSMB            = 100.0
	targetRSSPods          = 4000
	targetRSSKubeRayRatio  = 0.5 // peak RSS ÷ KubeRay's
	targetConflictsAt      = 8   // --reconcile-concurrency of the 0-conflicts target
	targetConflicts        = 0
	targetPacing           = 0.05 // upgrade wall time within 5% of the theoretical minimum
	targetAddedP99Ms       = 25.0 // admission p99 added at admissionConcurrency clients
	targetAddedP99MsOne    = 10.0 // admission p99 added at 1 client
	targetHandlerAllocs    = 300  // allocations per AdmissionReview in the handler benchmarks
)

// reviewBenchmarks are the handler benchmarks that stand for one review: the mutating and the
// validating webhook each handling the create of the realistic RayService that the admission
// scenario sends through the API server, and the validating webhook handling one whose pod
// templates it has never seen (so it decodes them all; the verdict takes the worst).
var reviewBenchmarks = []string{"BenchmarkMutateRayServiceCreate", "BenchmarkValidateRayServiceCreate", "BenchmarkValidateRayServiceCreateColdTemplates"}

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

// ratioText writes a target ratio with as many decimals as it has (0.7, 1.15).
func ratioText(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// notRun is the row of a target whose measurement is missing: never a pass.
func notRun(what, target, why string) verdict {
	return verdict{what, target, "not measured: " + firstLine(why), "not run"}
}

// verdicts compares the results with the targets; a missing measurement says why.
func verdicts(r *results) []verdict {
	var v []verdict
	// General stages first (the targets' runs), then fast stages as labelled extra rows.
	var scales []scaleResult
	for _, fast := range []bool{false, true} {
		for _, s := range r.Scale {
			if (s.Stages == string(kwokcluster.FastStages)) == fast {
				scales = append(scales, s)
			}
		}
	}
	for _, s := range scales {
		n, at := fmt.Sprintf("%d RayClusters", s.Clusters), ""
		switch s.Stages {
		case string(kwokcluster.FastStages):
			n += ", fast stages (extra: not a target run)"
			at = " (fast stages, extra)"
		case "":
			// results saved before the stages were recorded
		default:
			n += ", " + s.Stages + " stages"
		}
		g := s.Raygate
		kuberayTarget := fmt.Sprintf("≤ %s× KubeRay", ratioText(targetKubeRayTimeRatio))
		switch k := s.KubeRay; {
		case g.Error != "":
			v = append(v, notRun("Time to ready vs KubeRay, "+n, kuberayTarget, g.Error))
		case k == nil:
			v = append(v, notRun("Time to ready vs KubeRay, "+n, kuberayTarget, "KubeRay not run"))
		case k.Error != "" || k.Seconds <= 0:
			v = append(v, notRun("Time to ready vs KubeRay, "+n, kuberayTarget, "KubeRay: "+k.Error))
		default:
			ratio := g.Seconds / k.Seconds
			v = append(v, verdict{"Time to ready vs KubeRay, " + n, kuberayTarget,
				fmt.Sprintf("%.2f× (%.1f s vs %.1f s)", ratio, g.Seconds, k.Seconds), status(ratio <= targetKubeRayTimeRatio)})
		}
		refTarget := fmt.Sprintf("≤ %s× ReplicaSets", ratioText(targetTimeRatio))
		if g.Error != "" || s.Reference.Error != "" || s.Reference.Seconds <= 0 {
			v = append(v, notRun("Time to ready vs ReplicaSets, "+n, refTarget, g.Error+s.Reference.Error))
		} else {
			ratio := g.Seconds / s.Reference.Seconds
			v = append(v, verdict{"Time to ready vs ReplicaSets, " + n, refTarget,
				fmt.Sprintf("%.2f× (%.1f s vs %.1f s)", ratio, g.Seconds, s.Reference.Seconds), status(ratio <= targetTimeRatio)})
		}
		conflicts, hasConflicts := conflictsAt(s, targetConflictsAt)
		if g.Error != "" {
			if hasConflicts {
				v = append(v, conflicts)
			}
			continue
		}
		writes := fmt.Sprintf("≤ %s× the minimum (%d)", ratioText(targetWritesRatio), s.MinWritesPerCluster)
		if g.WritesPerObj > 0 && s.MinWritesPerCluster > 0 {
			wr := g.WritesPerObj / float64(s.MinWritesPerCluster)
			v = append(v, verdict{"Writes per RayCluster, " + n, writes, fmt.Sprintf("%.2f× (%.1f)", wr, g.WritesPerObj), status(wr <= targetWritesRatio)})
		} else {
			v = append(v, notRun("Writes per RayCluster, "+n, writes, "no audit log counts"))
		}
		if g.Quiet != nil {
			v = append(v, verdict{fmt.Sprintf("Writes in a %.0f s quiet window, %s", g.QuietSeconds, n), "0",
				fmt.Sprintf("%d", g.Quiet.Writes), status(g.Quiet.Writes <= targetQuietWrites)})
		}
		if s.Pods == targetRSSPods {
			v = append(v, rssVerdicts(s, at)...)
		}
		if hasConflicts {
			v = append(v, conflicts)
		}
	}
	if len(scales) == 0 {
		for _, what := range []string{"Time to ready vs KubeRay", "Time to ready vs ReplicaSets", "Writes per RayCluster", "Operator peak RSS at 4,000 pods"} {
			v = append(v, notRun(what, "see issue 21", "the scale scenario did not run"))
		}
	}
	v = append(v, scale10kVerdicts(r)...)
	if !hasConflictRun(r.Scale, targetConflictsAt) {
		v = append(v, notRun(fmt.Sprintf("409 Conflicts at `--reconcile-concurrency=%d`", targetConflictsAt), "0",
			fmt.Sprintf("no scale run at concurrency %d (-sweep)", targetConflictsAt)))
	}
	if r.Loaded != nil {
		v = append(v, loadedVerdict(r.Loaded))
	} else {
		v = append(v, notRun("Writes per RayCluster on a loaded machine (CPU hog on both)",
			fmt.Sprintf("≤ %s× the minimum", ratioText(targetWritesRatio)), "the loaded scenario did not run"))
	}
	if u := r.Upgrade; u != nil {
		if u.Error != "" {
			v = append(v, notRun("Incremental upgrade pacing", "within 5% of steps × interval", u.Error))
		} else {
			v = append(v, verdict{"Incremental upgrade pacing", fmt.Sprintf("within 5%% of steps × interval (%.0f s)", u.TheoreticalSeconds),
				fmt.Sprintf("%.1f s (%+.1f%%)", u.WallSeconds, 100*u.Overhead), status(u.Overhead <= targetPacing)})
		}
	}
	// Not in issue 21's list, kept: a correctness gate (zero failed requests), not a ratio.
	if u := r.UpgradeLoad; u != nil {
		what := "Failed requests in an incremental upgrade under load (Traefik and in-cluster)"
		if u.Error != "" {
			v = append(v, notRun(what, "0", u.Error))
		} else {
			v = append(v, verdict{what, fmt.Sprintf("0, split within %.2f of the weights", u.Tolerance), u.measured(), status(u.passed())})
		}
	}
	v = append(v, fleetVerdicts(r.UpgradeFleet)...)
	v = append(v, rayJobVerdicts(r.RayJob)...)
	v = append(v, restartVerdicts(r.Restart)...)
	v = append(v, admissionVerdicts(r.Admission)...)
	v = append(v, operatorAdmissionVerdicts(r.Admission)...)
	return append(v, memoryVerdicts(r)...)
}

// rssVerdicts are the peak RSS targets of a run at targetRSSPods pods.
func rssVerdicts(s scaleResult, at string) []verdict {
	g := s.Raygate
	what := fmt.Sprintf("Operator peak RSS at %s pods%s", thousands(int64(s.Pods)), at)
	abs := fmt.Sprintf("≤ %.0f MB", targetRSSMB)
	rel := fmt.Sprintf("≤ %s× KubeRay's", ratioText(targetRSSKubeRayRatio))
	if g.Usage == nil || g.Usage.PeakRSSMB <= 0 {
		return []verdict{notRun(what, abs, "no usage read"), notRun(what+" vs KubeRay", rel, "no usage read")}
	}
	v := []verdict{{what, abs, fmt.Sprintf("%.1f MB", g.Usage.PeakRSSMB), status(g.Usage.PeakRSSMB <= targetRSSMB)}}
	switch k := s.KubeRay; {
	case k == nil:
		v = append(v, notRun(what+" vs KubeRay", rel, "KubeRay not run"))
	case k.Error != "" || k.Usage == nil || k.Usage.PeakRSSMB <= 0:
		v = append(v, notRun(what+" vs KubeRay", rel, "KubeRay: "+k.Error))
	default:
		ratio := g.Usage.PeakRSSMB / k.Usage.PeakRSSMB
		v = append(v, verdict{what + " vs KubeRay", rel,
			fmt.Sprintf("%.2f× (%.1f MB vs %.1f MB)", ratio, g.Usage.PeakRSSMB, k.Usage.PeakRSSMB), status(ratio <= targetRSSKubeRayRatio)})
	}
	return v
}

// conflictsAt is the 409 row of the run (main or sweep) at the given concurrency, if s has one.
func conflictsAt(s scaleResult, concurrency int) (verdict, bool) {
	for _, run := range append([]scaleRun{s.Raygate}, s.Sweep...) {
		if run.Concurrency != concurrency {
			continue
		}
		what := fmt.Sprintf("409 Conflicts at `--reconcile-concurrency=%d`, %d RayClusters", concurrency, s.Clusters)
		if s.Stages != "" {
			what += ", " + s.Stages + " stages"
		}
		if run.Error != "" || run.Requests == nil {
			return notRun(what, "0", run.Error+" (no audit log counts)"), true
		}
		return verdict{what, "0", fmt.Sprint(run.Requests.Conflicts), status(run.Requests.Conflicts <= targetConflicts)}, true
	}
	return verdict{}, false
}

func hasConflictRun(scales []scaleResult, concurrency int) bool {
	for _, s := range scales {
		if _, ok := conflictsAt(s, concurrency); ok {
			return true
		}
	}
	return false
}

// admissionVerdicts are the p99 targets at one and admissionConcurrency clients and the
// handler's allocations per review.
func admissionVerdicts(a *admissionResult) []verdict {
	if a == nil {
		a = &admissionResult{Error: "the admission scenario did not run", GoBenchErr: "the admission scenario did not run"}
	}
	var v []verdict
	for _, c := range []struct {
		clients int
		target  float64
		lat     func() admissionLatency
	}{
		{1, targetAddedP99MsOne, func() admissionLatency { return a.Sequential }},
		{admissionConcurrency, targetAddedP99Ms, func() admissionLatency { return a.Concurrent }},
	} {
		what := fmt.Sprintf("Admission p99 added by the webhooks, %d client", c.clients)
		if c.clients != 1 {
			what += "s"
		}
		target := fmt.Sprintf("≤ %.0f ms", c.target)
		l := c.lat()
		switch {
		case a.Error != "":
			v = append(v, notRun(what, target, a.Error))
		case l.On.Requests == 0 || l.Off.Requests == 0:
			v = append(v, notRun(what, target, "no requests at this concurrency"))
		case l.AddedP99Ms < 0:
			// The tail without webhooks was slower than with them: the run's noise is larger
			// than what the webhooks add, so the figure shows nothing either way.
			v = append(v, verdict{what, target,
				fmt.Sprintf("%.1f ms (p99 %.1f ms on, %.1f ms off): noise larger than the difference", l.AddedP99Ms, l.On.P99Ms, l.Off.P99Ms),
				"**not shown**"})
		default:
			v = append(v, verdict{what, target,
				fmt.Sprintf("%.1f ms (p99 %.1f ms on, %.1f ms off)", l.AddedP99Ms, l.On.P99Ms, l.Off.P99Ms), status(l.AddedP99Ms <= c.target)})
		}
	}
	what := "Webhook handler allocations per review (`" + strings.Join(reviewBenchmarks, "`, `") + "`: the realistic create, the last with pod templates never seen before)"
	target := fmt.Sprintf("≤ %d allocs", targetHandlerAllocs)
	if a.GoBenchErr != "" {
		return append(v, notRun(what, target, a.GoBenchErr))
	}
	var parts []string
	worst, found := 0.0, 0
	for _, name := range reviewBenchmarks {
		for _, b := range a.GoBench {
			if allocs, ok := b.Metrics["allocs/op"]; ok && b.Name == name {
				parts = append(parts, fmt.Sprintf("%.0f (%s)", allocs, strings.TrimPrefix(name, "Benchmark")))
				worst = max(worst, allocs)
				found++
			}
		}
	}
	if found != len(reviewBenchmarks) {
		return append(v, notRun(what, target, "benchmarks missing from the run"))
	}
	return append(v, verdict{what, target, strings.Join(parts, ", "), status(worst <= targetHandlerAllocs)})
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
	// The measurements behind the code are not this run's: they close the analysis as they
	// are written, not as a template over the results.
	measurements, err := os.ReadFile(filepath.Join(tools.RepoRoot(), "test", "bench", "measurements.md"))
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
	text = strings.TrimSpace(text + "\n\n" + strings.TrimSpace(string(measurements)))
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
