package plan

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	raygatev1alpha1 "github.com/raygate/raygate/apis/raygate/v1alpha1"
)

func TestDecideGates(t *testing.T) {
	errRatio := raygatev1alpha1.Gate{Name: "errors", Query: "q1", Max: "0.05"}
	rps := raygatev1alpha1.Gate{Name: "rps", Query: "q2", Min: "10"}
	band := raygatev1alpha1.Gate{Name: "band", Query: "q3", Min: "1", Max: "2"}
	obs := func(gates []raygatev1alpha1.Gate, results ...GateResult) GateObservation {
		return GateObservation{Policy: "pol", Gates: gates, Results: results}
	}
	res := func(gate string, values ...float64) GateResult {
		return GateResult{Gate: gate, Query: "rendered-" + gate, Values: values}
	}
	cases := []struct {
		name    string
		in      GateObservation
		verdict gateVerdict
		reason  string
		gate    string
		message []string
	}{
		{name: "all pass", in: obs([]raygatev1alpha1.Gate{errRatio, rps}, res("errors", 0.01), res("rps", 50)),
			verdict: gatePass, reason: raygatev1alpha1.GatesPassed, message: []string{"all 2 gates of UpgradePolicy pol pass", "errors=0.01 (max 0.05)", "rps=50 (min 10)"}},
		{name: "a value above max fails with query, value and threshold", in: obs([]raygatev1alpha1.Gate{errRatio}, res("errors", 0.2)),
			verdict: gateFail, reason: raygatev1alpha1.GateFailed, gate: "errors", message: []string{`gate "errors"`, "query rendered-errors returned 0.2, above max 0.05"}},
		{name: "a value below min fails", in: obs([]raygatev1alpha1.Gate{rps}, res("rps", 3)),
			verdict: gateFail, gate: "rps", reason: raygatev1alpha1.GateFailed, message: []string{"returned 3, below min 10"}},
		{name: "the max bound itself passes", in: obs([]raygatev1alpha1.Gate{errRatio}, res("errors", 0.05)), verdict: gatePass, reason: raygatev1alpha1.GatesPassed},
		{name: "every series must be in bounds", in: obs([]raygatev1alpha1.Gate{band}, res("band", 1.5, 2.5, 1.2)),
			verdict: gateFail, gate: "band", reason: raygatev1alpha1.GateFailed, message: []string{"returned 2.5, above max 2"}},
		{name: "no data waits", in: obs([]raygatev1alpha1.Gate{errRatio}, res("errors")),
			verdict: gateWait, reason: raygatev1alpha1.GatesWaiting, message: []string{"returned no data", "never proceeds ungated nor rolls back"}},
		{name: "Prometheus down waits", in: obs([]raygatev1alpha1.Gate{errRatio}, GateResult{Gate: "errors", Err: "connection refused"}),
			verdict: gateWait, reason: raygatev1alpha1.GatesWaiting, message: []string{"no answer from Prometheus (connection refused)"}},
		{name: "a failure beats missing data", in: obs([]raygatev1alpha1.Gate{errRatio, rps}, res("errors"), res("rps", 1)),
			verdict: gateFail, gate: "rps", reason: raygatev1alpha1.GateFailed},
		{name: "a gate without a result waits", in: obs([]raygatev1alpha1.Gate{errRatio, rps}, res("errors", 0)),
			verdict: gateWait, reason: raygatev1alpha1.GatesWaiting, message: []string{`gate "rps" was not evaluated`}},
		{name: "policy unavailable waits", in: GateObservation{Policy: "pol", Unavailable: "UpgradePolicy ns/pol does not exist"},
			verdict: gateWait, reason: raygatev1alpha1.GatesUnavailable, message: []string{"does not exist"}},
		{name: "an unparsable bound waits as invalid", in: obs([]raygatev1alpha1.Gate{{Name: "x", Query: "q", Max: "lots"}}, res("x", 1)),
			verdict: gateWait, reason: raygatev1alpha1.GatesUnavailable, message: []string{"is invalid", `"lots" is not a finite number`}},
		{name: "no bounds waits as invalid", in: obs([]raygatev1alpha1.Gate{{Name: "x", Query: "q"}}, res("x", 1)),
			verdict: gateWait, reason: raygatev1alpha1.GatesUnavailable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := decideGates(tc.in)
			if d.Verdict != tc.verdict || d.Reason != tc.reason || d.Gate != tc.gate {
				t.Errorf("got verdict %d reason %s gate %q; want %d %s %q (%s)", d.Verdict, d.Reason, d.Gate, tc.verdict, tc.reason, tc.gate, d.Message)
			}
			for _, m := range tc.message {
				if !strings.Contains(d.Message, m) {
					t.Errorf("message %q lacks %q", d.Message, m)
				}
			}
		})
	}
}

// gatedInputs is an incremental upgrade from a to p with the policy annotation.
func gatedInputs(ann map[string]string, gates *GateObservation, stored *rayv1.RayServiceStatuses, now time.Time) (inputs, roles) {
	svc := &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: "ns", UID: "u1", Annotations: ann}}
	if stored == nil {
		stored = &rayv1.RayServiceStatuses{}
	}
	in := inputs{obs: &Observed{Gates: gates}, want: &Desired{Service: svc, Strategy: rayv1.NewClusterWithIncrementalUpgrade}, stored: stored, now: now}
	migrated := metav1.NewTime(now.Add(-10 * time.Second))
	r := roles{
		Active:  slot{View: &ClusterView{Cluster: &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: "a"}}}, Status: rayv1.RayServiceStatus{TrafficRoutedPercent: ptr.To[int32](0), TargetCapacity: ptr.To[int32](0), LastTrafficMigratedTime: &migrated}},
		Pending: slot{View: &ClusterView{Cluster: &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: "p"}}}, Status: rayv1.RayServiceStatus{TrafficRoutedPercent: ptr.To[int32](100), TargetCapacity: ptr.To[int32](100), LastTrafficMigratedTime: &migrated}},
	}
	return in, r
}

func TestGateHold(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pol := map[string]string{raygatev1alpha1.UpgradePolicyAnnotation: "pol"}
	gate := raygatev1alpha1.Gate{Name: "errors", Query: "q", Max: "0.05"}
	pass := &GateObservation{Policy: "pol", OnFailure: raygatev1alpha1.FailurePause, Gates: []raygatev1alpha1.Gate{gate}, Results: []GateResult{{Gate: "errors", Values: []float64{0}}}}
	fail := &GateObservation{Policy: "pol", OnFailure: raygatev1alpha1.FailureRollback, Gates: []raygatev1alpha1.Gate{gate}, Results: []GateResult{{Gate: "errors", Query: "q", Values: []float64{1}}}}
	down := &GateObservation{Policy: "pol", Gates: []raygatev1alpha1.Gate{gate}, Results: []GateResult{{Gate: "errors", Err: "refused"}}}
	settling := *pass
	settling.Settle = time.Minute

	t.Run("no annotation: no gate", func(t *testing.T) {
		in, r := gatedInputs(nil, nil, nil, now)
		var out Plan
		if hold := gateHold(in, r, gateTraffic, &out.Effects, &out.Outcome).Hold; hold || out.GateAsk != nil {
			t.Error("an upgrade without a policy is held")
		}
	})
	t.Run("not evaluated yet: asks and holds", func(t *testing.T) {
		in, r := gatedInputs(pol, nil, nil, now)
		var out Plan
		hold := gateHold(in, r, gateTraffic, &out.Effects, &out.Outcome).Hold
		if !hold || out.GateAsk == nil || *out.GateAsk != (GateAsk{Policy: "pol", Active: "a", Pending: "p"}) {
			t.Errorf("hold %v ask %+v", hold, out.GateAsk)
		}
	})
	t.Run("pass: the step goes on", func(t *testing.T) {
		in, r := gatedInputs(pol, pass, nil, now)
		var out Plan
		if g := gateHold(in, r, gateTraffic, &out.Effects, &out.Outcome); g.Hold || len(out.Actions) > 0 {
			t.Errorf("held: %s", g.Why)
		}
	})
	t.Run("Prometheus down: waits, no action, looks again", func(t *testing.T) {
		in, r := gatedInputs(pol, down, nil, now)
		var out Plan
		hold := gateHold(in, r, gateTraffic, &out.Effects, &out.Outcome).Hold
		if !hold || len(out.Actions) > 0 || out.Wake.At != now.Add(gateRecheck) {
			t.Errorf("hold %v actions %v wake %v", hold, out.Actions, out.Wake.At)
		}
	})
	t.Run("fail with Rollback: writes abort for the pending cluster, warns and counts", func(t *testing.T) {
		in, r := gatedInputs(pol, fail, nil, now)
		var out Plan
		hold := gateHold(in, r, gateTraffic, &out.Effects, &out.Outcome).Hold
		if !hold || len(out.Actions) != 1 || out.Metrics.GateFailed == nil || len(out.Events) != 1 || out.Events[0].Reason != EventGateFailed {
			t.Fatalf("hold %v actions %v failed %v events %v", hold, out.Actions, out.Metrics.GateFailed, out.Events)
		}
		a := out.Actions[0].(AnnotateService)
		if a.Annotations[rayv1.UpgradeActionKey] != rayv1.UpgradeActionAbort || a.Annotations[rayv1.UpgradeTargetKey] != "p" {
			t.Errorf("annotations %v", a.Annotations)
		}
	})
	t.Run("fail already acted on: nothing written again", func(t *testing.T) {
		ann := map[string]string{raygatev1alpha1.UpgradePolicyAnnotation: "pol", rayv1.UpgradeActionKey: "abort", rayv1.UpgradeTargetKey: "p"}
		in, r := gatedInputs(ann, fail, nil, now)
		var out Plan
		if hold := gateHold(in, r, gateTraffic, &out.Effects, &out.Outcome).Hold; !hold || len(out.Actions) > 0 {
			t.Errorf("hold %v actions %v", hold, out.Actions)
		}
	})
	t.Run("a paused upgrade is not evaluated", func(t *testing.T) {
		in, r := gatedInputs(pol, nil, nil, now)
		r.Control = control{Mode: ctlPaused}
		var out Plan
		if hold := gateHold(in, r, gateTraffic, &out.Effects, &out.Outcome).Hold; hold || out.GateAsk != nil {
			t.Error("evaluated while paused")
		}
	})
	t.Run("settle: promotion waits until the gates passed for settleSeconds after the last step", func(t *testing.T) {
		in, r := gatedInputs(pol, &settling, nil, now)
		var out Plan
		g := gateHold(in, r, gatePromote, &out.Effects, &out.Outcome)
		hold, note := g.Hold, g.Why
		if !hold || !strings.Contains(note, "settling") || out.Wake.At != now.Add(gateRecheck) {
			t.Errorf("hold %v note %q wake %v", hold, note, out.Wake.At)
		}
		in.now = now.Add(time.Minute)
		out = Plan{}
		if g := gateHold(in, r, gatePromote, &out.Effects, &out.Outcome); g.Hold {
			t.Errorf("held after the settle period: %s", g.Why)
		}
		out = Plan{}
		if hold := gateHold(in, r, gateTraffic, &out.Effects, &out.Outcome).Hold; hold {
			t.Error("a traffic step waits for the settle period")
		}
	})
}

func TestSetUpgradeGates(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pol := map[string]string{raygatev1alpha1.UpgradePolicyAnnotation: "pol"}
	failed := metav1.Condition{Type: raygatev1alpha1.UpgradeGatesCondition, Status: metav1.ConditionFalse, Reason: raygatev1alpha1.GateFailed, Message: "gate x failed"}
	stored := &rayv1.RayServiceStatuses{Conditions: []metav1.Condition{failed}}

	in, r := gatedInputs(pol, nil, stored, now)
	st := *stored.DeepCopy()
	r.Control = control{Mode: ctlPaused}
	setUpgradeGates(in, &st, r, nil, metav1.NewTime(now))
	if c := findCondition(st.Conditions, raygatev1alpha1.UpgradeGatesCondition); c == nil || c.Reason != raygatev1alpha1.GateFailed {
		t.Errorf("a paused upgrade forgot which gate paused it: %v", st.Conditions)
	}

	r.Control = control{Mode: ctlResumed, Reason: ReasonUpgradeResumed}
	setUpgradeGates(in, &st, r, nil, metav1.NewTime(now))
	if c := findCondition(st.Conditions, raygatev1alpha1.UpgradeGatesCondition); c == nil || c.Reason != raygatev1alpha1.GatesEvaluating {
		t.Errorf("resume: %v", st.Conditions)
	}

	r.Pending = slot{}
	setUpgradeGates(in, &st, r, nil, metav1.NewTime(now))
	if c := findCondition(st.Conditions, raygatev1alpha1.UpgradeGatesCondition); c != nil {
		t.Errorf("no upgrade, condition kept: %v", c)
	}
}
