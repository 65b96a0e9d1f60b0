package plan

import "time"

// StopJobFinalizer is KubeRay's finalizer on a RayJob: it holds the object until the Ray job
// it may have started was asked to stop.
const StopJobFinalizer = "ray.io/rayjob-finalizer"

// Defaults of Settings, KubeRay's where it has one.
const (
	// DefaultStatusCheckTimeout is KubeRay's RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS default:
	// how long reading the job's status may keep failing before the RayJob fails.
	DefaultStatusCheckTimeout = 300 * time.Second
	// DefaultTransitionGracePeriod is KubeRay's
	// RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS default: how long a job whose
	// Ray job ended may wait for its submitter to finish.
	DefaultTransitionGracePeriod = 300 * time.Second
	// DefaultSubmitterFinishedTimeout is KubeRay's: how long after the submitter finished the
	// Ray job may take to report a final status.
	DefaultSubmitterFinishedTimeout = 30 * time.Second
	// DefaultJobStatusPoll is how often the status of a running Ray job is read (KubeRay
	// requeues every 3 s). It is the one thing the plan polls: the Jobs API cannot be
	// watched.
	DefaultJobStatusPoll = 3 * time.Second
	// DefaultRecheck is how soon a job waiting on something raygate does not watch (a
	// RayCluster named by clusterSelector, an object under a needed name that belongs to
	// someone else, a head Service without a dashboard port) looks again.
	DefaultRecheck = 30 * time.Second
)

// Bounds of the remote text the plan quotes: Ray's job message (for a failed job, the end of
// its logs), a refused submission's answer, a Job condition's reason and message.
const (
	maxJobMessage    = 1024
	maxRemoteExcerpt = 256
	maxWord          = 64
	// maxNoteQuote is the most an event note quotes of remote text (a note holds 1 KiB).
	maxNoteQuote = 200
)

// Event reasons. KubeRay's where it has one (ray-operator/controllers/ray/utils/constant.go),
// so alerts and dashboards written for KubeRay keep working.
const (
	EventInvalidSpec            = "InvalidRayJobSpec"
	EventInvalidMetadata        = "InvalidRayJobMetadata"
	EventInvalidStatus          = "InvalidRayJobStatus"
	EventCreatedSubmitter       = "CreatedRayJobSubmitter"
	EventDeletedSubmitter       = "DeletedRayJobSubmitter"
	EventFailedCreateSubmitter  = "FailedToCreateRayJobSubmitter"
	EventFailedDeleteSubmitter  = "FailedToDeleteRayJobSubmitter"
	EventCreatedCluster         = "CreatedRayCluster"
	EventUpdatedCluster         = "UpdatedRayCluster"
	EventDeletedCluster         = "DeletedRayCluster"
	EventFailedCreateCluster    = "FailedToCreateRayCluster"
	EventFailedDeleteCluster    = "FailedToDeleteRayCluster"
	EventFailedUpdateCluster    = "FailedToUpdateRayCluster"
	EventClusterNotFound        = "RayClusterNotFound"
	EventCreatedService         = "CreatedService"
	EventUpdatedService         = "UpdatedService"
	EventFailedCreateService    = "FailedToCreateService"
	EventFailedUpdateService    = "FailedToUpdateService"
	EventBatchSchedulerCleaned  = "BatchSchedulerCleanedUp"
	EventFailedBatchCleanup     = "FailedToCleanupBatchScheduler"
	EventDeletedRayJob          = "DeletedRayJob"
	EventFailedDeleteRayJob     = "FailedToDeleteRayJob"
	EventSubmittedJob           = "SubmittedRayJob"
	EventStoppedJob             = "StoppedRayJob"
	EventDeletionPolicyFallback = "DeletionPolicyFallback"
	EventOwnershipConflict      = "OwnershipConflict"
	EventSuspended              = "Suspended"
	EventResumed                = "Resumed"
	EventRetrying               = "Retrying"
	EventCompleted              = "Completed"
	EventFailed                 = "Failed"
)

// Event actions (KubeRay's K8sEventAction values).
const (
	ActionCreate   = "Create"
	ActionDelete   = "Delete"
	ActionUpdate   = "Update"
	ActionValidate = "Validate"
	ActionCleanup  = "Cleanup"
	ActionSuspend  = "Suspend"
	ActionSubmit   = "Submit"
	ActionStop     = "Stop"
	ActionFinish   = "Finish"
	ActionRetry    = "Retry"
)
