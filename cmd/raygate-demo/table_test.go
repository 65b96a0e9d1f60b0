package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/load"
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
	row := formatRow([]string{"+12.3s", "aaaaa", "bbbbb", "2 RUNNING", "60%", "80%", "40%", "aaaaa=60 bbbbb=40", "38/0", "aaaaa=61 bbbbb=39"})
	for _, col := range []string{"ACTIVE", "PENDING", "PENDING APPS", "ACTIVE CAP", "PENDING CAP", "PENDING TRAFFIC", "HTTPROUTE WEIGHTS", "OK/FAILED", "MEASURED SPLIT"} {
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

func results(spec ...any) []load.Result {
	var out []load.Result
	for i := 0; i < len(spec); i += 2 {
		for range spec[i+1].(int) {
			r := load.Result{Status: 200, Cluster: spec[i].(string)}
			if r.Cluster == "" {
				r.Status, r.Failed, r.Err = 503, true, "status 503"
			}
			out = append(out, r)
		}
	}
	return out
}

func TestLoadCells(t *testing.T) {
	s := split{Active: "rs-zzzzz", Pending: "rs-bbbbb"}
	for _, tt := range []struct {
		name    string
		results []load.Result
		want    []string
	}{
		{"no load", nil, []string{"-", "-"}},
		{"no request finished during the row", []load.Result{}, []string{"0/0", "-"}},
		{"only failures", results("", 3), []string{"0/3", "-"}},
		{"one cluster", results("ns/rs-zzzzz", 20), []string{"20/0", "zzzzz=100"}},
		{"the active cluster first, shares rounded", results("ns/rs-bbbbb", 13, "ns/rs-zzzzz", 27), []string{"40/0", "zzzzz=68 bbbbb=32"}},
		{"failures are counted, the split is over answers", results("ns/rs-zzzzz", 6, "ns/rs-bbbbb", 4, "", 1), []string{"10/1", "zzzzz=60 bbbbb=40"}},
		{"a cluster of another name keeps its name", results("ns/other", 1), []string{"1/0", "other=100"}},
	} {
		if diff := cmp.Diff(tt.want, loadCells(tt.results, s, "rs", "ns")); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestTableRowsCarryTheRequestsOfTheirState(t *testing.T) {
	var out strings.Builder
	var finished []load.Result
	t0 := time.Unix(1000, 0)
	tbl := &table{d: &demo{out: &out}, service: "rs", namespace: "ns", start: t0, results: func() []load.Result { return finished }}
	before := splitOf(&rayv1.RayService{Status: rayv1.RayServiceStatuses{
		ActiveServiceStatus:  rayv1.RayServiceStatus{RayClusterName: "rs-aaaaa"},
		PendingServiceStatus: rayv1.RayServiceStatus{RayClusterName: "rs-bbbbb", TargetCapacity: ptr.To[int32](40), TrafficRoutedPercent: ptr.To[int32](20)},
	}}, route("rs-aaaaa", 80, "rs-bbbbb", 20))
	after := before
	after.PendingTraffic, after.Weights = ptr.To[int32](40), map[string]int32{"rs-aaaaa": 60, "rs-bbbbb": 40}

	tbl.observe(before, t0)
	finished = results("ns/rs-aaaaa", 8, "ns/rs-bbbbb", 2)
	tbl.observe(before, t0.Add(time.Second)) // nothing changed, too early for a row
	if out.Len() != 0 {
		t.Fatalf("a row before the state ended or rowEvery passed:\n%s", out.String())
	}
	tbl.observe(after, t0.Add(2*time.Second)) // the first state ends: its row, with its requests
	finished = append(finished, results("ns/rs-aaaaa", 3, "ns/rs-bbbbb", 2, "", 1)...)
	tbl.observe(after, t0.Add(2*time.Second+rowEvery)) // a row while nothing changes
	tbl.flush(t0.Add(10 * time.Second))                // the end: no request since the last row
	want := strings.Join([]string{
		formatRow([]string{"+0.0s", "aaaaa", "bbbbb", "starting", "100%", "40%", "20%", "aaaaa=80 bbbbb=20", "10/0", "aaaaa=80 bbbbb=20"}),
		formatRow([]string{"+2.0s", "aaaaa", "bbbbb", "starting", "100%", "40%", "40%", "aaaaa=60 bbbbb=40", "5/1", "aaaaa=60 bbbbb=40"}),
		formatRow([]string{"+5.0s", "aaaaa", "bbbbb", "starting", "100%", "40%", "40%", "aaaaa=60 bbbbb=40", "0/0", "-"}),
	}, "\n") + "\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
}
