package main

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/raysim"
	"github.com/raygate/raygate/test/builders"
)

func TestSplitRestartWrites(t *testing.T) {
	at := ts("2026-01-01T00:00:01Z")
	reqs := []request{
		{Verb: "get", Resource: "leases", Name: raygateLease, Time: at},
		{Verb: "update", Resource: "leases", Name: raygateLease, Time: at},
		{Verb: "create", Resource: "events", Name: raygateLease + ".1873a2b4c5d6e7f8", Time: at}, // "became leader"
		{Verb: "create", Resource: "events", Name: "rc-0001.1873a2b4c5d6e7f8", Time: at},
		{Verb: "patch", Resource: "rayclusters/status", Name: "rc-0001", Time: at},
		{Verb: "update", Resource: "rayservices/status", Name: "svc-001", Time: at},
		{Verb: "patch", Resource: "pods", Name: "rc-0001-head", Time: at},
		{Verb: "create", Resource: "pods/eviction", Name: "rc-0001-w", Time: at},
		{Verb: "list", Resource: "pods", Time: at},
	}
	got := splitRestartWrites(reqs, raygateLease)
	want := restartWrites{
		Objects: requestCounts{Total: 5, ByVerb: map[string]int{"create": 2, "patch": 2, "update": 1}, Writes: 5,
			WritesByKind: map[string]int{"create events": 1, "patch rayclusters/status": 1, "update rayservices/status": 1, "patch pods": 1, "create pods/eviction": 1}},
		Status: 2, Pods: 2, Lease: 2,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("splitRestartWrites =\n%+v\nwant\n%+v", got, want)
	}
	// Another operator's Lease name: raygate's lease is then an object like any other.
	if got := splitRestartWrites(reqs[2:3], kubeRayLease); got.Lease != 0 || got.Objects.Writes != 1 {
		t.Errorf("an event on another lease counted as leader election's: %+v", got)
	}
}

func TestReconciledAll(t *testing.T) {
	counts := map[string]map[string]float64{
		"raycluster": {"success": 50, "requeue": 5},
		"rayservice": {"success": 4, "error": 1},
		"rayjob":     {},
	}
	for name, tc := range map[string]struct {
		want map[string]int
		ok   bool
	}{
		"every result counts":       {map[string]int{"raycluster": 55, "rayservice": 5}, true},
		"one short":                 {map[string]int{"raycluster": 56, "rayservice": 5}, false},
		"a controller never ran":    {map[string]int{"raycronjob": 1}, false},
		"nothing wanted":            {map[string]int{}, true},
		"zero objects of a kind ok": {map[string]int{"rayjob": 0}, true},
	} {
		if got := reconciledAll(counts, tc.want); got != tc.ok {
			t.Errorf("%s: reconciledAll = %v, want %v", name, got, tc.ok)
		}
	}
	if got := describeReconciles(counts); got != "raycluster 55, rayjob 0, rayservice 5" {
		t.Errorf("describeReconciles = %q", got)
	}
}

func TestLeaseHolder(t *testing.T) {
	if got := leaseHolder(&coordinationv1.Lease{}); got != "" {
		t.Errorf("no holder: %q", got)
	}
	l := &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("host_b")}}
	if got := leaseHolder(l); got != "host_b" {
		t.Errorf("holder %q", got)
	}
	for _, tc := range []struct {
		holder, old string
		want        bool
	}{
		{"", "", false},             // nobody leads yet
		{"host_a", "", true},        // anyone will do
		{"host_a", "host_a", false}, // the dead leader's Lease has not expired
		{"", "host_a", false},       // released, not yet taken
		{"host_b", "host_a", true},  // the new process leads
		{"host_a2", "host_a", true}, // identities are compared exactly
	} {
		if got := newLeader(tc.holder, tc.old); got != tc.want {
			t.Errorf("newLeader(%q, %q) = %v, want %v", tc.holder, tc.old, got, tc.want)
		}
	}
}

func TestAuditTailReadsWholeLinesOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	lines := strings.Split(strings.TrimSpace(auditSample), "\n")
	// The first two lines and half of the third: the half line is read next time.
	first := lines[0] + "\n" + lines[1] + "\n" + lines[2][:20]
	if err := os.WriteFile(path, []byte(first), 0o600); err != nil {
		t.Fatal(err)
	}
	tail := &auditTail{path: path}
	reqs, err := tail.next()
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 2 {
		t.Fatalf("first read: %d requests, want 2: %+v", len(reqs), reqs)
	}
	rest := lines[2][20:] + "\n" + strings.Join(lines[3:], "\n") + "\n"
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(rest); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	reqs, err = tail.next()
	if err != nil {
		t.Fatal(err)
	}
	// a3 (update rayclusters/status), a5 (patch events), a2's ResponseComplete (watch), a6 (get);
	// a4 is another user's.
	var verbs []string
	for _, r := range reqs {
		verbs = append(verbs, r.Verb)
	}
	if strings.Join(verbs, ",") != "watch,update,patch,get" {
		t.Errorf("second read: %v", verbs)
	}
	if reqs, err := tail.next(); err != nil || len(reqs) != 0 {
		t.Errorf("third read: %v, %v; want nothing new", reqs, err)
	}
	if got := string(wholeLines([]byte("a\nb"))); got != "a\n" {
		t.Errorf("wholeLines = %q", got)
	}
	if got := wholeLines([]byte("no newline")); len(got) != 0 {
		t.Errorf("wholeLines without a newline = %q", got)
	}
}

func TestLastObjectWrite(t *testing.T) {
	since := ts("2026-01-01T00:00:01Z")
	reqs := []request{
		{Verb: "patch", Resource: "rayclusters/status", Time: ts("2026-01-01T00:00:00Z")}, // before: ignored
		{Verb: "update", Resource: "leases", Name: raygateLease, Time: ts("2026-01-01T00:00:09Z")},
		{Verb: "get", Resource: "pods", Time: ts("2026-01-01T00:00:08Z")},
		{Verb: "create", Resource: "events", Name: "rc-1.abc", Time: ts("2026-01-01T00:00:05Z")},
		{Verb: "create", Resource: "events", Name: raygateLease + ".abc", Time: ts("2026-01-01T00:00:07Z")},
	}
	if got := lastObjectWrite(reqs, raygateLease, since); !got.Equal(ts("2026-01-01T00:00:05Z")) {
		t.Errorf("lastObjectWrite = %s, want the event on rc-1 at 00:05", got)
	}
	if got := lastObjectWrite(reqs[1:3], raygateLease, since); !got.Equal(since) {
		t.Errorf("only lease writes and reads: %s, want since", got)
	}
}

func restartSample() *restartResult {
	run := func(lead, rec float64, writes map[string]int, status, pods int) *restartRun {
		n := 0
		for _, v := range writes {
			n += v
		}
		return &restartRun{ReadySeconds: 1, LeadSeconds: lead, ReconciledSeconds: rec, Writes: n, WritesByKind: writes,
			StatusWrites: status, PodWrites: pods, LeaseWrites: 6, CPUSeconds: 3, PeakRSSMB: 60}
	}
	standby := func(r *restartRun) *restartRun { r.ReadySeconds = 0; return r }
	return &restartResult{
		Scenario: "restart", Clusters: 50, Services: 5, QuietSeconds: 30,
		Raygate: restartSide{Operator: "raygate", BringUpSeconds: 20, SettledQuiet: true,
			Kill: run(16.5, 17.2, nil, 0, 0), Handover: standby(run(2.1, 2.6, nil, 0, 0))},
		KubeRay: &restartSide{Operator: "kuberay", Flags: []string{"--enable-leader-election=true"}, BringUpSeconds: 30, SettledQuiet: true,
			Kill:     run(17, 18, map[string]int{"create events": 55, "update rayservices/status": 5}, 5, 0),
			Handover: standby(run(16, 17, map[string]int{"create events": 55}, 0, 0))},
	}
}

func TestRestartVerdicts(t *testing.T) {
	if v := restartVerdicts(nil); v != nil {
		t.Errorf("results without the scenario get rows: %+v", v)
	}
	r := restartSample()
	v := restartVerdicts(r)
	if len(v) != 2 {
		t.Fatalf("%d rows, want 2: %+v", len(v), v)
	}
	if v[0].What != "Writes after a SIGKILL restart, 50 RayClusters + 5 RayServices" || v[0].Status != "met" ||
		v[0].Measured != "raygate 0 (0 status, 0 pods); KubeRay 60 (5 status, 0 pods)" {
		t.Errorf("SIGKILL row: %+v", v[0])
	}
	if v[1].Status != "met" || !strings.HasPrefix(v[1].What, "Writes after a leader handover") {
		t.Errorf("handover row: %+v", v[1])
	}
	// One write for a converged object misses the target, whatever it is.
	r.Raygate.Kill.Writes = 1
	if v := restartVerdicts(r); v[0].Status != "**missed**" || !strings.HasPrefix(v[0].Measured, "raygate 1 (0 status") {
		t.Errorf("an event passed: %+v", v[0])
	}
	// A run that failed is not measured, never met; nor a handover that never ran.
	r.Raygate.Kill.Error = "the Lease still names x"
	r.Raygate.Handover = nil
	r.Raygate.Error = "SIGKILL and restart: the Lease still names x"
	for _, row := range restartVerdicts(r) {
		if row.Status != "not run" {
			t.Errorf("failed run: %+v", row)
		}
	}
}

func TestRenderRestart(t *testing.T) {
	var m md
	renderRestart(&m, nil)
	if m.Len() != 0 {
		t.Errorf("results without the scenario render a section: %q", m.String())
	}
	r := restartSample()
	r.KubeRay.Kill.ServeSubmissions, r.KubeRay.ExtraClusters = 5, 1
	renderRestart(&m, r)
	out := m.String()
	for _, want := range []string{
		"## 2e. Restart at scale",
		"| **signal → leads again, s** | 16.5 | 17.0 | 0.97× |",
		"| **writes** (leases apart) | 0 | 60 | 0.00× |",
		"| **SIGKILL and a new process** |  |  |  |",
		"| signal → new process ready, s | 1.0 | 1.0 | – |",
		"| signal → new process ready, s | – | – | – |", // the standby was ready before
		"| of which status writes | 0 | 5 | – |",
		"| serve configs submitted again | 0 | 5 | – |",
		"KubeRay still had 1 RayClusters beyond one per object",
		"KubeRay's writes after the SIGKILL and a new process: create events 55, update rayservices/status 5.",
		"raygate's writes after the leader handover (SIGTERM, standby takes over): none.",
		"KubeRay with `--enable-leader-election=true`",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("section lacks %q:\n%s", want, out)
		}
	}
	r.KubeRay.Kill.Error = "boom"
	r.KubeRay.Error = "SIGKILL and restart: boom"
	r.KubeRay.Handover = nil
	m.Reset()
	renderRestart(&m, r)
	out = m.String()
	for _, want := range []string{"| **signal → leads again, s** | 16.5 | – | – |", "KubeRay: **did not complete** — SIGKILL and restart: boom"} {
		if !strings.Contains(out, want) {
			t.Errorf("section lacks %q:\n%s", want, out)
		}
	}
}

func TestRestartOverlay(t *testing.T) {
	saved := &results{Restart: &restartResult{Clusters: 1000}}
	fresh := &restartResult{Clusters: 50}
	if got := overlay(saved, &results{Restart: fresh}, []string{"restart"}); got.Restart != fresh {
		t.Error("a partial restart run did not replace the saved one")
	}
	if got := overlay(saved, &results{}, []string{"scale"}); got.Restart != saved.Restart {
		t.Error("another scenario's partial run dropped the saved restart figures")
	}
}

func TestSubmissionLogSince(t *testing.T) {
	var l submissionLog
	l.add(types.NamespacedName{}, raysim.Submission{})
	mid := time.Now()
	time.Sleep(time.Millisecond)
	l.add(types.NamespacedName{}, raysim.Submission{})
	l.add(types.NamespacedName{}, raysim.Submission{})
	if got := l.since(mid); got != 2 {
		t.Errorf("since(mid) = %d, want 2", got)
	}
	if got := l.since(time.Time{}); got != 3 {
		t.Errorf("since(zero) = %d, want 3", got)
	}
}

func TestWaitClusterCount(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := rayv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		builders.RayCluster("a", "ns").Obj(), builders.RayCluster("b", "ns").Obj(), builders.RayCluster("c", "other").Obj()).Build()
	if extra, err := waitClusterCount(context.Background(), cl, 3, time.Minute); err != nil || extra != 0 {
		t.Errorf("as many as wanted: %d, %v", extra, err)
	}
	// One left over: reported once the wait is over, not an error.
	if extra, err := waitClusterCount(context.Background(), cl, 2, 0); err != nil || extra != 1 {
		t.Errorf("one extra: %d, %v", extra, err)
	}
}
