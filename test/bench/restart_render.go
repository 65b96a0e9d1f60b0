package main

import (
	"fmt"
	"strings"
)

// targetRestartWrites is issue 42's target for a restart and a handover: a converged fleet
// needs nothing written (leader election's own Lease apart).
const targetRestartWrites = 0

// restartKinds are the two changes of leader, in the order they run.
var restartKinds = []struct {
	label string
	run   func(s *restartSide) *restartRun
}{
	{"SIGKILL and a new process", func(s *restartSide) *restartRun { return s.Kill }},
	{"leader handover (SIGTERM, standby takes over)", func(s *restartSide) *restartRun { return s.Handover }},
}

// restartVerdicts are the restart scenario's rows of the targets table: the writes of the
// new leader after each change of leader. Results without the scenario (saved before it
// existed) get no rows, as they get no section, so re-rendering them changes nothing.
func restartVerdicts(r *restartResult) []verdict {
	target := "0 writes (leases apart): no status rewritten, no pod touched"
	if r == nil {
		return nil
	}
	at := fmt.Sprintf(", %d RayClusters + %d RayServices", r.Clusters, r.Services)
	var v []verdict
	for i, what := range []string{"Writes after a SIGKILL restart", "Writes after a leader handover"} {
		what += at
		g := restartKinds[i].run(&r.Raygate)
		switch {
		case g == nil:
			v = append(v, notRun(what, target, "raygate: "+r.Raygate.Error))
			continue
		case g.Error != "":
			v = append(v, notRun(what, target, "raygate: "+g.Error))
			continue
		}
		measured := "raygate " + restartWriteSummary(g)
		if r.KubeRay != nil {
			if k := restartKinds[i].run(r.KubeRay); k != nil && k.Error == "" {
				measured += "; KubeRay " + restartWriteSummary(k)
			} else {
				measured += "; KubeRay not measured"
			}
		}
		if !r.Raygate.SettledQuiet {
			measured += " (raygate was still writing before the kill)"
		}
		v = append(v, verdict{what, target, measured, status(g.Writes <= targetRestartWrites)})
	}
	return v
}

func restartWriteSummary(r *restartRun) string {
	return fmt.Sprintf("%d (%d status, %d pods)", r.Writes, r.StatusWrites, r.PodWrites)
}

// renderRestart is the "Restart at scale" section. Results without the scenario render
// without it.
func renderRestart(m *md, r *restartResult) {
	if r == nil {
		return
	}
	m.WriteString("## 2e. Restart at scale: SIGKILL and leader handover, raygate and KubeRay\n\n")
	m.p("%d RayClusters (1 head + %d workers each, as in the scale scenario) and %d RayServices (serving\n"+
		"from simulated Ray dashboards, `internal/testenv/raysim`) converge — every RayCluster ready, every\n"+
		"RayService Ready — and the operator then writes nothing but its Lease for %s. Then the leader\n"+
		"is SIGKILLed and a new process started at once: it leads only once the dead leader's Lease has\n"+
		"expired (both operators: 15 s, client-go's default), and client-go counts that from when the new\n"+
		"process first reads the Lease, so the wait is its start-up plus the whole duration. Then a standby replica starts, and the\n"+
		"leader gets SIGTERM: raygate releases its Lease on the way out (`LeaderElectionReleaseOnCancel`),\n"+
		"KubeRay v1.5.1 does not, so its standby waits for expiry again. Times are from the signal;\n"+
		"\"reconciled\" is when the new leader's `controller_runtime_reconcile_total` reached the objects\n"+
		"(raycluster: the RayClusters and the services' clusters; rayservice: the RayServices). Writes are\n"+
		"the operator user's from the signal to %.0f s after that, from the audit log; leader election's\n"+
		"own (the Lease and the events recorded on it) are counted apart, as are the serve configs the\n"+
		"simulated dashboards accepted in the window. In the handover the old leader's\n"+
		"last requests fall in the window too (the same user): its Lease release. CPU is the new leader's\n"+
		"in the window (the SIGKILL's new process: its whole life); peak RSS its VmHWM. Each operator runs\n"+
		"on its own fresh cluster (fast pod stages; pod IPs only written, as in the scale scenario: raygate\n"+
		"reaches the simulators through `--dashboard-url-template`, KubeRay through an HTTP_PROXY that answers\n"+
		"its in-cluster calls from them), leader election on, as its own audited user; KubeRay with `%s`.",
		r.Clusters, workersPer, r.Services, restartSettle, r.QuietSeconds, strings.Join(restartKubeRayFlags(r), " "))
	sides := []*restartSide{&r.Raygate}
	header := []string{"", "raygate"}
	if r.KubeRay != nil {
		sides = append(sides, r.KubeRay)
		header = append(header, "KubeRay", "raygate ÷ KubeRay")
	}
	row := func(label string, val func(s *restartSide) (float64, bool), format func(float64) string, ratio bool) []string {
		out := []string{label}
		vals := make([]float64, len(sides))
		for i, s := range sides {
			v, ok := val(s)
			vals[i] = v
			if ok {
				out = append(out, format(v))
			} else {
				out = append(out, "–")
			}
		}
		if len(sides) == 2 {
			_, ok0 := val(sides[0])
			_, ok1 := val(sides[1])
			out = append(out, fleetRatio(vals[0], vals[1], ratio && ok0 && ok1))
		}
		return out
	}
	n := func(f float64) string { return fmt.Sprint(int(f)) }
	rows := [][]string{
		row("bring-up: first create → all converged, s", func(s *restartSide) (float64, bool) { return s.BringUpSeconds, s.BringUpSeconds > 0 }, f1, false),
	}
	for _, kind := range restartKinds {
		of := func(f func(*restartRun) float64) func(s *restartSide) (float64, bool) {
			return func(s *restartSide) (float64, bool) {
				run := kind.run(s)
				if run == nil || run.Error != "" {
					return 0, false
				}
				return f(run), true
			}
		}
		rows = append(rows,
			[]string{"**" + kind.label + "**"},
			row("signal → new process ready, s", func(s *restartSide) (float64, bool) {
				v, ok := of(func(r *restartRun) float64 { return r.ReadySeconds })(s)
				return v, ok && v > 0 // a standby was ready before the signal
			}, f1, false),
			row("**signal → leads again, s**", of(func(r *restartRun) float64 { return r.LeadSeconds }), f1, true),
			row("**signal → every object reconciled, s**", of(func(r *restartRun) float64 { return r.ReconciledSeconds }), f1, true),
			row("**writes** (leases apart)", of(func(r *restartRun) float64 { return float64(r.Writes) }), n, true),
			row("of which status writes", of(func(r *restartRun) float64 { return float64(r.StatusWrites) }), n, false),
			row("of which pod writes", of(func(r *restartRun) float64 { return float64(r.PodWrites) }), n, false),
			row("Lease and leader election event writes", of(func(r *restartRun) float64 { return float64(r.LeaseWrites) }), n, false),
			row("serve configs submitted again", of(func(r *restartRun) float64 { return float64(r.ServeSubmissions) }), n, false),
			row("new leader's CPU s", of(func(r *restartRun) float64 { return r.CPUSeconds }), f1, true),
			row("new leader's peak RSS MB", of(func(r *restartRun) float64 { return r.PeakRSSMB }), f1, true),
		)
	}
	for i := range rows {
		for len(rows[i]) < len(header) {
			rows[i] = append(rows[i], "")
		}
	}
	m.table(header, rows)
	for _, s := range sides {
		if s.ExtraClusters > 0 {
			m.p("%s still had %d RayClusters beyond one per object %s after the fleet converged; they were there when it was killed.",
				fleetOperatorLabel(s.Operator), s.ExtraClusters, restartSettleTimeout)
		}
		if !s.SettledQuiet && s.Error == "" {
			m.p("%s was still writing %s after the fleet converged and was killed anyway.", fleetOperatorLabel(s.Operator), restartSettleTimeout)
		}
		if s.Error != "" {
			m.p("%s: **did not complete** — %s", fleetOperatorLabel(s.Operator), firstLine(s.Error))
		}
	}
	for _, s := range sides {
		for _, kind := range restartKinds {
			if run := kind.run(s); run != nil && run.Error == "" {
				m.p("%s's writes after the %s: %s.", fleetOperatorLabel(s.Operator), kind.label, writeList(run.WritesByKind))
			}
		}
	}
	m.p("Scenario duration (both operators, clusters included): %.0f s.", r.DurationSeconds)
}

// writeList is "verb resource n, …", largest first, or "none".
func writeList(byKind map[string]int) string {
	if len(byKind) == 0 {
		return "none"
	}
	var parts []string
	for _, c := range sortedCounts(byKind) {
		parts = append(parts, fmt.Sprintf("%s %d", c.Key, c.Value))
	}
	return strings.Join(parts, ", ")
}

// restartKubeRayFlags are the flags KubeRay ran with (those of the current code when the
// results do not say).
func restartKubeRayFlags(r *restartResult) []string {
	if r.KubeRay != nil && len(r.KubeRay.Flags) > 0 {
		return r.KubeRay.Flags
	}
	return append(kubeRayRayJobFlags(defaultConcurrency()), "--enable-leader-election=true", "--leader-election-namespace="+restartLeaseNamespace)
}
