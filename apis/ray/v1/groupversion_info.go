package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "ray.io", Version: "v1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Kind names of this group.
const (
	RayClusterKind = "RayCluster"
	RayServiceKind = "RayService"
	RayJobKind     = "RayJob"
	RayCronJobKind = "RayCronJob"
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &RayCluster{}, &RayClusterList{}, &RayService{}, &RayServiceList{}, &RayJob{}, &RayJobList{},
		&RayCronJob{}, &RayCronJobList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// Kind returns the GroupKind of a kind in ray.io.
func Kind(kind string) schema.GroupKind {
	return GroupVersion.WithKind(kind).GroupKind()
}
