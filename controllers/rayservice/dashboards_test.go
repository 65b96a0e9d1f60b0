package rayservice

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/rayservice/plan"
	"github.com/raygate/raygate/internal/dashboard"
)

// serveViewOf is what the plan sees of the pool: applications read before the head accepted
// a config are not read yet, an error older than the last good read is over, and the
// accepted submission's ID gives the config and target capacity the head runs.
func TestServeViewOf(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	running := &dashboard.ServeDetails{Applications: map[string]dashboard.Application{"app": {Name: "app", Status: rayv1.ApplicationStatusRunning}}}
	tc := int32(40)
	for _, tt := range []struct {
		name string
		snap dashboard.Snapshot
		want plan.ServeView
	}{{
		name: "never read",
		want: plan.ServeView{},
	}, {
		name: "read",
		snap: dashboard.Snapshot{Details: running, ReadAt: t0},
		want: plan.ServeView{Apps: map[string]rayv1.AppStatus{"app": {Status: rayv1.ApplicationStatusRunning}}, ReadAt: metav1.NewTime(t0)},
	}, {
		name: "read, with the target capacity the head runs",
		snap: dashboard.Snapshot{Details: &dashboard.ServeDetails{Applications: running.Applications, TargetCapacity: ptr.To(39.6)}, ReadAt: t0},
		want: plan.ServeView{Apps: map[string]rayv1.AppStatus{"app": {Status: rayv1.ApplicationStatusRunning}}, ReadAt: metav1.NewTime(t0), TargetCapacity: &tc},
	}, {
		name: "read before the head accepted a config: not read",
		snap: dashboard.Snapshot{Details: running, ReadAt: t0, Stale: true,
			Accepted: &dashboard.SubmissionState{ID: plan.SubmitServeConfig{Hash: "h", TargetCapacity: &tc}.ID(), Outcome: dashboard.Accepted}},
		want: plan.ServeView{Accepted: &plan.AcceptedConfig{Hash: "h", TargetCapacity: &tc}},
	}, {
		name: "the last read failed",
		snap: dashboard.Snapshot{Details: running, ReadAt: t0, Err: "connection refused", ErrAt: t0.Add(time.Second)},
		want: plan.ServeView{Apps: map[string]rayv1.AppStatus{"app": {Status: rayv1.ApplicationStatusRunning}}, ReadAt: metav1.NewTime(t0), Err: "connection refused"},
	}, {
		name: "a failure before the last read is over",
		snap: dashboard.Snapshot{Details: running, ReadAt: t0, Err: "connection refused", ErrAt: t0.Add(-time.Second)},
		want: plan.ServeView{Apps: map[string]rayv1.AppStatus{"app": {Status: rayv1.ApplicationStatusRunning}}, ReadAt: metav1.NewTime(t0)},
	}, {
		name: "a refused submission and an unhealthy proxy",
		snap: dashboard.Snapshot{Submission: &dashboard.SubmissionState{ID: "h@-", Outcome: dashboard.Refused, BadRequest: true, Message: "bad"},
			Proxy: &dashboard.ProxyHealth{Err: "HTTP 503"}},
		want: plan.ServeView{Submission: &plan.Submission{ID: "h@-", Outcome: plan.SubmitRefused, BadRequest: true, Message: "bad"},
			Proxy: &plan.ProxyHealth{Err: "HTTP 503"}},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, serveViewOf(tt.snap)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// A head is read again after the deploying poll while anything is unsettled, after the
// resync once its applications run, and no later than the proxy check when the read checks
// the head's Serve proxy.
func TestNeedsRefresh(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	apps := func(status string) *dashboard.ServeDetails {
		return &dashboard.ServeDetails{Applications: map[string]dashboard.Application{"app": {Name: "app", Status: status}}}
	}
	const poll, resync = time.Second, time.Minute
	for _, tt := range []struct {
		name   string
		snap   dashboard.Snapshot
		age    time.Duration
		checks bool
		want   bool
	}{
		{name: "never read", want: true},
		{name: "deploying, within the poll", snap: dashboard.Snapshot{Details: apps(rayv1.ApplicationStatusDeploying), ReadAt: t0}, age: poll / 2},
		{name: "deploying, after the poll", snap: dashboard.Snapshot{Details: apps(rayv1.ApplicationStatusDeploying), ReadAt: t0}, age: poll, want: true},
		{name: "running, within the resync", snap: dashboard.Snapshot{Details: apps(rayv1.ApplicationStatusRunning), ReadAt: t0}, age: 30 * time.Second},
		{name: "running, after the resync", snap: dashboard.Snapshot{Details: apps(rayv1.ApplicationStatusRunning), ReadAt: t0}, age: resync, want: true},
		{name: "running, the proxy checked", snap: dashboard.Snapshot{Details: apps(rayv1.ApplicationStatusRunning), ReadAt: t0}, age: plan.ProxyRecheck, checks: true, want: true},
		{name: "the last read failed", snap: dashboard.Snapshot{Details: apps(rayv1.ApplicationStatusRunning), ReadAt: t0.Add(-time.Minute), Err: "refused", ErrAt: t0}, age: poll, want: true},
		{name: "the proxy is unhealthy", snap: dashboard.Snapshot{Details: apps(rayv1.ApplicationStatusRunning), ReadAt: t0, Proxy: &dashboard.ProxyHealth{}}, age: poll, want: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := needsRefresh(tt.snap, t0.Add(tt.age), poll, readResync(resync, tt.checks)); got != tt.want {
				t.Errorf("needsRefresh after %v = %v, want %v", tt.age, got, tt.want)
			}
		})
	}
}
