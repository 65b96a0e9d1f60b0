package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// The RayService's serve Services expose the head's "serve" and "serve-*" ports (such as
// serve-grpc for Serve's gRPC proxy), by rayspec.ServePorts, the rule the RayCluster's own
// serve Service uses too.
func TestServeServicesExposeServeDashPorts(t *testing.T) {
	svc := testService()
	rc := newRayCluster(svc, "svc-aaaaa", mustGoal(t, svc.Spec.RayClusterSpec), "v1", false)
	head := &rc.Spec.HeadGroupSpec.Template.Spec.Containers[rayv1.RayContainerIndex]
	head.Ports = append(head.Ports, corev1.ContainerPort{Name: "serve-grpc", ContainerPort: 9000}, corev1.ContainerPort{Name: "grpc", ContainerPort: 9100})
	grpc := corev1.ServicePort{Name: "serve-grpc", Port: 9000, TargetPort: intstr.FromInt32(9000), Protocol: corev1.ProtocolTCP}
	serve := corev1.ServicePort{Name: "serve", Port: 8000, TargetPort: intstr.FromInt32(8000), Protocol: corev1.ProtocolTCP}

	if d := cmp.Diff([]corev1.ServicePort{serve, grpc}, serveService(svc, rc).Spec.Ports); d != "" {
		t.Errorf("serve Service ports (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]corev1.ServicePort{serve, grpc}, clusterServeService(svc, rc).Spec.Ports); d != "" {
		t.Errorf("per-cluster serve Service ports (-want +got):\n%s", d)
	}

	// A user serveService's serve port (80 → 8000) comes first; serve-grpc follows.
	svc.Spec.ServeService = &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "serve", Port: 80, TargetPort: intstr.FromInt32(8000)}}}}
	user := corev1.ServicePort{Name: "serve", Port: 80, TargetPort: intstr.FromInt32(8000), Protocol: corev1.ProtocolTCP}
	if d := cmp.Diff([]corev1.ServicePort{user, grpc}, serveService(svc, rc).Spec.Ports); d != "" {
		t.Errorf("serve Service ports with a user serveService (-want +got):\n%s", d)
	}
}
