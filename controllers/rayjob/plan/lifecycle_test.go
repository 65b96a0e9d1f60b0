package plan

import (
	"slices"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

var submittingModes = []rayv1.JobSubmissionMode{rayv1.K8sJobMode, rayv1.HTTPMode, rayv1.SidecarMode}

func jobIn(mode rayv1.JobSubmissionMode) *builders.RayJobWrapper {
	return builders.RayJob("train", "ml").Mode(mode)
}

// done reports whether the RayJob reached a deployment status (or is gone, for "").
func (w *world) reached(ds rayv1.JobDeploymentStatus) func() bool {
	return func() bool { return w.job == nil && ds == "" || w.job != nil && w.job.Status.JobDeploymentStatus == ds }
}

// runs is how many Ray jobs ran: the submissions every cluster's Jobs API accepted.
func (w *world) runs() int {
	n := 0
	for _, ids := range w.submissions {
		for _, c := range ids {
			n += c
		}
	}
	return n
}

func (w *world) hasEvent(reason string) bool {
	return slices.ContainsFunc(w.events, func(e Event) bool { return e.Reason == reason })
}

func TestLifecycleSuccess(t *testing.T) {
	for _, mode := range submittingModes {
		t.Run(string(mode), func(t *testing.T) {
			w := newWorld(jobIn(mode).Shutdown(0).Obj())
			d := drive(t, w)
			d.quiet()
			st := w.job.Status
			if st.JobDeploymentStatus != rayv1.JobDeploymentStatusComplete || st.JobStatus != rayv1.JobStatusSucceeded || st.Reason != "" {
				t.Fatalf("status %s/%s (%s): %s", st.JobDeploymentStatus, st.JobStatus, st.Reason, st.Message)
			}
			if *st.Succeeded != 1 || *st.Failed != 0 || st.EndTime == nil || st.StartTime == nil || st.RayJobStatusInfo.EndTime == nil {
				t.Errorf("counts and times: %+v", st)
			}
			if w.runs() != 1 || w.submissions[st.RayClusterName][st.JobId] != 1 {
				t.Errorf("submissions %v, want one of %s on %s", w.submissions, st.JobId, st.RayClusterName)
			}
			if len(w.clusters) != 0 || !w.hasEvent(EventCreatedCluster) || !w.hasEvent(EventDeletedCluster) || !w.hasEvent(EventCompleted) {
				t.Errorf("clusters left %v; events %v", w.ids(), w.events)
			}
			if st.DashboardURL != "train-c0-head-svc.ml.svc.cluster.local:8265" && st.RayClusterName == "train-c0" {
				t.Errorf("dashboard URL %q", st.DashboardURL)
			}
			if len(w.executions) != 1 || w.executions[0].DeploymentStatus != rayv1.JobDeploymentStatusComplete {
				t.Errorf("execution facts %+v", w.executions)
			}
			if mode == rayv1.K8sJobMode && (w.submitter == nil || !w.hasEvent(EventCreatedSubmitter)) {
				t.Error("the submitter Job is kept after the job (its logs), as under KubeRay")
			}
		})
	}
}

func TestLifecycleAppFailure(t *testing.T) {
	for _, mode := range submittingModes {
		t.Run(string(mode), func(t *testing.T) {
			w := newWorld(jobIn(mode).Obj())
			w.app.outcome, w.app.message = rayv1.JobStatusFailed, "Traceback: "+hostile
			drive(t, w).quiet()
			st := w.job.Status
			if st.JobDeploymentStatus != rayv1.JobDeploymentStatusFailed || st.Reason != rayv1.AppFailed || st.JobStatus != rayv1.JobStatusFailed {
				t.Fatalf("status %s/%s (%s): %s", st.JobDeploymentStatus, st.JobStatus, st.Reason, st.Message)
			}
			if *st.Failed != 1 || w.runs() != 1 || len(w.clusters) != 1 {
				t.Errorf("failed %d, runs %d, clusters %v (kept: no shutdown)", *st.Failed, w.runs(), w.ids())
			}
		})
	}
}

func TestLifecycleSubmissionFailure(t *testing.T) {
	for _, mode := range submittingModes {
		t.Run(string(mode), func(t *testing.T) {
			w := newWorld(jobIn(mode).Shutdown(0).Obj())
			w.app.submitFails, w.app.refuse = true, "runtime_env: "+hostile
			drive(t, w).quiet()
			st := w.job.Status
			if st.JobDeploymentStatus != rayv1.JobDeploymentStatusFailed || st.Reason != rayv1.SubmissionFailed {
				t.Fatalf("status %s/%s (%s): %s", st.JobDeploymentStatus, st.JobStatus, st.Reason, st.Message)
			}
			if w.runs() != 0 || len(w.clusters) != 0 {
				t.Errorf("runs %d, clusters %v", w.runs(), w.ids())
			}
		})
	}
}

func TestLifecycleActiveDeadline(t *testing.T) {
	for _, mode := range submittingModes {
		t.Run(string(mode), func(t *testing.T) {
			job := jobIn(mode).Obj()
			job.Spec.ActiveDeadlineSeconds = ptr.To[int32](30)
			job.Spec.BackoffLimit = ptr.To[int32](2) // DeadlineExceeded is not retried
			w := newWorld(job)
			w.app.run = time.Hour
			d := drive(t, w)
			d.until(500, w.reached(rayv1.JobDeploymentStatusFailed))
			last := d.passes[len(d.passes)-1]
			st := w.job.Status
			if st.Reason != rayv1.DeadlineExceeded || !last.in.Now.Equal(st.StartTime.Add(30*time.Second)) {
				t.Fatalf("failed at %s (%s), started %s", last.in.Now, st.Reason, st.StartTime)
			}
			d.quiet()
			j := w.clusters[st.RayClusterName].jobs[st.JobId]
			if j == nil || j.status(w.now) != rayv1.JobStatusStopped || *w.job.Status.Failed != 1 {
				t.Errorf("the Ray job on the kept cluster was not stopped: %+v; status %+v", j, w.job.Status)
			}
		})
	}
}

func TestLifecyclePreRunningDeadline(t *testing.T) {
	job := jobIn(rayv1.K8sJobMode).Shutdown(0).Obj()
	job.Spec.PreRunningDeadlineSeconds = ptr.To[int32](20)
	w := newWorld(job)
	w.clusterNeverReady = true
	d := drive(t, w)
	d.until(200, w.reached(rayv1.JobDeploymentStatusFailed))
	st := w.job.Status
	if st.Reason != rayv1.PreRunningDeadlineExceeded || !d.passes[len(d.passes)-1].in.Now.Equal(st.StartTime.Add(20*time.Second)) {
		t.Fatalf("status %+v at %s", st, d.passes[len(d.passes)-1].in.Now)
	}
	d.quiet()
	if len(w.clusters) != 0 || w.runs() != 0 {
		t.Errorf("clusters %v runs %d", w.ids(), w.runs())
	}
}

func TestLifecycleRetries(t *testing.T) {
	for _, pinned := range []string{"", "fixed-id"} {
		for _, mode := range submittingModes {
			t.Run(string(mode)+"/"+pinned, func(t *testing.T) {
				job := jobIn(mode).Shutdown(0).Obj()
				job.Spec.BackoffLimit, job.Spec.JobId = ptr.To[int32](2), pinned
				w := newWorld(job)
				w.app.outcome = rayv1.JobStatusFailed
				drive(t, w).quiet()
				st := w.job.Status
				if st.JobDeploymentStatus != rayv1.JobDeploymentStatusFailed || *st.Failed != 3 || st.Reason != rayv1.AppFailed {
					t.Fatalf("status %+v", st)
				}
				ids := map[string]bool{}
				for c, byID := range w.submissions {
					for id := range byID {
						ids[id] = true
						if pinned != "" && id != pinned {
							t.Errorf("cluster %s ran %s, not the pinned id", c, id)
						}
					}
				}
				if len(w.submissions) != 3 || w.runs() != 3 || (pinned == "" && len(ids) != 3) {
					t.Errorf("want 3 attempts on 3 clusters with 3 ids: %v", w.submissions)
				}
				var ended []rayv1.JobDeploymentStatus
				for _, e := range w.executions {
					ended = append(ended, e.DeploymentStatus)
				}
				if !slices.Equal(ended, []rayv1.JobDeploymentStatus{rayv1.JobDeploymentStatusRetrying, rayv1.JobDeploymentStatusRetrying, rayv1.JobDeploymentStatusFailed}) ||
					w.executions[2].RetryCount != 2 {
					t.Errorf("execution facts %+v", w.executions)
				}
			})
		}
	}
}
