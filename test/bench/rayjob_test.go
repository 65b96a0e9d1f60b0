package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/raysim"
)

func TestMinRayJobWrites(t *testing.T) {
	// 2 pods + head Service + 2 status writes + 2 group events; finalizer; RayCluster;
	// submitter Job (K8sJobMode only); the job's head Service; 3 status writes; 4 events.
	for mode, want := range map[rayv1.JobSubmissionMode]int{rayv1.K8sJobMode: 18, rayv1.HTTPMode: 17} {
		if got := sumWrites(minRayJobWrites(mode)); got != want {
			t.Errorf("%s: minimum %d writes per RayJob, want %d", mode, got, want)
		}
	}
}

func TestSubmissionCounts(t *testing.T) {
	c := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }
	posts := map[types.NamespacedName][]raysim.JobPost{
		c("a"): {{SubmissionID: "a1", Accepted: true}},
		// The same id again (refused: it exists), then a made-up one: two duplicates.
		c("b"): {{SubmissionID: "b1", Accepted: true}, {SubmissionID: "b1"}, {SubmissionID: "raysubmit_x", Accepted: true}},
		c("c"): nil,
	}
	total, clusters, dups := submissionCounts(posts)
	if total != 4 || clusters != 2 || dups != 2 {
		t.Errorf("submissionCounts = %d, %d, %d; want 4, 2, 2", total, clusters, dups)
	}
}

func rayJobSample() *rayJobResult {
	return &rayJobResult{Jobs: 50, Mode: "K8sJobMode", MinWritesPerJob: 18,
		Raygate: rayJobRun{Seconds: 40, WritesPerJob: 20, Submissions: 50, JobsSubmitted: 50},
		KubeRay: &rayJobRun{Seconds: 60, WritesPerJob: 30, Submissions: 50, JobsSubmitted: 50}}
}

func TestRayJobVerdicts(t *testing.T) {
	statuses := func(r *rayJobResult) []string {
		var out []string
		for _, v := range rayJobVerdicts(r) {
			out = append(out, v.Status)
		}
		return out
	}
	eq := func(got []string, want ...string) bool { return strings.Join(got, ",") == strings.Join(want, ",") }

	r := rayJobSample() // 40/60 = 0.67; 20/18 = 1.11
	if got := statuses(r); !eq(got, "met", "met", "met") {
		t.Errorf("within the targets: %v", got)
	}
	r.Raygate.Seconds, r.Raygate.WritesPerJob = 50, 21 // 0.83; 1.17
	if got := statuses(r); !eq(got, "**missed**", "**missed**", "met") {
		t.Errorf("over the targets: %v", got)
	}
	r = rayJobSample()
	r.Raygate.DuplicateSubmissions, r.Raygate.Error = 1, "1 duplicate submissions at the simulated Jobs APIs"
	if got := statuses(r); !eq(got, "not run", "not run", "**missed**") {
		t.Errorf("a duplicate: %v", got)
	}
	r = rayJobSample()
	r.KubeRay = nil
	if got := statuses(r); !eq(got, "not run", "met", "met") {
		t.Errorf("without KubeRay: %v", got)
	}
	if got := statuses(nil); !eq(got, "not run", "not run", "not run") {
		t.Errorf("not run: %v", got)
	}
	r = rayJobSample()
	r.Raygate = rayJobRun{Error: "the operator never started"}
	if got := statuses(r); !eq(got, "not run", "not run", "not run") {
		t.Errorf("raygate submitted nothing: %v", got)
	}
}

func TestRenderRayJob(t *testing.T) {
	var m md
	r := rayJobSample()
	r.MinWrites = minRayJobWrites(rayv1.K8sJobMode)
	renderRayJob(&m, r)
	for _, want := range []string{"50 RayJobs", "**minimum per RayJob** | **18**", "| **first create → last SUCCEEDED, s** | 40.0 | 60.0 | 0.67× |"} {
		if !strings.Contains(m.String(), want) {
			t.Errorf("the section lacks %q:\n%s", want, m.String())
		}
	}
	if !strings.Contains(m.String(), "KubeRay v1.5.1 (its defaults,") {
		t.Errorf("a result without KubeRay's flags does not say it ran with its defaults:\n%s", m.String())
	}
	m = md{}
	r.KubeRay.Flags = []string{"--reconcile-concurrency=4", "--qps=1000", "--burst=2000"}
	renderRayJob(&m, r)
	if !strings.Contains(m.String(), "KubeRay v1.5.1 (its own RayJob CRD; `--reconcile-concurrency=4 --qps=1000 --burst=2000`: raygate's concurrency") ||
		!strings.Contains(m.String(), "A run stops when no RayJob changed status for 90 s, or\nafter 3 min.") {
		t.Errorf("the section does not name KubeRay's flags:\n%s", m.String())
	}
	m = md{}
	renderRayJob(&m, nil)
	if m.String() != "" {
		t.Errorf("a result without the scenario renders a section: %q", m.String())
	}
}

// The wait stops on a stall of every RayJob's status, not on a lack of successes: an
// operator whose jobs still move through their statuses is not stopped.
func TestRayJobProgress(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p := &rayJobProgress{stage: map[string]string{}, last: start}
	p.observe("ns/a", "Initializing/", start.Add(10*time.Second))
	p.observe("ns/a", "Running/PENDING", start.Add(80*time.Second))
	if why := p.stalled(start.Add(160*time.Second), rayJobStall); why != "" {
		t.Errorf("a job moved 80 s ago, none succeeded: stopped (%s)", why)
	}
	p.observe("ns/a", "Running/PENDING", start.Add(150*time.Second)) // the same stage again
	if why := p.stalled(start.Add(171*time.Second), rayJobStall); why != "no RayJob changed status for 1m31s" {
		t.Errorf("nothing moved for 91 s: %q", why)
	}
	p.observe("ns/b", "", start.Add(172*time.Second)) // a new RayJob
	if why := p.stalled(start.Add(180*time.Second), rayJobStall); why != "" {
		t.Errorf("a new RayJob is progress: %q", why)
	}
}

func TestKubeRayRayJobFlags(t *testing.T) {
	got := strings.Join(kubeRayRayJobFlags(defaultConcurrency()), " ")
	if want := "--reconcile-concurrency=" + strconv.Itoa(defaultConcurrency()) + " --qps=1000 --burst=2000"; got != want {
		t.Errorf("flags %q, want %q", got, want)
	}
	if d := rayJobWaitTimeout(1000); d != 22*time.Minute {
		t.Errorf("the wait for 1,000 RayJobs is bounded at %s, want 22m", d)
	}
}
