package raypod

import (
	corev1 "k8s.io/api/core/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// addTokenAuth gives every Ray process of a token-authenticated cluster the mode and the
// token (by Secret reference): the Ray container, the autoscaler sidecar and the
// wait-gcs-ready init container, as KubeRay does. raygate's values replace any the user
// gave, so the token never ends up inline in a pod spec.
func addTokenAuth(rc *rayv1.RayCluster, pod *corev1.Pod) {
	if !rayspec.AuthEnabled(&rc.Spec) {
		return
	}
	env := rayspec.AuthEnv(rc.Name, &rc.Spec)
	forRayProcesses(pod, func(c *corev1.Container) {
		for _, e := range env {
			addEnv(c, e, true)
		}
	})
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
