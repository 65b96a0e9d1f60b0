package plan

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayjob"
)

// advance moves a valid job that is not being deleted one step along its lifecycle, from
// the deployment status it has stored.
func (s *pass) advance() {
	switch ds := s.stored.JobDeploymentStatus; ds {
	case rayv1.JobDeploymentStatusNew, rayv1.JobDeploymentStatusValidationFailed:
		s.start()
	case rayv1.JobDeploymentStatusInitializing:
		s.initializing()
	case rayv1.JobDeploymentStatusWaiting:
		s.waiting()
	case rayv1.JobDeploymentStatusRunning:
		s.running()
	case rayv1.JobDeploymentStatusSuspending, rayv1.JobDeploymentStatusRetrying:
		s.release()
	case rayv1.JobDeploymentStatusSuspended:
		s.suspended()
	case rayv1.JobDeploymentStatusComplete, rayv1.JobDeploymentStatusFailed:
		s.finished()
		return
	default:
		s.out.note("unknown jobDeploymentStatus " + string(ds) + ": nothing to do")
		return
	}
	s.settle()
}

// start begins an attempt: it records the submission id and the cluster's name before
// anything that uses them is created, and the start time the deadlines count from. A job
// that is suspended from the start creates nothing and waits as Suspended. A job that
// failed validation and was fixed starts here again, with what it had recorded.
func (s *pass) start() {
	st, spec := s.st, &s.job.Spec
	s.ensureFinalizer()
	// A job fixed after ValidationFailed goes on with the attempt it had recorded, if any:
	// same id, same cluster, same start (its deadlines do not start again).
	resumes := st.JobDeploymentStatus == rayv1.JobDeploymentStatusValidationFailed && st.RayClusterName != "" && st.StartTime != nil
	if st.JobDeploymentStatus == rayv1.JobDeploymentStatusValidationFailed {
		st.Reason, st.Message = "", ""
	}
	if spec.Suspend {
		if st.RayClusterName != "" {
			// Something of an attempt may exist (validation failed mid-run): release it.
			s.toSuspending()
			return
		}
		st.JobDeploymentStatus, st.JobStatus = rayv1.JobDeploymentStatusSuspended, rayv1.JobStatusNew
		s.out.tell(normalEvent(EventSuspended, ActionSuspend, "RayJob %s/%s is suspended: nothing is created until spec.suspend is false", s.job.Namespace, s.job.Name))
		return
	}
	if st.JobId == "" && spec.SubmissionMode != rayv1.InteractiveMode {
		st.JobId = spec.JobId
		if st.JobId == "" {
			st.JobId = s.in.Fresh.JobID
		}
	}
	if st.RayClusterName == "" {
		st.RayClusterName = spec.ClusterSelector[rayv1.RayJobClusterSelectorKey]
		if st.RayClusterName == "" {
			st.RayClusterName = s.in.Fresh.ClusterName
		}
	}
	if st.RayClusterName == "" || (st.JobId == "" && spec.SubmissionMode != rayv1.InteractiveMode) {
		// The controller drew no names; nothing can start without them.
		*st = *s.stored.DeepCopy()
		s.out.note("no fresh submission id or cluster name was drawn: not started")
		return
	}
	st.JobDeploymentStatus = rayv1.JobDeploymentStatusInitializing
	if !rayjob.UsesClusterSelector(s.job) {
		// Said with the write that records the names: the job's own cluster cannot be ready
		// yet, and waiting for it then needs no write of its own.
		st.Message = clusterNotReady(st.RayClusterName)
	}
	if !resumes {
		st.StartTime = s.stamp(s.now)
	}
	if st.Succeeded == nil {
		st.Succeeded = ptr.To[int32](0)
	}
	if st.Failed == nil {
		st.Failed = ptr.To[int32](0)
	}
	s.out.note("attempt starts: job id " + st.JobId + " on RayCluster " + st.RayClusterName)
	s.out.Wake.soon()
}

// initializing gets the attempt's cluster ready and the submission under way: the cluster
// created (or the selected one found), ready, its dashboard's address recorded, then, by
// mode, the submitter Job created (K8sJobMode) or the user's job id awaited
// (InteractiveMode).
func (s *pass) initializing() {
	st := s.st
	if s.job.Spec.Suspend {
		s.toSuspending()
		return
	}
	if s.deadlinePassed(true) {
		return
	}
	if s.set.BatchScheduler {
		s.act.do(BatchSchedulerHook{Phase: OnSubmission})
	}
	rc, ok := s.usableCluster()
	if !ok {
		return
	}
	if rc == nil {
		if s.job.Spec.SubmissionMode == rayv1.SidecarMode && !equality.Semantic.DeepEqual(st.RayClusterStatus, rayv1.RayClusterStatus{}) {
			// The cluster existed (its status was recorded) and is gone. Its head may have
			// submitted the job already: a new cluster would submit it again.
			s.fail(rayv1.AppFailed, "RayCluster "+st.RayClusterName+" was deleted before the job ran; it is not created again, as its head may have submitted the job")
			return
		}
		// What the job waits for next, said now: the passes that follow while the new
		// cluster comes up then change nothing.
		s.waitFor(clusterNotReady(st.RayClusterName))
		s.createCluster()
		return
	}
	s.copyWaitingClusterStatus(rc)
	if st.DashboardURL == "" {
		if rc.Status.State != rayv1.Ready {
			s.waitFor(clusterNotReady(rc.Name))
			return
		}
		url := DashboardURL(s.in.Observed.HeadService, s.set.ClusterDomain)
		if url == "" {
			s.waitFor("the head Service of RayCluster " + rc.Name + " has no dashboard port yet")
			s.out.Wake.due(s.now.Add(s.set.Recheck))
			return
		}
		st.DashboardURL = url
	}
	switch s.job.Spec.SubmissionMode {
	case rayv1.InteractiveMode:
		st.JobDeploymentStatus = rayv1.JobDeploymentStatusWaiting
	case rayv1.K8sJobMode:
		if !s.ensureSubmitter(rc) {
			return
		}
		st.JobDeploymentStatus = rayv1.JobDeploymentStatusRunning
	default:
		st.JobDeploymentStatus = rayv1.JobDeploymentStatusRunning
	}
	st.Message = ""
	s.out.Wake.soon()
}

// usableCluster is the observed cluster when the job may use it (nil: absent, create it).
// ok is false when the job must wait: the cluster a clusterSelector names does not exist,
// the name is taken by a RayCluster the job does not control, or the cluster is being
// deleted (it is created again once gone).
func (s *pass) usableCluster() (rc *rayv1.RayCluster, ok bool) {
	rc = s.in.Observed.Cluster
	selector := rayjob.UsesClusterSelector(s.job)
	switch {
	case rc == nil && selector:
		s.waitFor("RayCluster " + s.st.RayClusterName + " named by clusterSelector is not found; it must be created")
		if s.st.Message != s.stored.Message {
			s.out.tell(warningEvent(EventClusterNotFound, ActionValidate, "RayCluster %s/%s set in the clusterSelector is not found. It must be created manually", s.job.Namespace, s.st.RayClusterName))
		}
		s.out.Wake.due(s.now.Add(s.set.Recheck))
		return nil, false
	case rc == nil:
		return nil, true
	case !selector && !s.controls(&rc.ObjectMeta):
		s.conflict("RayCluster " + rc.Name + " exists and is not controlled by this RayJob: it is left alone")
		return nil, false
	case rc.DeletionTimestamp != nil:
		s.waitFor("RayCluster " + rc.Name + " is being deleted; it is created again once gone")
		return nil, false
	}
	return rc, true
}

// createCluster creates the attempt's cluster from the job with its recorded status (in
// SidecarMode the head runs the submission, under status.jobId: it was recorded by start).
func (s *pass) createCluster() {
	rc, err := rayjob.Cluster(s.jobWithStatus(), s.st.RayClusterName, s.set.Gates)
	if err != nil {
		s.fail(rayv1.SubmissionFailed, "the RayCluster cannot be built: "+err.Error())
		return
	}
	s.act.do(CreateCluster{Cluster: rc, Done: normalEvent(EventCreatedCluster, ActionCreate, "Created RayCluster %s/%s", rc.Namespace, rc.Name)})
	s.out.note("create RayCluster " + rc.Name)
}

// ensureSubmitter creates the submitter Job when there is none; it reports whether the job
// may go on to Running.
func (s *pass) ensureSubmitter(rc *rayv1.RayCluster) bool {
	sub := s.in.Observed.Submitter
	switch {
	case sub == nil:
		j, err := rayjob.SubmitterJob(s.jobWithStatus(), rc, s.set.Gates)
		if err != nil {
			s.fail(rayv1.SubmissionFailed, "the submitter Job cannot be built: "+err.Error())
			return false
		}
		s.act.do(CreateSubmitter{Job: j, Done: normalEvent(EventCreatedSubmitter, ActionCreate, "Created Kubernetes Job %s/%s", j.Namespace, j.Name)})
		return true
	case !s.controls(&sub.ObjectMeta):
		s.conflict("Job " + sub.Name + " exists and is not controlled by this RayJob: it is left alone")
		return false
	case sub.DeletionTimestamp != nil:
		s.waitFor("the submitter Job " + sub.Name + " of an earlier attempt is being deleted")
		return false
	}
	return true
}

// waiting (InteractiveMode) waits for the user to name the job they submitted in
// spec.jobId. raygate applies the deadlines and suspend here too (KubeRay checks only the
// pre-running deadline).
func (s *pass) waiting() {
	if s.job.Spec.Suspend {
		s.toSuspending()
		return
	}
	if s.deadlinePassed(true) {
		return
	}
	if s.job.Spec.JobId == "" {
		s.out.note("waiting for spec.jobId: the id of the job the user submitted")
		return
	}
	s.st.JobId = s.job.Spec.JobId
	s.st.JobDeploymentStatus = rayv1.JobDeploymentStatusRunning
	s.out.Wake.soon()
}

// toSuspending starts releasing the attempt; Suspending is atomic: once started it ends in
// Suspended whatever spec.suspend becomes.
func (s *pass) toSuspending() {
	s.st.JobDeploymentStatus = rayv1.JobDeploymentStatusSuspending
	s.out.note("spec.suspend: the attempt's cluster and submitter are released")
	s.out.Wake.soon()
}

// release (Suspending, Retrying) deletes the attempt's cluster and submitter Job and, once
// both are gone, forgets the attempt: Suspending ends in Suspended, Retrying in New, which
// starts the next attempt with a new cluster and (unless spec.jobId pins it) a new id. A
// cluster the job does not control is never deleted, and counts as released.
func (s *pass) release() {
	st := s.st
	gone := true
	if rc := s.in.Observed.Cluster; rc != nil && !rayjob.UsesClusterSelector(s.job) {
		switch {
		case !s.controls(&rc.ObjectMeta):
			s.out.note("RayCluster " + rc.Name + " is not controlled by this RayJob: left alone")
		case rc.DeletionTimestamp == nil:
			s.act.do(DeleteCluster{Cluster: rc.DeepCopy(), Done: normalEvent(EventDeletedCluster, ActionDelete, "Deleted cluster %s/%s", rc.Namespace, rc.Name)})
			gone = false
		default:
			gone = false
		}
	}
	if j := s.in.Observed.Submitter; j != nil && s.controls(&j.ObjectMeta) {
		if j.DeletionTimestamp == nil {
			s.act.do(DeleteSubmitter{Job: j.DeepCopy(), Done: normalEvent(EventDeletedSubmitter, ActionDelete, "Deleted submitter K8s Job %s/%s", j.Namespace, j.Name)})
		}
		gone = false
	}
	if !gone {
		// The deletions are watched: the next pass comes when they are done.
		return
	}
	if s.set.BatchScheduler {
		s.act.do(BatchSchedulerHook{Phase: OnCompletion})
	}
	st.RayClusterStatus = rayv1.RayClusterStatus{}
	st.RayClusterName, st.DashboardURL, st.JobId, st.Message, st.Reason = "", "", "", "", ""
	st.RayJobStatusInfo = rayv1.RayJobStatusInfo{}
	st.JobStatusCheckFailureStartTime = nil
	st.JobStatus = rayv1.JobStatusNew
	if s.stored.JobDeploymentStatus == rayv1.JobDeploymentStatusSuspending {
		st.JobDeploymentStatus = rayv1.JobDeploymentStatusSuspended
		s.out.tell(normalEvent(EventSuspended, ActionSuspend, "RayJob %s/%s is suspended: its RayCluster and submitter were deleted", s.job.Namespace, s.job.Name))
		return
	}
	st.JobDeploymentStatus = rayv1.JobDeploymentStatusNew
	s.out.Wake.soon()
}

// suspended resumes a job whose spec.suspend turned false: it starts afresh.
func (s *pass) suspended() {
	if s.job.Spec.Suspend {
		return
	}
	s.st.JobDeploymentStatus, s.st.JobStatus = rayv1.JobDeploymentStatusNew, rayv1.JobStatusNew
	s.out.tell(normalEvent(EventResumed, ActionSuspend, "RayJob %s/%s is resumed: it starts on a new RayCluster", s.job.Namespace, s.job.Name))
	s.out.Wake.soon()
}

// ensureFinalizer adds the finalizer that lets a deleted job's Ray job be stopped.
func (s *pass) ensureFinalizer() {
	if !slices.Contains(s.job.Finalizers, StopJobFinalizer) {
		s.act.do(AddFinalizer{})
	}
}

// controls reports whether the RayJob is the controller of an object (by UID).
func (s *pass) controls(obj *metav1.ObjectMeta) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	return ref != nil && ref.UID == s.job.UID && s.job.UID != ""
}

// jobWithStatus is the RayJob with the status the pass builds, for the builders that read
// status.jobId and status.dashboardURL.
func (s *pass) jobWithStatus() *rayv1.RayJob {
	j := s.job.DeepCopy()
	j.Status = *s.st.DeepCopy()
	return j
}

// clusterNotReady is the message of a job waiting for its cluster to become ready.
func clusterNotReady(name string) string { return "RayCluster " + name + " is not ready yet" }

// waitFor records why an initializing job waits, in status.message.
func (s *pass) waitFor(why string) {
	s.st.Message = why
	s.out.note(why)
}

// conflict records an object under a needed name that belongs to someone else; it is looked
// at again after a while (such objects are not watched).
func (s *pass) conflict(what string) {
	s.waitFor(what)
	if s.st.Message != s.stored.Message {
		s.out.tell(warningEvent(EventOwnershipConflict, ActionCreate, "%s", what))
	}
	s.out.Wake.due(s.now.Add(s.set.Recheck))
}
