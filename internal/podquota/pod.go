package podquota

import corev1 "k8s.io/api/core/v1"

// Of is count pods like pod (one raygate creates besides a cluster's, e.g. a RayJob's
// submitter), as quota counts them.
func Of(pod *corev1.Pod, count int64) Pods {
	return Pods{Pod: defaulted(pod), Count: count}
}
