package validation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MaxPodTemplateBytes bounds each group's pod template (headGroupSpec.template and every
// workerGroupSpecs[i].template), measured as its protobuf encoding: the form in which
// Kubernetes stores pods, computed by the generated Size without encoding or allocating
// anything (admission has an allocation budget per review). Every pod raygate creates is
// built from one, and each create in flight holds its pod (at most 64 per reconcile worker),
// so the bound also bounds that memory. It is far above real templates: the largest in
// KubeRay's and raygate's samples is under 1.4 KiB even as JSON, which is larger.
const MaxPodTemplateBytes = 128 << 10

// podTemplateSize refuses a pod template whose encoding exceeds MaxPodTemplateBytes, at the
// template of the group at path (the path is built only for an error).
func podTemplateSize(tmpl *corev1.PodTemplateSpec, path *field.Path) field.ErrorList {
	n := tmpl.Size()
	if n <= MaxPodTemplateBytes {
		return nil
	}
	e := field.TooLong(path.Child("template"), omit, MaxPodTemplateBytes)
	e.Detail = fmt.Sprintf("the pod template is %d bytes encoded (protobuf, as pods are stored); at most %d bytes (%d KiB) are allowed per template: keep large data out of it (e.g. in a ConfigMap mounted as a volume)",
		n, MaxPodTemplateBytes, MaxPodTemplateBytes>>10)
	return field.ErrorList{e}
}
