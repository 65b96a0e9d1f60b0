package validation

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MaxPodTemplateBytes bounds each group's pod template (headGroupSpec.template and every
// workerGroupSpecs[i].template), measured as its JSON encoding, as the API server stores
// it. Every pod raygate creates is built from one, and each create in flight holds its pod
// (at most 64 per reconcile worker), so the bound also bounds that memory. It is far above
// real templates: the largest in KubeRay's and raygate's samples encodes to under 1.4 KiB.
const MaxPodTemplateBytes = 128 << 10

// podTemplateSize refuses a pod template whose JSON encoding exceeds MaxPodTemplateBytes,
// at path (the group's template).
func podTemplateSize(tmpl *corev1.PodTemplateSpec, path *field.Path) field.ErrorList {
	b, err := json.Marshal(tmpl)
	if err != nil || len(b) <= MaxPodTemplateBytes {
		return nil // a template that does not encode is refused by the API server's own decoding
	}
	e := field.TooLong(path, omit, MaxPodTemplateBytes)
	e.Detail = fmt.Sprintf("the pod template encodes to %d bytes as JSON; at most %d bytes (%d KiB) are allowed per template: keep large data out of it (e.g. in a ConfigMap mounted as a volume)",
		len(b), MaxPodTemplateBytes, MaxPodTemplateBytes>>10)
	return field.ErrorList{e}
}
