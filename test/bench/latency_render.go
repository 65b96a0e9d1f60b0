package main

import (
	"fmt"
	"strings"
)

// latencyMeasure is one row of the latency table.
type latencyMeasure struct {
	label string
	get   func(*latencyRun) latencySummary
}

var latencyMeasures = []latencyMeasure{
	{"`kubectl apply` → answer (the create request; raygate: its two webhooks, KubeRay: none)", func(r *latencyRun) latencySummary { return r.Apply }},
	{"create → all 4 pods created", func(r *latencyRun) latencySummary { return r.PodsCreated }},
	{"create → Ready", func(r *latencyRun) latencySummary { return r.Ready }},
	{"worker replicas 3 → 4 → new pod created", func(r *latencyRun) latencySummary { return r.ScaledUp }},
	{"worker template change → first pod replaced", func(r *latencyRun) latencySummary { return r.Replaced }},
}

// latencyText writes a latency in ms: "850 ms", "12.3 ms", "4.21 s"; "–" without samples.
func latencyText(ms float64, n int) string {
	switch {
	case n == 0:
		return "–"
	case ms >= 1000:
		return fmt.Sprintf("%.2f s", ms/1000)
	case ms >= 100:
		return fmt.Sprintf("%.0f ms", ms)
	default:
		return fmt.Sprintf("%.1f ms", ms)
	}
}

// latencyCells are a run's p50 and p99 of a measure; a run with fewer samples than trials
// says how many it has, and a template change that replaced nothing says so.
func latencyCells(run *latencyRun, s latencySummary, replaced bool) []string {
	if run == nil {
		return []string{"not run", "not run"}
	}
	if replaced && s.N == 0 && run.NotReplaced != "" {
		return []string{"never", "never"}
	}
	p50, p99 := latencyText(s.P50Ms, s.N), latencyText(s.P99Ms, s.N)
	if s.N > 0 && s.N < run.Trials {
		p99 += fmt.Sprintf(" (%d of %d trials)", s.N, run.Trials)
	}
	return []string{p50, p99}
}

// latencyRatio is raygate ÷ KubeRay for one quantile, "–" where either lacks samples.
func latencyRatio(g, k latencySummary, q func(latencySummary) float64) string {
	if g.N == 0 || k.N == 0 || q(k) <= 0 {
		return "–"
	}
	return f2(q(g)/q(k)) + "×"
}

// latencyRows are the table's rows for one stage set.
func latencyRows(st latencyStages) [][]string {
	stages := stagesLabel(st.Stages)
	var rows [][]string
	for i, m := range latencyMeasures {
		replaced := i == len(latencyMeasures)-1
		g := m.get(&st.Raygate)
		row := append([]string{m.label, stages}, latencyCells(&st.Raygate, g, replaced)...)
		if st.KubeRay == nil {
			row = append(row, "not run", "not run", "–", "–")
		} else {
			k := m.get(st.KubeRay)
			row = append(row, latencyCells(st.KubeRay, k, replaced)...)
			row = append(row,
				latencyRatio(g, k, func(s latencySummary) float64 { return s.P50Ms }),
				latencyRatio(g, k, func(s latencySummary) float64 { return s.P99Ms }))
		}
		rows = append(rows, row)
		if i == 0 && st.Raygate.ApplyNoWebhooks != nil {
			base := *st.Raygate.ApplyNoWebhooks
			rows = append(rows, []string{"— the same creates with no webhook and no operator (API server alone, raygate's cluster)", stages,
				latencyText(base.P50Ms, base.N), latencyText(base.P99Ms, base.N), "", "", "", ""})
		}
	}
	return rows
}

// renderLatency is the "Latency for one user" section. Results without the scenario render
// without it.
func renderLatency(m *md, r *latencyResult) {
	if r == nil {
		return
	}
	m.WriteString("## 3b. Latency for one user\n\n")
	m.p("What one user waits for on an idle cluster: one RayCluster at a time (the `test/builders` head and %d workers,\n"+
		"`upgradeStrategy: Recreate`), %d trials per operator after one warm-up trial that is not counted, each\n"+
		"operator on its own fresh cluster (raygate first, then KubeRay v1.5.1 with `%s`), for each set of kwok pod\n"+
		"stages run (`-latency-stages`): *fast* (Ready at once: the operators' own latency; the default) and\n"+
		"*general* (1–6 s per pod transition, like a kubelet; kwok's delays dominate). A trial creates\n"+
		"the RayCluster, waits until it is ready, sets the worker group's replicas from %d to %d and waits until every\n"+
		"pod is ready, then changes the worker template (an environment value); then it deletes the RayCluster and\n"+
		"its pods and waits until nothing of it is left, so the next trial starts on an idle cluster. Every pod\n"+
		"template is new to the cluster (an environment value of the trial's own). Times run from sending the\n"+
		"request to the moment the benchmark's watch delivers the event (pod creation timestamps count whole\n"+
		"seconds): the last of the %d pods' first events, the RayCluster's `status.state: ready`, the new pod's\n"+
		"first event, and for the template change the first old pod seen deleting or new pod seen, whichever\n"+
		"comes first. The p99 is the nearest rank: with %d trials, the slowest trial.",
		workersPer, r.Trials, strings.Join(kubeRayRayJobFlags(defaultConcurrency()), " "), workersPer, workersPer+1, r.PodsPerCluster, r.Trials)
	m.p("KubeRay v1.5.1 has no RayCluster upgrade strategy: its RayCluster controller never replaces a pod\n"+
		"because the template changed (pods keep the old template until something else deletes them; new pods get\n"+
		"the new one). The scenario checks it once per run: the first trial's template change is given %.0f s\n"+
		"to replace a pod, and when none is, later trials skip the change (\"never\" below). The replicas change is\n"+
		"the spec change both operators act on. raygate replaces every pod under `Recreate` (its default, `None`,\n"+
		"keeps them, as KubeRay does).", latencyReplaceWindow.Seconds())
	m.p("`kubectl apply` → answer is the round trip of the create request as the client sees it. raygate runs\n" +
		"with its mutating and validating webhooks (the pods' dry-run included); KubeRay runs without its webhook\n" +
		"(the admission scenario compares the two webhooks). The baseline row is the same creates on raygate's\n" +
		"cluster before its operator starts, with the webhook configurations removed: the API server alone.")
	header := []string{"measure", "stages", "raygate p50", "raygate p99", "KubeRay p50", "KubeRay p99", "raygate ÷ KubeRay p50", "p99"}
	var rows [][]string
	for _, st := range r.Runs {
		rows = append(rows, latencyRows(st)...)
	}
	m.table(header, rows)
	for _, st := range r.Runs {
		for _, run := range []*latencyRun{&st.Raygate, st.KubeRay} {
			if run == nil {
				continue
			}
			if run.Error != "" {
				m.p("%s, %s stages: **did not complete** (%d of %d trials) — %s", fleetOperatorLabel(run.System), stagesLabel(st.Stages), run.Trials, r.Trials, firstLine(run.Error))
			}
			if run.NotReplaced != "" {
				m.p("%s, %s stages: %s.", fleetOperatorLabel(run.System), stagesLabel(st.Stages), run.NotReplaced)
			}
		}
	}
	m.p("Scenario duration (all runs, clusters included): %.0f s.", r.DurationSeconds)
}
