package plan

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

func TestDecideControl(t *testing.T) {
	up := controlInputs{Active: "a", Pending: "p", PendingHash: "hp", GoalHash: "hp"}
	with := func(base controlInputs, f func(*controlInputs)) controlInputs { f(&base); return base }
	cases := []struct {
		name              string
		in                controlInputs
		mode              ctlMode
		reason            string
		recorded, release bool
		abortedHash       string
	}{
		{name: "no action", in: up, mode: ctlNone},
		{name: "pause the pending cluster", in: with(up, func(c *controlInputs) { c.Action, c.Target = "pause", "p" }), mode: ctlPaused, reason: ReasonUpgradePaused},
		{name: "pause aimed at another upgrade is inert", in: with(up, func(c *controlInputs) { c.Action, c.Target = "pause", "old" }), mode: ctlNone},
		{name: "promote", in: with(up, func(c *controlInputs) { c.Action, c.Target = "promote", "p" }), mode: ctlPromoting, reason: ReasonUpgradePromoting},
		{name: "abort records the pending spec hash", in: with(up, func(c *controlInputs) { c.Action, c.Target = "abort", "p" }), mode: ctlAborting, reason: ReasonUpgradeAborting, abortedHash: "hp"},
		{name: "resume without target", in: with(up, func(c *controlInputs) { c.Action = "resume" }), mode: ctlResumed, reason: ReasonUpgradeResumed},
		{name: "no upgrade: a first cluster is not controlled", in: controlInputs{Pending: "p", Action: "pause", Target: "p"}, mode: ctlNone},
		{name: "aborted spec held", in: controlInputs{Active: "a", Action: "abort", Target: "p", AbortedHash: "hp", GoalHash: "hp"}, mode: ctlAborted, reason: ReasonUpgradeAborted, abortedHash: "hp"},
		{name: "a changed spec is upgraded to despite the abort", in: controlInputs{Active: "a", Action: "abort", Target: "p", AbortedHash: "hp", GoalHash: "h2"}, mode: ctlNone},
		{name: "resume after an abort releases the hold", in: controlInputs{Active: "a", Action: "resume", AbortedHash: "hp", GoalHash: "hp"}, mode: ctlNone, release: true},
		{name: "stored condition: recorded", in: with(up, func(c *controlInputs) {
			c.Action, c.Target = "pause", "p"
			c.Stored = &metav1.Condition{Status: metav1.ConditionTrue, Reason: ReasonUpgradePaused,
				Message: "the upgrade to RayCluster p is paused (raygate.ray.io/upgrade-action=pause): capacity and traffic stay where they are until resume, abort or promote"}
		}), mode: ctlPaused, reason: ReasonUpgradePaused, recorded: true},
		{name: "stored condition of another action: not recorded", in: with(up, func(c *controlInputs) {
			c.Action, c.Target = "promote", "p"
			c.Stored = &metav1.Condition{Status: metav1.ConditionTrue, Reason: ReasonUpgradePaused}
		}), mode: ctlPromoting, reason: ReasonUpgradePromoting},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := decideControl(tc.in)
			if c.Mode != tc.mode || c.Reason != tc.reason || c.Recorded != tc.recorded || c.Release != tc.release || c.AbortedHash != tc.abortedHash {
				t.Errorf("got mode %d reason %q recorded %v release %v aborted %q; want %d %q %v %v %q",
					c.Mode, c.Reason, c.Recorded, c.Release, c.AbortedHash, tc.mode, tc.reason, tc.recorded, tc.release, tc.abortedHash)
			}
			// Anything not yet recorded holds the upgrade for the pass that records it.
			if want := tc.mode == ctlPaused || (tc.reason != "" && !tc.recorded && tc.mode != ctlResumed); c.frozen() != want {
				t.Errorf("frozen %v, want %v", c.frozen(), want)
			}
		})
	}
}

func TestPromoteStepPutsCapacityBeforeTraffic(t *testing.T) {
	now := t0
	s := split{ActiveCapacity: 80, PendingCapacity: 40, PendingTraffic: 25}
	var got []string
	for range 5 {
		st := promoteStep(s, now)
		got = append(got, st.Kind.String()+" "+st.Next.String())
		if st.Kind == stepComplete {
			break
		}
		if st.Next.PendingTraffic > st.Next.PendingCapacity || st.Next.ActiveTraffic() > st.Next.ActiveCapacity {
			t.Fatalf("traffic beyond capacity after %s", st.Next)
		}
		s = st.Next
	}
	want := []string{
		"grow target capacity capacity active 80% / pending 100%, traffic active 75% / pending 25%",
		"shift traffic capacity active 80% / pending 100%, traffic active 0% / pending 100%",
		"shrink source capacity capacity active 0% / pending 100%, traffic active 0% / pending 100%",
		"complete capacity active 0% / pending 100%, traffic active 0% / pending 100%",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("promotion steps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// act sets the upgrade action annotations, as kubectl raygate does (no new generation).
func act(w *world, action, target string) {
	if w.svc.Annotations == nil {
		w.svc.Annotations = map[string]string{}
	}
	w.svc.Annotations[rayv1.UpgradeActionKey] = action
	w.svc.Annotations[rayv1.UpgradeTargetKey] = target
	w.want = nil // the controller reads the annotations on every pass
}

// checked runs passes until done, failing on any invariant breach.
func checked(t *testing.T, w *world, c *checker, what string, done func(*reconciled) bool) *reconciled {
	t.Helper()
	return stepUntil(t, w, what, func(p *reconciled) bool {
		if breaches := c.check(p); len(breaches) > 0 {
			t.Fatalf("pass %d: %v", p.index, breaches)
		}
		return done(p)
	})
}

func pendingTraffic(st rayv1.RayServiceStatuses) int32 {
	return ptr.Deref(st.PendingServiceStatus.TrafficRoutedPercent, 0)
}

// midShift starts an incremental upgrade (surge 50, step 10, 1 s) and runs it until 20% of
// the traffic moved.
func midShift(t *testing.T) (*world, *checker, string, string) {
	w := newWorld(incrementalService(50, 10, 1))
	settle(t, w)
	c := newChecker()
	w.updateSpec(func(s *rayv1.RayService) { setTestImage(s, "rayproject/ray:2.53.0") })
	checked(t, w, c, "20% traffic on the pending cluster", func(p *reconciled) bool { return p.written && pendingTraffic(p.out.Status) == 20 })
	return w, c, w.svc.Status.ActiveServiceStatus.RayClusterName, w.svc.Status.PendingServiceStatus.RayClusterName
}

func TestPlanPauseFreezesAndResumeContinues(t *testing.T) {
	w, c, _, green := midShift(t)
	act(w, rayv1.UpgradeActionPause, green)
	p, _ := w.reconcile()
	if got := condition(p.out.Status, rayv1.UpgradeAction); got != "True/UpgradePaused" || len(eventsOf(p.out, ReasonUpgradePaused)) != 1 || p.out.Metrics.ActionRecorded != "pause" {
		t.Fatalf("recording pass: condition %s, events %v, counted %q", got, p.out.Events, p.out.Metrics.ActionRecorded)
	}
	frozen := w.svc.Status.DeepCopy()
	for i := range 30 {
		w.advance(time.Second)
		p, _ = w.reconcile()
		if breaches := c.check(p); len(breaches) > 0 {
			t.Fatal(breaches)
		}
		if s := r2s(p.out.Status); s != r2s(*frozen) {
			t.Fatalf("pass %d after the pause moved the upgrade: %s, was %s", i, s, r2s(*frozen))
		}
		if len(eventsOf(p.out, ReasonUpgradePaused)) != 0 {
			t.Fatal("the pause is announced again")
		}
	}
	if msg := findCondition(w.svc.Status.Conditions, rayv1.UpgradeInProgress).Message; !strings.Contains(msg, "paused by raygate.ray.io/upgrade-action=pause") {
		t.Errorf("UpgradeInProgress does not say it is paused: %s", msg)
	}
	act(w, rayv1.UpgradeActionResume, "")
	checked(t, w, c, "the promotion", func(p *reconciled) bool { return p.out.Status.ActiveServiceStatus.RayClusterName == green })
	p, _ = w.reconcile()
	if got := condition(p.out.Status, rayv1.UpgradeAction); got != "" {
		t.Errorf("UpgradeAction after the upgrade: %s (an action for a finished upgrade is inert)", got)
	}
}

func r2s(st rayv1.RayServiceStatuses) string {
	return fmt.Sprintf("%s/%s %v", st.ActiveServiceStatus.RayClusterName, st.PendingServiceStatus.RayClusterName, splitOf(st.ActiveServiceStatus, st.PendingServiceStatus))
}

func TestPlanAbortWalksBackAndHoldsTheSpec(t *testing.T) {
	w, c, blue, green := midShift(t)
	act(w, rayv1.UpgradeActionAbort, green)
	before := r2s(w.svc.Status)
	p, _ := w.reconcile()
	annotated := actionsOf[AnnotateCluster](p.out)
	if len(annotated) != 1 || annotated[0].Cluster.Name != blue || annotated[0].Annotations[rayv1.AbortedSpecHashKey] == "" {
		t.Fatalf("the abort is recorded on the active cluster first: %v", annotated)
	}
	if r2s(p.out.Status) != before || condition(p.out.Status, rayv1.UpgradeAction) != "True/UpgradeAborting" {
		t.Fatalf("recording pass moved: %s (was %s), condition %s", r2s(p.out.Status), before, condition(p.out.Status, rayv1.UpgradeAction))
	}
	var traffic []int32
	checked(t, w, c, "the pending cluster dropped", func(p *reconciled) bool {
		if v := pendingTraffic(p.out.Status); p.written && (len(traffic) == 0 || traffic[len(traffic)-1] != v) {
			traffic = append(traffic, v)
		}
		return p.out.Status.PendingServiceStatus.RayClusterName == ""
	})
	if fmt.Sprint(traffic) != "[20 10 0]" {
		t.Errorf("pending traffic on the way back: %v, want 20 10 0 (one step per interval)", traffic)
	}
	// Held: no new pending cluster for the aborted spec.
	for range 10 {
		w.advance(time.Second)
		p, _ = w.reconcile()
		if len(actionsOf[CreateCluster](p.out)) != 0 {
			t.Fatal("a new cluster was created for the aborted spec")
		}
	}
	if got := condition(w.svc.Status, rayv1.UpgradeAction); got != "True/UpgradeAborted" {
		t.Errorf("UpgradeAction %s", got)
	}
	// Resume retries the upgrade.
	act(w, rayv1.UpgradeActionResume, "")
	p = checked(t, w, c, "a new pending cluster", func(p *reconciled) bool { return len(actionsOf[CreateCluster](p.out)) == 1 })
	if a := actionsOf[AnnotateCluster](p.out); len(a) != 1 || a[0].Cluster.Name != blue || len(a[0].Remove) != 1 || a[0].Remove[0] != rayv1.AbortedSpecHashKey {
		t.Errorf("resume removes the aborted spec hash from the active cluster: %v", a)
	}
}

func TestPlanPromoteSkipsTheRemainingSteps(t *testing.T) {
	w, c, _, green := midShift(t)
	act(w, rayv1.UpgradeActionPromote, green)
	start := w.now
	var seen []string
	checked(t, w, c, "the promotion", func(p *reconciled) bool {
		if p.written {
			s := p.out.Status
			if pt, pc := pendingTraffic(s), ptr.Deref(s.PendingServiceStatus.TargetCapacity, 0); s.PendingServiceStatus.RayClusterName != "" && pt > pc {
				t.Fatalf("traffic %d%% before capacity %d%%", pt, pc)
			}
			seen = append(seen, r2s(s))
		}
		return p.out.Status.ActiveServiceStatus.RayClusterName == green
	})
	// Without promote, 80% more traffic in 10% steps takes at least 7 more intervals.
	if d := w.now.Sub(start); d >= 7*time.Second {
		t.Errorf("promotion took %v: the remaining steps were not skipped; %v", d, seen)
	}
}

// blueGreenPending starts a NewCluster upgrade and runs it until the pending cluster is in
// the status.
func blueGreenPending(t *testing.T) (*world, *checker, string, string) {
	w := newWorld(builders.RayService("svc", "ns").DeletionDelay(30).Obj())
	settle(t, w)
	c := newChecker()
	w.updateSpec(func(s *rayv1.RayService) { setTestImage(s, "rayproject/ray:2.53.0") })
	checked(t, w, c, "a pending cluster", func(p *reconciled) bool { return p.written && p.out.Status.PendingServiceStatus.RayClusterName != "" })
	return w, c, w.svc.Status.ActiveServiceStatus.RayClusterName, w.svc.Status.PendingServiceStatus.RayClusterName
}

func TestPlanNewClusterPauseHoldsTheSwitch(t *testing.T) {
	w, c, blue, green := blueGreenPending(t)
	act(w, rayv1.UpgradeActionPause, green)
	var p *reconciled
	for range 60 {
		p, _ = w.step()
		if breaches := c.check(p); len(breaches) > 0 {
			t.Fatal(breaches)
		}
		if w.svc.Status.ActiveServiceStatus.RayClusterName != blue {
			t.Fatal("a paused blue/green upgrade switched")
		}
	}
	act(w, rayv1.UpgradeActionPromote, green)
	checked(t, w, c, "the switch", func(p *reconciled) bool { return p.out.Status.ActiveServiceStatus.RayClusterName == green })
}

func TestPlanNewClusterAbortDropsThePendingCluster(t *testing.T) {
	w, c, blue, green := blueGreenPending(t)
	act(w, rayv1.UpgradeActionAbort, green)
	var p *reconciled
	checked(t, w, c, "the pending cluster dropped", func(p *reconciled) bool { return p.written && p.out.Status.PendingServiceStatus.RayClusterName == "" })
	for range 20 {
		p, _ = w.step()
		if len(actionsOf[CreateCluster](p.out)) != 0 || w.svc.Status.ActiveServiceStatus.RayClusterName != blue {
			t.Fatal("the aborted spec was upgraded to")
		}
	}
	// A new spec upgrades despite the abort left on the object.
	w.updateSpec(func(s *rayv1.RayService) { setTestImage(s, "rayproject/ray:2.54.0") })
	checked(t, w, c, "a new pending cluster", func(p *reconciled) bool { return len(actionsOf[CreateCluster](p.out)) == 1 })
}

// An action is carried out only once the status recording it is stored: a lost write (or an
// operator restart before it) records it again and still moves nothing.
func TestPlanCarriesOutAnActionOnlyOnceRecorded(t *testing.T) {
	w, c, _, green := midShift(t)
	act(w, rayv1.UpgradeActionPromote, green)
	before := r2s(w.svc.Status)
	w.conflictStatus = true
	p, _ := w.reconcile()
	if p.written || p.out.Metrics.ActionRecorded != "promote" {
		t.Fatalf("written %v, recorded %q", p.written, p.out.Metrics.ActionRecorded)
	}
	w.advance(time.Second)
	p, _ = w.reconcile()
	if breaches := c.check(p); len(breaches) > 0 {
		t.Fatal(breaches)
	}
	if r2s(p.out.Status) != before || p.out.Metrics.ActionRecorded != "promote" || len(eventsOf(p.out, ReasonUpgradePromoting)) != 1 {
		t.Fatalf("the pass after a lost write: %s (was %s), recorded %q", r2s(p.out.Status), before, p.out.Metrics.ActionRecorded)
	}
	w.advance(time.Second)
	p, _ = w.reconcile()
	if got := ptr.Deref(p.out.Status.PendingServiceStatus.TargetCapacity, 0); got != 100 || p.out.Metrics.ActionRecorded != "" {
		t.Fatalf("once recorded, promote grows the pending capacity first: %d%%, recorded again %q", got, p.out.Metrics.ActionRecorded)
	}
}
