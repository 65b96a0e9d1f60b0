package poddryrun

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/podsecurity"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/internal/validation"
)

// Pod is a pod raygate would create, to dry-run, and where in the object it comes from.
type Pod struct {
	Pod    *corev1.Pod
	Origin podsecurity.Origin
	// What names the pod in warnings: "the head pod", `the pods of worker group "gpu"`.
	What string
}

// PlaceholderName is the name of the cluster (and RayJob) the pods are built for. The pods
// raygate creates carry their cluster's name in labels and environment values, which no
// rule of a cluster is expected to read; building them for one name lets a template be
// checked once per namespace, whatever the object's name (a RayService's cluster gets a
// generated name, a RayJob's a new one per attempt). Validation already checks that the
// names derived from the real name fit.
const PlaceholderName = "raygate-dry-run"

var (
	rayClusterSpecPath    = field.NewPath("spec")
	rayServiceSpecPath    = field.NewPath("spec", "rayClusterConfig")
	rayJobSpecPath        = field.NewPath("spec", "rayClusterSpec")
	submitterTemplatePath = field.NewPath("spec", "submitterPodTemplate")
)

// RayClusterPods are the distinct pods of a (defaulted) RayCluster in namespace.
func RayClusterPods(rc *rayv1.RayCluster, namespace string, settings raypod.Settings) []Pod {
	return clusterPods(rc, &rc.Spec, rayClusterSpecPath, namespace, settings)
}

// RayServicePods are the distinct pods of the cluster a (defaulted) RayService creates.
func RayServicePods(svc *rayv1.RayService, namespace string, settings raypod.Settings) []Pod {
	return clusterPods(podsecurity.ClusterOf(svc), &svc.Spec.RayClusterSpec, rayServiceSpecPath, namespace, settings)
}

// RayJobPods are the distinct pods a (defaulted) RayJob creates: its cluster's, unless it
// runs on an existing one, and its submitter pod in K8sJobMode.
func RayJobPods(job *rayv1.RayJob, namespace string, gates features.Gates, settings raypod.Settings) []Pod {
	j := *job
	j.Name, j.GenerateName, j.Namespace = PlaceholderName, "", namespace
	rc := validation.JobCluster(&j, gates)
	var pods []Pod
	if rc != nil && job.Spec.RayClusterSpec != nil {
		pods = clusterPods(rc, job.Spec.RayClusterSpec, rayJobSpecPath, namespace, settings)
	}
	// Without a template of the job's, the submitter takes its image from the cluster, which a
	// job on an existing cluster (clusterSelector) only finds when it runs.
	if rc == nil && job.Spec.SubmitterPodTemplate == nil {
		return pods
	}
	if pod := validation.SubmitterPod(&j, rc, gates); pod != nil {
		pod = pod.DeepCopy()
		pod.Namespace, pod.GenerateName = namespace, PlaceholderName+"-"
		o := podsecurity.Origin{Template: job.Spec.SubmitterPodTemplate, TemplatePath: submitterTemplatePath}
		pods = append(pods, Pod{Pod: pod, Origin: o, What: "the submitter pod"})
	}
	return pods
}

// clusterPods builds the head pod and one pod per worker group of rc, renamed to the
// placeholder, in namespace. user is the cluster spec as the user wrote it (a RayJob's
// cluster adds its submitter sidecar to the head), at specPath.
func clusterPods(rc *rayv1.RayCluster, user *rayv1.RayClusterSpec, specPath *field.Path, namespace string, settings raypod.Settings) []Pod {
	c := *rc
	c.Name, c.GenerateName, c.Namespace, c.UID = PlaceholderName, "", namespace, ""
	var pods []Pod
	if len(c.Spec.HeadGroupSpec.Template.Spec.Containers) > 0 {
		o := podsecurity.Origin{Template: &user.HeadGroupSpec.Template, TemplatePath: specPath.Child("headGroupSpec", "template"), SpecPath: specPath}
		pods = append(pods, Pod{Pod: forDryRun(raypod.HeadPod(&c, "", settings), o.Template), Origin: o, What: "the head pod"})
	}
	for i := range c.Spec.WorkerGroupSpecs {
		g := &c.Spec.WorkerGroupSpecs[i]
		if len(g.Template.Spec.Containers) == 0 || i >= len(user.WorkerGroupSpecs) {
			continue
		}
		o := podsecurity.Origin{Template: &user.WorkerGroupSpecs[i].Template, TemplatePath: specPath.Child("workerGroupSpecs").Index(i).Child("template"), SpecPath: specPath}
		pods = append(pods, Pod{Pod: forDryRun(raypod.WorkerPod(&c, g, nil, settings), o.Template), Origin: o, What: fmt.Sprintf("the pods of worker group %q", g.GroupName)})
	}
	return pods
}

// forDryRun readies a built pod for a dry-run create: no owner (the object has no UID yet),
// and the namespace's default ServiceAccount where raygate would have created one first (the
// autoscaler's): the API server refuses a pod whose ServiceAccount does not exist yet. It is
// named, as the API server's ServiceAccount admission would name it, because pod validation
// refuses a projected token volume (Kubernetes-delegated token authentication) without one.
func forDryRun(pod *corev1.Pod, tmpl *corev1.PodTemplateSpec) *corev1.Pod {
	pod.OwnerReferences = nil
	if tmpl.Spec.ServiceAccountName == "" && tmpl.Spec.DeprecatedServiceAccount == "" {
		pod.Spec.ServiceAccountName, pod.Spec.DeprecatedServiceAccount = defaultServiceAccount, ""
	}
	return pod
}

// defaultServiceAccount is the ServiceAccount every namespace has.
const defaultServiceAccount = "default"
