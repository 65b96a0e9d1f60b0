package raypod

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// addTokenAuth gives every Ray process of a token-authenticated cluster the mode and the
// token (by Secret reference): the Ray container, the autoscaler sidecar and the
// wait-gcs-ready init container, as KubeRay does. raygate's values replace any the user
// gave, so the token never ends up inline in a pod spec. In the Kubernetes-delegated mode
// each of them instead mounts the pod's projected ServiceAccount token, and no RAY_AUTH_TOKEN
// is left that Ray would prefer to it.
func addTokenAuth(rc *rayv1.RayCluster, pod *corev1.Pod) {
	if !rayspec.AuthEnabled(&rc.Spec) {
		return
	}
	env := rayspec.AuthEnv(rc.Name, &rc.Spec)
	k8s := rayspec.K8sTokenAuth(&rc.Spec)
	forRayProcesses(pod, func(c *corev1.Container) {
		for _, e := range env {
			addEnv(c, e, true)
		}
		if k8s {
			c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == rayspec.EnvRayAuthToken })
			c.VolumeMounts = slices.DeleteFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
				return m.Name == rayspec.RayTokenVolumeName || m.MountPath == rayspec.RayTokenMountPath
			})
			c.VolumeMounts = append(c.VolumeMounts, rayspec.RayTokenMount())
		}
	})
	if k8s {
		pod.Spec.Volumes = slices.DeleteFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == rayspec.RayTokenVolumeName })
		pod.Spec.Volumes = append(pod.Spec.Volumes, rayspec.RayTokenVolume())
	}
}

// forRayProcesses calls set on every container of a pod that runs Ray or talks to it as Ray
// does: the Ray container, the autoscaler sidecar and the wait-gcs-ready init container.
func forRayProcesses(pod *corev1.Pod, set func(*corev1.Container)) {
	for i := range pod.Spec.Containers {
		if i == rayv1.RayContainerIndex || pod.Spec.Containers[i].Name == AutoscalerContainer {
			set(&pod.Spec.Containers[i])
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == WaitGCSInitContainer {
			set(&pod.Spec.InitContainers[i])
		}
	}
}
