package plan

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// An Action is one write to the API server the pass must carry out. The objects in it belong
// to the action (copies of what was observed or newly built). Done, where an action has it,
// is announced once the action succeeded; Failed is the event reason to announce a failure
// with (KubeRay's).
type Action interface {
	fmt.Stringer
}

// AddFinalizer adds StopJobFinalizer to the RayJob (an update of its metadata, before the
// status is written).
type AddFinalizer struct{}

// RemoveFinalizer removes StopJobFinalizer from a RayJob being deleted.
type RemoveFinalizer struct{}

// CreateCluster creates the job's RayCluster (built by internal/rayjob.Cluster: controlled by
// the RayJob, in SidecarMode with the submitter in its head pod). A batch scheduler's
// metadata is added by the controller.
type CreateCluster struct {
	Cluster *rayv1.RayCluster
	Done    Event
}

// DeleteCluster deletes a RayCluster the RayJob controls, with a UID precondition (already
// gone is fine).
type DeleteCluster struct {
	Cluster *rayv1.RayCluster
	Done    Event
}

// SuspendWorkers sets suspend on every worker group of a RayCluster the RayJob controls
// (deletion policy DeleteWorkers): its worker pods go, the head stays.
type SuspendWorkers struct {
	Cluster *rayv1.RayCluster
	Done    Event
}

// CreateSubmitter creates the submitter Job (K8sJobMode; built by
// internal/rayjob.SubmitterJob). A batch scheduler's metadata is added by the controller.
type CreateSubmitter struct {
	Job  *batchv1.Job
	Done Event
}

// DeleteSubmitter deletes the submitter Job the RayJob controls, with its pods (background
// propagation) and a UID precondition.
type DeleteSubmitter struct {
	Job  *batchv1.Job
	Done Event
}

// PointJobService creates `<job>-head-svc`, or updates the one the RayJob controls
// (Existing), so it selects Cluster's head pod: the controller builds it as KubeRay does,
// the cluster's head Service renamed, labelled for the job and controlled by it.
type PointJobService struct {
	Cluster  *rayv1.RayCluster
	Existing *corev1.Service // nil: create
	Done     Event
}

// DeleteRayJob deletes the RayJob itself (DeleteSelf, DELETE_RAYJOB_CR_AFTER_JOB_FINISHES),
// with a UID precondition; what it owns goes with it.
type DeleteRayJob struct {
	Done Event
}

// BatchSchedulerPhase says which hook of the configured batch scheduler to run.
type BatchSchedulerPhase string

const (
	// OnSubmission runs while the job is being set up, before its cluster is created
	// (KubeRay's DoBatchSchedulingOnSubmission).
	OnSubmission BatchSchedulerPhase = "OnSubmission"
	// OnCompletion releases what the scheduler holds for the job once its cluster is gone or
	// it ended (KubeRay's CleanupOnCompletion). Idempotent.
	OnCompletion BatchSchedulerPhase = "OnCompletion"
)

// BatchSchedulerHook runs a hook of the configured batch scheduler for the RayJob.
type BatchSchedulerHook struct {
	Phase BatchSchedulerPhase
}

func (AddFinalizer) String() string    { return "add finalizer " + StopJobFinalizer }
func (RemoveFinalizer) String() string { return "remove finalizer " + StopJobFinalizer }
func (a CreateCluster) String() string { return "create RayCluster " + a.Cluster.Name }
func (a DeleteCluster) String() string { return "delete RayCluster " + a.Cluster.Name }
func (a SuspendWorkers) String() string {
	return "suspend the worker groups of RayCluster " + a.Cluster.Name
}
func (a CreateSubmitter) String() string { return "create submitter Job " + a.Job.Name }
func (a DeleteSubmitter) String() string { return "delete submitter Job " + a.Job.Name }
func (a PointJobService) String() string {
	verb := "create"
	if a.Existing != nil {
		verb = "update"
	}
	return fmt.Sprintf("%s the job's head Service for RayCluster %s", verb, a.Cluster.Name)
}
func (DeleteRayJob) String() string         { return "delete the RayJob" }
func (a BatchSchedulerHook) String() string { return "batch scheduler hook " + string(a.Phase) }

// Done is the event an action announces once it succeeded (zero: none).
func Done(a Action) Event {
	switch a := a.(type) {
	case CreateCluster:
		return a.Done
	case DeleteCluster:
		return a.Done
	case SuspendWorkers:
		return a.Done
	case CreateSubmitter:
		return a.Done
	case DeleteSubmitter:
		return a.Done
	case PointJobService:
		return a.Done
	case DeleteRayJob:
		return a.Done
	}
	return Event{}
}

// FailureReason is the event reason to announce an action that failed with (KubeRay's where
// it has one; "": the failure is only logged).
func FailureReason(a Action) string {
	switch a := a.(type) {
	case CreateCluster:
		return EventFailedCreateCluster
	case DeleteCluster:
		return EventFailedDeleteCluster
	case SuspendWorkers:
		return EventFailedUpdateCluster
	case CreateSubmitter:
		return EventFailedCreateSubmitter
	case DeleteSubmitter:
		return EventFailedDeleteSubmitter
	case PointJobService:
		if a.Existing != nil {
			return EventFailedUpdateService
		}
		return EventFailedCreateService
	case DeleteRayJob:
		return EventFailedDeleteRayJob
	case BatchSchedulerHook:
		if a.Phase == OnCompletion {
			return EventFailedBatchCleanup
		}
	}
	return ""
}

// A Request is work for the dashboard pool: it is carried out off the reconcile, and its
// answer comes back in a later pass's JobsView.
type Request interface {
	fmt.Stringer
	target() (cluster, jobID string)
}

// ReadJob asks the pool to read a job's details from a cluster's Jobs API.
type ReadJob struct {
	Cluster string
	JobID   string
}

// SubmitJob asks the pool to submit a job to a cluster's Jobs API (HTTPMode). It is planned
// only after the Jobs API answered, for this attempt, that it has no job with this id, and
// JobID is recorded in the stored status before.
type SubmitJob struct {
	Cluster    string
	JobID      string
	Submission Submission
}

// Submission is the body of a submission: what `ray job submit` would send.
type Submission struct {
	Entrypoint string
	// RuntimeEnvJSON is runtimeEnvYAML as JSON ("": none).
	RuntimeEnvJSON string
	Metadata       map[string]string
	NumCPUs        float32
	NumGPUs        float32
	// ResourcesJSON is entrypointResources, a JSON object ("": none).
	ResourcesJSON string
}

// StopJob asks the pool to stop a job (best effort).
type StopJob struct {
	Cluster string
	JobID   string
	Reason  string
}

func (r ReadJob) String() string   { return fmt.Sprintf("read job %s on %s", r.JobID, r.Cluster) }
func (r SubmitJob) String() string { return fmt.Sprintf("submit job %s to %s", r.JobID, r.Cluster) }
func (r StopJob) String() string {
	return fmt.Sprintf("stop job %s on %s (%s)", r.JobID, r.Cluster, r.Reason)
}

func (r ReadJob) target() (string, string)   { return r.Cluster, r.JobID }
func (r SubmitJob) target() (string, string) { return r.Cluster, r.JobID }
func (r StopJob) target() (string, string)   { return r.Cluster, r.JobID }

// Event is a Kubernetes event about the RayJob.
type Event struct {
	Type   string
	Reason string
	Action string
	Note   string
}

// IsZero reports whether no event is set.
func (e Event) IsZero() bool { return e.Reason == "" }

func normalEvent(reason, action, format string, args ...any) Event {
	return Event{Type: corev1.EventTypeNormal, Reason: reason, Action: action, Note: fmt.Sprintf(format, args...)}
}

func warningEvent(reason, action, format string, args ...any) Event {
	return Event{Type: corev1.EventTypeWarning, Reason: reason, Action: action, Note: fmt.Sprintf(format, args...)}
}
