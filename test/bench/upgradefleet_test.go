package main

import (
	"math"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestDistOf(t *testing.T) {
	for name, tc := range map[string]struct {
		in   []float64
		want dist
	}{
		"empty":                  {nil, dist{}},
		"one":                    {[]float64{0.3}, dist{Count: 1, Mean: 0.3, P50: 0.3, P95: 0.3, Max: 0.3}},
		"unsorted, nearest rank": {[]float64{5, 1, 4, 2, 3}, dist{Count: 5, Mean: 3, P50: 3, P95: 5, Max: 5}},
		"twenty, p95 is the nineteenth": {
			[]float64{20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1},
			dist{Count: 20, Mean: 10.5, P50: 10, P95: 19, Max: 20},
		},
		"negative errors (early steps) count": {[]float64{-0.5, 0.5}, dist{Count: 2, Mean: 0, P50: -0.5, P95: 0.5, Max: 0.5}},
	} {
		got := distOf(tc.in)
		if got.Count != tc.want.Count || !near(got.Mean, tc.want.Mean) || got.P50 != tc.want.P50 || got.P95 != tc.want.P95 || got.Max != tc.want.Max {
			t.Errorf("%s: distOf(%v) = %+v, want %+v", name, tc.in, got, tc.want)
		}
	}
}

func TestPacingErrors(t *testing.T) {
	obs := []trafficShift{
		{Seconds: 0.5, Percent: 0},  // route seen before any shift
		{Seconds: 2.0, Percent: 20}, // first shift
		{Seconds: 2.1, Percent: 20}, // a status update of the route: no shift
		{Seconds: 6.3, Percent: 40}, // 0.3 s late
		{Seconds: 10.3, Percent: 60},
		{Seconds: 15.3, Percent: 80}, // 1 s late
		{Seconds: 19.2, Percent: 100},
	}
	got := pacingErrors(obs, 4*time.Second)
	want := []float64{0.3, 0, 1, -0.1} // 2.0→6.3, 6.3→10.3, 10.3→15.3, 15.3→19.2
	if len(got) != len(want) {
		t.Fatalf("pacingErrors = %v, want %v", got, want)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-9 {
			t.Errorf("step %d: error %.3f, want %.3f", i, got[i], want[i])
		}
	}
	if got := pacingErrors(nil, 4*time.Second); len(got) != 0 {
		t.Errorf("no observations: %v, want none", got)
	}
	if got := pacingErrors([]trafficShift{{Seconds: 1, Percent: 100}}, 4*time.Second); len(got) != 0 {
		t.Errorf("a single shift has no gap: %v", got)
	}
}

func TestHTTPRouteUpdates(t *testing.T) {
	got := httpRouteUpdates(map[string]int{
		"update httproutes": 7, "patch httproutes": 2, "create httproutes": 1,
		"update httproutes/status": 5, "update rayservices/status": 9,
	})
	if got != 9 {
		t.Errorf("httpRouteUpdates = %d, want 9 (spec updates and patches only)", got)
	}
}

func TestDescribeServiceStatus(t *testing.T) {
	st := &rayv1.RayServiceStatuses{
		Conditions: []metav1.Condition{
			{Type: "Ready", Status: metav1.ConditionTrue, Reason: "NonZeroServeEndpoints"},
			{Type: "UpgradeInProgress", Status: metav1.ConditionTrue, Reason: "BothActivePendingClustersExist", Message: "waiting"},
		},
		ActiveServiceStatus:  rayv1.RayServiceStatus{RayClusterName: "a-1", TrafficRoutedPercent: ptr.To[int32](100), TargetCapacity: ptr.To[int32](100)},
		PendingServiceStatus: rayv1.RayServiceStatus{RayClusterName: "a-2", TargetCapacity: ptr.To[int32](0)},
	}
	got := describeServiceStatus(st)
	for _, want := range []string{
		"Ready=True (NonZeroServeEndpoints)", "UpgradeInProgress=True (BothActivePendingClustersExist: waiting)",
		`active "a-1" traffic 100% capacity 100%`, `pending "a-2" traffic - capacity 0%`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("describeServiceStatus = %q, lacks %q", got, want)
		}
	}
}

func fleetSample() *fleetResult {
	return &fleetResult{
		Scenario: "upgrade-fleet", Services: 50, MaxSurgePercent: 20, StepSizePercent: 20, IntervalSeconds: 4, Steps: 5, TheoreticalSeconds: 20,
		Raygate: fleetRun{Operator: "raygate", Completed: 50, WallSeconds: 30, PacingError: dist{Count: 200, Mean: 0.2, P50: 0.1, P95: 0.5, Max: 0.9},
			FirstShift: dist{Count: 50, Mean: 6, Max: 9}, CPUSeconds: 4, PeakRSSMB: 60, Writes: 1000, HTTPRouteUpdates: 250,
			WritesByKind: map[string]int{"update httproutes": 250}},
		KubeRay: &fleetRun{Operator: "kuberay", Completed: 50, WallSeconds: 60, PacingError: dist{Count: 200, Mean: 0.8, P50: 0.5, P95: 2, Max: 3},
			FirstShift: dist{Count: 50, Mean: 10, Max: 20}, CPUSeconds: 8, PeakRSSMB: 90, Writes: 2000, HTTPRouteUpdates: 250},
		DurationSeconds: 300,
	}
}

func TestRenderUpgradeFleet(t *testing.T) {
	var m md
	sample := fleetSample()
	sample.KubeRay.Flags = fleetFlags(true)
	renderUpgradeFleet(&m, sample)
	out := m.String()
	for _, want := range []string{
		"KubeRay v1.5.1 (`--reconcile-concurrency=4 --qps=1000 --burst=2000 --feature-gates=RayServiceIncrementalUpgrade=true`: its gate,",
		"## 2c. Upgrade fleet",
		"|  | raygate | KubeRay | raygate ÷ KubeRay |",
		"theoretical 5 steps × 4 s = 20 s) | 30.0 | 60.0 | 0.50× |",
		"| pacing error per step, s: **mean** | 0.20 | 0.80 | 0.25× |",
		"| pacing error per step, s: **p95** | 0.50 | 2.00 | 0.25× |",
		"| operator CPU s | 4.0 | 8.0 | 0.50× |",
		"| operator writes | 1000 | 2000 | 0.50× |",
		"| change → first shift, s: mean / max | 6.0 / 9.0 | 10.0 / 20.0 | – |",
		"raygate's writes in the window: update httproutes 250.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rendered section lacks %q:\n%s", want, out)
		}
	}

	// KubeRay that could not finish: its error is shown, with what it was waiting on.
	r := fleetSample()
	r.KubeRay.Completed, r.KubeRay.Error = 3, "47 of 50 RayServices without a newly active cluster; fleet-1: conditions [UpgradeInProgress=True]"
	m = md{}
	renderUpgradeFleet(&m, r)
	if !strings.Contains(m.String(), "KubeRay: **did not complete** — 47 of 50") {
		t.Errorf("KubeRay's error not rendered:\n%s", m.String())
	}
	m = md{}
	renderUpgradeFleet(&m, nil)
	if m.String() != "" {
		t.Errorf("not run: %q, want no section", m.String())
	}
}

func TestFleetVerdicts(t *testing.T) {
	r := fleetSample()
	if v := fleetVerdicts(r); len(v) != 1 {
		t.Errorf("KubeRay run with its defaults (results from before fleetFlags): %+v, want the time alone", v)
	}
	r.KubeRay.Flags = fleetFlags(true)
	if v := fleetVerdicts(r); len(v) != 3 || v[0].Status != "met" || !strings.Contains(v[0].Measured, "0.50× (30.0 s vs 60.0 s)") {
		t.Errorf("faster than KubeRay: %+v", v)
	}
	// Writes 1000 vs 2000 over 50 services, CPU 4 s vs 8 s.
	if v := fleetVerdicts(r); v[1].Status != "met" || v[1].Measured != "0.50× (20.0 vs 40.0)" || v[2].Status != "met" || v[2].Measured != "0.50× (4.0 s vs 8.0 s)" {
		t.Errorf("writes and CPU within the targets: %+v", v[1:])
	}
	r.Raygate.CPUSeconds, r.Raygate.Writes = 7, 1900
	if v := fleetVerdicts(r); v[1].Status != "**missed**" || v[2].Status != "**missed**" || v[2].Target != "≤ 0.8× KubeRay's" {
		t.Errorf("writes 0.95× and CPU 0.875× KubeRay's: %+v", v[1:])
	}
	r = fleetSample()
	r.KubeRay.Flags = fleetFlags(true)
	r.Raygate.WallSeconds = 90
	if v := fleetVerdicts(r); v[0].Status != "**missed**" {
		t.Errorf("slower than KubeRay: %+v", v)
	}
	r.Raygate.Completed = 49
	if v := fleetVerdicts(r); v[0].Status != "**missed**" || !strings.Contains(v[0].Measured, "49 of 50") {
		t.Errorf("raygate incomplete: %+v", v)
	}
	r = fleetSample()
	r.KubeRay = nil
	if v := fleetVerdicts(r); v[0].Status != "not run" {
		t.Errorf("without KubeRay: %+v", v)
	}
	if v := fleetVerdicts(nil); v != nil {
		t.Errorf("not run: %+v", v)
	}
}

// Writes per upgrade: the minimum's rows (a patch and an update of the same object on one
// row), then every other kind an operator wrote, then the totals.
func TestRenderFleetWritesPerUpgrade(t *testing.T) {
	r := fleetSample()
	r.Raygate.WritesByKind = map[string]int{"patch rayservices/status": 1000, "create events": 600, "delete services": 5}
	r.KubeRay.WritesByKind = map[string]int{"update rayservices/status": 500, "update gateways": 600}
	var m md
	renderFleetWritesPerUpgrade(&m, r)
	out := m.String()
	for _, want := range []string{
		"| write | minimum | raygate | KubeRay | what the minimum is for |",
		"| RayService status | 18 | 20.0 | 10.0 | the pending cluster;",
		"| create events | 12 | 12.0 | 0.0 |",
		"| delete services | 0 | 0.1 | 0.0 | – |",
		"| update gateways | 0 | 0.0 | 12.0 | – |",
		"| **total** | **51** | **32.1** | **22.0** |  |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rendered table lacks %q:\n%s", want, out)
		}
	}
	m = md{}
	r.Raygate.WritesByKind = nil
	renderFleetWritesPerUpgrade(&m, r)
	if m.String() != "" {
		t.Errorf("no writes by kind: %q, want nothing", m.String())
	}
}
