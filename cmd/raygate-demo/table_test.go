package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func route(weights ...any) *gwv1.HTTPRoute {
	rt := &gwv1.HTTPRoute{}
	rule := gwv1.HTTPRouteRule{}
	for i := 0; i < len(weights); i += 2 {
		ref := gwv1.HTTPBackendRef{}
		ref.Name = gwv1.ObjectName(weights[i].(string) + "-serve-svc")
		ref.Weight = ptr.To(int32(weights[i+1].(int)))
		rule.BackendRefs = append(rule.BackendRefs, ref)
	}
	rt.Spec.Rules = []gwv1.HTTPRouteRule{rule}
	return rt
}

func TestSplitCells(t *testing.T) {
	const svcName = "rs"
	running := map[string]rayv1.AppStatus{"a": {Status: "RUNNING"}, "b": {Status: "RUNNING"}}
	tests := []struct {
		name string
		svc  *rayv1.RayService
		rt   *gwv1.HTTPRoute
		want []string
	}{
		{
			name: "nothing observed yet",
			want: []string{"-", "-", "-", "-", "-", "-", "-"},
		},
		{
			name: "one cluster serving, capacity unset means all of it",
			svc:  &rayv1.RayService{Status: rayv1.RayServiceStatuses{ActiveServiceStatus: rayv1.RayServiceStatus{RayClusterName: "rs-aaaaa"}}},
			rt:   route("rs-aaaaa", 100),
			want: []string{"aaaaa", "-", "-", "100%", "-", "-", "aaaaa=100"},
		},
		{
			name: "pending cluster starting",
			svc: &rayv1.RayService{Status: rayv1.RayServiceStatuses{
				ActiveServiceStatus:  rayv1.RayServiceStatus{RayClusterName: "rs-aaaaa", TargetCapacity: ptr.To[int32](100)},
				PendingServiceStatus: rayv1.RayServiceStatus{RayClusterName: "rs-bbbbb", TargetCapacity: ptr.To[int32](0), TrafficRoutedPercent: ptr.To[int32](0)},
			}},
			rt:   route("rs-aaaaa", 100, "rs-bbbbb", 0),
			want: []string{"aaaaa", "bbbbb", "starting", "100%", "0%", "0%", "aaaaa=100 bbbbb=0"},
		},
		{
			name: "mid-upgrade: the active cluster's weight comes first whatever the names",
			svc: &rayv1.RayService{Status: rayv1.RayServiceStatuses{
				ActiveServiceStatus: rayv1.RayServiceStatus{RayClusterName: "rs-zzzzz", TargetCapacity: ptr.To[int32](60)},
				PendingServiceStatus: rayv1.RayServiceStatus{RayClusterName: "rs-bbbbb", TargetCapacity: ptr.To[int32](80), TrafficRoutedPercent: ptr.To[int32](40),
					Applications: map[string]rayv1.AppStatus{"a": {Status: "RUNNING"}, "b": {Status: "DEPLOYING"}}},
			}},
			rt:   route("rs-bbbbb", 40, "rs-zzzzz", 60),
			want: []string{"zzzzz", "bbbbb", "1 DEPLOYING 1 RUNNING", "60%", "80%", "40%", "zzzzz=60 bbbbb=40"},
		},
		{
			name: "promoted; a cluster not named after the service keeps its name",
			svc: &rayv1.RayService{Status: rayv1.RayServiceStatuses{
				ActiveServiceStatus: rayv1.RayServiceStatus{RayClusterName: "other", TargetCapacity: ptr.To[int32](100), Applications: running},
			}},
			rt:   route("other", 100, "rs-aaaaa", 0),
			want: []string{"other", "-", "-", "100%", "-", "-", "other=100 aaaaa=0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, splitOf(tt.svc, tt.rt).cells(svcName)); diff != "" {
				t.Errorf("cells (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFormatRowAlignsWithHeader(t *testing.T) {
	h := header()
	row := formatRow([]string{"+12.3s", "aaaaa", "bbbbb", "2 RUNNING", "60%", "80%", "40%", "aaaaa=60 bbbbb=40"})
	for _, col := range []string{"ACTIVE", "PENDING", "PENDING APPS", "ACTIVE CAP", "PENDING CAP", "PENDING TRAFFIC", "HTTPROUTE WEIGHTS"} {
		i := strings.Index(h, col)
		if i < 0 {
			t.Fatalf("header %q lacks %q", h, col)
		}
		if row[i-1] != ' ' || row[i] == ' ' {
			t.Errorf("column %s starts at %d in the header, but the row has %q there:\n%s\n%s", col, i, row[i-1:i+1], h, row)
		}
	}
	if got := formatRow([]string{"a-very-long-time", "x"}); !strings.Contains(got, "a-very-long-time x") {
		t.Errorf("an overlong cell must still be followed by a space: %q", got)
	}
}

func TestAppsSummary(t *testing.T) {
	for _, tt := range []struct {
		apps map[string]rayv1.AppStatus
		want string
	}{
		{nil, "starting"},
		{map[string]rayv1.AppStatus{"a": {Status: "DEPLOYING"}, "b": {Status: "DEPLOYING"}}, "2 DEPLOYING"},
		{map[string]rayv1.AppStatus{"a": {Status: "UNHEALTHY"}, "b": {Status: "RUNNING"}, "c": {Status: "RUNNING"}}, "2 RUNNING 1 UNHEALTHY"},
	} {
		if got := appsSummary(tt.apps); got != tt.want {
			t.Errorf("appsSummary(%v) = %q, want %q", tt.apps, got, tt.want)
		}
	}
}

func TestUpgradeDone(t *testing.T) {
	ready := []metav1.Condition{{Type: string(rayv1.RayServiceReady), Status: metav1.ConditionTrue}}
	st := func(gen int64, active, pending string, conds []metav1.Condition) *rayv1.RayService {
		return &rayv1.RayService{Status: rayv1.RayServiceStatuses{ObservedGeneration: gen, Conditions: conds,
			ActiveServiceStatus: rayv1.RayServiceStatus{RayClusterName: active}, PendingServiceStatus: rayv1.RayServiceStatus{RayClusterName: pending}}}
	}
	for _, tt := range []struct {
		name string
		svc  *rayv1.RayService
		want bool
	}{
		{"patch not observed yet", st(1, "old", "", ready), false},
		{"upgrading", st(2, "old", "new", ready), false},
		{"promoted", st(2, "new", "", ready), true},
		{"promoted but not ready", st(2, "new", "", nil), false},
		{"a later generation, promoted", st(3, "new", "", ready), true},
	} {
		if got := upgradeDone(tt.svc, 2, "old"); got != tt.want {
			t.Errorf("%s: upgradeDone = %v, want %v", tt.name, got, tt.want)
		}
	}
}
