package rayspec

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

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

func TestServeServicePort(t *testing.T) {
	cases := []struct {
		name string
		head *corev1.Container
		want int32
	}{
		{"no container", nil, DefaultServePort},
		{"no ports: Serve's default", &corev1.Container{}, DefaultServePort},
		{"the port named serve", &corev1.Container{Ports: []corev1.ContainerPort{{Name: "serve", ContainerPort: 9000}}}, 9000},
		// Only "serve": a gRPC or other port of the head is not Serve's HTTP proxy.
		{"serve-* ports are not exposed", &corev1.Container{Ports: []corev1.ContainerPort{
			{Name: "serve-grpc", ContainerPort: 9001}, {Name: "serve", ContainerPort: 9000}}}, 9000},
	}
	for _, tc := range cases {
		want := corev1.ServicePort{Name: ServePortName, Port: tc.want, TargetPort: intstr.FromInt32(tc.want), Protocol: corev1.ProtocolTCP}
		if got := ServeServicePort(tc.head); got != want {
			t.Errorf("%s: ServeServicePort = %+v, want %+v", tc.name, got, want)
		}
	}
}

func TestHeadRayContainer(t *testing.T) {
	spec := &rayv1.RayClusterSpec{}
	if HeadRayContainer(spec) != nil {
		t.Error("a head without containers has no Ray container")
	}
	spec.HeadGroupSpec.Template.Spec.Containers = []corev1.Container{{Name: "ray-head"}, {Name: "sidecar"}}
	if c := HeadRayContainer(spec); c == nil || c.Name != "ray-head" {
		t.Errorf("HeadRayContainer = %+v, want the first container", c)
	}
}

func TestWorkerPodGenerateName(t *testing.T) {
	if got, want := WorkerPodGenerateName("demo", "GPU-Workers"), "demo-gpu-workers-worker-"; got != want {
		t.Errorf("WorkerPodGenerateName = %q, want %q", got, want)
	}
}
