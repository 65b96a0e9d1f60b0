package rayspec

import corev1 "k8s.io/api/core/v1"

// A pod's readiness has two meanings in raygate, each with its own helper:
//
//   - RunningAndReady: the kubelet last reported the pod Running and Ready. A pod being
//     deleted still counts: a RayCluster's status counts the pods that exist, as KubeRay does.
//   - Serving: RunningAndReady and not being deleted, so work can be sent to it now (traffic,
//     serve config, a ready head to talk to).

// RunningAndReady reports whether the pod's phase is Running and its Ready condition is True.
func RunningAndReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Serving reports whether the pod is RunningAndReady and not being deleted.
func Serving(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && RunningAndReady(p)
}

// AllRunningAndReady reports whether there is at least one pod and every pod is
// RunningAndReady.
func AllRunningAndReady(pods []corev1.Pod) bool {
	if len(pods) == 0 {
		return false
	}
	for i := range pods {
		if !RunningAndReady(&pods[i]) {
			return false
		}
	}
	return true
}
