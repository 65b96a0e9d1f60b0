package defaulting

import (
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// RayJob defaults (also the CRD's, so an object stored past the webhook has them too).
const (
	// SubmissionMode is spec.submissionMode when none is given.
	SubmissionMode = rayv1.K8sJobMode
	// JobBackoffLimit is spec.backoffLimit when none is given: no retry.
	JobBackoffLimit int32 = 0
)

// RayJob defaults a RayJob in place.
func RayJob(job *rayv1.RayJob) {
	if job == nil {
		return
	}
	RayJobSpec(&job.Spec)
}

// RayJobSpec defaults a RayJob spec in place: the submission mode, the retries, and the
// cluster spec as a RayCluster's (the RayCluster the job creates gets the same defaults from
// its own admission, so the job's view of it matches). Nothing under clusterSelector,
// deletionStrategy or the submitter is filled: those defaults are decided when the job runs
// (e.g. the submitter's backoffLimit), and filling them would put fields where validation
// refuses them (submitterConfig in SidecarMode).
func RayJobSpec(spec *rayv1.RayJobSpec) {
	if spec == nil {
		return
	}
	if spec.SubmissionMode == "" {
		spec.SubmissionMode = SubmissionMode
	}
	if spec.BackoffLimit == nil {
		spec.BackoffLimit = ptr.To(JobBackoffLimit)
	}
	RayClusterSpec(spec.RayClusterSpec)
}
