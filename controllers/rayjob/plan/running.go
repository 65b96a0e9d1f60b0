package plan

import (
	"fmt"
	"maps"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/rayjob"
	"github.com/raygate/raygate/internal/untrusted"
)

// running follows a submitted job to its end: the timers first (suspend, the active
// deadline, the transition grace period, the status-check timeout), then the cluster, the
// submitter (K8sJobMode, SidecarMode) and what the Jobs API says of the job.
func (s *pass) running() {
	if s.job.Spec.Suspend {
		s.toSuspending()
		return
	}
	if s.deadlinePassed(false) || s.gracePeriodPassed() || s.statusCheckTimedOut() {
		return
	}
	selector := rayjob.UsesClusterSelector(s.job)
	rc := s.in.Observed.Cluster
	switch {
	case rc == nil:
		// raygate never creates the cluster again mid-attempt: a new cluster would run the
		// submission again (SidecarMode) or not know the job at all.
		s.fail(rayv1.AppFailed, "RayCluster "+s.st.RayClusterName+" was deleted while the job ran")
		return
	case rc.DeletionTimestamp != nil:
		s.fail(rayv1.AppFailed, "RayCluster "+rc.Name+" is being deleted while the job runs")
		return
	case !selector && !s.controls(&rc.ObjectMeta):
		s.fail(rayv1.AppFailed, "RayCluster "+rc.Name+" is no longer controlled by this RayJob")
		return
	}
	if s.st.JobId == "" {
		s.fail(rayv1.SubmissionFailed, "the RayJob is Running without a submission id in status.jobId")
		return
	}
	s.copyClusterStatus(rc)
	if !selector {
		s.pointJobService(rc)
	}
	var finishedAt *time.Time
	switch s.job.Spec.SubmissionMode {
	case rayv1.K8sJobMode:
		var failed bool
		if failed, finishedAt = s.checkSubmitterJob(); failed {
			return
		}
	case rayv1.SidecarMode:
		var failed bool
		if failed, finishedAt = s.checkSidecar(); failed {
			return
		}
	}
	s.followJob(rc, finishedAt)
}

// pointJobService keeps `<job>-head-svc` selecting the head of the job's cluster, as
// KubeRay does; one that belongs to someone else is left alone.
func (s *pass) pointJobService(rc *rayv1.RayCluster) {
	svc := s.in.Observed.JobService
	name := rayjob.HeadServiceName(s.job.Name)
	switch {
	case svc == nil:
		s.act.do(PointJobService{Cluster: rc.DeepCopy(), Done: normalEvent(EventCreatedService, ActionCreate, "Created the service %s/%s", s.job.Namespace, name)})
	case !s.controls(&svc.ObjectMeta):
		s.out.note("Service " + name + " is not controlled by this RayJob: left alone")
	case svc.Spec.Selector[rayv1.ClusterLabelKey] != rc.Name:
		s.act.do(PointJobService{Cluster: rc.DeepCopy(), Existing: svc.DeepCopy(), Done: normalEvent(EventUpdatedService, ActionUpdate, "Updated the service %s/%s", s.job.Namespace, name)})
	}
}

// checkSubmitterJob reads the submitter Job: a Failed condition fails the attempt (the
// submission failed, or the application did when Ray said so first); the time it finished
// (Complete or Failed) is returned. A missing submitter leaves the job to the Jobs API and
// the grace period.
func (s *pass) checkSubmitterJob() (failed bool, finishedAt *time.Time) {
	j := s.in.Observed.Submitter
	if j == nil || !s.controls(&j.ObjectMeta) || j.DeletionTimestamp != nil {
		s.out.note("the submitter Job is gone: the job is followed through the Jobs API only")
		return false, nil
	}
	for i := range j.Status.Conditions {
		c := &j.Status.Conditions[i]
		if c.Status != corev1.ConditionTrue || (c.Type != batchv1.JobComplete && c.Type != batchv1.JobFailed) {
			continue
		}
		if c.Type == batchv1.JobFailed {
			return s.submitterFailed(c.LastTransitionTime.Time, fmt.Sprintf("Job submission has failed. Reason: %s. Message: %s",
				untrusted.Text(c.Reason, maxWord), untrusted.Text(c.Message, maxRemoteExcerpt))), nil
		}
		if !c.LastTransitionTime.IsZero() {
			t := c.LastTransitionTime.Time
			finishedAt = &t
		}
	}
	return false, finishedAt
}

// checkSidecar reads the head pod's submitter container (SidecarMode). Without
// SidecarSubmitterRestart a non-zero exit fails the attempt; with it, the container
// restarts, and only more restarts than submitterConfig.backoffLimit do. A head pod that is
// gone fails the attempt: it is never created again (a new head would not submit).
func (s *pass) checkSidecar() (failed bool, finishedAt *time.Time) {
	pod := s.in.Observed.HeadPod
	if pod == nil {
		s.fail(rayv1.AppFailed, "Ray head pod not found.")
		return true, nil
	}
	var cs *corev1.ContainerStatus
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == rayv1.SubmitterContainerName {
			cs = &pod.Status.ContainerStatuses[i]
			break
		}
	}
	if cs == nil {
		return false, nil
	}
	term := cs.State.Terminated
	restarts := s.set.Gates.Enabled(features.SidecarSubmitterRestart)
	switch {
	case !restarts && term != nil && term.ExitCode != 0:
		return s.submitterFailed(term.FinishedAt.Time, fmt.Sprintf("Ray head pod container %s terminated with exit code %d: %s",
			cs.Name, term.ExitCode, untrusted.Text(term.Reason, maxWord))), nil
	case restarts && cs.LastTerminationState.Terminated != nil && (term == nil || term.ExitCode != 0) && cs.RestartCount >= s.submitterBackoffLimit():
		return s.submitterFailed(cs.LastTerminationState.Terminated.FinishedAt.Time, fmt.Sprintf("Ray head pod submitter container %s terminated after exceeding the maximum restart count", cs.Name)), nil
	}
	// A non-zero exit that will be restarted is not the end of the submitter.
	if term != nil && (term.ExitCode == 0 || !restarts) && !term.FinishedAt.IsZero() {
		t := term.FinishedAt.Time
		finishedAt = &t
	}
	return false, finishedAt
}

// submitterBackoffLimit is how often the sidecar may restart (SidecarSubmitterRestart).
func (s *pass) submitterBackoffLimit() int32 {
	if c := s.job.Spec.SubmitterConfig; c != nil && c.BackoffLimit != nil {
		return *c.BackoffLimit
	}
	return rayjob.DefaultSubmitterBackoffLimit
}

// submitterFailed ends the attempt because its submitter failed (at failedAt): the
// application's failure when Ray says FAILED (the submitter follows the job and fails with
// it), else the submission's. It first reads the job's status once more when the last read
// was sent before the failure (KubeRay relies on its last poll, and a job that failed just
// before its submitter was reported as a failed submission), within
// SubmitterFinishedTimeout. It reports whether the pass stops here.
func (s *pass) submitterFailed(failedAt time.Time, message string) bool {
	view := s.jobsView()
	fresh := view != nil && view.Read != nil && view.Read.sentSince(failedAt)
	if !fresh && s.now.Before(failedAt.Add(s.set.SubmitterFinishedTimeout)) {
		if rc := s.in.Observed.Cluster; rc != nil {
			s.readJob(rc, nil)
		}
		s.out.Wake.due(failedAt.Add(s.set.SubmitterFinishedTimeout))
		s.out.note("the submitter failed: read the job's status before deciding why")
		return true
	}
	if fresh && view.Read.Outcome == ReadFound {
		s.applyInfo(view.Read.Info)
	}
	if s.st.JobStatus == rayv1.JobStatusFailed {
		s.st.JobDeploymentStatus, s.st.Reason = rayv1.JobDeploymentStatusFailed, rayv1.AppFailed
		return true
	}
	s.fail(rayv1.SubmissionFailed, message)
	return true
}

// followJob acts on what the Jobs API last said of the job: the job's status, or the fact
// that it has none with this id (HTTPMode then submits it), or a failed read (the
// status-check timer runs). It asks for a new read when the last one is older than the poll
// interval, or older than the submitter's end.
func (s *pass) followJob(rc *rayv1.RayCluster, finishedAt *time.Time) {
	if s.endedByJobsAPI(rc, finishedAt) {
		return
	}
	if finishedAt != nil {
		s.submitterFinishedTimeout(rc, *finishedAt)
	}
	s.wakeForGracePeriod()
}

// endedByJobsAPI applies the last answer of the Jobs API; it reports whether the attempt
// ended.
func (s *pass) endedByJobsAPI(rc *rayv1.RayCluster, finishedAt *time.Time) bool {
	st := s.st
	view := s.jobsView()
	if view == nil || view.Read == nil {
		s.readJob(rc, nil)
		return false
	}
	read := view.Read
	if s.job.Spec.SubmissionMode == rayv1.HTTPMode && view.Submission.submitted() && st.JobStatus == rayv1.JobStatusNew {
		// The Jobs API has the job: from now on, a job it no longer knows was lost.
		st.JobStatus = rayv1.JobStatusPending
		s.out.tell(normalEvent(EventSubmittedJob, ActionSubmit, "Submitted Ray job %s to RayCluster %s/%s", st.JobId, rc.Namespace, rc.Name))
	}
	hasSubmitter := s.job.Spec.SubmissionMode == rayv1.K8sJobMode || s.job.Spec.SubmissionMode == rayv1.SidecarMode
	// A read sent before the submitter's end says nothing of what the submitter did: read
	// again at once.
	last := read
	if finishedAt != nil && !read.sentSince(*finishedAt) {
		last = nil
	}
	switch read.Outcome {
	case ReadFound:
		st.JobStatusCheckFailureStartTime = nil
		s.applyInfo(read.Info)
		if rayv1.IsJobTerminal(read.Info.Status) && (!hasSubmitter || finishedAt != nil) {
			st.JobDeploymentStatus = rayv1.JobDeploymentStatusComplete
			if read.Info.Status == rayv1.JobStatusFailed {
				st.JobDeploymentStatus, st.Reason = rayv1.JobDeploymentStatusFailed, rayv1.AppFailed
			}
			return true
		}
		if !rayv1.IsJobTerminal(read.Info.Status) || last == nil {
			s.readJob(rc, last)
		}
	case ReadNotFound:
		st.JobStatusCheckFailureStartTime = nil
		switch {
		case s.job.Spec.SubmissionMode == rayv1.HTTPMode:
			return s.submitHTTP(rc, view, read)
		case finishedAt != nil && last != nil:
			s.fail(rayv1.AppFailed, "Submitter completed but Ray job not found in RayCluster.")
			return true
		default:
			s.readJob(rc, last)
		}
	case ReadFailed:
		if st.JobStatusCheckFailureStartTime == nil {
			st.JobStatusCheckFailureStartTime = s.stamp(read.At)
			s.out.note("reading the job's status failed: " + untrusted.Text(read.Err, maxRemoteExcerpt))
		}
		s.readJob(rc, last)
		s.out.Wake.due(st.JobStatusCheckFailureStartTime.Add(s.set.StatusCheckTimeout))
	}
	return false
}

// submitHTTP handles a read that found no job with the id (HTTPMode): submit it, unless a
// submission of it is under way or was answered after that read; a job that the Jobs API
// had and no longer has was lost. It reports whether the attempt ended.
func (s *pass) submitHTTP(rc *rayv1.RayCluster, view *JobsView, read *JobRead) bool {
	st, sub := s.st, view.Submission
	switch {
	case sub != nil && sub.Outcome == SubmitRefused:
		s.fail(rayv1.SubmissionFailed, "the Ray Jobs API refused the submission: "+untrusted.Text(sub.Message, maxRemoteExcerpt))
		return true
	case sub != nil && sub.Outcome == SubmitPending:
		s.out.note("the submission is under way")
		s.out.Wake.due(s.now.Add(s.set.JobStatusPoll))
		return false
	case sub != nil && !read.At.After(sub.At):
		// The read is older than the submission's answer: read again before anything else.
		s.readJob(rc, nil)
		return false
	case st.JobStatus != rayv1.JobStatusNew:
		s.fail(rayv1.AppFailed, "the Ray Jobs API of RayCluster "+rc.Name+" no longer knows job "+st.JobId+" (was the head pod restarted?)")
		return true
	}
	if sub != nil && sub.Outcome == SubmitFailed && st.JobStatusCheckFailureStartTime == nil {
		st.JobStatusCheckFailureStartTime = s.stamp(sub.At)
		s.out.Wake.due(st.JobStatusCheckFailureStartTime.Add(s.set.StatusCheckTimeout))
	}
	submission, err := s.submission()
	if err != nil {
		s.fail(rayv1.SubmissionFailed, err.Error())
		return true
	}
	s.act.ask(SubmitJob{Cluster: rc.Name, JobID: st.JobId, Submission: submission})
	s.out.note("the Jobs API has no job " + st.JobId + ": submit it")
	s.out.Wake.due(s.now.Add(s.set.JobStatusPoll))
	return false
}

// submission is the body of an HTTPMode submission.
func (s *pass) submission() (Submission, error) {
	spec := &s.job.Spec
	env, err := rayjob.RuntimeEnvJSON(spec.RuntimeEnvYAML)
	if err != nil {
		return Submission{}, err
	}
	return Submission{
		Entrypoint: spec.Entrypoint, RuntimeEnvJSON: env, Metadata: maps.Clone(spec.Metadata),
		NumCPUs: spec.EntrypointNumCpus, NumGPUs: spec.EntrypointNumGpus, ResourcesJSON: spec.EntrypointResources,
	}, nil
}

// readJob asks for a new read once the last one (nil: none) is older than the poll
// interval, and wakes when the next one is due.
func (s *pass) readJob(rc *rayv1.RayCluster, last *JobRead) {
	if last != nil && s.now.Before(last.At.Add(s.set.JobStatusPoll)) {
		s.out.Wake.due(last.At.Add(s.set.JobStatusPoll))
		return
	}
	s.act.ask(ReadJob{Cluster: rc.Name, JobID: s.st.JobId})
	// The pool's answer triggers the next pass; this is the fallback if it never comes.
	s.out.Wake.due(s.now.Add(s.set.JobStatusPoll))
}

// applyInfo records what the Jobs API said of the job; the remote text is sanitized and
// bounded.
func (s *pass) applyInfo(info JobInfo) {
	st := s.st
	status := info.Status
	if !isRayJobStatus(status) || status == rayv1.JobStatusNew {
		status = rayv1.JobStatusPending
	}
	st.JobStatus = status
	msg := untrusted.Text(info.Message, maxJobMessage)
	if info.UnknownStatus != "" || status != info.Status {
		word := info.UnknownStatus
		if word == "" {
			word = string(info.Status)
		}
		msg = fmt.Sprintf("the Ray Jobs API reported the unknown status %q; %s", untrusted.Text(word, maxWord), msg)
	}
	st.Message = msg
	if t := millisTime(info.StartTimeMs); t != nil && !sameSecond(st.RayJobStatusInfo.StartTime, t) {
		st.RayJobStatusInfo.StartTime = t
	}
	if t := millisTime(info.EndTimeMs); t != nil && !sameSecond(st.RayJobStatusInfo.EndTime, t) {
		st.RayJobStatusInfo.EndTime = t
	}
	st.Reason = ""
}

// submitterFinishedTimeout fails a job whose submitter finished SubmitterFinishedTimeout ago
// when a read of the Jobs API sent since then still finds the Ray job not ended (a read
// that found it ended completed the job before this). Time alone proves nothing: raygate's
// own reads may be late (a busy dashboard pool, a long work queue), so past the deadline
// the job is read once more first. A read that failed is left to the status-check timer,
// which fails a job whose status cannot be read for StatusCheckTimeout.
func (s *pass) submitterFinishedTimeout(rc *rayv1.RayCluster, finishedAt time.Time) {
	if rayv1.IsJobDeploymentTerminal(s.st.JobDeploymentStatus) {
		return
	}
	due := finishedAt.Add(s.set.SubmitterFinishedTimeout)
	if s.now.Before(due) {
		s.out.Wake.due(due)
		return
	}
	var read *JobRead
	if view := s.jobsView(); view != nil && view.Read != nil && view.Read.sentSince(due) {
		read = view.Read
	}
	switch {
	case read == nil:
		if !s.readAsked(rc) {
			s.readJob(rc, nil)
		}
		s.out.note("the submitter finished over " + s.set.SubmitterFinishedTimeout.String() + " ago: read the job's status once more before failing it")
		return
	case read.Outcome != ReadFound:
		return
	}
	s.st.JobStatus = rayv1.JobStatusFailed
	s.fail(rayv1.JobDeploymentStatusTransitionGracePeriodExceeded, fmt.Sprintf("The RayJob submitter finished at %s but the ray job did not reach terminal state within %s",
		finishedAt.UTC().Format(time.DateTime), s.set.SubmitterFinishedTimeout))
}

// readAsked reports whether the pass already asks the pool to read the attempt's job.
func (s *pass) readAsked(rc *rayv1.RayCluster) bool {
	for _, r := range s.act.Requests {
		if q, ok := r.(ReadJob); ok && q.Cluster == rc.Name && q.JobID == s.st.JobId {
			return true
		}
	}
	return false
}

// jobsView is what the pool heard about this attempt's job (nil: nothing, or about
// another cluster or id).
func (s *pass) jobsView() *JobsView {
	v := &s.in.Observed.Jobs
	if v.Cluster == "" || v.Cluster != s.st.RayClusterName || v.JobID != s.st.JobId || s.st.JobId == "" {
		return nil
	}
	return v
}

func isRayJobStatus(s rayv1.JobStatus) bool {
	for _, k := range rayv1.AllJobStatuses {
		if s == k {
			return true
		}
	}
	return false
}
