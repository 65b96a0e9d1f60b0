package main

import (
	"fmt"
	"strings"
)

// renderUpgradeFleet is the "Upgrade fleet" section: raygate and KubeRay side by side. Results
// without the scenario (saved before it existed, or a run of other scenarios) render without
// the section, so re-rendering them changes nothing.
func renderUpgradeFleet(m *md, u *fleetResult) {
	if u == nil {
		return
	}
	m.WriteString("## 2c. Upgrade fleet: many RayServices upgrading at once, raygate and KubeRay\n\n")
	m.p("%d RayServices with `NewClusterWithIncrementalUpgrade` (maxSurgePercent %d, stepSizePercent %d,\n"+
		"intervalSeconds %.0f: a step as large as the surge, because KubeRay moves traffic only up to the\n"+
		"pending cluster's target capacity) serve from simulated Ray dashboards (`internal/testenv/raysim`,\n"+
		"applications DEPLOYING for %s) behind the stand-in gateway controller of `internal/testenv/framework`;\n"+
		"then every service's image changes at once (%d parallel clients) and the clock runs until the last\n"+
		"service has promoted its new cluster. Each operator runs on its own fresh cluster, minutes apart,\n"+
		"as its own audited user. raygate (its defaults, `--reconcile-concurrency` %d) reaches the dashboards through `--dashboard-url-template`;\n"+
		"KubeRay v1.5.1 (%s) through\n"+
		"an HTTP_PROXY on loopback that answers its in-cluster dashboard and Serve-proxy calls from the same\n"+
		"simulators (`internal/testenv/kuberay`). Pacing error is, for every step of every service, the gap\n"+
		"between two consecutive weight changes of the new cluster in the service's HTTPRoute minus the\n"+
		"interval. CPU, peak RSS and writes cover the window from the change to the last promotion.",
		u.Services, u.MaxSurgePercent, u.StepSizePercent, u.IntervalSeconds, fleetDeployDelay, fleetWorkers, defaultConcurrency(), fleetKubeRaySettings(u.KubeRay))
	runs := []*fleetRun{&u.Raygate}
	header := []string{"", "raygate"}
	if u.KubeRay != nil {
		runs = append(runs, u.KubeRay)
		header = append(header, "KubeRay", "raygate ÷ KubeRay")
	}
	row := func(label string, val func(r *fleetRun) float64, format func(float64) string, ratio bool) []string {
		out := []string{label}
		for _, r := range runs {
			out = append(out, format(val(r)))
		}
		if len(runs) == 2 {
			out = append(out, fleetRatio(val(runs[0]), val(runs[1]), ratio))
		}
		return out
	}
	n := func(f float64) string { return fmt.Sprint(int(f)) }
	rows := [][]string{
		row("services promoted", func(r *fleetRun) float64 { return float64(r.Completed) }, n, false),
		row(fmt.Sprintf("**change → last promotion, s** (theoretical %d steps × %.0f s = %.0f s)", u.Steps, u.IntervalSeconds, u.TheoreticalSeconds),
			func(r *fleetRun) float64 { return r.WallSeconds }, f1, true),
		row("change → first shift, s: mean / max", func(r *fleetRun) float64 { return r.FirstShift.Mean }, f1, false),
		row("pacing error per step, s: **mean**", func(r *fleetRun) float64 { return r.PacingError.Mean }, f2, true),
		row("pacing error per step, s: p50", func(r *fleetRun) float64 { return r.PacingError.P50 }, f2, false),
		row("pacing error per step, s: **p95**", func(r *fleetRun) float64 { return r.PacingError.P95 }, f2, true),
		row("pacing error per step, s: max", func(r *fleetRun) float64 { return r.PacingError.Max }, f2, false),
		row("steps measured", func(r *fleetRun) float64 { return float64(r.PacingError.Count) }, n, false),
		row("operator CPU s", func(r *fleetRun) float64 { return r.CPUSeconds }, f1, true),
		row("operator peak RSS MB (sampled)", func(r *fleetRun) float64 { return r.PeakRSSMB }, f1, false),
		row("operator writes", func(r *fleetRun) float64 { return float64(r.Writes) }, n, true),
		row("of which HTTPRoute updates", func(r *fleetRun) float64 { return float64(r.HTTPRouteUpdates) }, n, false),
		row("409 conflicts", func(r *fleetRun) float64 { return float64(r.Conflicts) }, n, false),
	}
	// The first-shift row shows mean / max.
	for i, r := range runs {
		rows[2][i+1] = f1(r.FirstShift.Mean) + " / " + f1(r.FirstShift.Max)
	}
	m.table(header, rows)
	for _, r := range runs {
		if r.Error != "" {
			m.p("%s: **did not complete** — %s", fleetOperatorLabel(r.Operator), r.Error)
		}
	}
	for _, r := range runs {
		if len(r.WritesByKind) == 0 {
			continue
		}
		var parts []string
		for _, c := range sortedCounts(r.WritesByKind) {
			parts = append(parts, fmt.Sprintf("%s %d", c.Key, c.Value))
		}
		m.p("%s's writes in the window: %s.", fleetOperatorLabel(r.Operator), strings.Join(parts, ", "))
	}
	renderFleetWritesPerUpgrade(m, u)
	m.p("Scenario duration (both operators, clusters included): %.0f s.", u.DurationSeconds)
}

// fleetKubeRaySettings says how KubeRay was run: the flags the scenario gave it (results from
// before fleetFlags name only the gate they had).
func fleetKubeRaySettings(k *fleetRun) string {
	if k == nil || len(k.Flags) == 0 {
		return "`--feature-gates=RayServiceIncrementalUpgrade=true`, otherwise its defaults"
	}
	return "`" + strings.Join(k.Flags, " ") + "`: its gate, raygate's concurrency and a\n" +
		"client-side request limit that does not bind, as raygate has none; KubeRay's defaults are one worker and 100 QPS"
}

func fleetOperatorLabel(op string) string {
	if op == "kuberay" {
		return "KubeRay"
	}
	return op
}

// fleetRatio is a ÷ b, or "–" where the ratio does not apply or b is zero.
func fleetRatio(a, b float64, apply bool) string {
	if !apply || b == 0 {
		return "–"
	}
	return f2(a/b) + "×"
}

// fleetVerdicts is the targets row of the fleet: every service promoted, in no more time
// than KubeRay takes for the same fleet.
func fleetVerdicts(u *fleetResult) []verdict {
	if u == nil {
		return nil
	}
	what := fmt.Sprintf("Incremental upgrade of %d RayServices at once vs KubeRay", u.Services)
	target := "all promoted, time ≤ KubeRay's"
	g := u.Raygate
	if g.Completed < u.Services {
		return []verdict{{what, target, fmt.Sprintf("raygate promoted %d of %d: %s", g.Completed, u.Services, firstLine(g.Error)), status(false)}}
	}
	k := u.KubeRay
	switch {
	case k == nil:
		return []verdict{{what, target, fmt.Sprintf("raygate %.1f s; KubeRay not run", g.WallSeconds), "not run"}}
	case k.Completed < u.Services:
		return []verdict{{what, target, fmt.Sprintf("raygate %.1f s; KubeRay promoted %d of %d", g.WallSeconds, k.Completed, u.Services), status(true)}}
	}
	r := g.WallSeconds / k.WallSeconds
	v := []verdict{{what, target, fmt.Sprintf("%.2f× (%.1f s vs %.1f s)", r, g.WallSeconds, k.WallSeconds), status(r <= 1)}}
	if len(k.Flags) == 0 {
		return v // measured before KubeRay ran on like terms (fleetFlags): no ratio targets
	}
	return append(v,
		fleetRatioVerdict(u, "writes per upgrade", fleetWritesTarget, float64(g.Writes), float64(k.Writes), "%.1f", float64(u.Services)),
		fleetRatioVerdict(u, "operator CPU", fleetCPUTarget, g.CPUSeconds, k.CPUSeconds, "%.1f s", 1))
}

// The fleet's targets against KubeRay's (issue 42): writes and CPU per upgrade.
const (
	fleetWritesTarget = 0.9
	fleetCPUTarget    = 0.8
)

// fleetRatioVerdict holds raygate's figure to target × KubeRay's, both divided by per.
func fleetRatioVerdict(u *fleetResult, label string, target, g, k float64, format string, per float64) verdict {
	what := fmt.Sprintf("Upgrade fleet (%d RayServices): %s vs KubeRay", u.Services, label)
	want := "≤ " + ratioText(target) + "× KubeRay's"
	if k == 0 {
		return verdict{what, want, "KubeRay measured none", "not run"}
	}
	r := g / k
	measured := fmt.Sprintf("%.2f× ("+format+" vs "+format+")", r, g/per, k/per)
	return verdict{what, want, measured, status(r <= target)}
}
