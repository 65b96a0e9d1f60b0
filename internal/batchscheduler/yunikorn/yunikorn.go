// Package yunikorn integrates RayClusters with Apache YuniKorn, as KubeRay's
// --batch-scheduler=yunikorn does: pods are scheduled by YuniKorn in the application and
// queue the cluster's labels name, and a cluster labelled ray.io/gang-scheduling-enabled
// describes its gang to YuniKorn in annotations on every pod (task groups: the head, and
// each worker group with its minimum size). YuniKorn keeps no PodGroup object.
package yunikorn

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/batchscheduler/gang"
	"github.com/raygate/raygate/internal/rayspec"
)

const (
	// Name is the --batch-scheduler value and the pods' schedulerName.
	Name = "yunikorn"
	// AppIDLabelKey and QueueLabelKey on the cluster name its YuniKorn application and
	// queue; pods get them as PodAppIDLabelKey and PodQueueLabelKey.
	AppIDLabelKey    = "yunikorn.apache.org/app-id"
	QueueLabelKey    = "yunikorn.apache.org/queue"
	PodAppIDLabelKey = "applicationId"
	PodQueueLabelKey = "queue"
	// GangLabelKey on a RayCluster, with any value, turns gang scheduling on for it.
	GangLabelKey = "ray.io/gang-scheduling-enabled"
	// TaskGroupsAnnotationKey carries the gang's task groups (JSON) on every pod; set on the
	// cluster, its value is used as it is. TaskGroupNameAnnotationKey names a pod's group.
	TaskGroupsAnnotationKey    = "yunikorn.apache.org/task-groups"
	TaskGroupNameAnnotationKey = "yunikorn.apache.org/task-group-name"
)

// Scheduler is the YuniKorn integration. Its methods are pure.
type Scheduler struct {
	gang.NoPodGroup // the gang travels in the pods' annotations
}

// Name is the --batch-scheduler value.
func (Scheduler) Name() string { return Name }

// TaskGroup is one group of a gang as YuniKorn reads it.
type TaskGroup struct {
	Name         string              `json:"name"`
	MinMember    int32               `json:"minMember"`
	MinResource  corev1.ResourceList `json:"minResource"`
	NodeSelector map[string]string   `json:"nodeSelector,omitempty"`
	Tolerations  []corev1.Toleration `json:"tolerations,omitempty"`
	Affinity     *corev1.Affinity    `json:"affinity,omitempty"`
}

// TaskGroups is the gang of a (defaulted) cluster: the head (one pod) and each worker group
// with minReplicas × numOfHosts members, each with what one of its pods requests and where
// it may run.
func TaskGroups(spec *rayv1.RayClusterSpec) []TaskGroup {
	head := &spec.HeadGroupSpec.Template.Spec
	groups := []TaskGroup{{
		Name: rayv1.HeadGroupLabelValue, MinMember: 1, MinResource: gang.PodResources(head),
		NodeSelector: head.NodeSelector, Tolerations: head.Tolerations, Affinity: head.Affinity,
	}}
	for _, g := range spec.WorkerGroupSpecs {
		pod := &g.Template.Spec
		groups = append(groups, TaskGroup{
			Name:         g.GroupName,
			MinMember:    rayspec.SaturateInt32(int64(ptr.Deref(g.MinReplicas, 0)) * int64(rayspec.NumOfHosts(g))),
			MinResource:  gang.PodResources(pod),
			NodeSelector: pod.NodeSelector, Tolerations: pod.Tolerations, Affinity: pod.Affinity,
		})
	}
	return groups
}

// podLabels maps the cluster's YuniKorn labels to the pod labels YuniKorn reads.
var podLabels = [...][2]string{{AppIDLabelKey, PodAppIDLabelKey}, {QueueLabelKey, PodQueueLabelKey}}

// DecoratePod sets the pod's scheduler, copies the application and queue labels, and, with
// gang scheduling on, adds the task groups and the pod's group name.
func (Scheduler) DecoratePod(rc *rayv1.RayCluster, pod *corev1.Pod) {
	for _, m := range podLabels {
		if v := rc.Labels[m[0]]; v != "" {
			if pod.Labels == nil {
				pod.Labels = map[string]string{}
			}
			pod.Labels[m[1]] = v
		}
	}
	pod.Spec.SchedulerName = Name
	if _, on := rc.Labels[GangLabelKey]; !on {
		return
	}
	groups := rc.Annotations[TaskGroupsAnnotationKey]
	if groups == "" {
		b, err := json.Marshal(TaskGroups(&rc.Spec))
		if err != nil {
			return // plain API types always marshal; without groups the pod runs without a gang
		}
		groups = string(b)
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[TaskGroupsAnnotationKey] = groups
	if g := pod.Labels[rayv1.NodeGroupLabelKey]; g != "" {
		pod.Annotations[TaskGroupNameAnnotationKey] = g
	}
}
