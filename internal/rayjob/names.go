package rayjob

import (
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// SuffixLength is the length of the random suffix of a job's cluster names and generated
// submission ids, as in KubeRay.
const SuffixLength = rayspec.ClusterNameSuffixLength

// placeholderSuffix stands in for a random suffix where only lengths matter (admission).
const placeholderSuffix = "xxxxx"

// HeadServiceName is the Service KubeRay keeps for a job, pointing at its current cluster's
// head: `<job>-head-svc`.
func HeadServiceName(job string) string { return job + "-head-svc" }

// SubmitterJobName is the name of a job's submitter Kubernetes Job: the RayJob's own name.
func SubmitterJobName(job string) string { return job }

// NewClusterName is the name of a RayCluster created for a job: `<job>-<5 random
// characters>`, a new one for every attempt.
func NewClusterName(job string) string {
	return rayspec.ClusterNamePrefix(job) + utilrand.String(SuffixLength)
}

// NewJobID is a generated submission id: `<job>-<5 random characters>`.
func NewJobID(job string) string { return job + "-" + utilrand.String(SuffixLength) }

// PlaceholderClusterName is a name of the length of a job's cluster names, for admission.
func PlaceholderClusterName(job string) string {
	return rayspec.ClusterNamePrefix(job) + placeholderSuffix
}

// DerivedNames are the names derived from a RayJob name that must each fit in a label value
// (63 characters): the job's own (the submitter Job's name, a label on its pods), its head
// Service's, and those of the clusters it creates.
func DerivedNames(job string) []string {
	names := []string{job, SubmitterJobName(job), HeadServiceName(job)}
	return append(names, rayspec.ClusterDerivedNames(PlaceholderClusterName(job))...)
}

// SubmissionID is the submission id a job uses: the one already recorded in its status,
// else spec.jobId, else a new one. InteractiveMode submits nothing and records none until
// the user names it, so it gets "" until then.
func SubmissionID(job *rayv1.RayJob) string {
	switch {
	case job.Status.JobId != "":
		return job.Status.JobId
	case job.Spec.SubmissionMode == rayv1.InteractiveMode:
		return job.Spec.JobId
	case job.Spec.JobId != "":
		return job.Spec.JobId
	}
	return NewJobID(job.Name)
}

// ClusterName is the RayCluster a job runs on: the one recorded in its status, else the
// one named by clusterSelector, else a new name.
func ClusterName(job *rayv1.RayJob) string {
	switch {
	case job.Status.RayClusterName != "":
		return job.Status.RayClusterName
	case job.Spec.ClusterSelector[rayv1.RayJobClusterSelectorKey] != "":
		return job.Spec.ClusterSelector[rayv1.RayJobClusterSelectorKey]
	}
	return NewClusterName(job.Name)
}

// UsesClusterSelector reports whether a job runs on an existing RayCluster.
func UsesClusterSelector(job *rayv1.RayJob) bool { return len(job.Spec.ClusterSelector) != 0 }
