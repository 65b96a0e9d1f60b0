package plan

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/validation"
	"github.com/raygate/raygate/test/builders"
)

// brokenService never becomes ready: its applications fail.
func brokenService(timeout string) *rayv1.RayService {
	svc := builders.RayService("svc", "ns").DeletionDelay(5).
		ServeConfig(strings.Replace(builders.DefaultServeConfig, "fruit.deployment_graph", brokenImportPath, 1)).Obj()
	if timeout != "" {
		svc.Annotations = map[string]string{validation.InitializingTimeoutAnnotation: timeout}
	}
	return svc
}

func TestPlanFailsARayServiceThatDoesNotInitializeInTime(t *testing.T) {
	w := newWorld(brokenService("20s"))
	p, err := w.reconcile()
	if err != nil {
		t.Fatal(err)
	}
	start := p.now
	if got := p.out.Wake.After(p.now, time.Hour, time.Hour); got > 20*time.Second {
		t.Errorf("an Initializing RayService with a timeout comes back after %v, want by the timeout", got)
	}
	p = stepUntil(t, w, "the timeout", func(p *reconciled) bool {
		return condition(p.out.Status, rayv1.RayServiceReady) != "False/Initializing"
	})
	if got := condition(p.out.Status, rayv1.RayServiceReady); got != "False/InitializingTimeout" {
		t.Fatalf("Ready %s", got)
	}
	if spent := p.now.Sub(start); spent < 20*time.Second || spent > 21*time.Second {
		t.Errorf("failed after %v, want at the 20s timeout", spent)
	}
	st := p.out.Status
	if st.ActiveServiceStatus.RayClusterName != "" || st.PendingServiceStatus.RayClusterName != "" || st.ServiceStatus != rayv1.NotRunning {
		t.Errorf("a failed RayService still names clusters: %+v", st)
	}
	if es := eventsOf(p.out, EventInitializingTimeout); len(es) != 1 || es[0].Type != "Warning" ||
		!strings.Contains(es[0].Note, "ray.io/initializing-timeout=20s") {
		t.Errorf("events %+v", p.out.Events)
	}
	if n := len(p.out.ClusterActions) + len(p.out.Submits) + len(p.out.Actions); n != 0 || !p.out.Wake.Soon {
		t.Errorf("the failing pass acts (%d actions) or does not come back to retire the clusters (%+v)", n, p.out.Wake)
	}

	// A spec change does not retry; the clusters go after the deletion delay.
	w.updateSpec(func(s *rayv1.RayService) { s.Spec.ServeConfigV2 = builders.DefaultServeConfig })
	p = stepUntil(t, w, "the clusters deleted", func(*reconciled) bool { return len(w.clusters) == 0 })
	if got := condition(p.out.Status, rayv1.RayServiceReady); got != "False/InitializingTimeout" {
		t.Errorf("Ready %s after a spec change", got)
	}
	for range 3 {
		p, _ = w.reconcile()
		if n := len(p.out.ClusterActions) + len(p.out.Submits) + len(p.out.Actions) + len(p.out.Events); n != 0 || statusChanged(&p.stored, &p.out.Status) {
			t.Fatalf("a failed RayService with nothing left to delete still acts: %v %v", p.out.Actions, p.out.Events)
		}
		w.advance(time.Minute)
	}
	if len(w.clusters) != 0 {
		t.Errorf("clusters created again: %v", w.clusters)
	}
}

func TestInitializingTimeoutApplies(t *testing.T) {
	at := t0.Add(time.Minute)
	for _, tc := range []struct {
		name, annotation string
		ready            string // stored Ready: "status/reason"
		wantOK           bool
	}{
		{"no annotation", "", "False/Initializing", false},
		{"initializing", "30s", "False/Initializing", true},
		{"seconds", "30", "False/Initializing", true},
		{"served once: the endpoints dropped", "30s", "False/ZeroServeEndpoints", false},
		{"ready", "30s", "True/NonZeroServeEndpoints", false},
		{"invalid spec", "30s", "False/ValidationFailed", false},
		{"invalid value (webhook off)", "never", "False/Initializing", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := brokenService(tc.annotation)
			var st rayv1.RayServiceStatuses
			status, reason, _ := strings.Cut(tc.ready, "/")
			setReady(&st, 1, reason, "", at)
			st.Conditions[0].Status = metav1.ConditionStatus(status)
			got, timeout, ok := initializingDeadline(svc, &st)
			if ok != tc.wantOK || (ok && (timeout != 30*time.Second || !got.Equal(at.Add(30*time.Second)))) {
				t.Errorf("got %v %v %v", got, timeout, ok)
			}
		})
	}
}
