package admissionjson

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// formatQuantities has every resource quantity of a decoded pod template keep its canonical
// string, as Quantity.String would once called on it. Validation bounds a template by its
// generated protobuf Size, which formats each quantity, and a quantity in a ResourceList map
// is formatted on a copy, so it would be formatted (and allocated) again on every review of
// a template the SharingDecoder shares. Formatted once here, before the template is shared,
// it is read and never written afterwards: no review formats it again and concurrent reviews
// do not race to set it. The quantity's value is unchanged; only its cached string is set.
func formatQuantities(t *corev1.PodTemplateSpec) {
	spec := &t.Spec
	for i := range spec.InitContainers {
		formatRequirements(&spec.InitContainers[i].Resources)
	}
	for i := range spec.Containers {
		formatRequirements(&spec.Containers[i].Resources)
	}
	for i := range spec.EphemeralContainers {
		formatRequirements(&spec.EphemeralContainers[i].Resources)
	}
	if spec.Resources != nil {
		formatRequirements(spec.Resources)
	}
	formatList(spec.Overhead)
	for i := range spec.Volumes {
		v := &spec.Volumes[i].VolumeSource
		if v.EmptyDir != nil {
			formatQuantity(v.EmptyDir.SizeLimit)
		}
		if v.Ephemeral != nil && v.Ephemeral.VolumeClaimTemplate != nil {
			r := &v.Ephemeral.VolumeClaimTemplate.Spec.Resources
			formatList(r.Limits)
			formatList(r.Requests)
		}
	}
}

func formatRequirements(r *corev1.ResourceRequirements) {
	formatList(r.Limits)
	formatList(r.Requests)
}

func formatList(l corev1.ResourceList) {
	for name, q := range l {
		// q is a copy: format it and store it back.
		_ = q.String()
		l[name] = q
	}
}

func formatQuantity(q *resource.Quantity) {
	if q != nil {
		_ = q.String()
	}
}
