package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// JobStatus is the status of a Ray job as the Ray Jobs API reports it.
type JobStatus string

// Ray job statuses. JobStatusNew is the empty value: nothing submitted yet.
const (
	JobStatusNew       JobStatus = ""
	JobStatusPending   JobStatus = "PENDING"
	JobStatusRunning   JobStatus = "RUNNING"
	JobStatusStopped   JobStatus = "STOPPED"
	JobStatusSucceeded JobStatus = "SUCCEEDED"
	JobStatusFailed    JobStatus = "FAILED"
)

// AllJobStatuses lists every JobStatus, JobStatusNew first.
var AllJobStatuses = []JobStatus{
	JobStatusNew,
	JobStatusPending,
	JobStatusRunning,
	JobStatusStopped,
	JobStatusSucceeded,
	JobStatusFailed,
}

// IsJobTerminal reports whether a Ray job status is final (Ray's JobStatus.is_terminal).
func IsJobTerminal(status JobStatus) bool {
	switch status {
	case JobStatusStopped, JobStatusSucceeded, JobStatusFailed:
		return true
	}
	return false
}

// JobDeploymentStatus is where a RayJob is in its lifecycle: its cluster, the submission and
// the clean-up.
type JobDeploymentStatus string

// RayJob deployment statuses. JobDeploymentStatusNew is the empty value: not started.
const (
	JobDeploymentStatusNew              JobDeploymentStatus = ""
	JobDeploymentStatusInitializing     JobDeploymentStatus = "Initializing"
	JobDeploymentStatusRunning          JobDeploymentStatus = "Running"
	JobDeploymentStatusComplete         JobDeploymentStatus = "Complete"
	JobDeploymentStatusFailed           JobDeploymentStatus = "Failed"
	JobDeploymentStatusValidationFailed JobDeploymentStatus = "ValidationFailed"
	JobDeploymentStatusSuspending       JobDeploymentStatus = "Suspending"
	JobDeploymentStatusSuspended        JobDeploymentStatus = "Suspended"
	JobDeploymentStatusRetrying         JobDeploymentStatus = "Retrying"
	JobDeploymentStatusWaiting          JobDeploymentStatus = "Waiting"
)

// IsJobDeploymentTerminal reports whether a RayJob is done for good: Complete or Failed.
func IsJobDeploymentTerminal(status JobDeploymentStatus) bool {
	return status == JobDeploymentStatusComplete || status == JobDeploymentStatusFailed
}

// JobFailedReason says why a RayJob's deployment status became Failed.
type JobFailedReason string

// Reasons of a Failed RayJob. (ValidationFailed, shared with the other kinds, is in
// conditions.go.)
const (
	SubmissionFailed                                 JobFailedReason = "SubmissionFailed"
	DeadlineExceeded                                 JobFailedReason = "DeadlineExceeded"
	PreRunningDeadlineExceeded                       JobFailedReason = "PreRunningDeadlineExceeded"
	AppFailed                                        JobFailedReason = "AppFailed"
	JobDeploymentStatusTransitionGracePeriodExceeded JobFailedReason = "JobDeploymentStatusTransitionGracePeriodExceeded"
	JobStatusCheckTimeoutExceeded                    JobFailedReason = "JobStatusCheckTimeoutExceeded"
)

// JobSubmissionMode is how a RayJob's Ray job reaches its cluster.
type JobSubmissionMode string

const (
	// K8sJobMode submits with `ray job submit` from a Kubernetes Job (the default).
	K8sJobMode JobSubmissionMode = "K8sJobMode"
	// HTTPMode submits with a request to the cluster's Ray Jobs API from the operator.
	HTTPMode JobSubmissionMode = "HTTPMode"
	// InteractiveMode submits nothing: the user submits the job and names its id in
	// spec.jobId.
	InteractiveMode JobSubmissionMode = "InteractiveMode"
	// SidecarMode submits from a container added to the head pod.
	SidecarMode JobSubmissionMode = "SidecarMode"
)

// JobSubmissionModes are the values of spec.submissionMode.
var JobSubmissionModes = []JobSubmissionMode{K8sJobMode, HTTPMode, InteractiveMode, SidecarMode}

// DeletionStrategy says what is deleted once a RayJob is finished, in one of two styles:
// the legacy pair onSuccess and onFailure (deprecated), or a non-empty list of
// deletionRules. Rules cannot be combined with the legacy fields, with
// shutdownAfterJobFinishes or with ttlSecondsAfterFinished (each rule has its own
// ttlSeconds). Needs the RayJobDeletionPolicy feature gate.
//
// +kubebuilder:validation:XValidation:rule="!((has(self.onSuccess) || has(self.onFailure)) && has(self.deletionRules))",message="legacy policies (onSuccess/onFailure) and deletionRules cannot be used together within the same deletionStrategy"
// +kubebuilder:validation:XValidation:rule="((has(self.onSuccess) && has(self.onFailure)) || has(self.deletionRules))",message="deletionStrategy requires either BOTH onSuccess and onFailure, OR the deletionRules field (cannot be empty)"
type DeletionStrategy struct {
	// OnSuccess is what to delete when the job succeeded. Deprecated: use deletionRules.
	// +optional
	OnSuccess *DeletionPolicy `json:"onSuccess,omitempty"`

	// OnFailure is what to delete when the job failed. Deprecated: use deletionRules.
	// +optional
	OnFailure *DeletionPolicy `json:"onFailure,omitempty"`

	// DeletionRules are deletions, each triggered ttlSeconds after the job reaches a status.
	// When several are due at once (e.g. after the operator was down), the one that deletes
	// the most runs first.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	DeletionRules []DeletionRule `json:"deletionRules,omitempty"`
}

// DeletionRule is one deletion and the condition that triggers it.
type DeletionRule struct {
	// Policy is what to delete.
	// +kubebuilder:validation:Enum=DeleteCluster;DeleteWorkers;DeleteSelf;DeleteNone
	Policy DeletionPolicyType `json:"policy"`

	// Condition triggers the deletion.
	Condition DeletionCondition `json:"condition"`
}

// DeletionCondition triggers a deletion rule: exactly one of jobStatus (how the Ray job
// ended) and jobDeploymentStatus (how the RayJob ended, e.g. a submission that never
// happened), plus a delay.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.jobStatus) && has(self.jobDeploymentStatus))",message="JobStatus and JobDeploymentStatus cannot be used together within the same deletion condition."
// +kubebuilder:validation:XValidation:rule="has(self.jobStatus) || has(self.jobDeploymentStatus)",message="the deletion condition requires either the JobStatus or the JobDeploymentStatus field."
type DeletionCondition struct {
	// JobStatus is the final Ray job status that triggers the rule: SUCCEEDED or FAILED.
	// +kubebuilder:validation:Enum=SUCCEEDED;FAILED
	// +optional
	JobStatus *JobStatus `json:"jobStatus,omitempty"`

	// JobDeploymentStatus is the final RayJob status that triggers the rule: Failed.
	// +kubebuilder:validation:Enum=Failed
	// +optional
	JobDeploymentStatus *JobDeploymentStatus `json:"jobDeploymentStatus,omitempty"`

	// TTLSeconds is how long after the status is reached the deletion happens.
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +optional
	TTLSeconds int32 `json:"ttlSeconds,omitempty"`
}

// DeletionPolicy is a legacy single deletion (onSuccess, onFailure). Deprecated: use
// DeletionRule.
type DeletionPolicy struct {
	// Policy is what to delete; required in onSuccess and onFailure.
	// +kubebuilder:validation:Enum=DeleteCluster;DeleteWorkers;DeleteSelf;DeleteNone
	// +optional
	Policy *DeletionPolicyType `json:"policy,omitempty"`
}

// DeletionPolicyType is what a deletion removes.
type DeletionPolicyType string

const (
	// DeleteCluster deletes the RayJob's RayCluster.
	DeleteCluster DeletionPolicyType = "DeleteCluster"
	// DeleteWorkers deletes the worker pods only (the head stays, e.g. for its logs).
	DeleteWorkers DeletionPolicyType = "DeleteWorkers"
	// DeleteSelf deletes the RayJob itself, and with it everything it owns.
	DeleteSelf DeletionPolicyType = "DeleteSelf"
	// DeleteNone deletes nothing.
	DeleteNone DeletionPolicyType = "DeleteNone"
)

// DeletionPolicyTypes are the values of a deletion policy.
var DeletionPolicyTypes = []DeletionPolicyType{DeleteCluster, DeleteWorkers, DeleteSelf, DeleteNone}

// SubmitterConfig tunes the submitter.
type SubmitterConfig struct {
	// BackoffLimit is how often the submitter is retried: the submitter Job's backoffLimit
	// in K8sJobMode (default 2), the submitter container's restart count in SidecarMode
	// with the SidecarSubmitterRestart feature gate.
	// +optional
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`
}

// RayJobStatusInfo is what the Ray Jobs API reported about the job's run.
type RayJobStatusInfo struct {
	// StartTime is when Ray started the job.
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// EndTime is when the job ended.
	EndTime *metav1.Time `json:"endTime,omitempty"`
}

// RayJobSpec is a Ray job and the cluster it runs on.
type RayJobSpec struct {
	// ActiveDeadlineSeconds is how long the RayJob may run, counted from its start, before it
	// is stopped and marked Failed (DeadlineExceeded). Positive.
	// +optional
	ActiveDeadlineSeconds *int32 `json:"activeDeadlineSeconds,omitempty"`
	// BackoffLimit is how often a failed job is retried, each time on a new RayCluster.
	// +kubebuilder:default:=0
	// +optional
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`
	// RayClusterSpec is the RayCluster created to run the job. One of rayClusterSpec and
	// clusterSelector is required.
	RayClusterSpec *RayClusterSpec `json:"rayClusterSpec,omitempty"`
	// SubmitterPodTemplate replaces the pod of the submitter Job (K8sJobMode). Its first
	// container runs `ray job submit` unless it has a command of its own.
	// +optional
	SubmitterPodTemplate *corev1.PodTemplateSpec `json:"submitterPodTemplate,omitempty"`
	// Metadata is stored with the Ray job (`ray job submit --metadata-json`).
	// +optional
	Metadata map[string]string `json:"metadata,omitempty"`
	// ClusterSelector runs the job on an existing RayCluster, named by the key
	// ray.io/cluster, instead of creating one.
	// +optional
	ClusterSelector map[string]string `json:"clusterSelector,omitempty"`
	// SubmitterConfig tunes the submitter.
	// +optional
	SubmitterConfig *SubmitterConfig `json:"submitterConfig,omitempty"`
	// ManagedBy names the controller responsible for this job. Unset or
	// 'ray.io/kuberay-operator' means this operator; 'kueue.x-k8s.io/multikueue' hands the
	// job to Kueue's MultiKueue, and this operator leaves it alone. Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="the managedBy field is immutable"
	// +kubebuilder:validation:XValidation:rule="self in ['ray.io/kuberay-operator', 'kueue.x-k8s.io/multikueue']",message="the managedBy field value must be either 'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue'"
	// +optional
	ManagedBy *string `json:"managedBy,omitempty"`
	// DeletionStrategy says what is deleted once the job is finished: the legacy onSuccess
	// and onFailure (may be combined with shutdownAfterJobFinishes and
	// ttlSecondsAfterFinished), or deletionRules (neither). Needs the RayJobDeletionPolicy
	// feature gate.
	// +optional
	DeletionStrategy *DeletionStrategy `json:"deletionStrategy,omitempty"`
	// Entrypoint is the job's command, run by Ray in the cluster.
	// +optional
	Entrypoint string `json:"entrypoint,omitempty"`
	// RuntimeEnvYAML is the job's Ray runtime environment, as YAML.
	// +optional
	RuntimeEnvYAML string `json:"runtimeEnvYAML,omitempty"`
	// JobId is the Ray job's submission id; generated (`<name>-<5 characters>`) when unset.
	// In InteractiveMode, the id of the job the user submitted.
	// +optional
	JobId string `json:"jobId,omitempty"`
	// SubmissionMode is how the job is submitted: K8sJobMode (a Kubernetes Job runs
	// `ray job submit`), HTTPMode (the operator calls the Ray Jobs API), InteractiveMode
	// (the user submits it) or SidecarMode (a container added to the head pod submits it).
	// +kubebuilder:default:=K8sJobMode
	// +optional
	SubmissionMode JobSubmissionMode `json:"submissionMode,omitempty"`
	// EntrypointResources are custom Ray resources reserved for the entrypoint, as JSON
	// (e.g. {"resource1": 1}).
	// +optional
	EntrypointResources string `json:"entrypointResources,omitempty"`
	// EntrypointNumCpus are the CPUs reserved for the entrypoint.
	// +optional
	EntrypointNumCpus float32 `json:"entrypointNumCpus,omitempty"`
	// EntrypointNumGpus are the GPUs reserved for the entrypoint.
	// +optional
	EntrypointNumGpus float32 `json:"entrypointNumGpus,omitempty"`
	// TTLSecondsAfterFinished is how long the RayCluster is kept after the job finished;
	// only with shutdownAfterJobFinishes.
	// +kubebuilder:default:=0
	// +optional
	TTLSecondsAfterFinished int32 `json:"ttlSecondsAfterFinished,omitempty"`
	// PreRunningDeadlineSeconds is how long the RayJob may take, from its start, to reach
	// Running; past it the RayJob is Failed (PreRunningDeadlineExceeded). Unset: no limit.
	// +kubebuilder:validation:Minimum=1
	// +optional
	PreRunningDeadlineSeconds *int32 `json:"preRunningDeadlineSeconds,omitempty"`
	// ShutdownAfterJobFinishes deletes the RayCluster once the job succeeded or failed.
	// +optional
	ShutdownAfterJobFinishes bool `json:"shutdownAfterJobFinishes,omitempty"`
	// Suspend, true at creation, keeps the RayCluster from being created until it turns
	// false; turned true later, it deletes the RayCluster, and false again starts the job
	// anew on a new one (e.g. as a queueing system such as Kueue admits the workload).
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// RayJobStatus is the observed state of a RayJob.
type RayJobStatus struct {
	// RayJobStatusInfo is what the Ray dashboard reported about the job.
	// +optional
	RayJobStatusInfo RayJobStatusInfo `json:"rayJobInfo,omitempty"`
	// JobId is the submission id of the Ray job.
	// +optional
	JobId string `json:"jobId,omitempty"`
	// RayClusterName is the RayCluster the job runs on.
	// +optional
	RayClusterName string `json:"rayClusterName,omitempty"`
	// DashboardURL is the address of the cluster's Ray dashboard.
	// +optional
	DashboardURL string `json:"dashboardURL,omitempty"`
	// JobStatus is the Ray job's status.
	// +optional
	JobStatus JobStatus `json:"jobStatus,omitempty"`
	// JobDeploymentStatus is where the RayJob is in its lifecycle.
	// +optional
	JobDeploymentStatus JobDeploymentStatus `json:"jobDeploymentStatus,omitempty"`
	// Reason says why the RayJob failed.
	// +optional
	Reason JobFailedReason `json:"reason,omitempty"`
	// Message says more about the status.
	// +optional
	Message string `json:"message,omitempty"`
	// StartTime is when the RayJob started (its deployment status left New).
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// EndTime is when the RayJob ended: the Ray job reached a final status or the
	// submitter failed.
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
	// Succeeded is how many times the job succeeded.
	// +kubebuilder:default:=0
	// +optional
	Succeeded *int32 `json:"succeeded,omitempty"`
	// Failed is how many times the job failed.
	// +kubebuilder:default:=0
	// +optional
	Failed *int32 `json:"failed,omitempty"`
	// RayClusterStatus is the status of the job's RayCluster.
	// +optional
	RayClusterStatus RayClusterStatus `json:"rayClusterStatus,omitempty"`
	// JobStatusCheckFailureStartTime is when asking the Ray dashboard for the job's status
	// started failing (unset after a successful answer); the RayJob fails after
	// RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS.
	// +optional
	JobStatusCheckFailureStartTime *metav1.Time `json:"jobStatusCheckFailureStartTime,omitempty"`
	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// RayJob runs a Ray job on a RayCluster it creates (or an existing one) and cleans up after it.
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=all
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="job status",type=string,JSONPath=".status.jobStatus",priority=0
// +kubebuilder:printcolumn:name="deployment status",type=string,JSONPath=".status.jobDeploymentStatus",priority=0
// +kubebuilder:printcolumn:name="ray cluster name",type="string",JSONPath=".status.rayClusterName",priority=0
// +kubebuilder:printcolumn:name="start time",type=string,JSONPath=".status.startTime",priority=0
// +kubebuilder:printcolumn:name="end time",type=string,JSONPath=".status.endTime",priority=0
// +kubebuilder:printcolumn:name="age",type="date",JSONPath=".metadata.creationTimestamp",priority=0
type RayJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired job.
	Spec RayJobSpec `json:"spec,omitempty"`
	// Status is the observed job.
	// +optional
	Status RayJobStatus `json:"status,omitempty"`
}

// RayJobList is a list of RayJobs.
// +kubebuilder:object:root=true
type RayJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the RayJobs.
	Items []RayJob `json:"items"`
}
