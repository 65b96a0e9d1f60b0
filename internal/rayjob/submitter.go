package rayjob

import (
	"errors"
	"maps"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/rayspec"
)

// Environment variables of the submitter container. RAY_DASHBOARD_ADDRESS and
// RAY_JOB_SUBMISSION_ID let a submitter of the user's own (a command in
// submitterPodTemplate) submit to the right place under the right id.
const (
	EnvDashboardAddress = "RAY_DASHBOARD_ADDRESS"
	EnvSubmissionID     = "RAY_JOB_SUBMISSION_ID"
	EnvPythonUnbuffered = "PYTHONUNBUFFERED"
)

// DefaultSubmitterBackoffLimit is the submitter's retries without submitterConfig: the
// submitter Job's backoffLimit (Kubernetes' default of 6 would only repeat a failing
// submission), and in SidecarMode with SidecarSubmitterRestart the container's restarts.
const DefaultSubmitterBackoffLimit int32 = 2

// The default submitter container's resources: `ray job submit` and `ray job logs` need
// little.
var (
	submitterCPULimit      = resource.MustParse("1")
	submitterMemoryLimit   = resource.MustParse("1Gi")
	submitterCPURequest    = resource.MustParse("500m")
	submitterMemoryRequest = resource.MustParse("200Mi")
)

// errNoSubmitterContainer: a submitterPodTemplate without containers (validation refuses it).
var errNoSubmitterContainer = errors.New("spec.submitterPodTemplate has no container to run the submitter")

// DefaultSubmitterContainer is the submitter container when the job brings none: the image
// of the cluster's head Ray container (so the Ray CLI matches the cluster's Ray), its
// securityContext (so a namespace's Pod Security level that admits the head admits the
// submitter too; KubeRay sets none) and small fixed resources. cluster may be nil (a
// clusterSelector job whose cluster is not known): the image is then empty.
func DefaultSubmitterContainer(cluster *rayv1.RayClusterSpec) corev1.Container {
	c := corev1.Container{
		Name: rayv1.SubmitterContainerName,
		Resources: corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{corev1.ResourceCPU: submitterCPULimit, corev1.ResourceMemory: submitterMemoryLimit},
			Requests: corev1.ResourceList{corev1.ResourceCPU: submitterCPURequest, corev1.ResourceMemory: submitterMemoryRequest},
		},
	}
	if cluster != nil && len(cluster.HeadGroupSpec.Template.Spec.Containers) > 0 {
		ray := &cluster.HeadGroupSpec.Template.Spec.Containers[rayv1.RayContainerIndex]
		c.Image = ray.Image
		if ray.SecurityContext != nil {
			c.SecurityContext = ray.SecurityContext.DeepCopy()
		}
	}
	return c
}

// SubmitterTemplate is the pod template of the submitter Job in K8sJobMode: the job's
// submitterPodTemplate, or one with DefaultSubmitterContainer that never restarts and has
// the head pod's pod-level securityContext (for Pod Security, as the container's). Its
// first container runs SubmitCommand unless the template gave it a command; it gets the
// submitter's environment (and, for a cluster with token authentication, the token), and
// the pod KubeRay's labels naming the RayJob. cluster is the RayCluster the job runs on
// (nil when not known).
func SubmitterTemplate(job *rayv1.RayJob, cluster *rayv1.RayCluster, gates features.Gates) (corev1.PodTemplateSpec, error) {
	var tmpl corev1.PodTemplateSpec
	if job.Spec.SubmitterPodTemplate != nil {
		tmpl = *job.Spec.SubmitterPodTemplate.DeepCopy()
	} else {
		tmpl = corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers:    []corev1.Container{DefaultSubmitterContainer(specOf(cluster))},
			RestartPolicy: corev1.RestartPolicyNever,
		}}
		if cluster != nil && cluster.Spec.HeadGroupSpec.Template.Spec.SecurityContext != nil {
			tmpl.Spec.SecurityContext = cluster.Spec.HeadGroupSpec.Template.Spec.SecurityContext.DeepCopy()
		}
	}
	if len(tmpl.Spec.Containers) == 0 {
		return corev1.PodTemplateSpec{}, errNoSubmitterContainer
	}
	if err := configureSubmitter(&tmpl.Spec.Containers[rayv1.RayContainerIndex], job, cluster, rayv1.K8sJobMode, gates); err != nil {
		return corev1.PodTemplateSpec{}, err
	}
	if cluster != nil && rayspec.K8sTokenAuth(&cluster.Spec) {
		tmpl.Spec.Volumes = slices.DeleteFunc(tmpl.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == rayspec.RayTokenVolumeName })
		tmpl.Spec.Volumes = append(tmpl.Spec.Volumes, rayspec.RayTokenVolume())
	}
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	maps.Copy(tmpl.Labels, ownerLabels(job))
	return tmpl, nil
}

// SubmitterJob is the Kubernetes Job that submits a K8sJobMode job: named after the RayJob,
// controlled by it, retried submitterConfig.backoffLimit times (DefaultSubmitterBackoffLimit).
func SubmitterJob(job *rayv1.RayJob, cluster *rayv1.RayCluster, gates features.Gates) (*batchv1.Job, error) {
	tmpl, err := SubmitterTemplate(job, cluster, gates)
	if err != nil {
		return nil, err
	}
	backoff := DefaultSubmitterBackoffLimit
	if c := job.Spec.SubmitterConfig; c != nil && c.BackoffLimit != nil {
		backoff = *c.BackoffLimit
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:            SubmitterJobName(job.Name),
			Namespace:       job.Namespace,
			Labels:          ownerLabels(job),
			OwnerReferences: []metav1.OwnerReference{*ownerRef(job)},
		},
		Spec: batchv1.JobSpec{BackoffLimit: ptr.To(backoff), Template: tmpl},
	}, nil
}

// SidecarContainer is the submitter added to the head pod in SidecarMode: the default
// submitter container running SubmitCommand against the head's own dashboard. With
// SidecarSubmitterRestart it restarts on failure (the command checks the job's status before
// submitting, so a restart never submits twice); otherwise it never restarts, and its
// failure fails the attempt.
func SidecarContainer(job *rayv1.RayJob, cluster *rayv1.RayCluster, gates features.Gates) (corev1.Container, error) {
	c := DefaultSubmitterContainer(specOf(cluster))
	if err := configureSubmitter(&c, job, cluster, rayv1.SidecarMode, gates); err != nil {
		return corev1.Container{}, err
	}
	if gates.Enabled(features.SidecarSubmitterRestart) {
		c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyOnFailure)
	}
	return c, nil
}

// configureSubmitter gives a submitter container its command (unless, in K8sJobMode, it has
// one of its own) and its environment.
func configureSubmitter(c *corev1.Container, job *rayv1.RayJob, cluster *rayv1.RayCluster, mode rayv1.JobSubmissionMode, gates features.Gates) error {
	cmd, err := SubmitCommand(job, mode, gates)
	if err != nil {
		return err
	}
	if len(c.Command) == 0 || mode == rayv1.SidecarMode {
		c.Command = slices.Clone(SubmitShell)
		c.Args = []string{strings.Join(cmd, " ")}
	}
	setEnv(c, corev1.EnvVar{Name: EnvPythonUnbuffered, Value: "1"})
	setEnv(c, corev1.EnvVar{Name: EnvDashboardAddress, Value: job.Status.DashboardURL})
	setEnv(c, corev1.EnvVar{Name: EnvSubmissionID, Value: job.Status.JobId})
	if cluster == nil || !rayspec.AuthEnabled(&cluster.Spec) {
		return nil
	}
	// The token comes from the cluster's Secret by reference, never inline, and replaces a
	// value of the template's, as on the cluster's own Ray containers.
	for _, e := range rayspec.AuthEnv(cluster.Name, &cluster.Spec) {
		setEnv(c, e)
	}
	if rayspec.K8sTokenAuth(&cluster.Spec) {
		c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == rayspec.EnvRayAuthToken })
		c.VolumeMounts = slices.DeleteFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
			return m.Name == rayspec.RayTokenVolumeName || m.MountPath == rayspec.RayTokenMountPath
		})
		c.VolumeMounts = append(c.VolumeMounts, rayspec.RayTokenMount())
	}
	return nil
}

// setEnv sets a variable, replacing a value the container had.
func setEnv(c *corev1.Container, e corev1.EnvVar) {
	for i := range c.Env {
		if c.Env[i].Name == e.Name {
			c.Env[i] = e
			return
		}
	}
	c.Env = append(c.Env, e)
}

// ownerLabels name the RayJob on what it creates.
func ownerLabels(job *rayv1.RayJob) map[string]string {
	return map[string]string{
		rayv1.OriginatedFromCRNameLabelKey: job.Name,
		rayv1.OriginatedFromCRDLabelKey:    rayv1.RayJobKind,
		rayv1.KubernetesCreatedByLabelKey:  rayv1.ComponentName,
	}
}

func ownerRef(job *rayv1.RayJob) *metav1.OwnerReference {
	return metav1.NewControllerRef(job, rayv1.GroupVersion.WithKind(rayv1.RayJobKind))
}

func specOf(cluster *rayv1.RayCluster) *rayv1.RayClusterSpec {
	if cluster == nil {
		return nil
	}
	return &cluster.Spec
}
