package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RayCronJobSpec is a schedule and the RayJob to create at each of its times. The fields,
// their JSON names and optionality are KubeRay's (v1.6, timeZone v1.7).
type RayCronJobSpec struct {
	// JobTemplate is the spec of the RayJob created at each scheduled time.
	JobTemplate RayJobSpec `json:"jobTemplate"`
	// Schedule is a standard five-field cron expression (or a descriptor such as @hourly).
	Schedule string `json:"schedule"`
	// TimeZone is the IANA time zone the schedule is read in; unset, the operator's local
	// time zone. The empty string is not allowed.
	// +optional
	// +kubebuilder:validation:MinLength=1
	TimeZone *string `json:"timeZone,omitempty"`
	// Suspend stops new RayJobs from being created; RayJobs already created are not touched.
	// +optional
	Suspend *bool `json:"suspend,omitempty"`
}

// RayCronJobStatus is what the controller observed.
type RayCronJobStatus struct {
	// LastScheduleTime is the scheduled time of the last RayJob created.
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
}

// RayCronJob creates a RayJob from a template on a cron schedule.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="schedule",type=string,JSONPath=".spec.schedule",priority=0
// +kubebuilder:printcolumn:name="timezone",type=string,JSONPath=".spec.timeZone",priority=0
// +kubebuilder:printcolumn:name="last schedule",type=date,JSONPath=".status.lastScheduleTime",priority=0
// +kubebuilder:printcolumn:name="age",type="date",JSONPath=".metadata.creationTimestamp",priority=0
// +kubebuilder:printcolumn:name="suspend",type=boolean,JSONPath=".spec.suspend",priority=0
// +kubebuilder:resource:categories=all
// +kubebuilder:storageversion
type RayCronJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec is the schedule and the job template.
	Spec RayCronJobSpec `json:"spec,omitempty"`
	// Status is the observed schedule.
	Status RayCronJobStatus `json:"status,omitempty"`
}

// RayCronJobList is a list of RayCronJobs.
// +kubebuilder:object:root=true
type RayCronJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the RayCronJobs.
	Items []RayCronJob `json:"items"`
}

// Keys on the RayJobs a RayCronJob creates: KubeRay's, so selectors written for KubeRay work.
const (
	// RayCronJobNameLabelKey labels a RayJob with the RayCronJob that created it.
	RayCronJobNameLabelKey = "ray.io/cronjob-name"
	// RayCronJobTimestampAnnotationKey is the scheduled time (RFC 3339, UTC) of the run.
	RayCronJobTimestampAnnotationKey = "ray.io/cronjob-scheduled-timestamp"
)
