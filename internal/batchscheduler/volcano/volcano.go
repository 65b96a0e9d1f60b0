// Package volcano integrates RayClusters with the Volcano scheduler, as KubeRay's
// --batch-scheduler=volcano does: each cluster gets a scheduling.volcano.sh/v1beta1 PodGroup
// named ray-<cluster>-pg that holds its gang (kept up to date as the cluster scales), and
// its pods are scheduled by Volcano as members of that group.
package volcano

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/batchscheduler/gang"
)

// Name is the --batch-scheduler value, and the schedulerName of the pods.
const Name = "volcano"

// Labels read from the RayCluster.
const (
	// QueueLabelKey names the Volcano Queue of the cluster's PodGroup; its pods carry it too.
	QueueLabelKey = "volcano.sh/queue-name"
	// PriorityClassLabelKey names the PriorityClass of the PodGroup; its pods carry it too.
	PriorityClassLabelKey = "ray.io/priority-class-name"
	// NetworkTopologyModeLabelKey (hard or soft) and NetworkTopologyHighestTierLabelKey (an
	// integer) set the PodGroup's network topology constraint.
	NetworkTopologyModeLabelKey        = "volcano.sh/network-topology-mode"
	NetworkTopologyHighestTierLabelKey = "volcano.sh/network-topology-highest-tier-allowed"
)

// Annotations set on the pods.
const (
	// GroupNameAnnotationKey names the PodGroup a pod belongs to.
	GroupNameAnnotationKey = "scheduling.k8s.io/group-name"
	// TaskSpecAnnotationKey names the pod's task within the group: its ray.io/group.
	TaskSpecAnnotationKey = "volcano.sh/task-spec"
)

// PodGroupKind is the kind of Volcano's PodGroup.
var PodGroupKind = schema.GroupVersionKind{Group: "scheduling.volcano.sh", Version: "v1beta1", Kind: "PodGroup"}

// PodGroupName is the name of a cluster's PodGroup.
func PodGroupName(cluster string) string { return "ray-" + cluster + "-pg" }

// Scheduler is the Volcano integration. Its methods are pure.
type Scheduler struct{}

// Name is the --batch-scheduler value.
func (Scheduler) Name() string { return Name }

// PodGroupKind is the kind of the objects DesiredPodGroup builds.
func (Scheduler) PodGroupKind() schema.GroupVersionKind { return PodGroupKind }

// DesiredPodGroup is the PodGroup of a (defaulted) cluster: its gang (with the Ray
// autoscaler on, the minimum; else the desired pods), queue, priority class and network
// topology from the cluster's labels, created in phase Pending. Every cluster gets one.
// An unparsable highest-tier label is an error: the PodGroup cannot be built.
func (Scheduler) DesiredPodGroup(rc *rayv1.RayCluster) (*unstructured.Unstructured, error) {
	g := gang.ForScheduling(&rc.Spec)
	spec := map[string]any{
		"minMember":    int64(g.Members),
		"minResources": gang.ResourceMap(g.Resources),
	}
	labels := rc.Labels
	if q, ok := labels[QueueLabelKey]; ok {
		spec["queue"] = q
	}
	if pc, ok := labels[PriorityClassLabelKey]; ok {
		spec["priorityClassName"] = pc
	}
	if mode, ok := labels[NetworkTopologyModeLabelKey]; ok {
		topology := map[string]any{"mode": mode}
		if tier, ok := labels[NetworkTopologyHighestTierLabelKey]; ok {
			n, err := strconv.Atoi(tier)
			if err != nil {
				return nil, fmt.Errorf("label %s=%q is not an integer", NetworkTopologyHighestTierLabelKey, tier)
			}
			topology["highestTierAllowed"] = int64(n)
		}
		spec["networkTopology"] = topology
	}
	pg := &unstructured.Unstructured{Object: map[string]any{
		"spec":   spec,
		"status": map[string]any{"phase": "Pending"},
	}}
	pg.SetGroupVersionKind(PodGroupKind)
	pg.SetNamespace(rc.Namespace)
	pg.SetName(PodGroupName(rc.Name))
	return pg, nil
}

// UpdatePodGroup brings an existing PodGroup's gang (minMember, minResources) to the
// cluster's, as the cluster scales, and reports whether it changed anything. Its queue,
// priority class and topology are left as they are: Volcano does not move a group between
// queues.
func (Scheduler) UpdatePodGroup(current *unstructured.Unstructured, rc *rayv1.RayCluster) bool {
	g := gang.ForScheduling(&rc.Spec)
	members, _, _ := unstructured.NestedInt64(current.Object, "spec", "minMember")
	res, _, _ := unstructured.NestedFieldNoCopy(current.Object, "spec", "minResources")
	if members == int64(g.Members) && gang.SameResources(res, g.Resources) {
		return false
	}
	_ = unstructured.SetNestedField(current.Object, int64(g.Members), "spec", "minMember")
	_ = unstructured.SetNestedField(current.Object, gang.ResourceMap(g.Resources), "spec", "minResources")
	return true
}

// DecoratePod makes a pod a member of its cluster's PodGroup: Volcano schedules it, the
// group and task annotations name its group and its ray.io/group, and the queue and
// priority-class labels of the cluster are copied onto it.
func (Scheduler) DecoratePod(rc *rayv1.RayCluster, pod *corev1.Pod) {
	for _, key := range []string{QueueLabelKey, PriorityClassLabelKey} {
		if v := rc.Labels[key]; v != "" {
			if pod.Labels == nil {
				pod.Labels = map[string]string{}
			}
			pod.Labels[key] = v
		}
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[GroupNameAnnotationKey] = PodGroupName(rc.Name)
	pod.Annotations[TaskSpecAnnotationKey] = pod.Labels[rayv1.NodeGroupLabelKey]
	pod.Spec.SchedulerName = Name
}
