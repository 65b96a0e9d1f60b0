package localmode

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// NextImage is the image an upgrade demo moves to: the same repository with the patch
// version of the tag raised by one (rayproject/ray:2.52.0 → rayproject/ray:2.52.1). A tag
// that is not a version gets "-next" appended, and a "-next" tag loses it again, so a demo
// can always move on.
func NextImage(image string) string {
	repo, tag := image, "latest"
	if i := strings.LastIndexByte(image, ':'); i > strings.LastIndexByte(image, '/') {
		repo, tag = image[:i], image[i+1:]
	}
	parts := strings.Split(tag, ".")
	if n, err := strconv.Atoi(parts[len(parts)-1]); err == nil && len(parts) > 1 {
		parts[len(parts)-1] = strconv.Itoa(n + 1)
		return repo + ":" + strings.Join(parts, ".")
	}
	if t, ok := strings.CutSuffix(tag, "-next"); ok {
		return repo + ":" + t
	}
	return repo + ":" + tag + "-next"
}

// RayImage is the image of the head's Ray container (the first container, by convention).
func RayImage(svc *rayv1.RayService) string {
	c := svc.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers
	if len(c) == 0 {
		return ""
	}
	return c[0].Image
}

// PatchOp is one operation of a JSON patch (RFC 6902).
type PatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// ImagePatchOps set the Ray container image of the head and of every worker group: an
// upgrade as a user would make it.
func ImagePatchOps(svc *rayv1.RayService, image string) []PatchOp {
	ops := []PatchOp{{Op: "replace", Path: "/spec/rayClusterConfig/headGroupSpec/template/spec/containers/0/image", Value: image}}
	for i := range svc.Spec.RayClusterSpec.WorkerGroupSpecs {
		ops = append(ops, PatchOp{Op: "replace", Path: fmt.Sprintf("/spec/rayClusterConfig/workerGroupSpecs/%d/template/spec/containers/0/image", i), Value: image})
	}
	return ops
}

// ImagePatch is ImagePatchOps as the JSON a `kubectl patch --type=json -p` takes.
func ImagePatch(svc *rayv1.RayService, image string) string {
	return MarshalPatch(ImagePatchOps(svc, image))
}

// MarshalPatch encodes a JSON patch.
func MarshalPatch(ops []PatchOp) string {
	b, _ := json.Marshal(ops)
	return string(b)
}
