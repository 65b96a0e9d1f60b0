package rayspec

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestServePort(t *testing.T) {
	spec := func(ports ...corev1.ContainerPort) *rayv1.RayClusterSpec {
		s := &rayv1.RayClusterSpec{}
		s.HeadGroupSpec.Template.Spec.Containers = []corev1.Container{{Name: "ray-head", Ports: ports}}
		return s
	}
	cases := []struct {
		name string
		spec *rayv1.RayClusterSpec
		want int32
	}{
		{"no ports: Serve's default", spec(), DefaultServePort},
		{"a port named serve", spec(corev1.ContainerPort{Name: "dashboard", ContainerPort: 8265}, corev1.ContainerPort{Name: "serve", ContainerPort: 9000}), 9000},
		{"port 8000 under another name does not count", spec(corev1.ContainerPort{Name: "http", ContainerPort: 8001}), DefaultServePort},
		{"no containers (invalid spec) does not panic", &rayv1.RayClusterSpec{}, DefaultServePort},
	}
	for _, tc := range cases {
		if got := ServePort(tc.spec); got != tc.want {
			t.Errorf("%s: ServePort = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestIsGPUResource(t *testing.T) {
	for name, want := range map[string]bool{
		"nvidia.com/gpu": true, "amd.com/gpu": true, "nvidia.com/mig-1g.5gb": true,
		"google.com/tpu": false, "cpu": false, "nvidia.com/mig-bogus": false,
	} {
		if got := IsGPUResource(name); got != want {
			t.Errorf("IsGPUResource(%q) = %v, want %v", name, got, want)
		}
	}
}
