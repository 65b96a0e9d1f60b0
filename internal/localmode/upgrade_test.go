package localmode

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestNextImage(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"rayproject/ray:2.52.0", "rayproject/ray:2.52.1"},
		{"rayproject/ray:2.52.9", "rayproject/ray:2.52.10"},
		{"registry:5000/team/ray:1.2.3", "registry:5000/team/ray:1.2.4"},
		{"registry:5000/team/ray", "registry:5000/team/ray:latest-next"},
		{"rayproject/ray:nightly", "rayproject/ray:nightly-next"},
		{"rayproject/ray:nightly-next", "rayproject/ray:nightly"},
		{"rayproject/ray:2.52.0-py311", "rayproject/ray:2.52.0-py311-next"},
		{"ray:7", "ray:7-next"},
	} {
		if got := NextImage(tt.in); got != tt.want {
			t.Errorf("NextImage(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestImagePatch(t *testing.T) {
	svc := &rayv1.RayService{}
	spec := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ray", Image: "rayproject/ray:2.52.0"}}}}
	svc.Spec.RayClusterSpec.HeadGroupSpec.Template = spec
	svc.Spec.RayClusterSpec.WorkerGroupSpecs = []rayv1.WorkerGroupSpec{{GroupName: "a", Template: spec}, {GroupName: "b", Template: spec}}
	var ops []map[string]string
	if err := json.Unmarshal([]byte(ImagePatch(svc, "rayproject/ray:2.52.1")), &ops); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"/spec/rayClusterConfig/headGroupSpec/template/spec/containers/0/image",
		"/spec/rayClusterConfig/workerGroupSpecs/0/template/spec/containers/0/image",
		"/spec/rayClusterConfig/workerGroupSpecs/1/template/spec/containers/0/image",
	}
	if len(ops) != len(want) {
		t.Fatalf("patch has %d operations, want %d: %v", len(ops), len(want), ops)
	}
	for i, op := range ops {
		if op["op"] != "replace" || op["path"] != want[i] || op["value"] != "rayproject/ray:2.52.1" {
			t.Errorf("operation %d = %v, want replace %s", i, op, want[i])
		}
	}
	if got := RayImage(svc); got != "rayproject/ray:2.52.0" {
		t.Errorf("RayImage = %q", got)
	}
	if got := RayImage(&rayv1.RayService{}); got != "" {
		t.Errorf("RayImage of an empty spec = %q, want empty", got)
	}
}
