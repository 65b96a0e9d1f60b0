package main

import (
	"fmt"
	"strings"
)

// Targets of issue 35's benchmark.
const (
	targetRayJobKubeRayRatio = 0.8 // time to all SUCCEEDED ÷ KubeRay's
	targetRayJobWritesRatio  = 1.15
	targetDuplicates         = 0
)

// rayJobVerdicts are the rayjob scenario's rows of the targets table: time against KubeRay's,
// writes per RayJob against the minimum, and no duplicate submission by either operator.
func rayJobVerdicts(r *rayJobResult) []verdict {
	timeWhat, timeTarget := "Time to all SUCCEEDED vs KubeRay", fmt.Sprintf("≤ %s× KubeRay", ratioText(targetRayJobKubeRayRatio))
	writesWhat, writesTarget := "Writes per RayJob", fmt.Sprintf("≤ %s× the minimum", ratioText(targetRayJobWritesRatio))
	dupWhat := "Duplicate submissions at the Jobs API"
	if r == nil {
		why := "the rayjob scenario did not run"
		return []verdict{notRun(timeWhat, timeTarget, why), notRun(writesWhat, writesTarget, why), notRun(dupWhat, "0", why)}
	}
	at := fmt.Sprintf(", %d RayJobs (%s)", r.Jobs, r.Mode)
	timeWhat, writesWhat, dupWhat = timeWhat+at, writesWhat+at, dupWhat+at
	writesTarget = fmt.Sprintf("≤ %s× the minimum (%d)", ratioText(targetRayJobWritesRatio), r.MinWritesPerJob)
	g := r.Raygate
	var v []verdict
	switch k := r.KubeRay; {
	case g.Error != "" || g.Seconds <= 0:
		v = append(v, notRun(timeWhat, timeTarget, "raygate: "+g.Error))
	case k == nil:
		v = append(v, notRun(timeWhat, timeTarget, "KubeRay not run"))
	case k.Error != "" || k.Seconds <= 0:
		v = append(v, notRun(timeWhat, timeTarget, "KubeRay: "+k.Error))
	default:
		ratio := g.Seconds / k.Seconds
		v = append(v, verdict{timeWhat, timeTarget, fmt.Sprintf("%.2f× (%.1f s vs %.1f s)", ratio, g.Seconds, k.Seconds), status(ratio <= targetRayJobKubeRayRatio)})
	}
	if g.Error != "" || g.WritesPerJob <= 0 || r.MinWritesPerJob <= 0 {
		v = append(v, notRun(writesWhat, writesTarget, "raygate: "+g.Error+" (no audit log counts)"))
	} else {
		ratio := g.WritesPerJob / float64(r.MinWritesPerJob)
		v = append(v, verdict{writesWhat, writesTarget, fmt.Sprintf("%.2f× (%.1f)", ratio, g.WritesPerJob), status(ratio <= targetRayJobWritesRatio)})
	}
	// Duplicates are counted whether or not the run completed: one is a failure either way.
	measured := fmt.Sprintf("raygate %d (%d submissions for %d RayJobs)", g.DuplicateSubmissions, g.Submissions, g.JobsSubmitted)
	ok := g.DuplicateSubmissions <= targetDuplicates && g.JobsSubmitted > 0
	if k := r.KubeRay; k != nil {
		measured += fmt.Sprintf("; KubeRay %d (%d for %d)", k.DuplicateSubmissions, k.Submissions, k.JobsSubmitted)
	}
	if g.JobsSubmitted == 0 {
		return append(v, notRun(dupWhat, "0", "raygate submitted nothing: "+g.Error))
	}
	return append(v, verdict{dupWhat, "0", measured, status(ok)})
}

// kubeRaySettings says how KubeRay was run: the flags the scenario gave it (results from
// before kubeRayRayJobFlags ran it with its defaults).
func kubeRaySettings(k *rayJobRun) string {
	if k == nil || len(k.Flags) == 0 {
		return "its defaults, its own RayJob CRD"
	}
	return "its own RayJob CRD; `" + strings.Join(k.Flags, " ") + "`: raygate's concurrency, and a client-side\n" +
		"request limit that does not bind, as raygate has none; KubeRay's defaults are one worker and 100 QPS"
}

// rayJobStopRule says when a run gives up, for results measured with kubeRayRayJobFlags
// (before them, the harness stopped after 90 s without a new success).
func rayJobStopRule(r *rayJobResult) string {
	if r.KubeRay == nil || len(r.KubeRay.Flags) == 0 {
		return ""
	}
	return fmt.Sprintf(" A run stops when no RayJob changed status for %.0f s, or\nafter %.0f min.",
		rayJobStall.Seconds(), rayJobWaitTimeout(r.Jobs).Minutes())
}

// renderRayJob is the "RayJobs" section: raygate and KubeRay side by side. Results without
// the scenario render without the section.
func renderRayJob(m *md, r *rayJobResult) {
	if r == nil {
		return
	}
	m.WriteString("## 2d. RayJobs: many short jobs, raygate and KubeRay\n\n")
	m.p("%d RayJobs (`submissionMode: %s`, each creating a RayCluster of the `test/builders` head and one\n"+
		"worker) are created across %d namespaces by %d parallel clients, and the clock runs until the last one\n"+
		"is `Complete` with `jobStatus: SUCCEEDED`. The simulated Jobs API (`internal/testenv/raysim`) keeps each\n"+
		"job PENDING for %.1f s and RUNNING for %.1f s; in K8sJobMode kube-controller-manager's Job controller\n"+
		"creates the submitter pods, kwok runs them, and `framework.Submitters` carries out their `ray job submit`\n"+
		"scripts against the same simulators. Each operator runs on its own fresh cluster, minutes apart, as its\n"+
		"own audited user: raygate (its defaults, `--reconcile-concurrency` %d) reaches the Jobs API through\n"+
		"`--dashboard-url-template`; KubeRay v1.5.1 (%s) through an HTTP_PROXY on\n"+
		"loopback that answers its in-cluster dashboard calls from the same simulators. Duplicate submissions\n"+
		"are counted at the simulated Jobs APIs: every POST after a cluster's first (each cluster belongs to\n"+
		"one RayJob attempt), accepted or refused.%s",
		r.Jobs, r.Mode, r.Namespaces, createWorkers, r.PendingSeconds, r.RunSeconds, defaultConcurrency(),
		kubeRaySettings(r.KubeRay), rayJobStopRule(r))
	var rows [][]string
	for _, w := range r.MinWrites {
		rows = append(rows, []string{w.What, fmt.Sprint(w.Count)})
	}
	rows = append(rows, []string{"**minimum per RayJob**", fmt.Sprintf("**%d**", r.MinWritesPerJob)})
	m.p("The minimum writes per RayJob (`minRayJobWrites` in test/bench/rayjob.go says why each is needed). The\n" +
		"cluster's share is the scale scenario's minimum for its pods. Three status writes: Initializing (the job id\n" +
		"and cluster name stored before anything is created or sent, so nothing is submitted twice), Running,\n" +
		"Complete; a PENDING or RUNNING that a status read happens to see is written too, above the minimum.\n" +
		"One event per object created and one when the job ends (Kubernetes' Job controller records a job's end;\n" +
		"KubeRay v1.5.1 records none):")
	m.table([]string{"write", "per RayJob"}, rows)

	runs := []*rayJobRun{&r.Raygate}
	header := []string{"", "raygate"}
	if r.KubeRay != nil {
		runs = append(runs, r.KubeRay)
		header = append(header, "KubeRay", "raygate ÷ KubeRay")
	}
	row := func(label string, val func(x *rayJobRun) float64, format func(float64) string, ratio bool) []string {
		out := []string{label}
		for _, x := range runs {
			out = append(out, format(val(x)))
		}
		if len(runs) == 2 {
			out = append(out, fleetRatio(val(runs[0]), val(runs[1]), ratio))
		}
		return out
	}
	n := func(f float64) string { return fmt.Sprint(int(f)) }
	usage := func(get func(u *processUsage) float64) func(x *rayJobRun) float64 {
		return func(x *rayJobRun) float64 {
			if x.Usage == nil {
				return 0
			}
			return get(x.Usage)
		}
	}
	m.table(header, [][]string{
		row("RayJobs SUCCEEDED", func(x *rayJobRun) float64 { return float64(x.Succeeded) }, n, false),
		row("**first create → last SUCCEEDED, s**", func(x *rayJobRun) float64 { return x.Seconds }, f1, true),
		row("**writes per RayJob**", func(x *rayJobRun) float64 { return x.WritesPerJob }, f2, true),
		row("writes per RayJob ÷ the minimum", func(x *rayJobRun) float64 { return x.WritesPerJob / float64(r.MinWritesPerJob) }, f2, false),
		row("**duplicate submissions**", func(x *rayJobRun) float64 { return float64(x.DuplicateSubmissions) }, n, false),
		row("Jobs API submissions", func(x *rayJobRun) float64 { return float64(x.Submissions) }, n, false),
		row("operator peak RSS MB", usage(func(u *processUsage) float64 { return u.PeakRSSMB }), f1, true),
		row("operator CPU s", usage(func(u *processUsage) float64 { return u.CPUSeconds }), f1, true),
		row("409 conflicts", func(x *rayJobRun) float64 {
			if x.Requests == nil {
				return 0
			}
			return float64(x.Requests.Conflicts)
		}, n, false),
	})
	for _, x := range runs {
		if x.Error != "" {
			m.p("%s: **did not complete** — %s", fleetOperatorLabel(x.System), firstLine(x.Error))
		}
	}
	for _, x := range runs {
		if x.Requests == nil || len(x.Requests.WritesByKind) == 0 {
			continue
		}
		var parts []string
		for _, c := range sortedCounts(x.Requests.WritesByKind) {
			parts = append(parts, fmt.Sprintf("%s %s", c.Key, f2(float64(c.Value)/float64(r.Jobs))))
		}
		m.p("%s's writes per RayJob, from its start to the last SUCCEEDED: %s.", fleetOperatorLabel(x.System), strings.Join(parts, ", "))
	}
	m.p("Scenario duration (both operators, clusters included): %.0f s.", r.DurationSeconds)
}
