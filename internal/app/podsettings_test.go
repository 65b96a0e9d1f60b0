package app

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/raygate/raygate/internal/raypod"
)

func TestValidatePodDefaults(t *testing.T) {
	ok := corev1.Container{Name: "log-shipper", Image: "registry.example.com/fluent-bit:3"}
	for _, tc := range []struct {
		name       string
		d          raypod.PodDefaults
		registries []string
		want       []string // each must be in the errors; none: no error
	}{
		{name: "none"},
		{name: "a sidecar on each side", d: raypod.PodDefaults{HeadSidecars: []corev1.Container{ok}, WorkerSidecars: []corev1.Container{ok}}, registries: []string{"registry.example.com"}},
		{name: "sidecar problems", d: raypod.PodDefaults{HeadSidecars: []corev1.Container{ok, ok, {Name: "Bad_Name", Image: "x"}, {Name: "wait-gcs-ready", Image: "x"}, {Name: "no-image"}}},
			want: []string{
				`--config headSidecarContainers[1]: name "log-shipper" is taken by another sidecar`,
				`--config headSidecarContainers[2]: name "Bad_Name"`,
				`--config headSidecarContainers[3]: name "wait-gcs-ready" is a container raygate adds to Ray pods`,
				`--config headSidecarContainers[4]: no image`,
			}},
		{name: "a sidecar image from a registry the admin does not allow", d: raypod.PodDefaults{WorkerSidecars: []corev1.Container{{Name: "p", Image: "fluent/fluent-bit:3"}}},
			registries: []string{"registry.example.com"},
			want:       []string{`--config workerSidecarContainers[0]: image "fluent/fluent-bit:3" is from registry docker.io, which --allowed-image-registries does not allow (registry.example.com)`}},
		{name: "variables", d: raypod.PodDefaults{Env: []corev1.EnvVar{{Name: "A"}, {Name: "A"}, {Name: "1-bad="}}},
			want: []string{`--config defaultContainerEnvs[1]: A is set twice`, `--config defaultContainerEnvs[2]: name "1-bad="`}},
		{name: "labels", d: raypod.PodDefaults{Labels: map[string]string{"team": "a b", "ray.io/node-type": "head", "raygate.ray.io/x": "y", "bad key": "v", "example.com/ok": "fine"}},
			want: []string{`defaultPodLabels["bad key"]`, `defaultPodLabels["ray.io/node-type"]: keys under ray.io/`, `defaultPodLabels["raygate.ray.io/x"]`, `defaultPodLabels["team"]: value "a b"`}},
		{name: "annotations", d: raypod.PodDefaults{Annotations: map[string]string{"ray.io/overwrite-container-cmd": "true", "note": "any value at all"}},
			want: []string{`defaultPodAnnotations["ray.io/overwrite-container-cmd"]: keys under ray.io/`}},
		{name: "annotations too large", d: raypod.PodDefaults{Annotations: map[string]string{"big": strings.Repeat("x", 200<<10)}},
			want: []string{"--config defaultPodAnnotations: 204803 bytes; at most 131072"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := strings.Join(validatePodDefaults(tc.d, tc.registries), "\n")
			if len(tc.want) == 0 && errs != "" {
				t.Fatalf("unexpected errors:\n%s", errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs, w) {
					t.Errorf("missing %q in:\n%s", w, errs)
				}
			}
			if strings.Contains(errs, "example.com/ok") || strings.Contains(errs, `"note"`) {
				t.Errorf("valid entries refused:\n%s", errs)
			}
		})
	}
}

// --kube-api-qps sets a client-side limit; without it the API server's priority and
// fairness decides, as controller-runtime leaves it.
func TestRestConfigLimits(t *testing.T) {
	base := &rest.Config{Host: "https://127.0.0.1:6443", QPS: -1}
	o := DefaultOptions()
	if got := o.restConfig(base); got != base {
		t.Error("no rate set, yet the configuration changed")
	}
	o.KubeAPIQPS = 50
	got := o.restConfig(base)
	if got.QPS != 50 || got.Burst != 100 || base.QPS != -1 {
		t.Errorf("QPS %v burst %d (base QPS %v), want 50, twice that, base untouched", got.QPS, got.Burst, base.QPS)
	}
	o.KubeAPIBurst = 7
	if got := o.restConfig(base); got.Burst != 7 {
		t.Errorf("burst %d, want 7", got.Burst)
	}
}
