package rayservice

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	raygatev1alpha1 "github.com/raygate/raygate/apis/raygate/v1alpha1"
	rayscheme "github.com/raygate/raygate/apis/scheme"
	"github.com/raygate/raygate/controllers/rayservice/plan"
	"github.com/raygate/raygate/internal/promgate"
)

func TestGatesNotBefore(t *testing.T) {
	step := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	svc := func(pending string, migrated *time.Time) *rayv1.RayService {
		s := &rayv1.RayService{}
		s.Status.PendingServiceStatus.RayClusterName = pending
		if migrated != nil {
			s.Status.PendingServiceStatus.LastTrafficMigratedTime = &metav1.Time{Time: *migrated}
		}
		return s
	}
	cases := map[string]struct {
		svc  *rayv1.RayService
		want time.Time
	}{
		"no traffic step yet":        {svc: svc("green", nil)},
		"after the last step":        {svc: svc("green", &step), want: step.Add(time.Second)},
		"another pending cluster's":  {svc: svc("older", &step)},
		"no pending cluster written": {svc: svc("", &step)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := gatesNotBefore(tc.svc, plan.GateAsk{Policy: "p", Pending: "green", Active: "blue"}); !got.Equal(tc.want) {
				t.Errorf("gatesNotBefore = %v, want %v", got, tc.want)
			}
		})
	}
}

// slowEvaluator answers every gate with 0 after delay.
type slowEvaluator struct{ delay time.Duration }

func (s slowEvaluator) Evaluate(ctx context.Context, gates []raygatev1alpha1.Gate, _ time.Duration, _ promgate.Vars) []promgate.Result {
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
	}
	out := make([]promgate.Result, 0, len(gates))
	for _, g := range gates {
		out = append(out, promgate.Result{Gate: g.Name, Query: g.Query, Values: []float64{0}})
	}
	return out
}

// A pass at a gated step returns at once, whatever Prometheus takes; the answer decides
// later passes until it made a gate fail.
func TestEvaluateGatesNeverWaitsForPrometheus(t *testing.T) {
	pol := &raygatev1alpha1.UpgradePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "canary"},
		Spec:       raygatev1alpha1.UpgradePolicySpec{Gates: []raygatev1alpha1.Gate{{Name: "errors", Query: "sum(errors)", Max: "0.05"}}},
	}
	c := fake.NewClientBuilder().WithScheme(rayscheme.New()).WithObjects(pol).Build()
	done := make(chan types.NamespacedName, 4)
	pool := promgate.NewPool(slowEvaluator{delay: 300 * time.Millisecond}, promgate.PoolOptions{OnDone: func(o types.NamespacedName) { done <- o }})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = pool.Start(ctx) }()
	r := &Reconciler{Config: Config{Now: time.Now}, apiReader: c, gatePool: pool}
	svc := &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc"}}
	ask := plan.GateAsk{Policy: "canary", Pending: "svc-green", Active: "svc-blue"}

	start := time.Now()
	if g, _ := r.evaluateGates(ctx, svc, ask); g != nil {
		t.Fatalf("an answer before Prometheus gave one: %+v", g)
	}
	if took := time.Since(start); took > 200*time.Millisecond {
		t.Fatalf("the pass waited %v for Prometheus", took)
	}
	select {
	case o := <-done:
		if o != (types.NamespacedName{Namespace: "ns", Name: "svc"}) {
			t.Fatalf("the answer went to %v", o)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no answer handed back")
	}
	g, drop := r.evaluateGates(ctx, svc, ask)
	if g == nil || len(g.Results) != 1 || g.Results[0].Gate != "errors" || len(g.Gates) != 1 || drop == nil {
		t.Fatalf("after the answer came: %+v", g)
	}
	if again, _ := r.evaluateGates(ctx, svc, ask); again == nil {
		t.Fatal("a fresh answer did not decide the next pass")
	}
	drop() // it made a gate fail
	if g, _ := r.evaluateGates(ctx, svc, ask); g != nil {
		t.Fatalf("an answer that made a gate fail decided again: %+v", g)
	}
}
