package framework

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TerminateContainer makes one container of a pod exit with exitCode (reason Completed for
// 0, else Error, message as its termination message) while the pod and its other containers
// keep running, as a RayJob's SidecarMode submitter in the head pod does when its script
// ends. The kubelet leaves the pod alone from then on.
func (k *Kubelet) TerminateContainer(ctx context.Context, namespace, name, container string, exitCode int32, message string) error {
	return k.injure(ctx, namespace, name, func(pod *corev1.Pod) {
		now := metav1.Now()
		reason := "Completed"
		if exitCode != 0 {
			reason = "Error"
		}
		for i := range pod.Status.ContainerStatuses {
			cs := &pod.Status.ContainerStatuses[i]
			if cs.Name != container {
				continue
			}
			started := now
			if cs.State.Running != nil {
				started = cs.State.Running.StartedAt
			}
			cs.Ready, cs.Started = false, ptr.To(false)
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: exitCode, Reason: reason, Message: message, StartedAt: started, FinishedAt: now,
			}}
		}
	})
}
