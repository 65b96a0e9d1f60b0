package builders

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// DefaultEntrypoint is the entrypoint of built RayJobs.
const DefaultEntrypoint = `python -c "import ray; ray.init(); print(ray.cluster_resources())"`

// RayJobWrapper builds a RayJob.
type RayJobWrapper struct{ rayv1.RayJob }

// RayJob starts a K8sJobMode RayJob with DefaultEntrypoint on a cluster of ClusterSpec.
func RayJob(name, namespace string) *RayJobWrapper {
	spec := ClusterSpec()
	return &RayJobWrapper{rayv1.RayJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: rayv1.GroupVersion.String(), Kind: rayv1.RayJobKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       rayv1.RayJobSpec{Entrypoint: DefaultEntrypoint, SubmissionMode: rayv1.K8sJobMode, RayClusterSpec: &spec},
	}}
}

// Obj returns the built object.
func (w *RayJobWrapper) Obj() *rayv1.RayJob { return w.DeepCopy() }

// Mode sets submissionMode.
func (w *RayJobWrapper) Mode(m rayv1.JobSubmissionMode) *RayJobWrapper {
	w.Spec.SubmissionMode = m
	return w
}

// OnCluster runs the job on the existing RayCluster name (clusterSelector) instead of its own.
func (w *RayJobWrapper) OnCluster(name string) *RayJobWrapper {
	w.Spec.RayClusterSpec = nil
	w.Spec.ClusterSelector = map[string]string{rayv1.RayJobClusterSelectorKey: name}
	return w
}

// Shutdown sets shutdownAfterJobFinishes and ttlSecondsAfterFinished.
func (w *RayJobWrapper) Shutdown(ttlSeconds int32) *RayJobWrapper {
	w.Spec.ShutdownAfterJobFinishes = true
	w.Spec.TTLSecondsAfterFinished = ttlSeconds
	return w
}

// DeletionRule adds a deletion rule on a final Ray job status.
func (w *RayJobWrapper) DeletionRule(policy rayv1.DeletionPolicyType, status rayv1.JobStatus, ttlSeconds int32) *RayJobWrapper {
	if w.Spec.DeletionStrategy == nil {
		w.Spec.DeletionStrategy = &rayv1.DeletionStrategy{}
	}
	w.Spec.DeletionStrategy.DeletionRules = append(w.Spec.DeletionStrategy.DeletionRules, rayv1.DeletionRule{
		Policy: policy, Condition: rayv1.DeletionCondition{JobStatus: ptr.To(status), TTLSeconds: ttlSeconds},
	})
	return w
}

// SubmitterTemplate sets a submitter pod template of one container (image, command).
func (w *RayJobWrapper) SubmitterTemplate(image string, command ...string) *RayJobWrapper {
	c := container("my-submitter", "500m", "512Mi")
	c.Image, c.Command = image, command
	w.Spec.SubmitterPodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{c}}}
	return w
}

// Status sets the deployment status (and, for a started job, its id and cluster).
func (w *RayJobWrapper) Status(s rayv1.JobDeploymentStatus) *RayJobWrapper {
	w.RayJob.Status.JobDeploymentStatus = s
	if s != rayv1.JobDeploymentStatusNew {
		w.RayJob.Status.JobId, w.RayJob.Status.RayClusterName = w.Name+"-abcde", w.Name+"-fghij"
	}
	return w
}
