package raypod

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

const autoscalerStartCmd = "ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) --cluster-namespace $(RAY_CLUSTER_NAMESPACE)"

// headServiceAccount is the ServiceAccount the head pod runs as with autoscaling: the
// template's own if it names one, else the one raygate creates.
func headServiceAccount(rc *rayv1.RayCluster) (name string, managed bool) {
	if sa := rc.Spec.HeadGroupSpec.Template.Spec.ServiceAccountName; sa != "" {
		return sa, false
	}
	return rayspec.AutoscalerServiceAccountName(rc.Name), true
}

// addAutoscaler adds the Ray autoscaler sidecar to a head pod, with a log volume it shares
// with the Ray container (the head reads the autoscaler's events from it).
func addAutoscaler(rc *rayv1.RayCluster, pod *corev1.Pod, s Settings) {
	sa, _ := headServiceAccount(rc)
	pod.Spec.ServiceAccountName = sa
	ray := pod.Spec.Containers[rayv1.RayContainerIndex]
	fixed := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("512Mi")}
	c := corev1.Container{
		Name:            AutoscalerContainer,
		Image:           ray.Image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Env: []corev1.EnvVar{
			fieldEnv(EnvClusterName, "metadata.labels['"+rayv1.ClusterLabelKey+"']"),
			fieldEnv(EnvClusterNamespace, "metadata.namespace"),
			fieldEnv("RAY_HEAD_POD_NAME", "metadata.name"),
			{Name: "KUBERAY_CRD_VER", Value: "v1"},
			// Lets custom args keep the generated command: args: ["... && $KUBERAY_GEN_AUTOSCALER_START_CMD"].
			{Name: EnvGeneratedAutoscalerCmd, Value: autoscalerStartCmd},
		},
		Command:   s.Shell(),
		Args:      []string{autoscalerStartCmd},
		Resources: corev1.ResourceRequirements{Limits: fixed, Requests: fixed.DeepCopy()},
	}
	if o := rc.Spec.AutoscalerOptions; o != nil {
		if o.Resources != nil {
			c.Resources = *o.Resources.DeepCopy()
		}
		if o.Image != nil {
			c.Image = *o.Image
		}
		if o.ImagePullPolicy != nil {
			c.ImagePullPolicy = *o.ImagePullPolicy
		}
		c.Env = append(c.Env, o.Env...)
		c.EnvFrom = append(c.EnvFrom, o.EnvFrom...)
		c.VolumeMounts = append(c.VolumeMounts, o.VolumeMounts...)
		if o.SecurityContext != nil {
			c.SecurityContext = o.SecurityContext.DeepCopy()
		}
		if len(o.Command) > 0 {
			c.Command = append([]string(nil), o.Command...)
		}
		if len(o.Args) > 0 {
			c.Args = append([]string(nil), o.Args...)
		}
	}
	pod.Spec.Containers = append(pod.Spec.Containers, c)
	last := len(pod.Spec.Containers) - 1
	addEmptyDir(pod, &pod.Spec.Containers[rayv1.RayContainerIndex], RayLogsVolumeName, RayLogsMountPath, corev1.StorageMediumDefault, nil)
	addEmptyDir(pod, &pod.Spec.Containers[last], RayLogsVolumeName, RayLogsMountPath, corev1.StorageMediumDefault, nil)
}

func rbacLabels(rc *rayv1.RayCluster) map[string]string {
	return map[string]string{
		rayv1.ClusterLabelKey:                   rc.Name,
		rayv1.KubernetesApplicationNameLabelKey: rayv1.ApplicationName,
		rayv1.KubernetesCreatedByLabelKey:       rayv1.ComponentName,
	}
}

func ownedMeta(rc *rayv1.RayCluster, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       rc.Namespace,
		Labels:          rbacLabels(rc),
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rc, rayv1.GroupVersion.WithKind(rayv1.RayClusterKind))},
	}
}

// AutoscalerServiceAccount is the ServiceAccount raygate creates for the autoscaler, or
// nil when the head template names its own.
func AutoscalerServiceAccount(rc *rayv1.RayCluster) *corev1.ServiceAccount {
	name, managed := headServiceAccount(rc)
	if !managed {
		return nil
	}
	return &corev1.ServiceAccount{ObjectMeta: ownedMeta(rc, name)}
}

// AutoscalerRole grants the autoscaler what Ray's autoscaler uses: reading the cluster's
// pods and patching them and their resize subresource (autoscaler v2, the default from Ray
// 2.47, resizes pods in place), and reading and patching its RayCluster (replicas and
// workersToDelete). These are KubeRay's rules, and raygate holds each of them itself.
func AutoscalerRole(rc *rayv1.RayCluster) *rbacv1.Role {
	return &rbacv1.Role{
		ObjectMeta: ownedMeta(rc, rayspec.AutoscalerServiceAccountName(rc.Name)),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "patch"}},
			{APIGroups: []string{""}, Resources: []string{"pods/resize"}, Verbs: []string{"patch"}},
			{APIGroups: []string{rayv1.GroupVersion.Group}, Resources: []string{"rayclusters"}, ResourceNames: []string{rc.Name}, Verbs: []string{"get", "patch"}},
		},
	}
}

// AutoscalerRoleBinding binds the Role to the head pod's ServiceAccount.
func AutoscalerRoleBinding(rc *rayv1.RayCluster) *rbacv1.RoleBinding {
	sa, _ := headServiceAccount(rc)
	name := rayspec.AutoscalerServiceAccountName(rc.Name)
	return &rbacv1.RoleBinding{
		ObjectMeta: ownedMeta(rc, name),
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: rc.Namespace}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
	}
}
