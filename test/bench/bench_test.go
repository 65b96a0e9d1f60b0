package main

import (
	"context"
	"errors"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/raygate/raygate/internal/testenv/load"
	"github.com/raygate/raygate/test/builders"
)

const auditSample = `{"kind":"Event","level":"Metadata","auditID":"a1","stage":"ResponseComplete","verb":"create","user":{"username":"raygate-operator"},"objectRef":{"resource":"pods","namespace":"ns"},"responseStatus":{"code":201},"requestReceivedTimestamp":"2026-01-01T00:00:01.000000Z"}
{"kind":"Event","level":"Metadata","auditID":"a2","stage":"ResponseStarted","verb":"watch","user":{"username":"raygate-operator"},"objectRef":{"resource":"pods"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-01T00:00:00.500000Z"}
{"kind":"Event","level":"Metadata","auditID":"a3","stage":"ResponseComplete","verb":"update","user":{"username":"raygate-operator"},"objectRef":{"resource":"rayclusters","subresource":"status"},"responseStatus":{"code":409},"requestReceivedTimestamp":"2026-01-01T00:00:02.000000Z"}
{"kind":"Event","level":"Metadata","auditID":"a4","stage":"ResponseComplete","verb":"create","user":{"username":"system:kube-scheduler"},"objectRef":{"resource":"pods","subresource":"binding"},"responseStatus":{"code":201},"requestReceivedTimestamp":"2026-01-01T00:00:02.500000Z"}

{"kind":"Event","level":"Metadata","auditID":"a5","stage":"ResponseComplete","verb":"patch","user":{"username":"raygate-operator"},"objectRef":{"resource":"events"},"responseStatus":{"code":422},"requestReceivedTimestamp":"2026-01-01T00:00:03.000000Z"}
{"kind":"Event","level":"Metadata","auditID":"a2","stage":"ResponseComplete","verb":"watch","user":{"username":"raygate-operator"},"objectRef":{"resource":"pods"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-01T00:00:00.500000Z"}
{"kind":"Event","level":"Metadata","auditID":"a6","stage":"ResponseComplete","verb":"get","user":{"username":"raygate-operator"},"requestReceivedTimestamp":"2026-01-01T00:00:04.000000Z"}
`

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestParseAudit(t *testing.T) {
	reqs, err := parseAudit(strings.NewReader(auditSample), operatorUser)
	if err != nil {
		t.Fatal(err)
	}
	want := []request{
		{Verb: "watch", Resource: "pods", Code: 200, Time: ts("2026-01-01T00:00:00.5Z")}, // one entry for two stages
		{Verb: "create", Resource: "pods", Code: 201, Time: ts("2026-01-01T00:00:01Z")},
		{Verb: "update", Resource: "rayclusters/status", Code: 409, Time: ts("2026-01-01T00:00:02Z")},
		{Verb: "patch", Resource: "events", Code: 422, Time: ts("2026-01-01T00:00:03Z")},
		{Verb: "get", Resource: "", Code: 0, Time: ts("2026-01-01T00:00:04Z")}, // non-resource request
	}
	if !reflect.DeepEqual(reqs, want) {
		t.Errorf("parseAudit =\n%+v\nwant\n%+v", reqs, want)
	}

	c := count(reqs)
	wantCounts := requestCounts{
		Total:        5,
		ByVerb:       map[string]int{"watch": 1, "create": 1, "update": 1, "patch": 1, "get": 1},
		Writes:       3,
		WritesByKind: map[string]int{"create pods": 1, "update rayclusters/status": 1, "patch events": 1},
		Conflicts:    1,
		Errors:       1,
	}
	if !reflect.DeepEqual(c, wantCounts) {
		t.Errorf("count =\n%+v\nwant\n%+v", c, wantCounts)
	}

	w := window(reqs, ts("2026-01-01T00:00:01Z"), ts("2026-01-01T00:00:03Z"))
	if len(w) != 2 || w[0].Verb != "create" || w[1].Verb != "update" {
		t.Errorf("window [1s, 3s) = %+v, want the create and the update", w)
	}
}

func TestParseAuditBadLine(t *testing.T) {
	_, err := parseAudit(strings.NewReader("{\"auditID\":\"x\"}\nnot json\n"), operatorUser)
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("want an error naming line 2, got %v", err)
	}
}

func TestIsWrite(t *testing.T) {
	for verb, want := range map[string]bool{
		"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true,
		"get": false, "list": false, "watch": false, "": false,
	} {
		if isWrite(verb) != want {
			t.Errorf("isWrite(%q) = %v", verb, !want)
		}
	}
}

func TestParseUsage(t *testing.T) {
	status := "Name:\traygate\nVmPeak:\t  900000 kB\nVmHWM:\t   51200 kB\nVmRSS:\t   40000 kB\n"
	// The command name may contain spaces and parentheses; fields are counted from the last ')'.
	stat := "4242 (ray gate (x)) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 130 0 0 20 0 12 0 100 0 0"
	u, err := parseUsage(status, stat)
	if err != nil {
		t.Fatal(err)
	}
	if u.PeakRSSMB != 50 || u.CPUSeconds != 3.8 {
		t.Errorf("usage = %+v, want 50 MB and 3.8 s", u)
	}
	if _, err := parseUsage("VmRSS: 1 kB\n", stat); err == nil {
		t.Error("want an error without VmHWM")
	}
	if _, err := parseUsage(status, "4242 (raygate) S 1"); err == nil {
		t.Error("want an error for a short stat line")
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	for p, want := range map[float64]time.Duration{50: 50 * time.Millisecond, 99: 99 * time.Millisecond, 100: 100 * time.Millisecond, 1: time.Millisecond} {
		if got := load.Percentile(d, p); got != want {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
	if load.Percentile(nil, 99) != 0 {
		t.Error("empty input")
	}
	if got := load.Percentile([]time.Duration{7}, 99); got != 7 {
		t.Errorf("single value: %v", got)
	}

	l := summarise([]time.Duration{3 * time.Millisecond, time.Millisecond, 2 * time.Millisecond}, 1, 2*time.Second)
	if l.Requests != 4 || l.Errors != 1 || l.P50Ms != 2 || l.P99Ms != 3 || l.MeanMs != 2 || l.PerSecond != 2 {
		t.Errorf("summarise = %+v", l)
	}
}

func TestParseGoBench(t *testing.T) {
	out := `goos: linux
goarch: amd64
pkg: github.com/raygate/raygate/webhooks
BenchmarkValidateRayService-2   	   12000	     95000 ns/op	       410000 p99-ns	   52000 B/op	     640 allocs/op
BenchmarkMutateRayCluster     	    9000	    120000 ns/op	   61000 B/op	     700 allocs/op
Benchmark broken line
PASS
ok  	github.com/raygate/raygate/webhooks	3.2s
`
	got := parseGoBench(out)
	want := []goBenchmark{
		{Name: "BenchmarkValidateRayService", Iterations: 12000, Metrics: map[string]float64{"ns/op": 95000, "p99-ns": 410000, "B/op": 52000, "allocs/op": 640}},
		{Name: "BenchmarkMutateRayCluster", Iterations: 9000, Metrics: map[string]float64{"ns/op": 120000, "B/op": 61000, "allocs/op": 700}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseGoBench =\n%+v\nwant\n%+v", got, want)
	}
}

func TestNodesFor(t *testing.T) {
	q := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	tests := []struct {
		name string
		req  corev1.ResourceList
		pods int
		want int
	}{
		{"tiny", q("4", "5Gi"), 4, 2},
		{"memory bound: 5000Gi over 1Ti nodes", q("4000", "5000Gi"), 4000, 7},
		{"cpu bound", q("3000", "1Gi"), 10, 4},
		{"capped", q("1000000", "1Gi"), 10, 128},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nodesFor(tt.req, tt.pods); got != tt.want {
				t.Errorf("nodesFor = %d, want %d", got, tt.want)
			}
		})
	}
	// The scale scenario's own requests: 1000 clusters need room for 4000 CPUs and 5000 GiB.
	if got := nodesFor(scale(1000), 4000); got < 6 {
		t.Errorf("1000 clusters on %d nodes: not enough room", got)
	}
}

func TestMinWritesPerCluster(t *testing.T) {
	// 4 pods + 1 head Service + 2 status writes + 2 events (head group up, workers scaled up).
	if got := minWritesPerCluster(); got != 9 {
		t.Errorf("minWritesPerCluster = %d, want 9", got)
	}
}

func TestRecommendConcurrency(t *testing.T) {
	run := func(c int, s float64, err string) scaleRun { return scaleRun{Concurrency: c, Seconds: s, Error: err} }
	tests := []struct {
		name string
		runs []scaleRun
		want int
		ok   bool
	}{
		{"smallest within 10% of the best", []scaleRun{run(16, 40, ""), run(1, 120, ""), run(4, 43, "")}, 4, true},
		{"more is faster", []scaleRun{run(1, 100, ""), run(4, 60, ""), run(16, 30, "")}, 16, true},
		{"failed runs ignored", []scaleRun{run(1, 10, "boom"), run(4, 50, ""), run(16, 49, "")}, 4, true},
		{"one run is no comparison", []scaleRun{run(4, 50, "")}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := recommendConcurrency(tt.runs)
			if got != tt.want || ok != tt.ok {
				t.Errorf("recommendConcurrency = %d, %v; want %d, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestVerdicts(t *testing.T) {
	reqs := func(conflicts int) *requestCounts { return &requestCounts{Conflicts: conflicts} }
	r := &results{
		Scale: []scaleResult{{
			Clusters: 1000, Pods: 4000, Stages: "fast", MinWritesPerCluster: 11,
			Raygate:   scaleRun{Seconds: 50, WritesPerObj: 11},
			Reference: scaleRun{Seconds: 50},
		}, {
			Clusters: 1000, Pods: 4000, Stages: "general", MinWritesPerCluster: 11,
			Raygate: scaleRun{Concurrency: 4, Seconds: 140, WritesPerObj: 12.6, QuietSeconds: 60, Quiet: &requestCounts{Writes: 2},
				Usage: &processUsage{PeakRSSMB: 90}, Requests: reqs(0)},
			KubeRay:   &scaleRun{System: "kuberay", Seconds: 210, WritesPerObj: 11.0, Usage: &processUsage{PeakRSSMB: 200}},
			Reference: scaleRun{Seconds: 100},
			Sweep:     []scaleRun{{Concurrency: 8, Seconds: 130, Requests: reqs(3)}},
		}, {
			Clusters: 100, Stages: "general", Raygate: scaleRun{Error: "the RayCluster controller created no pod"},
		}},
		Loaded: &loadedResult{Clusters: 100, MinWritesPerCluster: 11,
			Raygate: scaleRun{WritesPerObj: 12.7}, KubeRay: &scaleRun{WritesPerObj: 11.2}},
		Upgrade: &upgradeResult{TheoreticalSeconds: 40, WallSeconds: 41, Overhead: 0.025},
		Admission: &admissionResult{Error: "webhooks not on main yet", GoBench: []goBenchmark{
			{Name: "BenchmarkMutateRayServiceCreate", Metrics: map[string]float64{"allocs/op": 280}},
			{Name: "BenchmarkValidateRayServiceCreate", Metrics: map[string]float64{"allocs/op": 290}},
			{Name: "BenchmarkValidateRayServiceCreateColdTemplates", Metrics: map[string]float64{"allocs/op": 301}},
			{Name: "BenchmarkValidateRayServiceUpdateNoChange", Metrics: map[string]float64{"allocs/op": 20}},
		}},
	}
	var order []string
	got := map[string]string{}
	for _, v := range verdicts(r) {
		got[v.What] = v.Status
		order = append(order, v.What)
	}
	allocs := "Webhook handler allocations per review (`BenchmarkMutateRayServiceCreate`, `BenchmarkValidateRayServiceCreate`, `BenchmarkValidateRayServiceCreateColdTemplates`: the realistic create, the last with pod templates never seen before)"
	want := map[string]string{
		"Time to ready vs KubeRay, 1000 RayClusters, general stages":                     "met",        // 140/210 = 0.67
		"Time to ready vs ReplicaSets, 1000 RayClusters, general stages":                 "**missed**", // 1.4
		"Writes per RayCluster, 1000 RayClusters, general stages":                        "met",        // 12.6/11 = 1.145
		"Writes in a 60 s quiet window, 1000 RayClusters, general stages":                "**missed**",
		"Operator peak RSS at 4,000 pods":                                                "met",
		"Operator peak RSS at 4,000 pods vs KubeRay":                                     "met", // 0.45
		"409 Conflicts at `--reconcile-concurrency=8`, 1000 RayClusters, general stages": "**missed**",
		"Time to ready vs KubeRay, 100 RayClusters, general stages":                      "not run",
		"Time to ready vs ReplicaSets, 100 RayClusters, general stages":                  "not run",
		// The fast-stage run: labelled extra rows, after the general ones.
		"Time to ready vs KubeRay, 1000 RayClusters, fast stages (extra: not a target run)":            "not run",
		"Time to ready vs ReplicaSets, 1000 RayClusters, fast stages (extra: not a target run)":        "met",
		"Writes per RayCluster, 1000 RayClusters, fast stages (extra: not a target run)":               "met",
		"Operator peak RSS at 4,000 pods (fast stages, extra)":                                         "not run",
		"Operator peak RSS at 4,000 pods (fast stages, extra) vs KubeRay":                              "not run",
		"Writes per RayCluster on a loaded machine (CPU hog on both), 100 RayClusters, general stages": "**missed**", // 1.155
		"Incremental upgrade pacing":                      "met",
		"Time to all SUCCEEDED vs KubeRay":                "not run", // no rayjob scenario
		"Writes per RayJob":                               "not run",
		"Duplicate submissions at the Jobs API":           "not run",
		"Admission p99 added by the webhooks, 1 client":   "not run",
		"Admission p99 added by the webhooks, 20 clients": "not run",
		allocs: "**missed**", // the worst of the three reviews
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("verdicts =\n%v\nwant\n%v", got, want)
	}
	if len(order) != len(want) || !strings.Contains(order[len(order)-1], "allocations per review") {
		t.Errorf("a row is duplicated or out of place: %q", order)
	}
	if i := slices.Index(order, "Time to ready vs KubeRay, 1000 RayClusters, fast stages (extra: not a target run)"); i < slices.Index(order, "Time to ready vs ReplicaSets, 100 RayClusters, general stages") {
		t.Errorf("the fast-stage rows come before the general ones: %q", order)
	}
}

// TestVerdictsNeverPassWhatWasNotMeasured: a run without KubeRay, the sweep or the admission
// scenario's figures says "not measured", not "met".
func TestVerdictsNeverPassWhatWasNotMeasured(t *testing.T) {
	r := &results{
		Scale: []scaleResult{{Clusters: 1000, Pods: 4000, MinWritesPerCluster: 11,
			Raygate: scaleRun{Concurrency: 4, Seconds: 100, WritesPerObj: 11}, Reference: scaleRun{Seconds: 100}}},
		Loaded:    &loadedResult{Clusters: 100, MinWritesPerCluster: 11, Raygate: scaleRun{Error: "starting the CPU hog: no such file"}},
		Admission: &admissionResult{Concurrent: admissionLatency{On: latency{Requests: 10}, Off: latency{Requests: 10}, AddedP99Ms: 3}, GoBenchErr: "no benchmarks"},
	}
	got := map[string]verdict{}
	for _, v := range verdicts(r) {
		got[v.What] = v
	}
	for what, want := range map[string]string{
		"Time to ready vs KubeRay, 1000 RayClusters":                                                   "not measured: KubeRay not run",
		"Operator peak RSS at 4,000 pods":                                                              "not measured: no usage read",
		"409 Conflicts at `--reconcile-concurrency=8`":                                                 "not measured: no scale run at concurrency 8 (-sweep)",
		"Writes per RayCluster on a loaded machine (CPU hog on both), 100 RayClusters, general stages": "not measured: starting the CPU hog: no such file",
		"Admission p99 added by the webhooks, 1 client":                                                "not measured: no requests at this concurrency",
		"Webhook handler allocations per review (`BenchmarkMutateRayServiceCreate`, `BenchmarkValidateRayServiceCreate`, `BenchmarkValidateRayServiceCreateColdTemplates`: the realistic create, the last with pod templates never seen before)": "not measured: no benchmarks",
	} {
		v, ok := got[what]
		if !ok || v.Measured != want || v.Status != "not run" {
			t.Errorf("%s: got %+v (present %v), want measured %q, not run", what, v, ok, want)
		}
	}
	if v := got["Admission p99 added by the webhooks, 20 clients"]; v.Status != "met" || v.Target != "≤ 25 ms" {
		t.Errorf("20 clients: %+v", v)
	}
	// A run of no scenario passes nothing.
	empty := verdicts(&results{})
	if len(empty) == 0 {
		t.Error("an empty run has no target rows")
	}
	for _, v := range empty {
		if v.Status != "not run" {
			t.Errorf("an empty run: %+v", v)
		}
	}
	// A negative added p99 (the tail without webhooks slower) is noise, never a pass.
	noisy := &admissionResult{Sequential: admissionLatency{On: latency{Requests: 200, P99Ms: 16.4}, Off: latency{Requests: 200, P99Ms: 18.2}, AddedP99Ms: -1.8}}
	for _, v := range admissionVerdicts(noisy) {
		if strings.HasSuffix(v.What, "1 client") && v.Status != "**not shown**" {
			t.Errorf("noise larger than the difference: %+v", v)
		}
	}
	// Allocations with one of the two review benchmarks missing are not measured either.
	a := &admissionResult{GoBench: []goBenchmark{{Name: "BenchmarkMutateRayServiceCreate", Metrics: map[string]float64{"allocs/op": 100}}}}
	for _, v := range admissionVerdicts(a) {
		if strings.Contains(v.What, "allocations") && v.Status != "not run" {
			t.Errorf("one benchmark of two: %+v", v)
		}
	}
}

func TestRenderReportSaysWhatDidNotRun(t *testing.T) {
	r := &results{
		Machine:   machine{Cores: 2, MemoryGB: 23.5, Commit: "abc1234"},
		Scale:     []scaleResult{{Clusters: 100, Raygate: scaleRun{Error: "the RayCluster controller created no pod (is it on main yet?)"}}},
		Admission: &admissionResult{Error: "webhooks not on main yet", GoBenchErr: "no benchmarks in ./webhooks/ yet"},
	}
	md := renderReport(r, "Some analysis.", "benchmarks")
	for _, want := range []string{
		"| 2 | 23.5 GB |", "commit `abc1234`", "## Analysis\n\nSome analysis.",
		"raygate: **not measured** — the RayCluster controller created no pod",
		"## 2. Upgrade pacing: incremental upgrade\n\nNot run.",
		"Through the API server: **not measured** — webhooks not on main yet",
		"Not measured — no benchmarks in ./webhooks/ yet",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

func TestParallel(t *testing.T) {
	var n atomic.Int64
	if err := parallel(context.Background(), 100, 7, func(context.Context, int) error { n.Add(1); return nil }); err != nil || n.Load() != 100 {
		t.Errorf("ran %d of 100, err %v", n.Load(), err)
	}
	boom := errors.New("boom")
	err := parallel(context.Background(), 100, 4, func(_ context.Context, i int) error {
		if i == 10 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Errorf("want the first error, got %v", err)
	}
}

func TestCumulative(t *testing.T) {
	pts := cumulative([]float64{1.5, 2, 2})
	if len(pts) != 4 || pts[0].X != 0 || pts[0].Y != 0 || pts[3].X != 2 || pts[3].Y != 3 {
		t.Errorf("cumulative = %v", pts)
	}
}

func TestWebhookLatencyFrom(t *testing.T) {
	text := `# TYPE controller_runtime_webhook_latency_seconds histogram
controller_runtime_webhook_latency_seconds_bucket{webhook="/validate-ray-io-v1-rayservice",le="0.0001"} 0
controller_runtime_webhook_latency_seconds_bucket{webhook="/validate-ray-io-v1-rayservice",le="0.001"} 90
controller_runtime_webhook_latency_seconds_bucket{webhook="/validate-ray-io-v1-rayservice",le="0.01"} 100
controller_runtime_webhook_latency_seconds_bucket{webhook="/validate-ray-io-v1-rayservice",le="+Inf"} 100
controller_runtime_webhook_latency_seconds_sum{webhook="/validate-ray-io-v1-rayservice"} 0.05
controller_runtime_webhook_latency_seconds_count{webhook="/validate-ray-io-v1-rayservice"} 100
controller_runtime_webhook_latency_seconds_bucket{webhook="/mutate-ray-io-v1-raycluster",le="+Inf"} 0
controller_runtime_webhook_latency_seconds_sum{webhook="/mutate-ray-io-v1-raycluster"} 0
controller_runtime_webhook_latency_seconds_count{webhook="/mutate-ray-io-v1-raycluster"} 0
`
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	got := webhookLatencyFrom(families)
	want := map[string]handlerLatency{"/validate-ray-io-v1-rayservice": {Count: 100, MeanMs: 0.5, P99AtMostMs: 10}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("webhookLatencyFrom = %+v, want %+v (unused webhooks left out)", got, want)
	}
}

func TestAnalyseShifts(t *testing.T) {
	obs := []trafficShift{{0.1, 0}, {3.0, 0}, {5.0, 5}, {5.2, 5}, {7.1, 10}, {9.0, 15}, {9.5, 15}}
	shifts, gaps := analyseShifts(obs, 2*time.Second)
	want := []trafficShift{{5.0, 5}, {7.1, 10}, {9.0, 15}}
	if !reflect.DeepEqual(shifts, want) {
		t.Errorf("shifts = %v, want %v (repeats and the initial 0 are not shifts)", shifts, want)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if gaps.Count != 2 || !near(gaps.MinS, 1.9) || !near(gaps.MaxS, 2.1) || !near(gaps.MeanS, 2) || !near(gaps.Excess, 0) {
		t.Errorf("gaps = %+v", gaps)
	}
	if _, g := analyseShifts(nil, time.Second); g.Count != 0 || g.MinS != 0 {
		t.Errorf("no shifts: %+v", g)
	}
}

func TestForbiddenIn(t *testing.T) {
	log := []byte(`{"level":"info","msg":"starting"}
{"level":"error","msg":"Failed to watch","error":"failed to list *v1.RayService: rayservices.ray.io is forbidden: User \"raygate-operator\" cannot list resource \"rayservices\" in API group \"ray.io\" at the cluster scope"}
`)
	err := forbiddenIn(log)
	if err == nil || !strings.Contains(err.Error(), `cannot list resource "rayservices"`) || !strings.Contains(err.Error(), "config/rbac/role.yaml") {
		t.Errorf("forbiddenIn = %v", err)
	}
	if err := forbiddenIn([]byte(`{"msg":"fine"}` + "\n")); err != nil {
		t.Errorf("no authorisation error: %v", err)
	}
}

func TestReferenceReplicaSetCarriesRaygatesPod(t *testing.T) {
	rs := referenceReplicaSet("rs-0001", "bench-1")
	if *rs.Spec.Replicas != podsPerCluster {
		t.Errorf("replicas %d, want %d", *rs.Spec.Replicas, podsPerCluster)
	}
	c := rs.Spec.Template.Spec.Containers[0]
	// The Ray worker as raygate builds it: the generated ray start command and its environment.
	hasEnv := false
	for _, e := range c.Env {
		if e.Name == "KUBERAY_GEN_RAY_START_CMD" {
			hasEnv = true
		}
	}
	if !hasEnv || c.Image != builders.DefaultImage || c.Resources.Requests.Cpu().IsZero() {
		t.Errorf("the template is not raygate's worker pod: %+v", c)
	}
	if rs.Spec.Template.Labels["app"] != "rs-0001" || rs.Spec.Selector.MatchLabels["app"] != "rs-0001" {
		t.Errorf("selector %v does not match template labels %v", rs.Spec.Selector.MatchLabels, rs.Spec.Template.Labels)
	}
}

func TestWritesPerObject(t *testing.T) {
	log := `{"auditID":"1","stage":"ResponseComplete","verb":"create","user":{"username":"admin"},"userAgent":"kube-scheduler/v1.36.3 (linux/amd64) kubernetes/abc/scheduler","objectRef":{"resource":"pods","subresource":"binding"},"requestReceivedTimestamp":"2026-01-01T00:00:01Z"}
{"auditID":"2","stage":"ResponseComplete","verb":"patch","user":{"username":"admin"},"userAgent":"kwok/v0.8.0","objectRef":{"resource":"pods","subresource":"status"},"requestReceivedTimestamp":"2026-01-01T00:00:02Z"}
{"auditID":"3","stage":"ResponseComplete","verb":"get","user":{"username":"admin"},"userAgent":"kwok/v0.8.0","objectRef":{"resource":"pods"},"requestReceivedTimestamp":"2026-01-01T00:00:03Z"}
{"auditID":"4","stage":"ResponseComplete","verb":"create","user":{"username":"raygate-operator"},"userAgent":"raygate/v0.0.0","objectRef":{"resource":"pods"},"requestReceivedTimestamp":"2026-01-01T00:00:04Z"}
`
	all, err := parseAudit(strings.NewReader(log), "")
	if err != nil {
		t.Fatal(err)
	}
	byAgent, byKind := writesPerObject(all, 2)
	if want := map[string]float64{"kube-scheduler": 0.5, "kwok": 0.5, "raygate": 0.5, "(all)": 1.5}; !reflect.DeepEqual(byAgent, want) {
		t.Errorf("by client = %v, want %v", byAgent, want)
	}
	if want := map[string]float64{"kube-scheduler create pods/binding": 0.5, "kwok patch pods/status": 0.5, "raygate create pods": 0.5}; !reflect.DeepEqual(byKind, want) {
		t.Errorf("by write = %v, want %v", byKind, want)
	}
	mine, _ := parseAudit(strings.NewReader(log), operatorUser)
	if len(mine) != 1 || mine[0].Agent != "raygate" {
		t.Errorf("operator's requests = %+v", mine)
	}
}

func TestAnonSampler(t *testing.T) {
	if kb, ok := rssAnonKB("VmRSS:\t 90000 kB\nRssAnon:\t   51200 kB\nRssFile:\t 38800 kB\n"); !ok || kb != 51200 {
		t.Errorf("RssAnon = %v %v, want 51200", kb, ok)
	}
	if _, ok := rssAnonKB("VmRSS:\t 90000 kB\n"); ok {
		t.Error("found RssAnon where there is none")
	}
	s := sampleAnon(os.Getpid())
	deadline := time.Now().Add(10 * time.Second)
	for s.peakMB() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if s.peakMB() <= 0 {
		t.Error("no RssAnon sampled from this process")
	}
	if sampleAnon(-1).peakMB() != 0 {
		t.Error("a missing process has a peak")
	}
}
