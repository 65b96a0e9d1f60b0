package plan

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

// Every upgrade action at every phase of an upgrade, in the simulated world: the upgrade
// invariants (invariants_test.go) and the action's own rules are judged on every pass, each
// case runs straight and with an operator restart between the pass that records the action
// and the passes that carry it out, and both runs must end the same way.
//
// Phases the world cannot reach for NewCluster: it has no capacity or traffic steps (the
// Services switch at once when the pending applications run) and no rollback walk (a spec
// that goes back drops the pending cluster in one pass), so only "pending starting" exists.

const (
	endPromoted   = "promoted"
	endRolledBack = "rolled back"
	endPaused     = "still paused"
	// phaseMaxPasses bounds the passes from the action to the end state.
	phaseMaxPasses = 300
)

// upgradePhase is where an upgrade is when the action comes.
type upgradePhase struct {
	name       string
	newCluster bool
	// reach runs the upgrade to the phase from a settled world.
	reach func(t *testing.T, w *world, c *checker)
	// resumed and promoted are how resume (after a pause) and promote end.
	resumed, promoted string
}

// untilStatus runs the upgrade until a stored status says done.
func untilStatus(what string, done func(st rayv1.RayServiceStatuses) bool) func(*testing.T, *world, *checker) {
	return func(t *testing.T, w *world, c *checker) {
		t.Helper()
		checked(t, w, c, what, func(p *reconciled) bool {
			return p.written && p.out.Status.PendingServiceStatus.RayClusterName != "" && done(p.out.Status)
		})
	}
}

func pendingCapacity(st rayv1.RayServiceStatuses) int32 {
	return ptr.Deref(st.PendingServiceStatus.TargetCapacity, 0)
}

func startingPhase(t *testing.T, w *world, c *checker) {
	t.Helper()
	untilStatus("a pending cluster", func(rayv1.RayServiceStatuses) bool { return true })(t, w, c)
	if pc := w.clusters[w.svc.Status.PendingServiceStatus.RayClusterName]; pc == nil || pc.ready(w.now) || len(pc.apps) != 0 {
		t.Fatal("the pending cluster is already up: the phase is not 'starting'")
	}
}

var upgradePhases = []upgradePhase{
	{name: "incremental/pending starting", reach: startingPhase, resumed: endPromoted, promoted: endPromoted},
	{name: "incremental/capacity raised", resumed: endPromoted, promoted: endPromoted,
		reach: untilStatus("pending capacity without traffic", func(st rayv1.RayServiceStatuses) bool {
			return pendingCapacity(st) > 0 && pendingTraffic(st) == 0
		})},
	{name: "incremental/traffic 50-50", resumed: endPromoted, promoted: endPromoted,
		reach: untilStatus("50% traffic", func(st rayv1.RayServiceStatuses) bool { return pendingTraffic(st) == 50 })},
	{name: "incremental/after the last traffic step", resumed: endPromoted, promoted: endPromoted,
		reach: untilStatus("100% traffic before promotion", func(st rayv1.RayServiceStatuses) bool { return pendingTraffic(st) == 100 })},
	// The spec goes back to the active cluster's at 50%: a rollback (one step taken). Resume
	// and promote apply to the pending cluster, but the goal is the active cluster's spec,
	// so the walk back goes on.
	{name: "incremental/rolling back", resumed: endRolledBack, promoted: endRolledBack,
		reach: func(t *testing.T, w *world, c *checker) {
			untilStatus("50% traffic", func(st rayv1.RayServiceStatuses) bool { return pendingTraffic(st) == 50 })(t, w, c)
			w.updateSpec(func(s *rayv1.RayService) { setTestImage(s, builders.DefaultImage) })
			untilStatus("a rollback step", func(st rayv1.RayServiceStatuses) bool {
				return condition(st, rayv1.RollbackInProgress) == "True/"+rollbackReason(st) && pendingTraffic(st) == 25
			})(t, w, c)
		}},
	{name: "NewCluster/pending starting", newCluster: true, reach: startingPhase, resumed: endPromoted, promoted: endPromoted},
}

func rollbackReason(st rayv1.RayServiceStatuses) string {
	if c := findCondition(st.Conditions, rayv1.RollbackInProgress); c != nil {
		return c.Reason
	}
	return ""
}

// phaseRun is how one case went.
type phaseRun struct {
	end    string
	trail  []string // the distinct splits the stored status went through after the action
	passes int      // from the action to the end state
}

// phaseGuard judges every pass of a case: the world's invariants and the action's rules.
type phaseGuard struct {
	t           *testing.T
	w           *world
	c           *checker
	blue, green string
	step        int32
	incremental bool
	// mode is the action being carried out ("" before any); frozen the status when a
	// pause was recorded.
	mode, frozen string
	// recording: the pass under way records the action.
	recording bool
	run       phaseRun
}

func newPhaseGuard(t *testing.T, ph upgradePhase) *phaseGuard {
	t.Helper()
	svc := incrementalService(50, 25, 1)
	if ph.newCluster {
		svc = builders.RayService("svc", "ns").DeletionDelay(30).Obj()
	}
	w := newWorld(svc)
	settle(t, w)
	c := newChecker()
	w.updateSpec(func(s *rayv1.RayService) { setTestImage(s, "rayproject/ray:2.53.0") })
	ph.reach(t, w, c)
	st := w.svc.Status
	return &phaseGuard{t: t, w: w, c: c, blue: st.ActiveServiceStatus.RayClusterName, green: st.PendingServiceStatus.RayClusterName,
		step: w.desired().Pacing.Step, incremental: !ph.newCluster}
}

// pass runs one pass (advancing the clock after it unless hold) and judges it.
func (g *phaseGuard) pass(hold bool) *reconciled {
	g.t.Helper()
	p, err := g.w.reconcile()
	if err != nil {
		g.t.Fatal(err)
	}
	bad := append(g.c.check(p), g.rules(p)...)
	if len(bad) > 0 {
		g.t.Fatalf("%q, pass %d (%s): %v", g.mode, p.index, r2s(p.out.Status), bad)
	}
	if s := r2s(p.out.Status); p.written && g.mode != "" && (len(g.run.trail) == 0 || g.run.trail[len(g.run.trail)-1] != s) {
		g.run.trail = append(g.run.trail, s)
	}
	if g.mode != "" {
		g.run.passes++
	}
	if !hold {
		g.w.advance(g.w.untilNext(p.out.Wake.After(g.w.now, time.Second, time.Minute)))
	}
	return p
}

// rules are the action's own invariants, beyond the world's.
func (g *phaseGuard) rules(p *reconciled) []string {
	var bad []string
	st, next := p.stored, p.out.Status
	for _, n := range p.deleted {
		if n == g.blue && st.ActiveServiceStatus.RayClusterName == g.blue {
			bad = append(bad, "the active cluster is deleted before promotion")
		}
	}
	samePending := next.PendingServiceStatus.RayClusterName == g.green && st.PendingServiceStatus.RayClusterName == g.green
	from, to := pendingTraffic(st), pendingTraffic(next)
	switch g.mode {
	case rayv1.UpgradeActionPause:
		if r2s(next) != g.frozen {
			bad = append(bad, fmt.Sprintf("paused, yet the status moved to %s (was %s)", r2s(next), g.frozen))
		}
		// A step recorded before the pause may still reach the route, nothing else may.
		if b, a := p.before.weights, p.after.weights; a != nil && b != nil && a[g.green] != b[g.green] && a[g.green] != pendingTraffic(next) {
			bad = append(bad, fmt.Sprintf("paused, yet the route moved %d%% -> %d%%", b[g.green], a[g.green]))
		}
		for n, tc := range p.tcAfter {
			if before := p.recorded[n].TargetCapacity; before != nil && tc != nil && *tc != *before && *tc != capacityIn(next, n) {
				bad = append(bad, fmt.Sprintf("paused, yet %s runs capacity %d%% (was %d%%)", n, *tc, *before))
			}
		}
	case rayv1.UpgradeActionAbort:
		if samePending && (to > from || from-to > g.step) {
			bad = append(bad, fmt.Sprintf("abort moved pending traffic %d%% -> %d%% (step %d%%)", from, to, g.step))
		}
		if samePending && pendingCapacity(next) > pendingCapacity(st) {
			bad = append(bad, "abort raised the pending capacity")
		}
		if b, a := p.before.weights, p.after.weights; a != nil && b != nil && (a[g.green] > b[g.green] || b[g.green]-a[g.green] > g.step) {
			bad = append(bad, fmt.Sprintf("abort moved the route %d%% -> %d%%", b[g.green], a[g.green]))
		}
		if len(actionsOf[CreateCluster](p.out)) != 0 {
			bad = append(bad, "a cluster is created during an abort")
		}
	case rayv1.UpgradeActionPromote:
		if g.incremental && samePending && to > from && pendingCapacity(st) < 100 {
			bad = append(bad, fmt.Sprintf("promote moved traffic to %d%% before the pending capacity reached 100%% (%d%%)", to, pendingCapacity(st)))
		}
	}
	if g.mode != "" && !g.recording && len(eventsOf(p.out, reasonOfAction(g.mode))) != 0 {
		bad = append(bad, g.mode+" was recorded (announced) again")
	}
	return bad
}

func capacityIn(st rayv1.RayServiceStatuses, name string) int32 {
	if name == st.ActiveServiceStatus.RayClusterName {
		return ptr.Deref(st.ActiveServiceStatus.TargetCapacity, 100)
	}
	return ptr.Deref(st.PendingServiceStatus.TargetCapacity, 0)
}

func reasonOfAction(action string) string {
	return map[string]string{rayv1.UpgradeActionPause: ReasonUpgradePaused, rayv1.UpgradeActionResume: ReasonUpgradeResumed,
		rayv1.UpgradeActionAbort: ReasonUpgradeAborting, rayv1.UpgradeActionPromote: ReasonUpgradePromoting}[action]
}

// record sets the action and runs the pass that records it; restart then drops everything
// the operator held in memory, so the passes after re-plan from what is stored.
func (g *phaseGuard) record(action string, restart bool) {
	g.t.Helper()
	before := r2s(g.w.svc.Status)
	if action != rayv1.UpgradeActionResume {
		// The last step takes effect first (the route follows the stored status one pass
		// later), so the next step would be due in the recording pass.
		g.pass(true)
		g.w.advance(2 * time.Second)
		if r2s(g.w.svc.Status) != before {
			g.t.Fatalf("the upgrade left the phase before the action: %s", r2s(g.w.svc.Status))
		}
	}
	act(g.w, action, g.green)
	if action == rayv1.UpgradeActionResume {
		g.mode = action // resume is carried out in the pass that records it
	}
	g.recording = true
	p := g.pass(true)
	g.recording = false
	if !p.written || p.out.Metrics.ActionRecorded != action || len(eventsOf(p.out, reasonOfAction(action))) != 1 {
		g.t.Fatalf("%s not recorded: written %v, recorded %q, events %v", action, p.written, p.out.Metrics.ActionRecorded, p.out.Events)
	}
	if action != rayv1.UpgradeActionResume && r2s(p.out.Status) != before {
		g.t.Fatalf("the pass recording %s moved the upgrade: %s (was %s)", action, r2s(p.out.Status), before)
	}
	g.mode, g.frozen, g.run = action, before, phaseRun{trail: []string{r2s(p.out.Status)}}
	if restart {
		g.w.restartOperator()
		g.w.want = nil
	}
	g.w.advance(g.w.untilNext(p.out.Wake.After(g.w.now, time.Second, time.Minute)))
}

// hold runs passes for a while (many intervals) during a pause.
func (g *phaseGuard) hold() {
	g.t.Helper()
	start := g.w.now
	for i := 0; i < 20 || g.w.now.Sub(start) < 20*time.Second; i++ {
		if i == phaseMaxPasses {
			g.t.Fatal("the pause did not last 20 s within the pass bound")
		}
		g.pass(false)
	}
	if got := condition(g.w.svc.Status, rayv1.UpgradeAction); got != "True/"+ReasonUpgradePaused {
		g.t.Errorf("UpgradeAction during the pause: %s", got)
	}
}

// finish runs the upgrade to its end and says how it ended.
func (g *phaseGuard) finish() string {
	g.t.Helper()
	for range phaseMaxPasses {
		g.pass(false)
		if st := g.w.svc.Status; st.PendingServiceStatus.RayClusterName == "" {
			switch st.ActiveServiceStatus.RayClusterName {
			case g.green:
				return endPromoted
			case g.blue:
				return endRolledBack
			}
			g.t.Fatalf("active %s after the upgrade from %s to %s", st.ActiveServiceStatus.RayClusterName, g.blue, g.green)
		}
	}
	g.t.Fatalf("%s: no end within %d passes: %s", g.mode, phaseMaxPasses, r2s(g.w.svc.Status))
	return ""
}

// runPhaseAction runs one case: the action at the phase (resume: after a pause held for a
// while), with or without an operator restart after the pass that records it.
func runPhaseAction(t *testing.T, ph upgradePhase, action string, restart bool) phaseRun {
	t.Helper()
	g := newPhaseGuard(t, ph)
	if action == rayv1.UpgradeActionResume {
		g.record(rayv1.UpgradeActionPause, false)
		g.hold()
	}
	g.record(action, restart)
	if action == rayv1.UpgradeActionPause {
		g.hold()
		g.run.end = endPaused
		if a, q := g.w.svc.Status.ActiveServiceStatus.RayClusterName, g.w.svc.Status.PendingServiceStatus.RayClusterName; a != g.blue || q != g.green {
			t.Errorf("paused upgrade from %s to %s is now %s to %s", g.blue, g.green, a, q)
		}
		return g.run
	}
	g.run.end = g.finish()
	if action == rayv1.UpgradeActionAbort {
		// The aborted spec is held (the abort rule fails a pass that creates a cluster).
		for range 10 {
			g.pass(false)
		}
	}
	return g.run
}

func TestPlanEveryActionAtEveryPhase(t *testing.T) {
	for _, ph := range upgradePhases {
		for _, action := range rayv1.UpgradeActions {
			want := map[string]string{rayv1.UpgradeActionPause: endPaused, rayv1.UpgradeActionResume: ph.resumed,
				rayv1.UpgradeActionAbort: endRolledBack, rayv1.UpgradeActionPromote: ph.promoted}[action]
			t.Run(ph.name+"/"+action, func(t *testing.T) {
				straight := runPhaseAction(t, ph, action, false)
				restarted := runPhaseAction(t, ph, action, true)
				if straight.end != want || restarted.end != want {
					t.Errorf("ends %q straight, %q after a restart; want %q", straight.end, restarted.end, want)
				}
				if fmt.Sprint(straight.trail) != fmt.Sprint(restarted.trail) {
					t.Errorf("the restart changed the way:\nstraight:  %v\nrestarted: %v", straight.trail, restarted.trail)
				}
				t.Logf("%s in %d passes (%d after a restart): %v", straight.end, straight.passes, restarted.passes, straight.trail)
			})
		}
	}
}
