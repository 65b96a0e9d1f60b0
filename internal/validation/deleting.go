package validation

import (
	"maps"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// FrozenAnnotationPrefix marks the annotations that, like the spec, stop changing once an
// object is being deleted: KubeRay's keys, some of which change what the controllers build
// (ray.io/ft-enabled, ray.io/external-storage-namespace, ray.io/gcs-ft-deletion-timeout,
// ray.io/overwrite-container-cmd).
const FrozenAnnotationPrefix = "ray.io/"

// Details of the refusals of DeletingUpdate.
const (
	DeletingSpecFrozen       = "the object is being deleted: its spec can no longer change (finalizers, labels and other metadata still can)"
	DeletingAnnotationFrozen = "the object is being deleted: annotations under " + FrozenAnnotationPrefix + " can no longer change (finalizers, labels and other metadata still can)"
)

// DeletingUpdate refuses an update of a ray.io object being deleted that changes its spec,
// at each changed top-level field, or an annotation under FrozenAnnotationPrefix. The other
// webhooks and the admission policies skip objects being deleted, so that finalizer removal
// never waits for them; what a controller builds while a finalizer holds the object (the
// Redis cleanup Job of a fault-tolerant RayCluster) must still come from an admitted spec.
// Finalizers, labels and other annotations stay open.
func DeletingUpdate(old, obj *unstructured.Unstructured) field.ErrorList {
	if old == nil || obj == nil || obj.GetDeletionTimestamp() == nil {
		return nil
	}
	var errs field.ErrorList
	oldSpec, newSpec := old.Object["spec"], obj.Object["spec"]
	oldFields, oldIsMap := oldSpec.(map[string]any)
	newFields, newIsMap := newSpec.(map[string]any)
	switch {
	case !oldIsMap || !newIsMap:
		if !reflect.DeepEqual(oldSpec, newSpec) {
			errs = append(errs, field.Forbidden(specPath, DeletingSpecFrozen))
		}
	default:
		for _, k := range keysOfBoth(oldFields, newFields) {
			was, wasSet := oldFields[k]
			is, isSet := newFields[k]
			if wasSet != isSet || !reflect.DeepEqual(was, is) {
				errs = append(errs, field.Forbidden(specPath.Child(k), DeletingSpecFrozen))
			}
		}
	}
	oldAnn, newAnn := old.GetAnnotations(), obj.GetAnnotations()
	for _, k := range keysOfBoth(oldAnn, newAnn) {
		if !strings.HasPrefix(k, FrozenAnnotationPrefix) {
			continue
		}
		was, wasSet := oldAnn[k]
		is, isSet := newAnn[k]
		if wasSet != isSet || was != is {
			errs = append(errs, field.Forbidden(annotationsPath.Key(k), DeletingAnnotationFrozen))
		}
	}
	return errs
}

// keysOfBoth lists the keys of a and b once each, sorted, so errors come in a stable order.
func keysOfBoth[V any](a, b map[string]V) []string {
	keys := slices.AppendSeq(slices.Collect(maps.Keys(a)), maps.Keys(b))
	slices.Sort(keys)
	return slices.Compact(keys)
}
