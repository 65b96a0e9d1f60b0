package plan

import (
	"fmt"
	"math"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/rayjob"
	"github.com/raygate/raygate/internal/untrusted"
	"github.com/raygate/raygate/internal/validation"
)

// dashboardPortName is the head Service port status.dashboardURL points at.
const dashboardPortName = "dashboard"

// DashboardURL is status.dashboardURL as KubeRay builds it from a cluster's head Service:
// `<service>.<namespace>.svc.<domain>:<dashboard port>`, without a scheme ("" when there
// is no Service or it has no port named dashboard).
func DashboardURL(svc *corev1.Service, clusterDomain string) string {
	if svc == nil {
		return ""
	}
	if clusterDomain == "" {
		clusterDomain = defaultClusterDomain
	}
	for _, p := range svc.Spec.Ports {
		if p.Name == dashboardPortName && p.Port > 0 {
			return svc.Name + "." + svc.Namespace + ".svc." + clusterDomain + ":" + strconv.Itoa(int(p.Port))
		}
	}
	return ""
}

// fail ends the attempt as Failed with a reason and message (the message is raygate's,
// quoting remote text only sanitized).
func (s *pass) fail(reason rayv1.JobFailedReason, message string) {
	s.st.JobDeploymentStatus = rayv1.JobDeploymentStatusFailed
	s.st.Reason = reason
	s.st.Message = message
}

// stamp is a time as the status stores it: whole seconds, so what is stored reads back
// equal.
func (s *pass) stamp(t time.Time) *metav1.Time {
	c := metav1.NewTime(t).Rfc3339Copy()
	return &c
}

// startTime is when the attempt started; a status without one (written by hand, or by an
// older operator) counts from now and records it.
func (s *pass) startTime() time.Time {
	if s.st.StartTime == nil {
		s.st.StartTime = s.stamp(s.now)
	}
	return s.st.StartTime.Time
}

// deadlinePassed fails the attempt once activeDeadlineSeconds (and, before Running,
// preRunningDeadlineSeconds) passed since it started; otherwise it wakes when the next one
// is due.
func (s *pass) deadlinePassed(preRunning bool) bool {
	spec := &s.job.Spec
	start := s.startTime()
	if d := spec.ActiveDeadlineSeconds; d != nil {
		due := start.Add(seconds(int(*d)))
		if !s.now.Before(due) {
			s.fail(rayv1.DeadlineExceeded, fmt.Sprintf("The RayJob has passed the activeDeadlineSeconds. StartTime: %s. ActiveDeadlineSeconds: %d", start.UTC().Format(time.RFC3339), *d))
			return true
		}
		s.out.Wake.due(due)
	}
	if d := spec.PreRunningDeadlineSeconds; preRunning && d != nil {
		due := start.Add(seconds(int(*d)))
		if !s.now.Before(due) {
			s.fail(rayv1.PreRunningDeadlineExceeded, fmt.Sprintf("The RayJob has passed the preRunningDeadlineSeconds. StartTime: %s. PreRunningDeadlineSeconds: %d", start.UTC().Format(time.RFC3339), *d))
			return true
		}
		s.out.Wake.due(due)
	}
	return false
}

// graceDue is when a job whose Ray job ended stops waiting for its submitter (zero: not
// such a job).
func (s *pass) graceDue() time.Time {
	st := s.st
	if !rayv1.IsJobTerminal(st.JobStatus) || st.JobDeploymentStatus != rayv1.JobDeploymentStatusRunning || st.RayJobStatusInfo.EndTime == nil {
		return time.Time{}
	}
	return st.RayJobStatusInfo.EndTime.Add(max(s.set.TransitionGracePeriod, 0))
}

// gracePeriodPassed ends a job whose Ray job ended a grace period ago while its deployment
// status stayed Running (its submitter never finished).
func (s *pass) gracePeriodPassed() bool {
	due := s.graceDue()
	if due.IsZero() || s.now.Before(due) {
		return false
	}
	st := s.st
	st.JobDeploymentStatus = rayv1.JobDeploymentStatusComplete
	if st.JobStatus == rayv1.JobStatusFailed {
		st.JobDeploymentStatus = rayv1.JobDeploymentStatusFailed
	}
	st.Reason = rayv1.JobDeploymentStatusTransitionGracePeriodExceeded
	st.Message = "JobDeploymentStatus does not transition to Complete or Failed within the grace period after JobStatus reaches a terminal state."
	return true
}

func (s *pass) wakeForGracePeriod() {
	if due := s.graceDue(); !due.IsZero() {
		s.out.Wake.due(due)
	}
}

// statusCheckTimedOut fails a job whose status could not be read for StatusCheckTimeout.
func (s *pass) statusCheckTimedOut() bool {
	since := s.st.JobStatusCheckFailureStartTime
	if since == nil {
		return false
	}
	due := since.Add(s.set.StatusCheckTimeout)
	if s.now.Before(due) {
		s.out.Wake.due(due)
		return false
	}
	s.fail(rayv1.JobStatusCheckTimeoutExceeded, fmt.Sprintf("Job status checks have been failing since %s; exceeded timeout of %ds",
		since.UTC().Format(time.DateTime), int64(s.set.StatusCheckTimeout/time.Second)))
	return true
}

// copyClusterStatus records the cluster's status in the job's when it changed in a way
// KubeRay counts (not only its lastUpdateTime or observedGeneration), so a cluster's
// heartbeat writes nothing.
func (s *pass) copyClusterStatus(rc *rayv1.RayCluster) {
	if clusterStatusChanged(&s.st.RayClusterStatus, &rc.Status) {
		s.st.RayClusterStatus = *rc.Status.DeepCopy()
	}
}

// copyWaitingClusterStatus is the copy while the job waits for its cluster (Initializing):
// only when the cluster's state or reason changed (ready, suspended, failed), so a cluster
// coming up, whose conditions and replica counts change at every step, does not rewrite the
// status of every job waiting on it; the RayCluster's own status has each step, and the job's
// message names the cluster. In SidecarMode every change is copied: a recorded status is how
// a later pass knows the cluster existed, and its head may have submitted the job.
func (s *pass) copyWaitingClusterStatus(rc *rayv1.RayCluster) {
	old := &s.st.RayClusterStatus
	if s.job.Spec.SubmissionMode == rayv1.SidecarMode || old.State != rc.Status.State || old.Reason != rc.Status.Reason {
		s.copyClusterStatus(rc)
	}
}

func clusterStatusChanged(old, cur *rayv1.RayClusterStatus) bool {
	return old.State != cur.State || old.Reason != cur.Reason ||
		old.ReadyWorkerReplicas != cur.ReadyWorkerReplicas || old.AvailableWorkerReplicas != cur.AvailableWorkerReplicas ||
		old.DesiredWorkerReplicas != cur.DesiredWorkerReplicas || old.MinWorkerReplicas != cur.MinWorkerReplicas ||
		old.MaxWorkerReplicas != cur.MaxWorkerReplicas ||
		!equality.Semantic.DeepEqual(old.Endpoints, cur.Endpoints) || old.Head != cur.Head ||
		!equality.Semantic.DeepEqual(old.Conditions, cur.Conditions)
}

// millisTime reads Ray's milliseconds since the epoch as a stored time (nil: 0 or beyond
// any clock).
func millisTime(ms uint64) *metav1.Time {
	const maxMillis = 253402300799999 // the end of year 9999
	if ms == 0 || ms > maxMillis || ms > math.MaxInt64 {
		return nil
	}
	t := metav1.NewTime(time.UnixMilli(int64(ms))).Rfc3339Copy()
	return &t
}

func sameSecond(a, b *metav1.Time) bool {
	return a != nil && b != nil && a.Unix() == b.Unix()
}

// settle follows a step that may have ended the attempt: the success and failure counts,
// a retry while backoffLimit allows one (not after the active deadline or the status-check
// timeout, as KubeRay), the end time, what the metrics count, and the events.
func (s *pass) settle() {
	st, old := s.st, s.stored.JobDeploymentStatus
	now := st.JobDeploymentStatus
	if rayv1.IsJobDeploymentTerminal(old) || now == old || (!rayv1.IsJobDeploymentTerminal(now)) {
		return
	}
	failed, succeeded := ptr.Deref(st.Failed, 0), ptr.Deref(st.Succeeded, 0)
	if now == rayv1.JobDeploymentStatusFailed {
		failed = saturatingInc(failed)
	} else if st.JobStatus == rayv1.JobStatusSucceeded {
		succeeded = saturatingInc(succeeded)
	}
	st.Failed, st.Succeeded = ptr.To(failed), ptr.To(succeeded)
	retry := now == rayv1.JobDeploymentStatusFailed && int64(failed) < int64(ptr.Deref(s.job.Spec.BackoffLimit, -1))+1 &&
		st.Reason != rayv1.DeadlineExceeded && st.Reason != rayv1.JobStatusCheckTimeoutExceeded
	s.out.Metrics.Execution = &Execution{RetryCount: int(ptr.Deref(s.stored.Failed, 0)), Seconds: s.now.Sub(s.startTime()).Seconds()}
	s.out.Wake.soon()
	if retry {
		st.JobDeploymentStatus = rayv1.JobDeploymentStatusRetrying
		s.out.Metrics.Execution.DeploymentStatus = st.JobDeploymentStatus
		s.out.tell(warningEvent(EventRetrying, ActionRetry, "attempt %d failed (%s): retrying on a new RayCluster (%d of %d retries)",
			failed, st.Reason, failed, ptr.Deref(s.job.Spec.BackoffLimit, 0)))
		return
	}
	s.out.Metrics.Execution.DeploymentStatus = now
	st.EndTime = s.stamp(s.now)
	if s.set.BatchScheduler {
		// Released with the final status (the pass that records it runs again if the
		// release or the write fails), as KubeRay releases it once the job ended.
		s.act.do(BatchSchedulerHook{Phase: OnCompletion})
	}
	if now == rayv1.JobDeploymentStatusComplete {
		s.out.tell(normalEvent(EventCompleted, ActionFinish, "the Ray job %s ended %s", st.JobId, st.JobStatus))
	} else {
		s.out.tell(warningEvent(EventFailed, ActionFinish, "the RayJob failed (%s): %s", st.Reason, untrusted.Text(st.Message, maxNoteQuote)))
		s.stopAfterDeadline()
	}
	if ds := s.job.Spec.DeletionStrategy; ds != nil && !s.set.Gates.Enabled(features.RayJobDeletionPolicy) && !rayjob.UsesClusterSelector(s.job) {
		what := "nothing is deleted (shutdownAfterJobFinishes is false)"
		if s.job.Spec.ShutdownAfterJobFinishes {
			what = "shutdownAfterJobFinishes applies"
		}
		s.out.tell(warningEvent(EventDeletionPolicyFallback, ActionCleanup, "spec.deletionStrategy is ignored: the %s feature gate is disabled; %s", features.RayJobDeletionPolicy, what))
	}
}

// stopAfterDeadline stops a job that ran out of time: its RayJob is Failed, and its cluster
// may be kept (or shared), where the Ray job would otherwise run on.
func (s *pass) stopAfterDeadline() {
	st := s.st
	if st.Reason != rayv1.DeadlineExceeded && st.Reason != rayv1.PreRunningDeadlineExceeded {
		return
	}
	rc := s.in.Observed.Cluster
	if st.JobId == "" || rayv1.IsJobTerminal(st.JobStatus) || rc == nil || rc.DeletionTimestamp != nil {
		return
	}
	s.act.ask(StopJob{Cluster: rc.Name, JobID: st.JobId, Reason: string(st.Reason)})
	s.out.tell(normalEvent(EventStoppedJob, ActionStop, "Asked RayCluster %s/%s to stop Ray job %s: %s", rc.Namespace, rc.Name, st.JobId, st.Reason))
}

func saturatingInc(n int32) int32 {
	if n == math.MaxInt32 {
		return n
	}
	return n + 1
}

// managedByOther: spec.managedBy names another controller (MultiKueue), which runs the job.
func managedByOther(job *rayv1.RayJob) bool { return validation.ManagedByOther(job.Spec.ManagedBy) }
