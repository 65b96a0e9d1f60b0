package framework

import (
	"net"
	"net/url"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/raysim"
)

// IsSidecarHead reports whether a pod is the head of a SidecarMode RayJob's cluster: a Ray
// head pod with a container named ray-job-submitter, which submits the job to the head's
// own dashboard.
func IsSidecarHead(pod *corev1.Pod) bool {
	if pod.Labels[rayv1.NodeTypeLabelKey] != string(rayv1.HeadNode) || pod.Labels[rayv1.ClusterLabelKey] == "" {
		return false
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == raysim.SubmitterContainerName {
			return true
		}
	}
	return false
}

// restartsOnFailure: the kubelet starts the submitter container again after a non-zero
// exit (the pod's restartPolicy, or the container's own with SidecarSubmitterRestart).
func restartsOnFailure(pod *corev1.Pod) bool {
	if pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure {
		return true
	}
	c := raysim.SubmitterContainer(pod)
	return c != nil && c.RestartPolicy != nil && string(*c.RestartPolicy) == string(corev1.RestartPolicyOnFailure)
}

// isLocalAddress: the address names the pod's own network (localhost or a loopback IP).
func isLocalAddress(address string) bool {
	u, err := url.Parse(address)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sidecarFinishedStatus is the status of a head pod whose submitter container exited: that
// container is terminated, the Ray containers run on and the pod stays Running (its
// conditions are left as they are, as the fake kubelet's TerminateContainer leaves them).
func sidecarFinishedStatus(pod *corev1.Pod, st *corev1.PodStatus, res raysim.SubmitterResult, started metav1.Time) {
	submitter := raysim.SubmitterContainer(pod).Name
	for i := range st.ContainerStatuses {
		if cs := &st.ContainerStatuses[i]; cs.Name == submitter {
			cs.Ready, cs.Started = false, ptr.To(false)
			cs.State = corev1.ContainerState{Terminated: terminated(int32(res.ExitCode), res.Output, started, metav1.Now())}
		}
	}
}
