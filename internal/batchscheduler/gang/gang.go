// Package gang computes what a batch scheduler must place together for a RayCluster: how
// many pods (the head and the workers) and how much of each resource they request. The
// functions are pure and work on a defaulted cluster spec.
package gang

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// Size is a gang: its pod count (the head included) and their summed resource requests.
type Size struct {
	Members   int32
	Resources corev1.ResourceList
}

// Desired is the gang of the pods the cluster asks for now: the head plus each group's
// desired replicas (replicas clamped to [minReplicas, maxReplicas], none while suspended)
// × numOfHosts.
func Desired(spec *rayv1.RayClusterSpec) Size {
	return size(spec, rayspec.WorkerGroupDesiredReplicas)
}

// Minimum is the gang the cluster cannot run without: the head plus each group's
// minReplicas × numOfHosts (none while suspended). With the Ray autoscaler on, this is what
// must be placed together; the autoscaler adds the rest as it needs it.
func Minimum(spec *rayv1.RayClusterSpec) Size {
	return size(spec, func(g rayv1.WorkerGroupSpec) int32 {
		if ptr.Deref(g.Suspend, false) {
			return 0
		}
		return ptr.Deref(g.MinReplicas, 0)
	})
}

// ForScheduling is the gang a scheduler that follows the autoscaler must hold: Minimum with
// the Ray autoscaler on (it scales up from there), else Desired.
func ForScheduling(spec *rayv1.RayClusterSpec) Size {
	if rayspec.AutoscalingEnabled(spec) {
		return Minimum(spec)
	}
	return Desired(spec)
}

func size(spec *rayv1.RayClusterSpec, replicas func(rayv1.WorkerGroupSpec) int32) Size {
	members := int64(1)
	total := PodResources(&spec.HeadGroupSpec.Template.Spec)
	for _, g := range spec.WorkerGroupSpecs {
		pods := int64(replicas(g)) * int64(rayspec.NumOfHosts(g))
		if pods <= 0 {
			continue
		}
		members += pods
		for name, q := range PodResources(&g.Template.Spec) {
			q.Mul(pods)
			add(total, name, q)
		}
	}
	return Size{Members: rayspec.SaturateInt32(members), Resources: total}
}

// PodResources is what one pod requests: the sum over its containers of each resource's
// request, or its limit when no request is set (the API server defaults a missing request
// to the limit). Init containers are not counted, as KubeRay does not.
func PodResources(spec *corev1.PodSpec) corev1.ResourceList {
	total := corev1.ResourceList{}
	for i := range spec.Containers {
		res := spec.Containers[i].Resources
		for name, q := range res.Requests {
			add(total, name, q)
		}
		for name, q := range res.Limits {
			if _, ok := res.Requests[name]; !ok {
				add(total, name, q)
			}
		}
	}
	return total
}

func add(total corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	if cur, ok := total[name]; ok {
		cur.Add(q)
		total[name] = cur
		return
	}
	total[name] = q.DeepCopy()
}

// ResourceMap is a ResourceList as an unstructured object's field holds it.
func ResourceMap(list corev1.ResourceList) map[string]any {
	m := make(map[string]any, len(list))
	for name, q := range list {
		m[string(name)] = q.String()
	}
	return m
}

// SameResources reports whether an unstructured resource map (as read back from the API
// server: quantities as strings or numbers) holds exactly the quantities of list.
func SameResources(field any, list corev1.ResourceList) bool {
	m, ok := field.(map[string]any)
	if !ok || len(m) != len(list) {
		return false
	}
	for name, want := range list {
		v, ok := m[string(name)]
		if !ok {
			return false
		}
		var s string
		switch v := v.(type) {
		case string:
			s = v
		case int64, float64, int32, int:
			s = fmt.Sprint(v)
		default:
			return false
		}
		got, err := resource.ParseQuantity(s)
		if err != nil || got.Cmp(want) != 0 {
			return false
		}
	}
	return true
}
