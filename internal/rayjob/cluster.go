package rayjob

import (
	"errors"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
)

// errNoClusterSpec: a job without rayClusterSpec creates no cluster (it selects one).
var errNoClusterSpec = errors.New("spec.rayClusterSpec is not set: the job runs on the cluster its clusterSelector names")

// Cluster is the RayCluster named name that a job creates for an attempt: spec.rayClusterSpec
// (a copy), the job's labels and annotations plus the labels naming the job and its
// submission mode, controlled by the job. In SidecarMode the head pod gets the submitter
// container (SidecarContainer) and restartPolicy Never, and the cluster the annotation that
// keeps a lost head from being recreated: a new head would not run the submission again.
func Cluster(job *rayv1.RayJob, name string, gates features.Gates) (*rayv1.RayCluster, error) {
	if job.Spec.RayClusterSpec == nil {
		return nil, errNoClusterSpec
	}
	labels := make(map[string]string, len(job.Labels)+3)
	maps.Copy(labels, job.Labels)
	labels[rayv1.OriginatedFromCRNameLabelKey] = job.Name
	labels[rayv1.OriginatedFromCRDLabelKey] = rayv1.RayJobKind
	labels[rayv1.JobSubmissionModeLabelKey] = string(job.Spec.SubmissionMode)
	annotations := make(map[string]string, len(job.Annotations)+1)
	maps.Copy(annotations, job.Annotations)
	if job.Spec.SubmissionMode == rayv1.SidecarMode {
		annotations[rayv1.DisableProvisionedHeadRestartKey] = "true"
	}
	rc := &rayv1.RayCluster{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       job.Namespace,
			Labels:          labels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{*ownerRef(job)},
		},
		Spec: *job.Spec.RayClusterSpec.DeepCopy(),
	}
	if job.Spec.SubmissionMode != rayv1.SidecarMode {
		return rc, nil
	}
	sidecar, err := SidecarContainer(job, rc, gates)
	if err != nil {
		return nil, err
	}
	head := &rc.Spec.HeadGroupSpec.Template.Spec
	head.Containers = append(head.Containers, sidecar)
	// The head pod as a whole never restarts; only the submitter may, by its own policy.
	head.RestartPolicy = corev1.RestartPolicyNever
	return rc, nil
}
