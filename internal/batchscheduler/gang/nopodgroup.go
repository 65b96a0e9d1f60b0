package gang

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// NoPodGroup is the PodGroup half of a scheduler that keeps no PodGroup object (it groups the
// pods itself, or reads the gang from their annotations); embed it.
type NoPodGroup struct{}

// PodGroupKind is zero: raygate creates no PodGroup.
func (NoPodGroup) PodGroupKind() schema.GroupVersionKind { return schema.GroupVersionKind{} }

// DesiredPodGroup is nil: there is no PodGroup.
func (NoPodGroup) DesiredPodGroup(*rayv1.RayCluster) (*unstructured.Unstructured, error) {
	return nil, nil
}

// UpdatePodGroup is never called (there is no PodGroup).
func (NoPodGroup) UpdatePodGroup(*unstructured.Unstructured, *rayv1.RayCluster) bool { return false }
