package v1

// Keys and names of the objects raygate creates for a RayJob. They are KubeRay's, so tools
// written for KubeRay (kubectl selectors, Kueue, batch schedulers) keep working.
const (
	// JobSubmissionModeLabelKey, on a RayJob's RayCluster, is the job's spec.submissionMode.
	JobSubmissionModeLabelKey = "ray.io/job-submission-mode"
	// RayJobClusterSelectorKey is the key of spec.clusterSelector that names the existing
	// RayCluster a job runs on.
	RayJobClusterSelectorKey = ClusterLabelKey
	// SubmitterGroupLabelValue is the task group of the submitter pod for batch schedulers.
	SubmitterGroupLabelValue = "submittergroup"
	// SubmitterContainerName is the container that submits the job: the default submitter
	// Job's, and the one added to the head pod in SidecarMode.
	SubmitterContainerName = "ray-job-submitter"
)
