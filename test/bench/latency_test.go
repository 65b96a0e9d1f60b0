package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/kwokcluster"
)

func TestQuantile(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(100 - i) // 100 … 1, unsorted on purpose
	}
	fifty := hundred[50:] // 50 … 1
	for name, c := range map[string]struct {
		xs       []float64
		p, want  float64
		unsorted bool
	}{
		"empty":              {nil, 50, 0, false},
		"one value, p50":     {[]float64{7}, 50, 7, false},
		"one value, p99":     {[]float64{7}, 99, 7, false},
		"100 values, p50":    {hundred, 50, 50, true},
		"100 values, p99":    {hundred, 99, 99, true},
		"100 values, p100":   {hundred, 100, 100, true},
		"50 values, p99=max": {fifty, 99, 50, true},
		"50 values, p50":     {fifty, 50, 25, true},
		"two values, p50":    {[]float64{3, 1}, 50, 1, true},
	} {
		before := slices.Clone(c.xs)
		if got := quantile(c.xs, c.p); got != c.want {
			t.Errorf("%s: quantile(p%.0f) = %v, want %v", name, c.p, got, c.want)
		}
		if !slices.Equal(before, c.xs) {
			t.Errorf("%s: quantile sorted its input", name)
		}
	}
}

func TestSummarizeLatency(t *testing.T) {
	if got := summarizeLatency(nil); got.N != 0 || got.SamplesMs != nil {
		t.Errorf("no samples: %+v", got)
	}
	got := summarizeLatency([]time.Duration{3 * time.Second, 1500 * time.Microsecond, 20 * time.Millisecond})
	want := latencySummary{N: 3, P50Ms: 20, P99Ms: 3000, MinMs: 1.5, MaxMs: 3000, SamplesMs: []float64{3000, 1.5, 20}}
	if got.N != want.N || got.P50Ms != want.P50Ms || got.P99Ms != want.P99Ms || got.MinMs != want.MinMs || got.MaxMs != want.MaxMs || !slices.Equal(got.SamplesMs, want.SamplesMs) {
		t.Errorf("summarizeLatency = %+v, want %+v", got, want)
	}
}

func TestLatencyRunSummarizeSkipsMissingMeasures(t *testing.T) {
	var run latencyRun
	run.summarize([]latencyTrial{
		{Apply: 10 * time.Millisecond, Ready: 2 * time.Second, Replaced: time.Second},
		{Apply: 30 * time.Millisecond, Ready: 4 * time.Second}, // the template change replaced nothing
	})
	if run.Apply.N != 2 || run.Apply.P50Ms != 10 || run.Apply.P99Ms != 30 {
		t.Errorf("apply: %+v", run.Apply)
	}
	if run.Replaced.N != 1 || run.Replaced.P50Ms != 1000 {
		t.Errorf("a trial without a replacement must not count as 0 s: %+v", run.Replaced)
	}
	if run.ScaledUp.N != 0 {
		t.Errorf("no scale-up measured: %+v", run.ScaledUp)
	}
}

func at(s float64) time.Time {
	return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(s * float64(time.Second)))
}

func TestPodEventDecisions(t *testing.T) {
	pods := []podSeen{
		{Name: "head", Seen: at(1), Ready: at(3)},
		{Name: "w-a", Seen: at(2), Ready: at(4)},
		{Name: "w-b", Seen: at(1.5), Ready: at(5), Deleting: at(9)},
		{Name: "w-c", Seen: at(2.5)},
	}
	if got, ok := nthPodSeen(pods, 4); !ok || !got.Equal(at(2.5)) {
		t.Errorf("4th pod seen at %v %v, want 2.5 s", got, ok)
	}
	if got, ok := nthPodSeen(pods, 2); !ok || !got.Equal(at(1.5)) {
		t.Errorf("2nd pod seen at %v %v, want 1.5 s", got, ok)
	}
	if _, ok := nthPodSeen(pods, 5); ok {
		t.Error("a 5th pod of 4")
	}
	if _, ok := nthPodSeen(pods, 0); ok {
		t.Error("a 0th pod")
	}
	if got := readyPods(pods); got != 2 {
		t.Errorf("readyPods = %d, want 2 (w-b is deleting, w-c not ready)", got)
	}

	before := podNames(pods[:3]) // w-c is new
	if got, ok := firstNewPod(pods, before); !ok || !got.Equal(at(2.5)) {
		t.Errorf("firstNewPod = %v %v, want 2.5 s", got, ok)
	}
	if _, ok := firstNewPod(pods, podNames(pods)); ok {
		t.Error("a new pod where there is none")
	}
	// w-b's deletion (9 s) comes after w-c appeared (2.5 s): the new pod is the first change.
	if got, ok := firstReplacement(pods, before, nil); !ok || !got.Equal(at(2.5)) {
		t.Errorf("firstReplacement = %v %v, want the new pod at 2.5 s", got, ok)
	}
	// Without a new pod, the first old pod deleting.
	all := podNames(pods)
	if got, ok := firstReplacement(pods, all, nil); !ok || !got.Equal(at(9)) {
		t.Errorf("firstReplacement = %v %v, want w-b deleting at 9 s", got, ok)
	}
	earlier := slices.Clone(pods)
	earlier[0].Deleting = at(7)
	if got, ok := firstReplacement(earlier, all, nil); !ok || !got.Equal(at(7)) {
		t.Errorf("firstReplacement = %v %v, want the earliest deletion, head at 7 s", got, ok)
	}
	// A pod already deleting before the change is not replaced by it.
	if _, ok := firstReplacement(pods, all, deletingPods(pods)); ok {
		t.Error("a pod deleting before the change counted as replaced")
	}
}

func TestLatencyRecorder(t *testing.T) {
	r := &latencyRecorder{pods: map[string]map[string]*podSeen{}, ready: map[string]time.Time{}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "rc-head", Labels: map[string]string{rayv1.ClusterLabelKey: "rc"}}}
	r.observePod(pod, false)
	r.observePod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, false) // not a Ray pod
	got := r.podsOf("rc")
	if len(got) != 1 || got[0].Seen.IsZero() || !got[0].Ready.IsZero() || !got[0].Deleting.IsZero() {
		t.Fatalf("after the first event: %+v", got)
	}
	seen := got[0].Seen

	running := pod.DeepCopy()
	running.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	r.observePod(running, false)
	r.observePod(running, false)
	got = r.podsOf("rc")
	if !got[0].Seen.Equal(seen) || got[0].Ready.IsZero() {
		t.Errorf("after ready: %+v (first seen must not move)", got[0])
	}
	ready := got[0].Ready
	r.observePod(running, false)
	if !r.podsOf("rc")[0].Ready.Equal(ready) {
		t.Error("the ready time moved on a later event")
	}
	r.observePod(running, true) // removed without a deletionTimestamp first
	if r.podsOf("rc")[0].Deleting.IsZero() {
		t.Error("a removed pod is not recorded as deleting")
	}
	if len(r.pods) != 1 {
		t.Errorf("a pod without %s was recorded: %v", rayv1.ClusterLabelKey, r.pods)
	}

	rc := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: "rc"}}
	r.observeCluster(rc, false)
	if _, ok := r.readyAt("rc"); ok {
		t.Error("ready before status.state is ready")
	}
	rc.Status.State = rayv1.Ready
	r.observeCluster(rc, false)
	first, ok := r.readyAt("rc")
	if !ok {
		t.Fatal("not ready after status.state: ready")
	}
	r.observeCluster(rc, false)
	if again, _ := r.readyAt("rc"); !again.Equal(first) {
		t.Error("the ready time moved on a later event")
	}
}

func TestLatencyRayCluster(t *testing.T) {
	rc := latencyRayCluster("lt-001", "bench-0")
	if s := rc.Spec.UpgradeStrategy; s == nil || s.Type == nil || *s.Type != rayv1.RayClusterRecreate {
		t.Errorf("upgrade strategy %+v, want Recreate", s)
	}
	if n := podsPerCluster - 1; *rc.Spec.WorkerGroupSpecs[0].Replicas != int32(n) {
		t.Errorf("%d workers, want %d", *rc.Spec.WorkerGroupSpecs[0].Replicas, n)
	}
	env := func(tpl corev1.PodTemplateSpec) []corev1.EnvVar { return tpl.Spec.Containers[0].Env }
	for _, e := range [][]corev1.EnvVar{env(rc.Spec.HeadGroupSpec.Template), env(rc.Spec.WorkerGroupSpecs[0].Template)} {
		if !slices.Equal(e, []corev1.EnvVar{{Name: latencyEnv, Value: "lt-001"}}) {
			t.Errorf("env %v, want the trial's own value", e)
		}
	}
	setContainerEnv(&rc.Spec.WorkerGroupSpecs[0].Template, "changed")
	if got := env(rc.Spec.WorkerGroupSpecs[0].Template); !slices.Equal(got, []corev1.EnvVar{{Name: latencyEnv, Value: "changed"}}) {
		t.Errorf("after the change the worker's env is %v: the value must be replaced, not added", got)
	}
	if got := env(rc.Spec.HeadGroupSpec.Template); got[0].Value != "lt-001" {
		t.Errorf("the worker template change changed the head: %v", got)
	}
}

func TestParseStageSets(t *testing.T) {
	got, err := parseStageSets("-latency-stages", "general, fast")
	if err != nil || !slices.Equal(got, []kwokcluster.StageSet{kwokcluster.GeneralStages, kwokcluster.FastStages}) {
		t.Errorf("general,fast: %v %v", got, err)
	}
	if _, err := parseStageSets("-latency-stages", "general,slow"); err == nil || !strings.Contains(err.Error(), `-latency-stages: unknown stage set "slow"`) {
		t.Errorf("slow: %v", err)
	}
}

func sum(p50, p99 float64, n int) latencySummary {
	return latencySummary{N: n, P50Ms: p50, P99Ms: p99, SamplesMs: []float64{p50, p99}}
}

func latencySample() *latencyResult {
	g := latencyRun{System: "raygate", Webhooks: true, Trials: 5,
		Apply: sum(12, 30, 5), PodsCreated: sum(150, 400, 5), Ready: sum(6000, 9000, 5),
		ScaledUp: sum(80, 200, 5), Replaced: sum(90, 300, 5), ApplyNoWebhooks: &latencySummary{N: 5, P50Ms: 4, P99Ms: 9, SamplesMs: []float64{4}}}
	k := latencyRun{System: "kuberay", Flags: []string{"--qps=1000"}, Trials: 5,
		Apply: sum(5, 10, 5), PodsCreated: sum(300, 800, 5), Ready: sum(7500, 9000, 5),
		ScaledUp: sum(160, 400, 4), NotReplaced: "no pod replaced within 30 s of a worker template change (first trial); not tried again"}
	return &latencyResult{Scenario: "latency", Trials: 5, PodsPerCluster: 4, Runs: []latencyStages{
		{Stages: "general", Raygate: g, KubeRay: &k},
		{Stages: "fast", Raygate: latencyRun{System: "raygate", Trials: 2, Error: "trial 3: ready: not seen after 2m0s\nlog", Apply: sum(1, 2, 2)}},
	}}
}

func TestRenderLatency(t *testing.T) {
	var m md
	renderLatency(&m, latencySample())
	out := m.String()
	for _, want := range []string{
		"## 3b. Latency for one user",
		"| create → Ready | general (1–6 s per transition) | 6.00 s | 9.00 s | 7.50 s | 9.00 s | 0.80× | 1.00× |",
		"| `kubectl apply` → answer (the create request; raygate: its two webhooks, KubeRay: none) | general (1–6 s per transition) | 12.0 ms | 30.0 ms | 5.0 ms | 10.0 ms | 2.40× | 3.00× |",
		"| — the same creates with no webhook and no operator (API server alone, raygate's cluster) | general (1–6 s per transition) | 4.0 ms | 9.0 ms |",
		"| create → all 4 pods created | general (1–6 s per transition) | 150 ms | 400 ms | 300 ms | 800 ms | 0.50× | 0.50× |",
		"| worker replicas 3 → 4 → new pod created | general (1–6 s per transition) | 80.0 ms | 200 ms | 160 ms | 400 ms (4 of 5 trials) | 0.50× | 0.50× |",
		"| worker template change → first pod replaced | general (1–6 s per transition) | 90.0 ms | 300 ms | never | never | – | – |",
		"| create → Ready | fast (Ready at once) | – | – | not run | not run | – | – |",
		"KubeRay, general (1–6 s per transition) stages: no pod replaced within 30 s",
		"raygate, fast (Ready at once) stages: **did not complete** (2 of 5 trials) — trial 3: ready: not seen after 2m0s\n",
		"with 5 trials, the slowest trial",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the section lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\nlog") {
		t.Error("an error's later lines are in the section")
	}
}

func TestRenderReportLatencySection(t *testing.T) {
	r := &results{}
	if out := renderReport(r, "", "benchmarks"); strings.Contains(out, "Latency for one user") {
		t.Error("a section for a scenario that did not run")
	}
	r.Latency = latencySample()
	if out := renderReport(r, "", "benchmarks"); !strings.Contains(out, "## 3b. Latency for one user") {
		t.Error("no latency section in the report")
	}
}

func TestLatencyLineDropsSamples(t *testing.T) {
	r := latencySample()
	line := r.line()
	for _, run := range []latencyRun{line.Runs[0].Raygate, *line.Runs[0].KubeRay} {
		for _, s := range []latencySummary{run.Apply, run.PodsCreated, run.Ready, run.ScaledUp, run.Replaced} {
			if s.SamplesMs != nil {
				t.Errorf("%s: samples in the line: %+v", run.System, s)
			}
		}
	}
	if line.Runs[0].Raygate.ApplyNoWebhooks.SamplesMs != nil {
		t.Error("baseline samples in the line")
	}
	if line.Runs[0].Raygate.Ready.P50Ms != 6000 {
		t.Error("the line lost the summary")
	}
	if r.Runs[0].Raygate.Ready.SamplesMs == nil || r.Runs[0].KubeRay.Ready.SamplesMs == nil || r.Runs[0].Raygate.ApplyNoWebhooks.SamplesMs == nil {
		t.Error("line changed the result it was made from")
	}
}

func TestOverlayLatency(t *testing.T) {
	saved := &results{Latency: &latencyResult{Trials: 50}}
	out := overlay(saved, &results{Latency: &latencyResult{Trials: 5}}, []string{"latency"})
	if out.Latency == nil || out.Latency.Trials != 5 {
		t.Errorf("a partial latency run did not replace the saved one: %+v", out.Latency)
	}
	out = overlay(saved, &results{}, []string{"admission"})
	if out.Latency == nil || out.Latency.Trials != 50 {
		t.Error("a partial run of another scenario dropped the saved latency results")
	}
}
