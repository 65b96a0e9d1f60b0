package plan

import (
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestHoldTrafficStep(t *testing.T) {
	due := time.Date(2026, 1, 1, 12, 0, 10, 0, time.UTC)
	for _, tt := range []struct {
		name    string
		f       stepFacts
		hold    bool
		refresh bool
		why     string
	}{
		{"fresh read, endpoints: go", stepFacts{ReadAt: due.Add(time.Millisecond), Due: due, ServeEndpoints: 1}, false, false, ""},
		{"read exactly when due: go", stepFacts{ReadAt: due, Due: due, ServeEndpoints: 2}, false, false, ""},
		{"read 30s before the step came due: read again", stepFacts{ReadAt: due.Add(-30 * time.Second), Due: due, ServeEndpoints: 1}, true, true, "made after the step came due at 2026-01-01T12:00:10Z"},
		{"never read: read", stepFacts{Due: due, ServeEndpoints: 1}, true, true, "made after the step came due"},
		{"first step (not timed): an older read is enough", stepFacts{ReadAt: due.Add(-time.Minute), ServeEndpoints: 1}, false, false, ""},
		{"no ready serve pod: wait for one", stepFacts{ReadAt: due, Due: due}, true, false, "waiting for a ready pod in the serve Service of c"},
		{"no ready serve pod and an old read: the pod first", stepFacts{ReadAt: due.Add(-time.Minute), Due: due}, true, false, "ready pod"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := holdTrafficStep(tt.f, "c")
			if h.Hold != tt.hold || h.Refresh != tt.refresh || !strings.Contains(h.Why, tt.why) {
				t.Errorf("holdTrafficStep = %+v, want hold %v refresh %v why containing %q", h, tt.hold, tt.refresh, tt.why)
			}
		})
	}
}

func trafficOnPending(p *reconciled) int32 {
	return ptr.Deref(p.out.Status.PendingServiceStatus.TrafficRoutedPercent, 0)
}

// A timed step goes only on a read made after it came due: the world's dashboards are read
// once a minute when converged, so without the rule the second step rests on an old read.
func TestPlanTimedStepWaitsForAFreshRead(t *testing.T) {
	w := newWorld(incrementalService(20, 5, 10))
	settle(t, w)
	w.updateSpec(func(s *rayv1.RayService) { setTestImage(s, "rayproject/ray:2.53.0") })
	stepUntil(t, w, "a first traffic step", func(p *reconciled) bool { return len(eventsOf(p.out, EventTrafficShifted)) == 1 })
	p := stepUntil(t, w, "waiting for the interval", func(p *reconciled) bool { return !p.out.Wake.At.IsZero() })
	pending := p.out.Status.PendingServiceStatus.RayClusterName
	due := p.out.Status.PendingServiceStatus.LastTrafficMigratedTime.Add(10 * time.Second)
	w.advance(due.Sub(w.now))
	p, _ = w.reconcile()
	if len(eventsOf(p.out, EventTrafficShifted)) != 0 {
		t.Fatal("the step came due and went on a read older than its due time")
	}
	if len(p.out.Refresh) != 1 || p.out.Refresh[0] != pending {
		t.Fatalf("refresh %v, want the pending cluster %s read again", p.out.Refresh, pending)
	}
	if statusChanged(&p.stored, &p.out.Status) {
		t.Errorf("waiting a moment for the read rewrote the status: %+v", p.out.Status.Conditions)
	}
	p = stepUntil(t, w, "the second step", func(p *reconciled) bool { return len(eventsOf(p.out, EventTrafficShifted)) == 1 })
	if late := p.now.Sub(due); late > time.Second {
		t.Errorf("the step went %v after it came due; a read takes %v", late, dashLatency)
	}
}

// A dashboard that stops answering holds the step: what it said before it hung is no
// ground for moving traffic.
func TestPlanTimedStepHeldWhileTheDashboardHangs(t *testing.T) {
	w := newWorld(incrementalService(20, 5, 10))
	settle(t, w)
	w.updateSpec(func(s *rayv1.RayService) { setTestImage(s, "rayproject/ray:2.53.0") })
	p := stepUntil(t, w, "a first traffic step", func(p *reconciled) bool { return len(eventsOf(p.out, EventTrafficShifted)) == 1 })
	pending := p.out.Status.PendingServiceStatus.RayClusterName
	before := trafficOnPending(p)
	w.clusters[pending].dashboardHung = true
	end := w.now.Add(time.Minute)
	for w.now.Before(end) {
		p, err := w.step()
		if err != nil {
			t.Fatal(err)
		}
		if got := trafficOnPending(p); got != before {
			t.Fatalf("traffic moved from %d%% to %d%% while the pending cluster's dashboard did not answer", before, got)
		}
	}
	w.clusters[pending].dashboardHung = false
	stepUntil(t, w, "traffic moves once the dashboard answers", func(p *reconciled) bool { return trafficOnPending(p) > before })
}

// No traffic moves to a cluster whose serve Service has no ready pod (head excluded, worker
// not ready): the gateway would have nowhere to send it.
func TestPlanTrafficWaitsForAReadyServeEndpoint(t *testing.T) {
	svc := incrementalService(50, 25, 1)
	svc.Spec.ExcludeHeadPodFromServeSvc = true
	w := newWorld(svc)
	settle(t, w)
	w.updateSpec(func(s *rayv1.RayService) { setTestImage(s, "rayproject/ray:2.53.0") })
	p := stepUntil(t, w, "a pending cluster", func(p *reconciled) bool { return p.out.Status.PendingServiceStatus.RayClusterName != "" })
	pending := p.out.Status.PendingServiceStatus.RayClusterName
	w.clusters[pending].workerUnready = true
	end := w.now.Add(time.Minute)
	sawWhy := false
	for w.now.Before(end) {
		p, err := w.step()
		if err != nil {
			t.Fatal(err)
		}
		if got := trafficOnPending(p); got != 0 {
			t.Fatalf("%d%% of the traffic moved to %s, whose serve Service has no ready pod", got, pending)
		}
		sawWhy = sawWhy || conditionSays(p, "waiting for a ready pod in the serve Service of "+pending)
	}
	if !sawWhy {
		t.Errorf("the conditions never said what the step waits for: %+v", w.svc.Status.Conditions)
	}
	w.clusters[pending].workerUnready = false
	stepUntil(t, w, "traffic moves once a worker is ready", func(p *reconciled) bool { return trafficOnPending(p) > 0 })
}

func conditionSays(p *reconciled, text string) bool {
	for _, c := range p.out.Status.Conditions {
		if strings.Contains(c.Message, text) {
			return true
		}
	}
	return false
}
