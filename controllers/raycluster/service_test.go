package raycluster

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

// cluster is a valid RayCluster for the tests, changed by mutate.
func cluster(mutate ...func(*rayv1.RayCluster)) *rayv1.RayCluster {
	rc := builders.RayCluster("demo", "team-a").Obj()
	rc.UID = types.UID("8a3c1e4e-0000-4000-8000-000000000001")
	for _, m := range mutate {
		m(rc)
	}
	return rc
}

// apiDefaults fills what the API server adds to a created Service.
func apiDefaults(s *corev1.Service) *corev1.Service {
	out := s.DeepCopy()
	out.ResourceVersion, out.UID = "7", "uid"
	if out.Spec.ClusterIP == "" {
		out.Spec.ClusterIP = "10.96.0.12"
		out.Spec.ClusterIPs = []string{"10.96.0.12"}
	}
	out.Spec.SessionAffinity = corev1.ServiceAffinityNone
	policy := corev1.IPFamilyPolicySingleStack
	out.Spec.IPFamilyPolicy = &policy
	out.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	out.Spec.InternalTrafficPolicy = ptrTo(corev1.ServiceInternalTrafficPolicyCluster)
	for i := range out.Spec.Ports {
		if out.Spec.Type == corev1.ServiceTypeNodePort && out.Spec.Ports[i].NodePort == 0 {
			out.Spec.Ports[i].NodePort = int32(30000 + i)
		}
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }
