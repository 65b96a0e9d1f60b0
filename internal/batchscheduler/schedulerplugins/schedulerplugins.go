// Package schedulerplugins integrates RayClusters with the coscheduling plugin of
// kubernetes-sigs/scheduler-plugins, as KubeRay's --batch-scheduler=scheduler-plugins does:
// every pod is scheduled by the scheduler-plugins scheduler, and a cluster labelled
// ray.io/gang-scheduling-enabled gets a scheduling.x-k8s.io/v1alpha1 PodGroup named after it
// that its pods join.
package schedulerplugins

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/batchscheduler/gang"
)

const (
	// Name is the --batch-scheduler value.
	Name = "scheduler-plugins"
	// SchedulerName is the pods' schedulerName: the name the scheduler-plugins chart gives
	// its scheduler when it runs next to the default one.
	SchedulerName = "scheduler-plugins-scheduler"
	// GangLabelKey on a RayCluster, with any value, turns gang scheduling on for it.
	GangLabelKey = "ray.io/gang-scheduling-enabled"
	// PodGroupLabelKey on a pod names its PodGroup.
	PodGroupLabelKey = "scheduling.x-k8s.io/pod-group"
)

// PodGroupKind is the kind of the coscheduling PodGroup.
var PodGroupKind = schema.GroupVersionKind{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Kind: "PodGroup"}

// Scheduler is the scheduler-plugins integration. Its methods are pure.
type Scheduler struct{}

// Name is the --batch-scheduler value.
func (Scheduler) Name() string { return Name }

// PodGroupKind is the kind of the objects DesiredPodGroup builds.
func (Scheduler) PodGroupKind() schema.GroupVersionKind { return PodGroupKind }

// GangScheduled reports whether the cluster asks for gang scheduling.
func GangScheduled(rc *rayv1.RayCluster) bool {
	_, ok := rc.Labels[GangLabelKey]
	return ok
}

// DesiredPodGroup is the PodGroup of a (defaulted) cluster labelled for gang scheduling,
// named after the cluster: the head and the desired workers, and what they request. A
// cluster without the label has none (nil).
func (Scheduler) DesiredPodGroup(rc *rayv1.RayCluster) (*unstructured.Unstructured, error) {
	if !GangScheduled(rc) {
		return nil, nil
	}
	g := gang.Desired(&rc.Spec)
	pg := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"minMember":    int64(g.Members),
			"minResources": gang.ResourceMap(g.Resources),
		},
	}}
	pg.SetGroupVersionKind(PodGroupKind)
	pg.SetNamespace(rc.Namespace)
	pg.SetName(rc.Name)
	return pg, nil
}

// UpdatePodGroup changes nothing: as under KubeRay, the PodGroup keeps the gang the cluster
// was created with (the coscheduling plugin admits a group once it reaches minMember, and
// later pods join it).
func (Scheduler) UpdatePodGroup(*unstructured.Unstructured, *rayv1.RayCluster) bool { return false }

// DecoratePod sets the pod's scheduler and, with gang scheduling on, the PodGroup label.
func (Scheduler) DecoratePod(rc *rayv1.RayCluster, pod *corev1.Pod) {
	if GangScheduled(rc) {
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		pod.Labels[PodGroupLabelKey] = rc.Name
	}
	pod.Spec.SchedulerName = SchedulerName
}
