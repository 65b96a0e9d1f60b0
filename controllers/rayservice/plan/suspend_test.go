package plan

import (
	"testing"
	"time"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

func suspended(p *reconciled) bool {
	return condition(p.out.Status, rayv1.RayServiceSuspended) == "True/SuspendComplete"
}

func actionCount(out Plan) int {
	return len(out.ClusterActions) + len(out.Submits) + len(out.Actions)
}

// assertSuspendedWorld checks a fully suspended RayService and its (empty) world.
func assertSuspendedWorld(t *testing.T, w *world, p *reconciled) {
	t.Helper()
	if len(w.clusters) != 0 || len(w.services) != 0 || w.gateway != nil || w.route != nil {
		t.Errorf("objects left: clusters %d, services %d, gateway %v, route %v", len(w.clusters), len(w.services), w.gateway != nil, w.route != nil)
	}
	st := p.out.Status
	if st.ActiveServiceStatus.RayClusterName != "" || st.PendingServiceStatus.RayClusterName != "" || st.NumServeEndpoints != 0 || st.ServiceStatus != "" {
		t.Errorf("a suspended status still names clusters or endpoints: %+v", st)
	}
	for _, c := range []rayv1.RayServiceConditionType{rayv1.RayServiceSuspending, rayv1.RayServiceReady, rayv1.UpgradeInProgress, rayv1.RollbackInProgress} {
		if got := condition(st, c); got != "False/SuspendComplete" {
			t.Errorf("%s is %s, want False/SuspendComplete", c, got)
		}
	}
	if st.ObservedGeneration != w.svc.Generation {
		t.Errorf("observedGeneration %d, generation %d", st.ObservedGeneration, w.svc.Generation)
	}
}

func TestPlanSuspendAndResume(t *testing.T) {
	w := newWorld(builders.RayService("svc", "ns").DeletionDelay(30).Obj())
	settle(t, w)
	first := w.svc.Status.ActiveServiceStatus.RayClusterName

	w.updateSpec(func(s *rayv1.RayService) { s.Spec.Suspend = true })
	p, _ := w.reconcile()
	if n := actionCount(p.out); n != 0 || !p.out.Wake.Soon {
		t.Fatalf("the pass that commits the suspension acts (%d actions) or does not come back (%+v)", n, p.out.Wake)
	}
	if got := condition(p.out.Status, rayv1.RayServiceSuspending); got != "True/SuspendInProgress" {
		t.Fatalf("Suspending %s", got)
	}
	if got := condition(p.out.Status, rayv1.RayServiceReady); got != "False/SuspendInProgress" {
		t.Errorf("Ready %s", got)
	}
	if len(eventsOf(p.out, EventSuspending)) != 1 {
		t.Errorf("events %+v", p.out.Events)
	}
	w.advance(time.Millisecond)

	p = stepUntil(t, w, "suspended", suspended)
	assertSuspendedWorld(t, w, p)
	if len(eventsOf(p.out, EventSuspended)) != 1 {
		t.Errorf("events %+v", p.out.Events)
	}

	// While suspended, spec changes are observed and nothing is created.
	w.updateSpec(func(s *rayv1.RayService) { s.Spec.ServeConfigV2 = serveConfigs[1] })
	for range 3 {
		p, _ = w.reconcile()
		if n := actionCount(p.out); n != 0 || len(p.out.Events) != 0 {
			t.Fatalf("a suspended RayService acts: %v %v", p.out.Actions, p.out.Events)
		}
		w.advance(time.Minute)
	}
	assertSuspendedWorld(t, w, p)

	w.updateSpec(func(s *rayv1.RayService) { s.Spec.Suspend = false })
	p, _ = w.reconcile()
	if got := condition(p.out.Status, rayv1.RayServiceSuspended); got != "False/RayServiceResumed" {
		t.Errorf("Suspended %s after resuming", got)
	}
	ready := findCondition(p.out.Status.Conditions, rayv1.RayServiceReady)
	if ready == nil || ready.Reason != rayv1.RayServiceInitializing || !ready.LastTransitionTime.Time.Equal(p.now) {
		t.Errorf("Ready after resuming %+v, want Initializing since %v", ready, p.now)
	}
	if len(eventsOf(p.out, EventResumed)) != 1 || !p.out.Wake.Soon {
		t.Errorf("events %+v, wake %+v", p.out.Events, p.out.Wake)
	}
	w.advance(time.Millisecond)
	settle(t, w)
	if got := w.svc.Status.ActiveServiceStatus.RayClusterName; got == "" || got == first {
		t.Errorf("resumed on cluster %q, want a new one (was %s)", got, first)
	}
	if got := condition(w.svc.Status, rayv1.RayServiceReady); got != "True/NonZeroServeEndpoints" {
		t.Errorf("Ready %s after resuming", got)
	}
	if got := condition(w.svc.Status, rayv1.RayServiceSuspended); got != "False/RayServiceResumed" {
		t.Errorf("Suspended %s once serving again", got)
	}
}

func TestPlanSuspensionCompletesWhenTheSpecChangesItsMind(t *testing.T) {
	w := newWorld(builders.RayService("svc", "ns").DeletionDelay(30).Obj())
	settle(t, w)
	w.updateSpec(func(s *rayv1.RayService) { s.Spec.Suspend = true })
	if _, err := w.step(); err != nil { // commits
		t.Fatal(err)
	}
	w.updateSpec(func(s *rayv1.RayService) { s.Spec.Suspend = false })
	p, _ := w.reconcile()
	if len(actionsOf[DeleteCluster](p.out)) != 1 || condition(p.out.Status, rayv1.RayServiceSuspending) != "True/SuspendInProgress" {
		t.Fatalf("a committed suspension was not carried out: %v, %s", p.out.Actions, condition(p.out.Status, rayv1.RayServiceSuspending))
	}
	w.advance(time.Millisecond)
	p = stepUntil(t, w, "suspended", suspended)
	if !p.out.Wake.Soon {
		t.Error("the pass that finishes the suspension does not come back to read spec.suspend again")
	}
	w.advance(time.Millisecond)
	p, _ = w.reconcile()
	if got := condition(p.out.Status, rayv1.RayServiceSuspended); got != "False/RayServiceResumed" {
		t.Errorf("Suspended %s", got)
	}
	w.advance(time.Millisecond)
	settle(t, w)
}

func TestPlanSuspendDuringAnIncrementalUpgrade(t *testing.T) {
	w := newWorld(incrementalService(50, 25, 10))
	settle(t, w)
	w.updateSpec(func(s *rayv1.RayService) {
		setTestImage(s, "rayproject/ray:2.53.0")
		s.Spec.ServeConfigV2 = serveConfigs[1]
	})
	stepUntil(t, w, "a pending cluster", func(p *reconciled) bool { return p.out.Status.PendingServiceStatus.RayClusterName != "" })
	if len(w.clusters) != 2 || w.gateway == nil || w.route == nil {
		t.Fatalf("clusters %d, gateway %v, route %v", len(w.clusters), w.gateway != nil, w.route != nil)
	}
	w.updateSpec(func(s *rayv1.RayService) { s.Spec.Suspend = true })
	p := stepUntil(t, w, "suspended", suspended)
	assertSuspendedWorld(t, w, p)
}

func TestPlanCreatedSuspended(t *testing.T) {
	svc := builders.RayService("svc", "ns").Obj()
	svc.Spec.Suspend = true
	w := newWorld(svc)
	p := stepUntil(t, w, "suspended", suspended)
	if w.created != 0 {
		t.Errorf("%d clusters created for a RayService created suspended", w.created)
	}
	assertSuspendedWorld(t, w, p)
}

func TestPlanInitializingTimeoutCountsFromTheResume(t *testing.T) {
	svc := brokenService("20s")
	svc.Spec.Suspend = true
	w := newWorld(svc)
	stepUntil(t, w, "suspended", suspended)
	w.advance(time.Hour)
	w.updateSpec(func(s *rayv1.RayService) { s.Spec.Suspend = false })
	p, _ := w.reconcile()
	resumed := p.now
	p = stepUntil(t, w, "the timeout", func(p *reconciled) bool {
		return condition(p.out.Status, rayv1.RayServiceReady) != "False/Initializing"
	})
	if got := condition(p.out.Status, rayv1.RayServiceReady); got != "False/InitializingTimeout" {
		t.Fatalf("Ready %s", got)
	}
	if spent := p.now.Sub(resumed); spent < 20*time.Second || spent > 21*time.Second {
		t.Errorf("failed %v after the resume, want at the 20s timeout", spent)
	}
}

func TestPlanSuspendWaitsForAValidSpec(t *testing.T) {
	w := newWorld(builders.RayService("svc", "ns").Obj())
	settle(t, w)
	w.updateSpec(func(s *rayv1.RayService) {
		s.Spec.Suspend = true
		s.Spec.ServeConfigV2 = "applications: [unclosed"
	})
	p, _ := w.reconcile()
	if got := condition(p.out.Status, rayv1.RayServiceReady); got != "False/ValidationFailed" || actionCount(p.out) != 0 {
		t.Errorf("Ready %s, actions %v", got, p.out.Actions)
	}
	if got := condition(p.out.Status, rayv1.RayServiceSuspending); got != "" {
		t.Errorf("Suspending %s for a rejected spec", got)
	}
}
