// Package kai integrates RayClusters with NVIDIA's KAI scheduler, as KubeRay's
// --batch-scheduler=kai-scheduler does: pods are scheduled by kai-scheduler in the queue the
// cluster's kai.scheduler/queue label names. KAI builds its PodGroups itself from the pods'
// owner, so raygate creates none.
package kai

import (
	corev1 "k8s.io/api/core/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/batchscheduler/gang"
)

const (
	// Name is the --batch-scheduler value and the pods' schedulerName.
	Name = "kai-scheduler"
	// QueueLabelKey names the KAI queue, on the cluster and on its pods.
	QueueLabelKey = "kai.scheduler/queue"
)

// Scheduler is the KAI integration. Its methods are pure.
type Scheduler struct {
	gang.NoPodGroup // KAI groups the pods itself
}

// Name is the --batch-scheduler value.
func (Scheduler) Name() string { return Name }

// DecoratePod sets the pod's scheduler and copies the cluster's queue label. A cluster
// without a queue label still gets kai-scheduler (KAI then refuses to schedule the pods, as
// under KubeRay; admission warns about it).
func (Scheduler) DecoratePod(rc *rayv1.RayCluster, pod *corev1.Pod) {
	if q := rc.Labels[QueueLabelKey]; q != "" {
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		pod.Labels[QueueLabelKey] = q
	}
	pod.Spec.SchedulerName = Name
}
