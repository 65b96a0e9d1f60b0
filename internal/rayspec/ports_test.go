package rayspec

import (
	"reflect"
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

func TestServePorts(t *testing.T) {
	sp := func(name string, port int32) corev1.ServicePort {
		return corev1.ServicePort{Name: name, Port: port, TargetPort: intstr.FromInt32(port), Protocol: corev1.ProtocolTCP}
	}
	ports := func(ps ...corev1.ContainerPort) *corev1.Container { return &corev1.Container{Ports: ps} }
	cases := []struct {
		name string
		head *corev1.Container
		want []corev1.ServicePort
	}{
		{"no container", nil, []corev1.ServicePort{sp("serve", DefaultServePort)}},
		{"no ports: Serve's default", ports(), []corev1.ServicePort{sp("serve", DefaultServePort)}},
		{"the port named serve", ports(corev1.ContainerPort{Name: "serve", ContainerPort: 9000}), []corev1.ServicePort{sp("serve", 9000)}},
		{"serve first, then serve-* ports by name; others left out", ports(
			corev1.ContainerPort{Name: "serve-http2", ContainerPort: 9002}, corev1.ContainerPort{Name: "dashboard", ContainerPort: 8265},
			corev1.ContainerPort{Name: "serve-grpc", ContainerPort: 9001}, corev1.ContainerPort{Name: "serve", ContainerPort: 9000},
			corev1.ContainerPort{Name: "server", ContainerPort: 7000}, corev1.ContainerPort{Name: "serve-", ContainerPort: 7001}),
			[]corev1.ServicePort{sp("serve", 9000), sp("serve-", 7001), sp("serve-grpc", 9001), sp("serve-http2", 9002)}},
		{"serve-* without serve: Serve's default port too", ports(corev1.ContainerPort{Name: "serve-grpc", ContainerPort: 9001}),
			[]corev1.ServicePort{sp("serve", DefaultServePort), sp("serve-grpc", 9001)}},
		{"a serve-* port on the serve port's number is left out", ports(corev1.ContainerPort{Name: "serve-http", ContainerPort: DefaultServePort}),
			[]corev1.ServicePort{sp("serve", DefaultServePort)}},
		{"a UDP serve-* port keeps its protocol", ports(corev1.ContainerPort{Name: "serve-quic", ContainerPort: 9443, Protocol: corev1.ProtocolUDP}),
			[]corev1.ServicePort{sp("serve", DefaultServePort), {Name: "serve-quic", Port: 9443, TargetPort: intstr.FromInt32(9443), Protocol: corev1.ProtocolUDP}}},
	}
	for _, tc := range cases {
		if got := ServePorts(tc.head); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: ServePorts = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestWithServePort(t *testing.T) {
	head := &corev1.Container{Ports: []corev1.ContainerPort{{Name: "serve-grpc", ContainerPort: 9001}, {Name: "serve-http2", ContainerPort: 80}}}
	user := corev1.ServicePort{Name: ServePortName, Port: 80, TargetPort: intstr.FromInt32(8000), Protocol: corev1.ProtocolTCP}
	got := WithServePort(ServePorts(head), user)
	want := []corev1.ServicePort{user, {Name: "serve-grpc", Port: 9001, TargetPort: intstr.FromInt32(9001), Protocol: corev1.ProtocolTCP}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("WithServePort = %+v, want %+v (the user's serve port first, serve-http2 dropped: it is on the same number)", got, want)
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
