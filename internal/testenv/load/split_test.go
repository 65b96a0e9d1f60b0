package load

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayscheme "github.com/raygate/raygate/apis/scheme"
)

func route(weights map[string]int32) *gwv1.HTTPRoute {
	rt := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc-httproute"}}
	rule := gwv1.HTTPRouteRule{}
	for _, name := range []string{"blue", "green"} {
		if w, ok := weights[name]; ok {
			ref := gwv1.HTTPBackendRef{}
			ref.Name, ref.Weight = gwv1.ObjectName(name+"-serve-svc"), ptr.To(w)
			rule.BackendRefs = append(rule.BackendRefs, ref)
		}
	}
	rt.Spec.Rules = []gwv1.HTTPRouteRule{rule}
	return rt
}

func TestRouteShares(t *testing.T) {
	cases := []struct {
		name    string
		weights map[string]int32
		want    map[string]float64
	}{
		{"one backend", map[string]int32{"blue": 100}, map[string]float64{"blue": 1}},
		{"a split", map[string]int32{"blue": 60, "green": 40}, map[string]float64{"blue": 0.6, "green": 0.4}},
		{"total 0: no shares", map[string]int32{"blue": 0, "green": 0}, map[string]float64{}},
	}
	for _, tc := range cases {
		if got := RouteShares(route(tc.weights)); !SameShares(got, tc.want) {
			t.Errorf("%s: shares = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestWatchWeightsRecordsChanges(t *testing.T) {
	rt := route(map[string]int32{"blue": 100})
	c := fake.NewClientBuilder().WithScheme(rayscheme.New()).WithObjects(rt).Build()
	ctx := context.Background()
	w := WatchWeights(ctx, c, "ns", "svc-httproute")
	time.Sleep(200 * time.Millisecond) // several reads of the same weights: one sample
	next := route(map[string]int32{"blue": 80, "green": 20})
	if err := c.Get(ctx, client.ObjectKeyFromObject(rt), rt); err != nil {
		t.Fatal(err)
	}
	rt.Spec = next.Spec
	if err := c.Update(ctx, rt); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		w.mu.Lock()
		n := len(w.samples)
		w.mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	got := w.Stop()
	if len(got) != 2 || !SameShares(got[0].Shares, map[string]float64{"blue": 1}) || !SameShares(got[1].Shares, map[string]float64{"blue": 0.8, "green": 0.2}) {
		t.Fatalf("samples = %v, want 100%% blue then 80/20", got)
	}
	if !got[1].At.After(got[0].At) {
		t.Errorf("samples out of order: %v", got)
	}
}
