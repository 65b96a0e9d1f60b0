package plan

import (
	"maps"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	raygatev1alpha1 "github.com/raygate/raygate/apis/raygate/v1alpha1"
)

// annotateService merges annotations onto the RayService, as the API server would; the
// next pass reads them.
func (w *world) annotateService(a AnnotateService) {
	if w.svc.Annotations == nil {
		w.svc.Annotations = map[string]string{}
	}
	maps.Copy(w.svc.Annotations, a.Annotations)
	w.want = nil
}

// gatedWorld is an incremental RayService naming policy "pol" with one gate whose value
// *value is; asks counts evaluations.
func gatedWorld(t *testing.T, onFailure raygatev1alpha1.FailureAction, value *float64, asks *int) *world {
	svc := incrementalService(50, 25, 5)
	svc.Annotations = map[string]string{raygatev1alpha1.UpgradePolicyAnnotation: "pol"}
	w := newWorld(svc)
	gate := raygatev1alpha1.Gate{Name: "errors", Query: "q", Max: "0.05"}
	w.promGates = func(ask GateAsk) *GateObservation {
		*asks++
		if ask.Policy != "pol" || ask.Pending == "" || ask.Active == "" {
			t.Errorf("asked %+v", ask)
		}
		return &GateObservation{Policy: "pol", OnFailure: onFailure, Gates: []raygatev1alpha1.Gate{gate},
			Results: []GateResult{{Gate: "errors", Query: "q", Values: []float64{*value}}}}
	}
	settle(t, w)
	w.updateSpec(func(s *rayv1.RayService) { setTestImage(s, "rayproject/ray:2.53.0") })
	return w
}

func TestGatedUpgradePasses(t *testing.T) {
	value, asks := 0.0, 0
	w := gatedWorld(t, raygatev1alpha1.FailurePause, &value, &asks)
	c := newChecker()
	var steps int
	for range 2000 {
		p, err := w.step()
		if err != nil {
			t.Fatal(err)
		}
		if b := c.check(p); len(b) > 0 {
			t.Fatalf("invariants: %v", b)
		}
		if ptr.Deref(p.out.Status.PendingServiceStatus.TrafficRoutedPercent, 0) > ptr.Deref(p.stored.PendingServiceStatus.TrafficRoutedPercent, 0) {
			steps++
		}
		if w.svc.Status.PendingServiceStatus.RayClusterName == "" && w.svc.Status.ActiveServiceStatus.RayClusterName == "svc-00002" {
			break
		}
	}
	if w.svc.Status.ActiveServiceStatus.RayClusterName != "svc-00002" {
		t.Fatalf("the gated upgrade did not complete: %+v", w.svc.Status)
	}
	if asks < steps || steps == 0 {
		t.Errorf("%d traffic steps, %d gate evaluations: every step must be gated", steps, asks)
	}
	if meta.FindStatusCondition(w.svc.Status.Conditions, raygatev1alpha1.UpgradeGatesCondition) != nil {
		t.Error("UpgradeGates kept after the upgrade")
	}
}

func TestGatedUpgradeFailsAndPauses(t *testing.T) {
	value, asks := 0.5, 0
	w := gatedWorld(t, raygatev1alpha1.FailurePause, &value, &asks)
	for range 300 {
		if _, err := w.step(); err != nil {
			t.Fatal(err)
		}
		if c := meta.FindStatusCondition(w.svc.Status.Conditions, string(rayv1.UpgradeAction)); c != nil && c.Reason == rayv1.UpgradePaused {
			break
		}
	}
	pending := w.svc.Status.PendingServiceStatus.RayClusterName
	if w.svc.Annotations[rayv1.UpgradeActionKey] != rayv1.UpgradeActionPause || w.svc.Annotations[rayv1.UpgradeTargetKey] != pending || pending == "" {
		t.Fatalf("annotations %v, pending %q", w.svc.Annotations, pending)
	}
	if c := meta.FindStatusCondition(w.svc.Status.Conditions, raygatev1alpha1.UpgradeGatesCondition); c == nil || c.Reason != raygatev1alpha1.GateFailed {
		t.Fatalf("UpgradeGates %v", c)
	}
	if tr := ptr.Deref(w.svc.Status.PendingServiceStatus.TrafficRoutedPercent, 0); tr != 0 {
		t.Errorf("traffic %d%% moved past a failing gate", tr)
	}
	// Paused: no more evaluations, nothing moves.
	before := asks
	w.advance(time.Minute)
	for range 20 {
		if _, err := w.step(); err != nil {
			t.Fatal(err)
		}
	}
	if asks != before || ptr.Deref(w.svc.Status.PendingServiceStatus.TrafficRoutedPercent, 0) != 0 {
		t.Errorf("paused upgrade evaluated %d more times, traffic %v", asks-before, w.svc.Status.PendingServiceStatus.TrafficRoutedPercent)
	}
}
