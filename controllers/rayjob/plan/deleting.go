package plan

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/untrusted"
)

// deleting lets a RayJob being deleted go: a Ray job that may still run (an id is recorded
// and Ray did not report a final status) is asked to stop first, through the dashboard
// pool; any answer will do (KubeRay removes its finalizer whether the stop succeeded or
// not), and no stop is asked of a cluster that is gone or going. The status is left as it
// is.
func (s *pass) deleting() {
	if !slices.Contains(s.job.Finalizers, StopJobFinalizer) {
		return
	}
	st := s.stored
	rc := s.in.Observed.Cluster
	if st.JobId != "" && !rayv1.IsJobTerminal(st.JobStatus) && rc != nil && rc.DeletionTimestamp == nil && rc.Name == st.RayClusterName {
		if v := s.jobsView(); v == nil || v.Stop == nil {
			s.act.ask(StopJob{Cluster: rc.Name, JobID: st.JobId, Reason: "the RayJob is being deleted"})
			s.out.note("the RayJob is being deleted: stop its Ray job first")
			return
		}
	}
	s.act.do(RemoveFinalizer{})
}

// invalid records that the stored job breaks a rule (ValidationFailed) and does nothing
// else: nothing is created, changed or deleted for it until it is fixed; a fixed job starts
// again from what it recorded. A job that had ended keeps its final status (a later rule
// must not make a finished job run again once fixed); its clean-up waits.
func (s *pass) invalid() {
	msg := untrusted.Text(s.in.Invalid.ToAggregate().Error(), maxJobMessage)
	ev := warningEvent(invalidReason(s.in.Invalid), ActionValidate, "%s/%s: %s", s.job.Namespace, s.job.Name, untrusted.Text(msg, maxNoteQuote))
	if rayv1.IsJobDeploymentTerminal(s.stored.JobDeploymentStatus) {
		s.out.tell(ev)
		s.out.note("the RayJob ended and is invalid now: its clean-up waits until it is fixed")
		return
	}
	st := s.st
	if st.JobDeploymentStatus != rayv1.JobDeploymentStatusValidationFailed || st.Message != msg {
		s.out.tell(ev)
	}
	st.JobDeploymentStatus = rayv1.JobDeploymentStatusValidationFailed
	st.Reason = rayv1.JobFailedReason(rayv1.ValidationFailed)
	st.Message = msg
}

// invalidReason is KubeRay's event reason for what is wrong, in the order KubeRay checks:
// metadata, then spec, then status.
func invalidReason(errs field.ErrorList) string {
	spec, status := false, false
	for _, e := range errs {
		switch {
		case strings.HasPrefix(e.Field, "metadata"):
			return EventInvalidMetadata
		case strings.HasPrefix(e.Field, "status"):
			status = true
		default:
			spec = true
		}
	}
	if status && !spec {
		return EventInvalidStatus
	}
	return EventInvalidSpec
}
