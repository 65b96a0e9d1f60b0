package plan

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/test/builders"
)

// running runs until the Ray job is RUNNING.
func (d *driver) running() {
	d.t.Helper()
	d.until(500, func() bool { return d.w.job != nil && d.w.job.Status.JobStatus == rayv1.JobStatusRunning })
}

func TestLifecycleSuspendResume(t *testing.T) {
	for _, mode := range submittingModes {
		t.Run(string(mode), func(t *testing.T) {
			w := newWorld(jobIn(mode).Shutdown(0).Obj())
			d := drive(t, w)
			d.running()
			first := w.job.Status.JobId
			w.updateSpec(func(s *rayv1.RayJobSpec) { s.Suspend = true })
			d.until(200, w.reached(rayv1.JobDeploymentStatusSuspended))
			st := w.job.Status
			if st.JobId != "" || st.RayClusterName != "" || st.JobStatus != rayv1.JobStatusNew || w.submitter != nil && w.submitter.deletingAt.IsZero() {
				t.Fatalf("suspended status %+v", st)
			}
			d.quiet()
			if len(w.clusters) != 0 || w.submitter != nil {
				t.Fatalf("left after suspending: clusters %v, submitter %v", w.ids(), w.submitter != nil)
			}
			w.updateSpec(func(s *rayv1.RayJobSpec) { s.Suspend = false })
			d.quiet()
			st = w.job.Status
			if st.JobDeploymentStatus != rayv1.JobDeploymentStatusComplete || st.JobId == first || len(w.submissions) != 2 || w.runs() != 2 {
				t.Fatalf("after resuming: %+v; submissions %v", st, w.submissions)
			}
			if !w.hasEvent(EventSuspended) || !w.hasEvent(EventResumed) {
				t.Errorf("events %v", w.events)
			}
		})
	}
}

func TestSuspendingIsAtomic(t *testing.T) {
	w := newWorld(jobIn(rayv1.K8sJobMode).Shutdown(0).Obj())
	d := drive(t, w)
	d.running()
	w.updateSpec(func(s *rayv1.RayJobSpec) { s.Suspend = true })
	d.until(10, w.reached(rayv1.JobDeploymentStatusSuspending))
	w.updateSpec(func(s *rayv1.RayJobSpec) { s.Suspend = false })
	d.until(100, w.reached(rayv1.JobDeploymentStatusSuspended))
	d.quiet()
	if w.job.Status.JobDeploymentStatus != rayv1.JobDeploymentStatusComplete || len(w.submissions) != 2 {
		t.Fatalf("status %+v submissions %v", w.job.Status, w.submissions)
	}
}

func TestSuspendedFromTheStart(t *testing.T) {
	job := jobIn(rayv1.K8sJobMode).Shutdown(0).Obj()
	job.Spec.Suspend = true
	w := newWorld(job)
	d := drive(t, w)
	d.quiet()
	if w.job.Status.JobDeploymentStatus != rayv1.JobDeploymentStatusSuspended || len(w.clusters) != 0 || len(d.passes) > 3 {
		t.Fatalf("status %+v after %d passes; clusters %v", w.job.Status, len(d.passes), w.ids())
	}
	w.updateSpec(func(s *rayv1.RayJobSpec) { s.Suspend = false })
	d.quiet()
	if w.job.Status.JobDeploymentStatus != rayv1.JobDeploymentStatusComplete || w.runs() != 1 {
		t.Fatalf("status %+v", w.job.Status)
	}
}

func TestLifecycleDeletionStopsTheJob(t *testing.T) {
	for _, mode := range append(submittingModes, rayv1.InteractiveMode) {
		t.Run(string(mode), func(t *testing.T) {
			// A shared cluster stays, so the stop can be seen (SidecarMode runs on its own).
			job := jobIn(mode).OnCluster("shared").Obj()
			if mode == rayv1.SidecarMode {
				job = jobIn(mode).Obj()
			}
			w := newWorld(job)
			w.sharedCluster("shared")
			d := drive(t, w)
			if mode == rayv1.InteractiveMode {
				d.until(100, w.reached(rayv1.JobDeploymentStatusWaiting))
				w.userSubmit(w.clusters["shared"], "mine")
				w.updateSpec(func(s *rayv1.RayJobSpec) { s.JobId = "mine" })
			}
			d.running()
			id, cluster := w.job.Status.JobId, w.job.Status.RayClusterName
			w.deleteJob()
			d.until(100, func() bool { return w.job == nil })
			stop := d.lastRequest(func(q Request) bool { s, ok := q.(StopJob); return ok && s.JobID == id && s.Cluster == cluster })
			if stop == nil {
				t.Fatalf("no stop of %s on %s", id, cluster)
			}
			if c := w.clusters["shared"]; c == nil || !c.deletingAt.IsZero() {
				t.Fatal("the shared cluster was deleted")
			}
			if mode == rayv1.SidecarMode {
				return
			}
			if j := w.clusters["shared"].jobs[id]; j == nil || j.status(w.now) != rayv1.JobStatusStopped {
				t.Fatalf("the Ray job %s was not stopped: %+v", id, j)
			}
		})
	}
}

func (d *driver) lastRequest(match func(Request) bool) *reconciled {
	for i := len(d.passes) - 1; i >= 0; i-- {
		for _, q := range d.passes[i].p.Requests {
			if match(q) {
				return d.passes[i]
			}
		}
	}
	return nil
}

func TestDeletionOfAFinishedJobStopsNothing(t *testing.T) {
	w := newWorld(jobIn(rayv1.HTTPMode).Obj())
	d := drive(t, w)
	d.quiet()
	w.deleteJob()
	r := d.step()
	if len(r.p.Requests) != 0 || len(r.p.Actions) != 1 {
		t.Fatalf("deleting a finished job: %v %v", r.p.Actions, r.p.Requests)
	}
	if _, ok := r.p.Actions[0].(RemoveFinalizer); !ok || w.job != nil {
		t.Fatalf("want the finalizer removed at once: %v", r.p.Actions)
	}
}

// sharedCluster adds a RayCluster someone else made, ready.
func (w *world) sharedCluster(name string) {
	rc := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ml"}, Spec: builders.ClusterSpec()}
	c := w.newCluster(rc)
	c.readyAt = w.now
	w.clusters[name] = c
}

func TestLifecycleClusterSelector(t *testing.T) {
	for _, mode := range []rayv1.JobSubmissionMode{rayv1.K8sJobMode, rayv1.HTTPMode} {
		t.Run(string(mode), func(t *testing.T) {
			w := newWorld(jobIn(mode).OnCluster("shared").Obj())
			d := drive(t, w)
			d.until(20, func() bool { return w.hasEvent(EventClusterNotFound) })
			if w.job.Status.JobDeploymentStatus != rayv1.JobDeploymentStatusInitializing {
				t.Fatalf("status %+v", w.job.Status)
			}
			w.sharedCluster("shared")
			d.quiet()
			st := w.job.Status
			if st.JobDeploymentStatus != rayv1.JobDeploymentStatusComplete || w.submissions["shared"][st.JobId] != 1 || w.clusters["shared"] == nil || w.jobService != nil {
				t.Fatalf("status %+v; submissions %v; job service %v", st, w.submissions, w.jobService)
			}
		})
	}
}

func TestLifecycleInteractive(t *testing.T) {
	job := jobIn(rayv1.InteractiveMode).Shutdown(0).Obj()
	job.Spec.PreRunningDeadlineSeconds = ptr.To[int32](600)
	w := newWorld(job)
	d := drive(t, w)
	d.until(100, w.reached(rayv1.JobDeploymentStatusWaiting))
	if r := d.step(); r.p.Wake.At.IsZero() || r.p.Wake.Soon || !r.p.empty() {
		t.Fatalf("waiting for spec.jobId polls or acts: %+v", r.p)
	}
	w.userSubmit(w.clusters[w.job.Status.RayClusterName], "mine")
	w.updateSpec(func(s *rayv1.RayJobSpec) { s.JobId = "mine" })
	d.quiet()
	if st := w.job.Status; st.JobDeploymentStatus != rayv1.JobDeploymentStatusComplete || st.JobId != "mine" || len(w.clusters) != 0 {
		t.Fatalf("status %+v", st)
	}
}

func TestLifecycleTTL(t *testing.T) {
	w := newWorld(jobIn(rayv1.K8sJobMode).Shutdown(60).Obj())
	d := drive(t, w)
	d.until(200, w.reached(rayv1.JobDeploymentStatusComplete))
	end := w.job.Status.EndTime.Time
	d.quiet()
	del := d.lastAction(func(a Action) bool { _, ok := a.(DeleteCluster); return ok })
	if del == nil || !del.in.Now.Equal(end.Add(time.Minute)) {
		t.Fatalf("the cluster was deleted at %v, want %s", del, end.Add(time.Minute))
	}
	if n := d.passesBetween(end.Add(2*time.Second), end.Add(59*time.Second)); n != 0 {
		t.Errorf("%d passes while the TTL ran: polling", n)
	}
}

func TestLifecycleDeleteRayJobAfterFinish(t *testing.T) {
	w := newWorld(jobIn(rayv1.HTTPMode).Shutdown(5).Obj())
	w.settings.DeleteRayJobAfterJobFinishes = true
	drive(t, w).quiet()
	if w.job != nil || len(w.clusters) != 0 {
		t.Fatalf("job %v, clusters %v", w.job != nil, w.ids())
	}
}

func (d *driver) lastAction(match func(Action) bool) *reconciled {
	for i := len(d.passes) - 1; i >= 0; i-- {
		for _, a := range d.passes[i].p.Actions {
			if match(a) {
				return d.passes[i]
			}
		}
	}
	return nil
}

func (d *driver) passesBetween(from, to time.Time) int {
	n := 0
	for _, r := range d.passes {
		if r.in.Now.After(from) && r.in.Now.Before(to) {
			n++
		}
	}
	return n
}

func TestLifecycleDeletionRules(t *testing.T) {
	job := jobIn(rayv1.K8sJobMode).DeletionRule(rayv1.DeleteWorkers, rayv1.JobStatusSucceeded, 10).
		DeletionRule(rayv1.DeleteCluster, rayv1.JobStatusSucceeded, 30).DeletionRule(rayv1.DeleteSelf, rayv1.JobStatusSucceeded, 50).
		DeletionRule(rayv1.DeleteNone, rayv1.JobStatusFailed, 0).Obj()
	w := newWorld(job)
	d := drive(t, w)
	d.until(200, w.reached(rayv1.JobDeploymentStatusComplete))
	end := w.job.Status.EndTime.Time
	d.until(500, func() bool { return w.job == nil })
	for _, want := range []struct {
		after time.Duration
		is    func(Action) bool
	}{
		{10 * time.Second, func(a Action) bool { _, ok := a.(SuspendWorkers); return ok }},
		{30 * time.Second, func(a Action) bool { _, ok := a.(DeleteCluster); return ok }},
		{50 * time.Second, func(a Action) bool { _, ok := a.(DeleteRayJob); return ok }},
	} {
		r := d.lastAction(want.is)
		if r == nil || !r.in.Now.Equal(end.Add(want.after)) {
			t.Errorf("rule due %s after the end ran at %v", want.after, r)
		}
	}
}

func TestDeletionRulesOverdueTogether(t *testing.T) {
	job := jobIn(rayv1.K8sJobMode).DeletionRule(rayv1.DeleteWorkers, rayv1.JobStatusSucceeded, 10).
		DeletionRule(rayv1.DeleteCluster, rayv1.JobStatusSucceeded, 20).Obj()
	w := newWorld(job)
	d := drive(t, w)
	d.until(200, w.reached(rayv1.JobDeploymentStatusComplete))
	w.advance(w.now.Add(time.Hour)) // the operator was down
	r := d.step()
	if len(r.p.Actions) != 1 {
		t.Fatalf("one action per pass, the most impactful first: %v", r.p.Actions)
	}
	if _, ok := r.p.Actions[0].(DeleteCluster); !ok {
		t.Fatalf("want DeleteCluster first: %v", r.p.Actions)
	}
	d.quiet()
	if len(w.clusters) != 0 {
		t.Fatal("the cluster is left")
	}
	for _, r := range d.passes {
		for _, a := range r.p.Actions {
			if _, ok := a.(SuspendWorkers); ok {
				t.Error("the workers of a deleted cluster were suspended")
			}
		}
	}
}

func TestDeletionPolicyGateOff(t *testing.T) {
	job := jobIn(rayv1.K8sJobMode).DeletionRule(rayv1.DeleteCluster, rayv1.JobStatusSucceeded, 0).Obj()
	w := newWorld(job)
	w.settings.Gates = features.Static{features.RayJobDeletionPolicy: false}
	drive(t, w).quiet()
	if len(w.clusters) != 1 || !w.hasEvent(EventDeletionPolicyFallback) {
		t.Fatalf("clusters %v; events %v", w.ids(), w.events)
	}
}

func TestLegacyDeletionPolicy(t *testing.T) {
	job := jobIn(rayv1.HTTPMode).Obj()
	job.Spec.DeletionStrategy = &rayv1.DeletionStrategy{
		OnSuccess: &rayv1.DeletionPolicy{Policy: ptr.To(rayv1.DeleteCluster)},
		OnFailure: &rayv1.DeletionPolicy{Policy: ptr.To(rayv1.DeleteCluster)},
	}
	job.Spec.ShutdownAfterJobFinishes, job.Spec.TTLSecondsAfterFinished = true, 15
	w := newWorld(job)
	d := drive(t, w)
	d.until(200, w.reached(rayv1.JobDeploymentStatusComplete))
	end := w.job.Status.EndTime.Time
	d.quiet()
	if r := d.lastAction(func(a Action) bool { _, ok := a.(DeleteCluster); return ok }); r == nil || !r.in.Now.Equal(end.Add(15*time.Second)) {
		t.Fatalf("onSuccess DeleteCluster after ttlSecondsAfterFinished: %v", r)
	}
}

func TestOperatorRestartSubmitsOnce(t *testing.T) {
	for _, mode := range submittingModes {
		t.Run(string(mode), func(t *testing.T) {
			w := newWorld(jobIn(mode).Shutdown(0).Obj())
			d := drive(t, w)
			// Restart the operator every third pass until the job runs: the plan starts from
			// the stored status alone each time, and the pool forgets what it heard (an
			// answer on its way is lost).
			n := 0
			d.until(300, func() bool {
				if n++; n%3 == 0 {
					w.pool.reset()
				}
				return w.job.Status.JobStatus == rayv1.JobStatusRunning
			})
			d.quiet()
			if st := w.job.Status; st.JobDeploymentStatus != rayv1.JobDeploymentStatusComplete || w.runs() != 1 {
				t.Fatalf("status %+v; submissions %v", st, w.submissions)
			}
		})
	}
}

func TestValidationFailedThenFixed(t *testing.T) {
	job := jobIn(rayv1.K8sJobMode).Obj()
	job.Spec.ClusterSelector = map[string]string{rayv1.RayJobClusterSelectorKey: "other"} // with rayClusterSpec: invalid
	w := newWorld(job)
	d := drive(t, w)
	d.quiet()
	st := w.job.Status
	if st.JobDeploymentStatus != rayv1.JobDeploymentStatusValidationFailed || st.Reason != rayv1.ValidationFailed || len(w.clusters) != 0 || !w.hasEvent(EventInvalidSpec) {
		t.Fatalf("status %+v; events %v", st, w.events)
	}
	w.updateSpec(func(s *rayv1.RayJobSpec) { s.ClusterSelector = nil })
	d.quiet()
	if w.job.Status.JobDeploymentStatus != rayv1.JobDeploymentStatusComplete || w.runs() != 1 {
		t.Fatalf("status %+v", w.job.Status)
	}
}

func TestManagedByAnotherController(t *testing.T) {
	job := jobIn(rayv1.K8sJobMode).Obj()
	job.Spec.ManagedBy = ptr.To("kueue.x-k8s.io/multikueue")
	w := newWorld(job)
	d := drive(t, w)
	d.quiet()
	if len(d.passes) != 1 || !d.passes[0].p.empty() || w.job.Status.JobDeploymentStatus != "" || len(w.job.Finalizers) != 0 {
		t.Fatalf("passes %d, status %+v", len(d.passes), w.job.Status)
	}
}

func TestSidecarHeadLost(t *testing.T) {
	job := jobIn(rayv1.SidecarMode).Shutdown(0).Obj()
	job.Spec.BackoffLimit = ptr.To[int32](1)
	w := newWorld(job)
	d := drive(t, w)
	d.running()
	w.loseHead(w.job.Status.RayClusterName)
	d.quiet()
	st := w.job.Status
	if st.JobDeploymentStatus != rayv1.JobDeploymentStatusComplete || *st.Failed != 1 || w.runs() != 2 {
		t.Fatalf("status %+v; submissions %v", st, w.submissions)
	}
}

func TestHeadServiceWithoutDashboardPort(t *testing.T) {
	if got := DashboardURL(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "h", Namespace: "n"}}, ""); got != "" {
		t.Errorf("no port: %q", got)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "h", Namespace: "n"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "dashboard", Port: 9265}}}}
	if got := DashboardURL(svc, "corp.example"); got != "h.n.svc.corp.example:9265" {
		t.Errorf("got %q", got)
	}
}

func TestSidecarClusterLostBeforeRunning(t *testing.T) {
	job := jobIn(rayv1.SidecarMode).Shutdown(0).Obj()
	job.Spec.BackoffLimit = ptr.To[int32](1)
	w := newWorld(job)
	w.clusterNeverReady = true
	d := drive(t, w)
	d.until(50, func() bool { return w.job.Status.RayClusterStatus.DesiredWorkerReplicas == 1 })
	first := w.job.Status.RayClusterName
	w.clusters[first].deletingAt = w.now // deleted by hand while Initializing
	w.clusterNeverReady = false
	d.quiet()
	st := w.job.Status
	if st.JobDeploymentStatus != rayv1.JobDeploymentStatusComplete || *st.Failed != 1 || st.RayClusterName == first || w.runs() != 1 {
		t.Fatalf("status %+v; submissions %v", st, w.submissions)
	}
}

func TestHTTPSubmissionAnswerLost(t *testing.T) {
	for _, lost := range []string{"restart", "timeout"} {
		t.Run(lost, func(t *testing.T) {
			w := newWorld(jobIn(rayv1.HTTPMode).Shutdown(0).Obj())
			// The submission reaches the cluster, its answer does not reach the operator.
			w.nextSubmission = lost
			d := drive(t, w)
			d.quiet()
			if st := w.job.Status; st.JobDeploymentStatus != rayv1.JobDeploymentStatusComplete || w.runs() != 1 || w.duplicates != 0 {
				t.Fatalf("status %+v; submissions %v, duplicates %d", st, w.submissions, w.duplicates)
			}
			if n := len(d.requests(func(q Request) bool { _, ok := q.(SubmitJob); return ok })); n != 1 {
				t.Errorf("%d submissions planned", n)
			}
		})
	}
}

func (d *driver) requests(match func(Request) bool) []Request {
	var out []Request
	for _, r := range d.passes {
		for _, q := range r.p.Requests {
			if match(q) {
				out = append(out, q)
			}
		}
	}
	return out
}
