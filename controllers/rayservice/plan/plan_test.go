package plan

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/validation"
	"github.com/raygate/raygate/test/builders"
)

// These tests drive the plan through the simulated world of the fuzz test, to a state the
// decision under test starts from, then look at that decision.

// settle runs passes until the world has one cluster serving the spec and a pass finds
// nothing to do.
func settle(t *testing.T, w *world) {
	t.Helper()
	for range 500 {
		p, err := w.step()
		if err != nil {
			t.Fatal(err)
		}
		quiet := len(p.out.ClusterActions)+len(p.out.Submits)+len(p.out.Actions) == 0 && !statusChanged(&p.stored, &p.out.Status)
		if quiet && converged(w) {
			return
		}
	}
	t.Fatalf("the world did not settle: %+v", w.svc.Status)
}

// stepUntil runs passes until done says so, and returns that pass.
func stepUntil(t *testing.T, w *world, what string, done func(*reconciled) bool) *reconciled {
	t.Helper()
	for range 2000 {
		p, err := w.reconcile()
		if err != nil {
			t.Fatal(err)
		}
		if done(p) {
			return p
		}
		w.advance(w.untilNext(p.out.Wake.After(w.now, time.Second, time.Minute)))
	}
	t.Fatalf("never: %s; status %+v", what, w.svc.Status)
	return nil
}

func eventsOf(out Plan, reason string) []Event {
	var es []Event
	for _, e := range out.Events {
		if e.Reason == reason {
			es = append(es, e)
		}
	}
	return es
}

// actionEvents are the events reported when actions succeed.
func actionEvents(out Plan) []Event {
	var es []Event
	for _, a := range append(out.ClusterActions, out.Actions...) {
		switch a := a.(type) {
		case CreateCluster:
			es = append(es, a.Done)
		case UpdateCluster:
			es = append(es, a.Done)
		case DeleteCluster:
			es = append(es, a.Done)
		case AnnotateCluster:
			if a.Done != nil {
				es = append(es, *a.Done)
			}
		}
	}
	for _, s := range out.Submits {
		if s.Done.Reason != "" {
			es = append(es, s.Done)
		}
	}
	return es
}

func actionsOf[A Action](out Plan) []A {
	var as []A
	for _, a := range append(out.ClusterActions, out.Actions...) {
		if x, ok := a.(A); ok {
			as = append(as, x)
		}
	}
	return as
}

func condition(st rayv1.RayServiceStatuses, t rayv1.RayServiceConditionType) string {
	c := findCondition(st.Conditions, t)
	if c == nil {
		return ""
	}
	return string(c.Status) + "/" + c.Reason
}

func incrementalService(maxSurge, step, interval int32) *rayv1.RayService {
	return builders.RayService("svc", "ns").Incremental(maxSurge, step, interval, "gw").DeletionDelay(30).Obj()
}

func TestPlanFirstCluster(t *testing.T) {
	w := newWorld(builders.RayService("svc", "ns").Obj())
	p, err := w.reconcile()
	if err != nil {
		t.Fatal(err)
	}
	created := actionsOf[CreateCluster](p.out)
	if len(created) != 1 || created[0].Cluster.Name != "svc-00001" || p.out.Status.PendingServiceStatus.RayClusterName != "svc-00001" {
		t.Fatalf("first pass: created %v, status %+v", created, p.out.Status.PendingServiceStatus)
	}
	if created[0].Done.Reason != EventCreatedCluster || !p.out.Wake.Soon {
		t.Errorf("create event %q, wake %+v", created[0].Done.Reason, p.out.Wake)
	}
	if got := condition(p.out.Status, rayv1.RayServiceReady); got != "False/Initializing" {
		t.Errorf("Ready %s", got)
	}

	p = stepUntil(t, w, "promotion", func(p *reconciled) bool { return p.out.Status.ActiveServiceStatus.RayClusterName != "" })
	if es := eventsOf(p.out, EventPromoted); len(es) != 1 || es[0].Note != "RayCluster svc-00001 serves traffic" {
		t.Errorf("promotion events %+v", es)
	}
	var selectors []string
	for _, o := range actionsOf[CreateObject](p.out) {
		if s, ok := o.Object.(*corev1.Service); ok {
			selectors = append(selectors, s.Name+"→"+s.Spec.Selector[rayv1.ClusterLabelKey])
		}
	}
	if strings.Join(selectors, ",") != "svc-head-svc→svc-00001,svc-serve-svc→svc-00001" {
		t.Errorf("services created with the promotion: %v", selectors)
	}
	if p.out.Status.NumServeEndpoints != 2 || condition(p.out.Status, rayv1.RayServiceReady) != "True/NonZeroServeEndpoints" {
		t.Errorf("endpoints %d, Ready %s", p.out.Status.NumServeEndpoints, condition(p.out.Status, rayv1.RayServiceReady))
	}
}

func TestPlanConvergedChangesNothing(t *testing.T) {
	for _, svc := range []*rayv1.RayService{builders.RayService("svc", "ns").Obj(), incrementalService(20, 5, 10)} {
		w := newWorld(svc)
		settle(t, w)
		p, err := w.reconcile()
		if err != nil {
			t.Fatal(err)
		}
		if n := len(p.out.ClusterActions) + len(p.out.Submits) + len(p.out.Actions) + len(p.out.Events); n != 0 {
			t.Errorf("%v: converged pass asks for %d things: %v %v %v", strategyOf(&svc.Spec), n, p.out.Actions, p.out.Submits, p.out.Events)
		}
		if !equality.Semantic.DeepEqual(p.stored, p.out.Status) {
			t.Error("a converged pass changed the status")
		}
		if d := p.out.Wake.After(p.now, time.Second, time.Minute); d != time.Minute {
			t.Errorf("converged: comes back after %v, want the resync", d)
		}

		// A new generation that changes nothing else is recorded as observed.
		w.updateSpec(func(s *rayv1.RayService) {})
		p, _ = w.reconcile()
		if p.out.Status.ObservedGeneration != w.svc.Generation || !statusChanged(&p.stored, &p.out.Status) || p.out.Status.LastUpdateTime == nil {
			t.Errorf("observedGeneration %d, want %d, written with a new lastUpdateTime", p.out.Status.ObservedGeneration, w.svc.Generation)
		}
	}
}

// Promotion, traffic steps and rollbacks are recorded in the status: their events are in
// the plan's Events, which are emitted only once the status is stored.
func TestPlanRejectsAnInvalidSpec(t *testing.T) {
	w := newWorld(builders.RayService("svc", "ns").ServeConfig("applications: [unclosed").Obj())
	p, _ := w.reconcile()
	if n := len(p.out.ClusterActions) + len(p.out.Actions) + len(p.out.Submits); n != 0 {
		t.Fatalf("%d actions for an invalid spec", n)
	}
	if got := condition(p.out.Status, rayv1.RayServiceReady); got != "False/ValidationFailed" || len(eventsOf(p.out, EventValidationFailed)) != 1 {
		t.Fatalf("Ready %s, events %v", got, p.out.Events)
	}
	if p, _ = w.reconcile(); len(p.out.Events) != 0 || statusChanged(&p.stored, &p.out.Status) {
		t.Error("the same rejection is announced and written once")
	}
}

func TestPlanWithoutTheGatewayAPI(t *testing.T) {
	w := newWorld(incrementalService(20, 5, 1))
	w.gatewayAPI = false
	settle(t, w)
	w.updateSpec(func(s *rayv1.RayService) { setTestImage(s, "rayproject/ray:2.53.0") })
	p, _ := w.reconcile()
	if len(actionsOf[CreateCluster](p.out)) != 0 || condition(p.out.Status, rayv1.UpgradeInProgress) != "False/"+ReasonGatewayAPIUnavailable {
		t.Fatalf("created %v, UpgradeInProgress %s", actionsOf[CreateCluster](p.out), condition(p.out.Status, rayv1.UpgradeInProgress))
	}
	if len(eventsOf(p.out, EventGatewayAPIUnavailable)) != 1 {
		t.Errorf("events %v", p.out.Events)
	}
	if p, _ = w.reconcile(); len(p.out.Events) != 0 {
		t.Errorf("warned again: %v", p.out.Events)
	}
}

func TestPlanLeavesAForeignServiceAlone(t *testing.T) {
	w := newWorld(builders.RayService("svc", "ns").Obj())
	w.services["svc-serve-svc"] = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc-serve-svc", Namespace: "ns"}}
	p := stepUntil(t, w, "the conflict", func(p *reconciled) bool { return len(p.out.Conflicts) > 0 })
	if p.out.Status.ActiveServiceStatus.RayClusterName != "" || len(eventsOf(p.out, EventOwnershipConflict)) != 1 {
		t.Fatalf("promoted %q, events %v", p.out.Status.ActiveServiceStatus.RayClusterName, p.out.Events)
	}
	c := findCondition(p.out.Status.Conditions, rayv1.RayServiceOwnershipConflict)
	if c == nil || c.Reason != rayv1.ForeignObject || !strings.Contains(c.Message, "Service svc-serve-svc exists and is not controlled by this RayService (it has no controller)") {
		t.Fatalf("condition %+v", c)
	}
	for _, a := range p.out.Actions {
		if u, ok := a.(UpdateObject); ok && u.Object.GetName() == "svc-serve-svc" {
			t.Fatal("updated a Service raygate does not control")
		}
	}
	// Looked at again after a while, announced once; gone, the condition goes too.
	if d := p.out.Wake.After(p.now, time.Second, time.Minute); d > conflictRecheck {
		t.Errorf("looks again after %v", d)
	}
	w.advance(time.Second)
	if p, _ = w.reconcile(); len(eventsOf(p.out, EventOwnershipConflict)) != 0 {
		t.Errorf("announced again: %v", p.out.Events)
	}
	delete(w.services, "svc-serve-svc")
	p = stepUntil(t, w, "promotion", func(p *reconciled) bool { return p.out.Status.ActiveServiceStatus.RayClusterName != "" })
	if findCondition(p.out.Status.Conditions, rayv1.RayServiceOwnershipConflict) != nil {
		t.Error("the condition outlived the conflict")
	}
}

// A refused config is an answer: the status says why, a bad request is not sent again
// unchanged for a while (nothing polls for it), other refusals are retried.
func TestPlanAfterARefusedServeConfig(t *testing.T) {
	for _, badRequest := range []bool{true, false} {
		w := newWorld(builders.RayService("svc", "ns").Obj())
		w.refuseNext, w.badRequest = 1, badRequest
		p := stepUntil(t, w, "the refusal", func(p *reconciled) bool {
			c := findCondition(p.out.Status.Conditions, rayv1.RayServiceReady)
			return c != nil && strings.Contains(c.Message, "rejected the serve config")
		})
		if p.out.Wake.Poll == badRequest {
			t.Errorf("bad request %v: poll %v (a refused config fails the same way until the spec changes)", badRequest, p.out.Wake.Poll)
		}
		settle(t, w)
	}
}

// With None, as in KubeRay, a rayClusterConfig change reaches no cluster: the running one
// keeps its spec and pods, and one event per spec edit says so.
func TestPlanNoneStrategyDoesNotApplyClusterChanges(t *testing.T) {
	w := newWorld(builders.RayService("svc", "ns").Strategy(rayv1.None).Obj())
	settle(t, w)
	w.updateSpec(func(s *rayv1.RayService) { setTestImage(s, "rayproject/ray:2.53.0") })
	p, _ := w.reconcile()
	if n := len(actionsOf[UpdateCluster](p.out)) + len(actionsOf[CreateCluster](p.out)) + len(actionsOf[AnnotateCluster](p.out)); n != 0 {
		t.Fatalf("%d cluster actions, want none: %v", n, p.out.ClusterActions)
	}
	if es := eventsOf(p.out, EventSpecNotApplied); len(es) != 1 || !strings.Contains(es[0].Note, "switch to NewCluster") {
		t.Fatalf("events %v", p.out.Events)
	}
	settle(t, w)
	if p, _ = w.reconcile(); len(p.out.Events) != 0 {
		t.Fatalf("the event is repeated: %v", p.out.Events)
	}
}

func TestWakeupAfter(t *testing.T) {
	poll, resync := time.Second, time.Minute
	cases := []struct {
		name string
		w    Wakeup
		want time.Duration
	}{
		{"nothing due", Wakeup{}, resync},
		{"due in 3 s", Wakeup{At: t0.Add(3 * time.Second)}, 3 * time.Second},
		{"overdue", Wakeup{At: t0.Add(-time.Second)}, time.Millisecond},
		{"deploying", Wakeup{Poll: true, At: t0.Add(3 * time.Second)}, poll},
		{"decided", Wakeup{Soon: true, Poll: true}, stepRequeue},
	}
	for _, tc := range cases {
		if got := tc.w.After(t0, poll, resync); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	w := Wakeup{}
	w.due(t0.Add(7 * time.Second))
	w.due(t0.Add(3 * time.Second))
	if !w.At.Equal(t0.Add(3 * time.Second)) {
		t.Errorf("the earliest due time wins: %v", w.At)
	}
}

// A stored incremental RayService is never frozen by the gate being off: it is served and
// upgraded as NewCluster, with a condition and one Warning event saying so.
func TestPlanWithTheIncrementalGateOffFallsBackToNewCluster(t *testing.T) {
	want := Admit(incrementalService(20, 5, 10), features.Static{features.RayServiceIncrementalUpgrade: false}, validation.Limits{}, "v1")
	if want.Invalid != "" || want.Strategy != rayv1.NewCluster || !strings.Contains(want.Fallback, string(features.RayServiceIncrementalUpgrade)) {
		t.Fatalf("invalid %q, strategy %s, fallback %q", want.Invalid, want.Strategy, want.Fallback)
	}
	w := newWorld(incrementalService(20, 5, 10))
	w.gates = features.Static{features.RayServiceIncrementalUpgrade: false}
	p, _ := w.reconcile()
	if got := condition(p.out.Status, rayv1.UpgradeStrategyFallback); got != "True/"+ReasonFeatureGateDisabled || len(eventsOf(p.out, EventStrategyFallback)) != 1 {
		t.Fatalf("UpgradeStrategyFallback %s, events %v", got, p.out.Events)
	}
	settle(t, w)
	w.updateSpec(func(s *rayv1.RayService) { setTestImage(s, "rayproject/ray:2.53.0") })
	p = stepUntil(t, w, "the blue/green switch", func(p *reconciled) bool {
		return p.out.Status.ActiveServiceStatus.RayClusterName != p.stored.ActiveServiceStatus.RayClusterName
	})
	if len(eventsOf(p.out, EventStrategyFallback)) != 0 || w.route != nil {
		t.Errorf("announced again %v, or routed through a Gateway %v", p.out.Events, w.route)
	}
	// The gate back on: the condition goes.
	w.gates = allGates
	w.want = nil
	p, _ = w.reconcile()
	if condition(p.out.Status, rayv1.UpgradeStrategyFallback) != "" {
		t.Error("the fallback condition outlived the gate")
	}
}

// A cluster spec over the admin's pod bounds is created at the bounds, with a warning.
func TestPlanCapsClustersAtThePodBounds(t *testing.T) {
	svc := builders.RayService("svc", "ns").Obj()
	svc.Spec.RayClusterSpec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](50)
	svc.Spec.RayClusterSpec.WorkerGroupSpecs[0].MaxReplicas = ptr.To[int32](100)
	w := newWorld(svc)
	w.limits = validation.Limits{MaxPodsPerGroup: 10, MaxPodsPerCluster: 100}
	p, _ := w.reconcile()
	created := actionsOf[CreateCluster](p.out)
	if len(created) != 1 || ptr.Deref(created[0].Cluster.Spec.WorkerGroupSpecs[0].Replicas, 0) != 10 {
		t.Fatalf("created %v", created)
	}
	if es := eventsOf(p.out, EventCappedAtPodLimits); len(es) != 1 || !strings.Contains(es[0].Note, "capped at 10 replicas") {
		t.Errorf("events %v", p.out.Events)
	}
}

func TestServingCluster(t *testing.T) {
	nc, inc := builders.RayService("svc", "ns").Obj(), incrementalService(20, 5, 10)
	view := func(name string) *ClusterView {
		return &ClusterView{Cluster: &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}}
	}
	done := rayv1.RayServiceStatus{TargetCapacity: ptr.To[int32](100), TrafficRoutedPercent: ptr.To[int32](100)}
	half := rayv1.RayServiceStatus{TargetCapacity: ptr.To[int32](60), TrafficRoutedPercent: ptr.To[int32](40)}
	cases := []struct {
		name            string
		svc             *rayv1.RayService
		active, pending string
		pendingStatus   rayv1.RayServiceStatus
		activeCapacity  int32
		ready           []string
		settled         bool
		rollback        bool
		want            string
	}{
		{name: "nothing yet", svc: nc, want: ""},
		{name: "first cluster not ready", svc: nc, pending: "p", want: ""},
		{name: "first cluster ready", svc: nc, pending: "p", ready: []string{"p"}, want: "p"},
		{name: "converged", svc: nc, active: "a", ready: []string{"a"}, want: "a"},
		{name: "blue/green: pending not ready", svc: nc, active: "a", pending: "p", want: "a"},
		{name: "blue/green: pending ready switches", svc: nc, active: "a", pending: "p", ready: []string{"p"}, want: "p"},
		{name: "incremental: halfway", svc: inc, active: "a", pending: "p", pendingStatus: half, activeCapacity: 60, ready: []string{"p"}, settled: true, want: "a"},
		{name: "incremental: all traffic to pending, route not settled yet: the Service moves with the route", svc: inc, active: "a", pending: "p", pendingStatus: done, ready: []string{"p"}, want: "p"},
		{name: "incremental: complete, settled, not running", svc: inc, active: "a", pending: "p", pendingStatus: done, settled: true, want: "a"},
		{name: "incremental: complete and settled switches", svc: inc, active: "a", pending: "p", pendingStatus: done, ready: []string{"p"}, settled: true, want: "p"},
		{name: "rolling back keeps the active", svc: nc, active: "a", pending: "p", ready: []string{"p"}, rollback: true, want: "a"},
	}
	for _, tc := range cases {
		want := Admit(tc.svc, allGates, validation.Limits{}, "v1")
		r := roles{}
		if tc.active != "" {
			r.Active = slot{View: view(tc.active), Status: rayv1.RayServiceStatus{RayClusterName: tc.active, TargetCapacity: ptr.To(tc.activeCapacity)}}
		}
		if tc.pending != "" {
			st := tc.pendingStatus
			st.RayClusterName = tc.pending
			r.Pending = slot{View: view(tc.pending), Status: st}
		}
		if tc.rollback {
			r.Rollback = "the spec went back"
		}
		serve := serveStates{}
		for _, n := range tc.ready {
			serve[n] = serveState{Ready: true}
		}
		got := servingCluster(inputs{obs: &Observed{GatewayAPI: true}, want: want, now: t0}, r, serve, trafficState{Settled: tc.settled})
		if name := (serving{View: got}).name(); name != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, name, tc.want)
		}
	}
}

func TestPlanCountsEndpointsWithTheLabelsItSets(t *testing.T) {
	w := newWorld(builders.RayService("svc", "ns").Obj())
	p := stepUntil(t, w, "promotion", func(p *reconciled) bool { return p.out.Status.ActiveServiceStatus.RayClusterName != "" })
	// The head pod gets ray.io/serve=true in this very pass; the worker has it already.
	if labels := actionsOf[LabelPod](p.out); len(labels) != 1 || labels[0].Value != "true" {
		t.Fatalf("labels %v", labels)
	}
	if p.out.Status.NumServeEndpoints != 2 {
		t.Errorf("endpoints %d, want the head and the worker", p.out.Status.NumServeEndpoints)
	}
}
